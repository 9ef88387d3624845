"""make bench (queries): search, ordering and filters on a large catalogue (docs/spec/query.md §2–5), and
the largest page of one without max_limit (§1).

    python benchmarks/query_rate.py [--books 1000000] [--workdir bench-work] [--repeat 15]

Builds the synthetic catalogue of N books twice, without and with the settings below
(each a fresh build in its own process: seconds and peak RSS), streams a page of every
book from the first (the built-in server's peak RSS while it does), reports the query indexes'
bytes against the site's, then serves the second with the built-in server and times
requests one at a time (median and 90th percentile, after one warm-up request that loads
the indexes): a search for a rare title word and for the most common one, an ordering
page deep in the collection, a filter by the most prolific author, a filter with an
ordering. For each it also counts the files and bytes an edge host reads to answer it
(the same reads the JavaScript hosts make: tests check they are the Python's).
"""
from __future__ import annotations

import argparse
import collections
import csv
import http.client
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from workload import catalogue  # noqa: E402
from servers import Server  # noqa: E402

SETTINGS = """
max_limit: 100
search:
  books: [title, "=isbn", authors__fullName, publishers__company]
  author: [fullName, "^slug"]
ordering:
  books: [title, price, pages, created_time]
filters:
  books: [authors, translators, publishers, categories]
  bookshelf: [user]
"""
BUILD = """
import json, sys, time
from generator.sitebuild import build
started = time.monotonic()
summary = build(sys.argv[1], sys.argv[2], background=False)
print(json.dumps({"seconds": time.monotonic() - started, "files": summary.files, "bytes": summary.bytes,
                  "phases": summary.phases}))
"""


