"""make bench (queries): search, ordering and filters on a large catalogue (docs/spec/query.md §2–5), and
the largest page of one without max_limit (§1).

    python benchmarks/query_rate.py [--books 100000] [--vocabulary 200000] [--seed 7] [--workdir bench-work]
                                    [--repeat 15] [--keep] [--no-serve] [--one-site] [--query-first]
                                    [--edit-site SITE]

Synthesises the catalogue of N books (`catalogue synth`, titles and names from a Zipfian
vocabulary) and builds it twice with `catalogue build` as a user runs it, each a fresh
build timed from outside with the peak RSS and PSS of its process tree (bench.py's
run_build): without and with the settings below (--query-first: with them first; the second
build of a pair has spent less time in its records and pages; the ratio of the build with them
to itself without its index step does not depend on the order). Streams a page of every book
from the one without (the built-in server's peak RSS while it does), reports the query
indexes' bytes against the site's, then edits one title (the middle row of books.csv) and
builds again, then adds a book at the end of books.csv (as the write service's POST adds
it) and builds again: for each, the index files it rewrote (written anew, or gone) and the
seconds of the build and of its query indexes step. Last, serves the one with them with the built-in server and
times requests one at a time (median and 90th percentile, after one warm-up request that
loads the indexes): a search for a rare title word and for the most common one, an ordering
page deep in the collection, a filter by the most prolific author, a filter with an
ordering. For each it also counts the files and bytes an edge host reads to answer it (the
same reads the JavaScript hosts make: tests check they are the Python's). --edit-site
measures the edit alone, on a site an earlier run kept (--keep) for the same catalogue.
"""
from __future__ import annotations

import argparse
import collections
import csv
import http.client
import json
import os
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bench import Quiet, delete_in_background, edit_one_title, run_build, settle, settled_deletion  # noqa: E402
from workload import catalogue  # noqa: E402
from servers import Server  # noqa: E402
from generator.api.urls import CURRENT, QUERY_DIR  # noqa: E402
from generator.sitebuild.part import INDEX_PARTS  # noqa: E402

SEED, VOCABULARY = 7, 200000  # the catalogues of the national-scale figures (benchmarks/probes.py's)
EDITED = "middle"  # the row of books.csv whose title the edit changes (bench.EDITED_ROWS)

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


def index_paths(root: Path) -> list[str]:
    """Each query index file under a generation (or a folder laid out as one), by its path there."""
    return [os.path.relpath(os.path.join(directory, name), root)
            for directory, _dirs, names in os.walk(root / "api") if f"/{QUERY_DIR}" in directory for name in names]


def index_inodes(site: Path) -> dict[str, int]:
    """Each query index file of the published generation, with its inode (a file the next
    build links from this one keeps it)."""
    root = (site / CURRENT).resolve()
    return {path: os.stat(root / path).st_ino for path in index_paths(root)}


def index_bytes(site: Path) -> tuple[int, int]:
    root = (site / CURRENT).resolve()
    paths = index_inodes(site)
    return len(paths), sum(os.path.getsize(root / path) for path in paths)


