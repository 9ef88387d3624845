"""The query probes of the national-scale figures (docs/spec/query.md §6): what a DRF client
sends a catalogue's books, drawn from the catalogue itself so that each probe means the same
on any size and vocabulary, and how each host answers them.

    python benchmarks/probes.py SITE DATA [--hosts builtin,netlify,cloudfront] [--repeat 7]

For each probe: what an edge host reads to answer it (objects and bytes, and of them the
query indexes', by query_rate.edge_reads: the same reads the JavaScript hosts make), the
answer's count, and on each host here the median answer time over the built site, one request
at a time after a warm-up, and the server's processor time per request (the whole process
tree of `catalogue serve`: the function's own CPU and its runtime's, an upper bound of
what the platform bills).
"""
from __future__ import annotations

import argparse
import collections
import csv
import http.client
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Probe:
    label: str
    collection: str  # the URL segment
    query: str


def probe_set(data: Path) -> list[Probe]:
    """The probes of the issue's set, drawn from the catalogue in `data`."""
    books = _rows(data / "books.csv")
    titles = collections.Counter(word for row in books for word in set(row["title"].split()))
    ranked = [word for word, _ in titles.most_common()]
    common, rare = ranked[0], ranked[-1]
    middling = next((w for w, n in titles.most_common() if n <= max(len(books) // 1000, 2) and len(w) >= 5), ranked[-1])
    letters = collections.Counter(c for row in books[:20000] for c in row["title"] if not c.isspace())
    pairs = collections.Counter(w[i:i + 2] for row in books[:20000] for w in row["title"].split()
                                for i in range(len(w) - 1))
    phrase_title = next(row["title"].split() for row in books if len(row["title"].split()) >= 3)
    many_words = ranked[1000:1030] if len(ranked) >= 1030 else ranked[:30]
    authors = collections.Counter(a for row in books for a in filter(None, row["authors"].split("|")))
    prolific = authors.most_common(1)[0][0]
    with_three = next(row for row in books if row["authors"] and row["publishers"] and row["categories"])
    slug = _rows(data / "authors.csv")[len(books) // 6]["slug"]
    deep = len(books) // 2
    search = lambda value, **more: urlencode({"search": value, **more})  # noqa: E731
    return [
        Probe("a rare title word", "books", search(rare)),
        Probe("a middling title word", "books", search(middling)),
        Probe("the most common title word", "books", search(common)),
        Probe("part of a word", "books", search(middling[1:4])),
        Probe("one letter", "books", search(letters.most_common(8)[-1][0])),
        Probe("two letters", "books", search(pairs.most_common(30)[-1][0])),
        Probe("a quoted phrase", "books", search(f'"{phrase_title[0]} {phrase_title[1]}"')),
        Probe("an ISBN (=isbn)", "books", search(books[deep]["isbn"])),
        Probe("an author's slug (^slug)", "author", search(slug[:max(len(slug) // 2, 3)])),
        Probe("30 distinct words", "books", search(" ".join(many_words))),
        Probe("search, a filter, a deep ordering", "books",
              search(common, authors=prolific, ordering="-price", offset=2)),
        Probe("two filters", "books", urlencode({"authors": with_three["authors"].split("|")[0],
                                                 "publishers": with_three["publishers"].split("|")[0]})),
        Probe("three filters", "books", urlencode({"authors": with_three["authors"].split("|")[0],
                                                   "publishers": with_three["publishers"].split("|")[0],
                                                   "categories": with_three["categories"].split("|")[0]})),
        Probe("ordering by price, deep", "books", f"ordering=-price&offset={deep}"),
        Probe("ordering by title then pages, deep", "books", f"ordering=title,-pages&offset={deep}"),
        Probe("a page of 100 at offset 499,990", "books", f"limit=100&offset={min(499_990, max(deep - 10, 0))}"),
    ]


def _rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def tree_ticks(pid: int) -> int:
    """Processor ticks (user + system) of a process and all its descendants so far."""
    parents: dict[int, list[int]] = collections.defaultdict(list)
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(fields[1])].append(int(entry))
        ticks[int(entry)] = int(fields[11]) + int(fields[12])
    total, todo = 0, [pid]
    while todo:
        at = todo.pop()
        total += ticks.get(at, 0)
        todo.extend(parents.get(at, []))
    return total


def timed(port: int, path: str, repeat: int) -> tuple[float, int, int]:
    """Median answer time in ms over `repeat` requests after one warm-up; the status and count."""
    seconds, status, count = [], 0, -1
    for attempt in range(repeat + 1):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        started = time.perf_counter()
        connection.request("GET", path, headers={"Accept-Encoding": "identity"})
        response = connection.getresponse()
        body = response.read()
        if attempt:
            seconds.append(time.perf_counter() - started)
        connection.close()
        status = response.status
        count = json.loads(body).get("count", -1) if status == 200 else -1
    return statistics.median(seconds) * 1000, status, count


def host_figures(site: Path, kind: str, probes: list[Probe], repeat: int) -> dict[str, tuple[float, float, int, int]]:
    """Per probe on one host: (median ms, processor ms per request, status, count)."""
    from servers import Server

    server = Server(site, kind=kind)
    found = {}
    try:
        for probe in probes:
            path = f"/api/v1/{probe.collection}/?{probe.query}"
            before = tree_ticks(server.process.pid)
            median, status, count = timed(server.port, path, repeat)
            spent = (tree_ticks(server.process.pid) - before) / TICKS * 1000 / (repeat + 1)
            found[probe.label] = (median, spent, status, count)
    finally:
        server.stop()
    return found


def report(site: Path, data: Path, hosts: list[str], repeat: int) -> None:
    from query_rate import edge_reads

    probes = probe_set(data)
    generation = (site / "current").resolve()
    reads = {p.label: edge_reads(generation, p.collection, p.query) for p in probes}
    timings = {kind: host_figures(site, kind, probes, repeat) for kind in hosts}
    head = f"{'probe':<36} {'count':>9} {'objects':>7} {'bytes':>9} {'index':>6} {'index bytes':>11}"
    head += "".join(f" {kind + ' ms':>14} {'cpu ms':>7}" for kind in hosts)
    print(head)
    for probe in probes:
        objects, size, index_objects, index_size = reads[probe.label]
        answered = "/".join(f"{c:,}" for c in sorted({timings[kind][probe.label][3] for kind in hosts}))
        line = (f"{probe.label:<36} {answered:>9} {objects:>7} {size / 1e6:>8.2f}M {index_objects:>6} "
                f"{index_size / 1e6:>10.2f}M")
        for kind in hosts:
            median, spent, status, _ = timings[kind][probe.label]
            line += f" {median:>11.1f}{'' if status == 200 else f'/{status}':>3} {spent:>7.1f}"
        print(line, flush=True)
    counts = sorted(r[0] for r in reads.values())
    sizes = sorted(r[1] for r in reads.values())
    p90 = lambda values: values[-(-len(values) * 9 // 10) - 1]  # noqa: E731
    print(f"objects: max {counts[-1]}, p90 {p90(counts)}; bytes: max {sizes[-1] / 1e6:.2f} MB, "
          f"p90 {p90(sizes) / 1e6:.2f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--hosts", default="builtin")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    report(args.site, args.data, [h for h in args.hosts.split(",") if h], args.repeat)


if __name__ == "__main__":
    main()
