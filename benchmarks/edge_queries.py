"""The random DRF queries of the national-scale check (docs/spec/query.md §6): what a client
may send a catalogue's books and authors beyond the probe set (probes.py), drawn at random
from the catalogue itself, and what each edge host reads to answer each one, against the
per-request limits its platform documents (each host's LIMITS, hosts/contract.py).

    python benchmarks/edge_queries.py SITE DATA [--count 300] [--seed 7] [--hosts netlify,cloudfront]

The kinds of query: quoted phrases of two and three common title words (adjacent in a title,
or not; with two spaces or a tab between, a word with white space around it), one- and
two-letter terms, several terms of mixed frequency, search with filters and
an ordering at a deep offset with limit=100, three filters with limit=100, an ordering deep
with limit=100, a plain page of 100 anywhere, an author's `^slug` and name. For each, the
objects and bytes an edge host reads (query_rate.edge_reads: the same reads the JavaScript
hosts make) and whether a host's limits refuse it. With --hosts, every query is also sent
to those hosts here, over the built site, and any answer but 200 is counted as refused.
"""
from __future__ import annotations

import argparse
import collections
import http.client
import random
import sys
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from probes import _rows  # noqa: E402

DEEP_LIMIT = 100  # the largest page max_limit lets a client ask for (query_rate.SETTINGS)