def timed_build(data: Path, site: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run([sys.executable, "-c", BUILD, str(data), str(site)], cwd=ROOT, check=True,
                          capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result["rss_mb"] = peak / 1024 if peak > before else None  # (the largest child so far: a lower bound)
    return result


def index_bytes(site: Path) -> tuple[int, int]:
    files = size = 0
    for directory, _dirs, names in os.walk((site / "current").resolve() / "api"):
        if "/_query" in directory:
            files += len(names)
            size += sum(os.path.getsize(os.path.join(directory, n)) for n in names)
    return files, size


def words(data: Path) -> tuple[str, str]:
    """The most common word of the titles, and the least common."""
    counted = collections.Counter()
    with (data / "books.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            counted.update(set(row["title"].split()))
    ranked = counted.most_common()
    return ranked[0][0], ranked[-1][0]


def prolific(data: Path) -> str:
    counted = collections.Counter()
    with (data / "books.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            counted.update(filter(None, row["authors"].split("|")))
    return counted.most_common(1)[0][0]


def timings(port: int, path: str, repeat: int) -> tuple[float, float, int]:
    """Median and 90th percentile of the answer time in ms, and the answer's count."""
    seconds = []
    count = None
    for attempt in range(repeat + 1):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        started = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        if attempt:
            seconds.append(time.perf_counter() - started)
        connection.close()
        assert response.status == 200, (path, response.status, body[:200])
        count = json.loads(body)["count"]
    seconds.sort()
    return statistics.median(seconds) * 1000, seconds[int(len(seconds) * 0.9) - 1] * 1000, count


def edge_reads(generation: Path, name: str, query: str) -> tuple[int, int, int, int]:
    """The files and bytes a host reads to put this page together (each file once), and of
    them the query indexes'."""
    from generator.api import assemble
    from generator.api.backends.paging import Paging
    from generator.api.serving import SiteInfo

    info = SiteInfo.of_generation(generation)
    read_files: dict[str, int] = {}

    def read(path: str) -> bytes | None:
        data = (generation / path).read_bytes() if (generation / path).is_file() else None
        read_files[path] = len(data or b"")
        return data
    read_files["_meta/site.json"] = len((generation / "_meta/site.json").read_bytes())  # (the hosts read it first)
    paging = Paging.read(name, query, info)
    b"".join(assemble.answer(assemble.recent(read, 4096), paging, info.page_size, info.base_url, info.query))
    index = {path: size for path, size in read_files.items() if "/_query/" in path}
    return len(read_files), sum(read_files.values()), len(index), sum(index.values())


def streamed(site: Path, books: int) -> str:
    """A page of every book (a site without max_limit), streamed by the built-in server: its
    size, time and the server's peak resident memory (docs/spec/query.md §1: bounded)."""
    server = Server(site)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
        started = time.perf_counter()
        connection.request("GET", f"/api/v1/books/?limit={books}&offset=1")
        response = connection.getresponse()
        size = 0
        while chunk := response.read(1 << 20):
            size += len(chunk)
        seconds = time.perf_counter() - started
        status = Path(f"/proc/{server.process.pid}/status").read_text()
        peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
    finally:
        server.stop()
    return (f"?limit={books}&offset=1 from the built-in server: {response.status}, {size / 1e6:,.0f} MB in "
            f"{seconds:.1f} s, the server's peak RSS {peak / 1024:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=100000)
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench-work")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the built sites")
    args = parser.parse_args()
    plain = catalogue(args.workdir, args.books)
    data = args.workdir / f"data-{args.books}-query"
    if not data.exists():
        shutil.copytree(plain, data)
        with (data / "site.yaml").open("a", encoding="utf-8") as f:
            f.write(SETTINGS)
    # (nothing deleted until both are built: creating files right after deleting many is slower)
    without = timed_build(plain, args.workdir / f"site-plain-{args.books}")
    print(streamed(args.workdir / f"site-plain-{args.books}", args.books), flush=True)
    with_query = timed_build(data, args.workdir / f"site-query-{args.books}")
    site = args.workdir / f"site-query-{args.books}"
    files, size = index_bytes(site)
    print(f"{args.books:,} books: build {without['seconds']:.1f} s without search/ordering/filters, "
          f"{with_query['seconds']:.1f} s with ({with_query['seconds'] / without['seconds']:.2f}x; the indexes "
          f"{with_query['phases'].get('query indexes', 0):.1f} s); peak RSS of the build process "
          f"{without['rss_mb'] or 0:.0f} / {with_query['rss_mb'] or 0:.0f} MB")
    print("phases with:", {k: round(v, 1) for k, v in with_query["phases"].items()})
    print("phases without:", {k: round(v, 1) for k, v in without["phases"].items()})
    print(f"query indexes: {files:,} files, {size / 1e6:,.1f} MB ({100 * size / with_query['bytes']:.1f}% of the "
          f"site's {with_query['bytes'] / 1e6:,.0f} MB)")
    common, rare = words(data)
    author = prolific(data)
    probes = [("a rare title word", urlencode({"search": rare})),
              ("the most common title word", urlencode({"search": common})),
              ("ordering by price, deep", f"ordering=-price&offset={args.books // 2}"),
              ("ordering by title then pages", "ordering=title,-pages&limit=12"),
              ("books of the most prolific author", f"authors={author}"),
              ("that, newest first", f"authors={author}&ordering=-created_time")]
    generation = (site / "current").resolve()
    server = Server(site)
    try:
        print(f"{'built-in server, one request at a time':<40} {'median':>9} {'p90':>9} {'count':>9} "
              f"{'edge files':>10} {'edge bytes':>12} {'of them indexes':>22}")
        for label, query in probes:
            median, p90, count = timings(server.port, f"/api/v1/books/?{query}", args.repeat)
            reads, read, index_reads, index_read = edge_reads(generation, "books", query)
            print(f"{label:<40} {median:7.1f}ms {p90:7.1f}ms {count:>9,} {reads:>10} {read / 1e6:>10.2f}MB "
                  f"{index_reads:>8} {index_read / 1e6:>10.2f}MB")
    finally:
        server.stop()
        for built in (args.workdir / f"site-plain-{args.books}", site):
            if not args.keep:
                shutil.rmtree(built, ignore_errors=True)


if __name__ == "__main__":
    main()
