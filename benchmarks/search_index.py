"""The search indexes of a large catalogue alone, without building its site (no disk for
the pages needed): the books' search fields of query_rate.py's settings indexed from the
synthetic catalogue's CSV files in one process, then one-word searches answered from the
files held in memory, as a host's `select` answers them (api/backends/).

    python benchmarks/search_index.py [--books 1000000] [--workdir bench-work] [--repeat 15]

Reports the time to index (one process collecting `--runs` runs of records, as the build's
processes do, then joining them), the
index's files and bytes, and for a rare and the most common title word (and a phrase, a
letter) the median time of `select` and the count, and the index files and bytes it read
(what an edge host reads of the indexes; the pages of the candidates a search checks on
their documents, and of the records shown, come on top).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:  # (the checkout PYTHONPATH names, if it names one, imported before query_rate puts this one first)
    import generator.api.backends  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from workload import catalogue  # noqa: E402
from query_rate import words  # noqa: E402

SEARCH = {"search": {"books": ["title", "=isbn", "authors__fullName", "publishers__company"]}}


def documents(data: Path):
    csv.field_size_limit(1 << 30)
    with (data / "authors.csv").open(encoding="utf-8") as f:
        authors = {row["id"]: {"fullName": row["fullName"]} for row in csv.DictReader(f)}
    with (data / "publishers.csv").open(encoding="utf-8") as f:
        publishers = {row["id"]: {"company": row["company"]} for row in csv.DictReader(f)}
    with (data / "books.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            yield {"title": row["title"], "isbn": row["isbn"],
                   "authors": [authors[a] for a in row["authors"].split("|") if a],
                   "publishers": [publishers[p] for p in row["publishers"].split("|") if p]}


def main() -> None:
    from generator.api import backends
    from generator.api.backends import common, search_index

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=1000000)
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench-work")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--runs", type=int, default=2, help="runs of records collected apart, then joined")
    args = parser.parse_args()
    data = catalogue(args.workdir, args.books)
    docs = list(documents(data))
    files: dict[str, bytes] = {}
    started = time.perf_counter()
    parts = []
    block = common.BLOCK
    share = -(-len(docs) // block // args.runs) * block  # (runs of whole blocks, as the build's processes take them)
    for first in range(0, max(len(docs), 1), share):
        collector = search_index.Indexer("books", SEARCH, first)
        for at in range(first, min(first + share, len(docs)), 12):
            collector.add(docs[at:min(at + 12, first + share)])
        parts.append(collector.close())
    collected = time.perf_counter() - started
    search_index.finish("books", SEARCH, files.__setitem__, parts)
    seconds = time.perf_counter() - started
    leaves = {p: len(d) for p, d in files.items() if "/leaf/" in p}
    print(f"(generator from {Path(backends.__file__).parent.parent.parent.parent})")
    print(f"{args.books:,} books: indexed in {seconds:.1f} s in one process ({collected:.1f} s collecting "
          f"{len(parts)} runs, {seconds - collected:.1f} s joining them); {len(files):,} files, "
          f"{sum(map(len, files.values())) / 1e6:.1f} MB, of them the leaves {len(leaves)} files, "
          f"{sum(leaves.values()) / 1e6:.1f} MB")
    often, rare = words(data)
    probes = [("a rare title word", rare), ("the most common title word", often),
              ("a phrase", f'"{often} {rare}"'), ("a letter", "ی")]
    print(f"{'select, in memory':<32} {'median':>9} {'count':>9} {'index files':>12} {'bytes':>10}")
    for label, term in probes:
        read: dict[str, int] = {}

        def reading(path: str) -> bytes | None:
            data = files.get(path)
            read[path] = len(data or b"")
            return data
        times = []
        for attempt in range(args.repeat + 1):
            read.clear()
            started = time.perf_counter()
            selection = backends.select(reading, "books", [("search", term)], SEARCH, len(docs),
                                        lambda positions: {p: docs[p] for p in positions})
            count = selection.count
            if attempt:
                times.append(time.perf_counter() - started)
        print(f"{label:<32} {statistics.median(times) * 1000:7.1f}ms {count:>9,} {len(read):>12} "
              f"{sum(read.values()) / 1e6:>8.2f}MB")


if __name__ == "__main__":
    main()