def queries(data: Path, count: int, seed: int) -> list[tuple[str, str, str]]:
    """`count` random queries (kind, collection, query string), the same for the same data and seed."""
    books, authors = _rows(data / "books.csv"), _rows(data / "authors.csv")
    rng = random.Random(seed)
    ranked = [w for w, _ in collections.Counter(w for row in books for w in set(row["title"].split())).most_common()]
    common = ranked[:50]
    adjacent = [pair for row in books for pair in zip(row["title"].split(), row["title"].split()[1:])
                if pair[0] in common[:20] or pair[1] in common[:20]]
    letters = [c for row in books[:5000] for c in row["title"] if not c.isspace()]
    ids = {name: [i for row in books for i in row[name].split("|") if i]
           for name in ("authors", "publishers", "categories")}
    deep = lambda: rng.randrange(len(books) // 2, len(books))  # noqa: E731
    orderings = ["title", "-title", "price", "-price", "pages,-price", "-created_time", "title,-pages"]

    def search(value: str, **more) -> str:
        return urlencode({"search": value, **more})

    kinds = {
        "phrase of two common words": lambda: search('"%s %s"' % rng.choice(adjacent)),
        "phrase of three common words": lambda: search('"%s"' % " ".join(_three(rng, books, common))),
        "phrase of two common words, not adjacent": lambda: search('"%s %s"' % tuple(rng.sample(common[:10], 2))),
        "phrase with other white space": lambda: search(rng.choice(['"%s  %s"', '"%s\t%s"', '"%s "', '" %s"', '" %s "'])
                                                        .replace("%s", "{}").format(*rng.sample(common[:10], 2))),
        "one letter": lambda: search(rng.choice(letters)),
        "two letters": lambda: search("".join(rng.sample(letters, 2)) if rng.random() < 0.3 else _two(rng, books)),
        "one- and two-letter terms": lambda: search(f"{rng.choice(letters)} {_two(rng, books)}"),
        "several terms": lambda: search(" ".join(rng.choice(common) if rng.random() < 0.5 else rng.choice(ranked)
                                                 for _ in range(rng.randrange(2, 7)))),
        "search, filters, ordering, deep, limit=100": lambda: search(
            rng.choice(common), **({"authors": rng.choice(ids["authors"])} if rng.random() < 0.3 else {}),
            categories=rng.choice(ids["categories"]), ordering=rng.choice(orderings),
            limit=DEEP_LIMIT, offset=rng.randrange(0, 3000)),
        "search and ordering, deep, limit=100": lambda: search(rng.choice(common[:5]), ordering=rng.choice(orderings),
                                                               limit=DEEP_LIMIT, offset=rng.randrange(0, 4000)),
        "three filters, limit=100": lambda: urlencode({"authors": rng.choice(ids["authors"]),
                                                       "publishers": rng.choice(ids["publishers"]),
                                                       "categories": rng.choice(ids["categories"]),
                                                       "limit": DEEP_LIMIT}),
        "a category, ordering, deep, limit=100": lambda: urlencode({
            "categories": rng.choice(ids["categories"]), "ordering": rng.choice(orderings),
            "limit": DEEP_LIMIT, "offset": rng.randrange(0, 300)}),
        "ordering, deep, limit=100": lambda: f"ordering={rng.choice(orderings)}&limit={DEEP_LIMIT}&offset={deep()}",
        "a page of 100": lambda: f"limit={DEEP_LIMIT}&offset={rng.randrange(len(books))}",
    }
    author_kinds = {
        "an author's slug (^slug)": lambda: search(rng.choice(authors)["slug"][:rng.randrange(1, 8)]),
        "an author's name": lambda: search(rng.choice(rng.choice(authors)["fullName"].split())),
    }
    every = [(kind, "books", make) for kind, make in kinds.items()]
    every += [(kind, "author", make) for kind, make in author_kinds.items()]
    return [(kind, collection, make()) for kind, collection, make in (every[i % len(every)] for i in range(count))]


def _three(rng: random.Random, books: list[dict], common: list[str]) -> list[str]:
    """Three adjacent words of a title holding a common word (three common words at random else)."""
    for _ in range(200):
        words = rng.choice(books)["title"].split()
        starts = [i for i in range(len(words) - 2) if set(words[i:i + 3]) & set(common)]
        if starts:
            at = rng.choice(starts)
            return words[at:at + 3]
    return rng.sample(common, 3)


def _two(rng: random.Random, books: list[dict]) -> str:
    word = max(rng.choice(books)["title"].split(), key=len)
    at = rng.randrange(max(len(word) - 1, 1))
    return word[at:at + 2]


def host_limits() -> dict:
    """The edge hosts' declared limits (each host module's LIMITS), by host name."""
    from importlib import import_module

    from generator.hosts.registry import HOSTS

    found = {host.name: getattr(import_module(f"generator.hosts.{host.name}"), "LIMITS", None) for host in HOSTS}
    return {name: limits for name, limits in found.items() if limits is not None}


def refused_by(limits, objects: int, size: int) -> bool:
    """Whether a host's limits refuse a request reading so much (its page put together reads
    the files counted but site.json, and holds their bytes)."""
    return objects - 1 > limits.reads or size > limits.held


def status(port: int, collection: str, query: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        connection.request("GET", f"/api/v1/{collection}/?{query}", headers={"Accept-Encoding": "identity"})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def report(site: Path, data: Path, count: int, seed: int, hosts: list[str]) -> None:
    from query_rate import edge_reads
    from servers import Server

    made = queries(data, count, seed)
    limits = host_limits()
    generation = (site / "current").resolve()
    reads = [edge_reads(generation, collection, query) for _, collection, query in made]
    answered: dict[str, list[int]] = {}
    for kind in hosts:
        server = Server(site, kind=kind)
        try:
            answered[kind] = [status(server.port, collection, query) for _, collection, query in made]
        finally:
            server.stop()
    by_kind: dict[str, list[int]] = collections.defaultdict(list)
    for at, (kind, _, _) in enumerate(made):
        by_kind[kind].append(at)
    names = sorted(limits)
    print(f"{'kind':<44} {'n':>3} {'max objects':>11} {'max MB':>7} " + " ".join(f"{n[:10]:>10}" for n in names)
          + "".join(f" {k[:10] + ' !200':>15}" for k in hosts))
    for kind, ats in by_kind.items():
        most = max(reads[a][0] for a in ats), max(reads[a][1] for a in ats) / 1e6
        line = f"{kind:<44} {len(ats):>3} {most[0]:>11} {most[1]:>7.2f} "
        line += " ".join(f"{sum(refused_by(limits[n], *reads[a][:2]) for a in ats):>10}" for n in names)
        line += "".join(f" {sum(answered[k][a] != 200 for a in ats):>15}" for k in hosts)
        print(line)
    objects = sorted(r[0] for r in reads)
    print(f"{len(made)} queries: objects max {objects[-1]}, p90 {objects[len(objects) * 9 // 10]}; refused by "
          + ", ".join(f"{n} {sum(refused_by(limits[n], *r[:2]) for r in reads)}" for n in names)
          + "".join(f"; {k} answered other than 200: {sum(s != 200 for s in answered[k])}" for k in hosts))
    for at, (kind, collection, query) in enumerate(made):
        over = [n for n in names if refused_by(limits[n], *reads[at][:2])]
        over += [f"{k}:{answered[k][at]}" for k in hosts if answered[k][at] != 200]
        if over:
            print(f"  {reads[at][0]:>5} objects {reads[at][1] / 1e6:7.2f} MB {' '.join(over)}: {collection}/?{query}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hosts", default="")
    args = parser.parse_args()
    report(args.site, args.data, args.count, args.seed, [h for h in args.hosts.split(",") if h])


if __name__ == "__main__":
    main()