def changed(data: Path, site: Path, quiet: Quiet, *changes: Callable[[Path], None]) -> tuple[dict, int]:
    """books.csv changed (each of `changes`, in turn) and the site built again: the build, and
    how many index files it rewrote or took away. books.csv is put back after."""
    before = index_inodes(site)
    shutil.copy(data / "books.csv", data / "books.csv.orig")
    try:
        for change in changes:
            change(data)
        built = run_build(data, site, quiet)
    finally:
        shutil.move(data / "books.csv.orig", data / "books.csv")
    after = index_inodes(site)
    return built, sum(1 for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def edited(data: Path) -> None:
    edit_one_title(data, EDITED)


def book_added(data: Path) -> None:
    """A book at the end of books.csv, as the write service's POST adds one: the middle row's,
    with an id and an ISBN of its own."""
    path = data / "books.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header, row = rows[0], list(rows[len(rows) // 2])
    row[header.index("id")] = str(uuid.UUID(int=len(rows), version=4))
    row[header.index("isbn")] = str(9790000000000 + len(rows))
    row[header.index("title")] += " (تازه)"
    with path.open("a", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow(row)


def edits(data: Path, site: Path, quiet: Quiet) -> None:
    """The title edit, then a book added (the edit kept: the book is the one change)."""
    report_change(f"a one-title edit ({EDITED} row of books.csv)", *changed(data, site, quiet, edited))
    report_change("a book added at the end of books.csv", *changed(data, site, quiet, edited, book_added))


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
    b"".join(assemble.answer(assemble.recent(read, 4096), paging, info, info.base_url))
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
    parser.add_argument("--vocabulary", type=int, default=VOCABULARY, help="words of the titles and names (0: synth's few hundred)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench-work")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the built sites")
    parser.add_argument("--quiet-within", type=float, default=120.0,
                        help="seconds to wait at most for I/O pressure to settle before each build")
    parser.add_argument("--no-serve", action="store_true", help="the builds and the edit only")
    parser.add_argument("--one-site", action="store_true",
                        help="delete the site without the settings before building the other (a million books' "
                             "site takes some 20 GB of disk), and wait for the deletion to settle (bench.SETTLE)")
    parser.add_argument("--query-first", action="store_true",
                        help="build the site with the settings first, the other second")
    parser.add_argument("--edit-site", type=Path, help="only the edit, on this site a run with --keep left")
    args = parser.parse_args()
    if args.query_first and args.one_site:
        parser.error("--one-site deletes the site without the settings before the other is built: build it first")
    args.workdir = args.workdir.absolute()
    args.workdir.mkdir(parents=True, exist_ok=True)
    plain = catalogue(args.workdir, args.books, args.seed, args.vocabulary or None)
    data = plain.with_name(plain.name + "-query")
    if not (data / "site.yaml").exists():
        shutil.copytree(plain, data, dirs_exist_ok=True)
        with (data / "site.yaml").open("a", encoding="utf-8") as f:
            f.write(SETTINGS)
    quiet = Quiet(most=args.quiet_within)
    settle(args.workdir)  # (an earlier run's trees, bench.py's or this one's, may still be being deleted in the background)
    if args.edit_site:
        edits(data, args.edit_site, quiet)
        return
    stamp = time.time_ns()  # (fresh sites: one left by an interrupted run would make an incremental build)
    plain_site, site = (args.workdir / f"site-{kind}-{args.books}-{stamp}" for kind in ("plain", "query"))
    try:
        # (nothing deleted until both are built: creating files right after deleting many is slower)
        with_query = run_build(data, site, quiet) if args.query_first else None
        without = run_build(plain, plain_site, quiet)
        if not args.no_serve:
            print(streamed(plain_site, args.books), flush=True)
        if args.one_site:
            settled_deletion(plain_site)
        with_query = with_query or run_build(data, site, quiet)
        report_builds(args.books, without, with_query, site)
        edits(data, site, quiet)
        if not args.no_serve:
            serve(data, site, args.books, args.repeat)
    finally:
        if not args.keep:  # (the next timed run, this one's or another benchmark's, waits for it: settle())
            delete_in_background(args.workdir, [plain_site, site])


MB = 2 ** 20


def report_change(what: str, built: dict, rewritten: int) -> None:
    print(f"{what}: {built['wall']:.1f} s, the query indexes {built['phases'].get('query indexes', 0):.1f} s, "
          f"{rewritten} index files rewritten or gone; peak RSS {built['rss'] / MB:,.0f} MB", flush=True)


def report_builds(books: int, without: dict, with_query: dict, site: Path) -> None:
    files, size = index_bytes(site)
    # (the index step, and the parts' making of the stretches' parts as they cut the pages: the slower part's)
    indexes = with_query['phases'].get('query indexes', 0) + with_query['phases'].get(f"parts: {INDEX_PARTS}", 0)
    # (two builds' walls differ by a third run to run, and the first after its data was made or a site
    # deleted is the slower: the build with them against itself without its index step is steadier)
    print(f"{books:,} books: `catalogue build` {without['wall']:.1f} s without search/ordering/filters, "
          f"{with_query['wall']:.1f} s with ({with_query['wall'] / without['wall']:.2f}x; the indexes "
          f"{indexes:.1f} s, {with_query['wall'] / (with_query['wall'] - indexes):.2f}x the same build without "
          f"them); peak RSS of the build's process tree "
          f"{without['rss'] / MB:,.0f} / {with_query['rss'] / MB:,.0f} MB (PSS {without['pss'] / MB:,.0f} / "
          f"{with_query['pss'] / MB:,.0f} MB); processor {without['cpu']:.1f} / {with_query['cpu']:.1f} s")
    print("phases with:", {k: round(v, 1) for k, v in with_query["phases"].items()})
    print("phases without:", {k: round(v, 1) for k, v in without["phases"].items()})
    print(f"query indexes: {files:,} files, {size / 1e6:,.1f} MB ({100 * size / with_query['bytes']:.1f}% of the "
          f"site's {with_query['bytes'] / 1e6:,.0f} MB)", flush=True)


def serve(data: Path, site: Path, books: int, repeat: int) -> None:
    """The probes, timed on the built-in server, with what an edge host reads for each."""
    common, rare = words(data)
    author = prolific(data)
    probes = [("a rare title word", urlencode({"search": rare})),
              ("the most common title word", urlencode({"search": common})),
              ("ordering by price, deep", f"ordering=-price&offset={books // 2}"),
              ("ordering by title then pages", "ordering=title,-pages&limit=12"),
              ("books of the most prolific author", f"authors={author}"),
              ("that, newest first", f"authors={author}&ordering=-created_time")]
    generation = (site / CURRENT).resolve()
    server = Server(site)
    try:
        print(f"{'built-in server, one request at a time':<40} {'median':>9} {'p90':>9} {'count':>9} "
              f"{'edge files':>10} {'edge bytes':>12} {'of them indexes':>22}")
        for label, query in probes:
            median, p90, count = timings(server.port, f"/api/v1/books/?{query}", repeat)
            reads, read, index_reads, index_read = edge_reads(generation, "books", query)
            print(f"{label:<40} {median:7.1f}ms {p90:7.1f}ms {count:>9,} {reads:>10} {read / 1e6:>10.2f}MB "
                  f"{index_reads:>8} {index_read / 1e6:>10.2f}MB")
    finally:
        server.stop()

if __name__ == "__main__":
    main()
