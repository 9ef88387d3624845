"""The term index (api/backends/search_index.py) of a large catalogue alone, in memory, without building
its site: the books' and the authors' search fields of query_rate.py's settings indexed
from the synthetic catalogue's CSV files (titles and names from a Zipfian vocabulary),
then the issue's search probes planned from the files held in memory, as an edge host
would read them.

    python benchmarks/term_index.py [--books 100000] [--vocabulary 200000] [--workdir bench-work]

Reports the index's build time (profiled with --profile), files and bytes; the files a
one-title edit rewrites (the index built again with one book's title changed: files whose
bytes differ, appear or go); and per probe the objects and bytes a request reads (the
index's, the page index and page files of the records checked on their documents and of
the first page shown), of them the index's, and the median time of the Python plan.
Page files are counted exactly (which pages: default page size, as api/assemble.py reads
them); their bytes are the mean size of a page file of a site built from the same
generator (a small catalogue, built once and kept in the work directory).
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import csv
import functools
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.api import pageindex  # noqa: E402
from generator.api.backends import search_index as termindex  # noqa: E402
from generator.api.backends.common import fold  # noqa: E402
from generator.api.backends.search import smart_terms  # noqa: E402

SEED = 7
BOOKS = ["title", "=isbn", "authors__fullName", "publishers__company"]
AUTHORS = ["fullName", "^slug"]
PAGE_SIZE = 12  # (synth's first page size: the default)


def catalogue(work: Path, books: int, vocabulary: int) -> Path:
    from generator.catalogue import synth
    data = work / f"data-{books}-v{vocabulary}"
    if not (data / "site.yaml").exists():
        synth.write(data, books, seed=SEED, vocabulary=vocabulary)
    return data


def rows(data: Path, name: str):
    csv.field_size_limit(1 << 30)
    with (data / f"{name}.csv").open(encoding="utf-8") as f:
        yield from csv.DictReader(f)


def documents(data: Path) -> tuple[list[dict], list[dict]]:
    """The books (with the related records' fields they embed) and the authors."""
    authors = [{"fullName": r["fullName"], "slug": r["slug"], "id": r["id"]} for r in rows(data, "authors")]
    by_id = {a["id"]: a for a in authors}
    publishers = {r["id"]: {"company": r["company"]} for r in rows(data, "publishers")}
    books = [{"title": r["title"], "isbn": r["isbn"] or None,
              "authors": [by_id[a] for a in r["authors"].split("|") if a],
              "publishers": [publishers[p] for p in r["publishers"].split("|") if p]} for r in rows(data, "books")]
    return books, authors


def build(docs: list[dict], specs: list[str]) -> tuple[dict[str, bytes], tuple[float, float]]:
    """The index's files, and the seconds it took: wall-clock and the process's CPU."""
    files: dict[str, bytes] = {}
    started, cpu = time.perf_counter(), time.process_time()
    writer = termindex.TermIndexWriter(specs, len(docs))
    folded = functools.partial(fold, normalise=None)
    for first in range(0, len(docs), PAGE_SIZE):  # (a page at a time, as the build reads them)
        writer.add_documents(first, docs[first:first + PAGE_SIZE], folded)
    writer.finish(files.__setitem__)
    return files, (time.perf_counter() - started, time.process_time() - cpu)


def page_bytes(work: Path, vocabulary: int) -> float:
    """The mean bytes of a books page file (the default size) of a small site built from
    the same generator."""
    from generator.sitebuild import build as build_site
    site = work / f"site-pages-v{vocabulary}"
    if not (site / "current").exists():
        build_site(str(catalogue(work, 3000, vocabulary)), str(site), background=False)
    pages = (site / "current").resolve() / "api/v1/books/pages" / str(PAGE_SIZE)
    return statistics.mean(p.stat().st_size for p in pages.glob("*/*.json"))  # (a shard may be a link)


def page_index_bytes(books: int, span: int) -> int:
    """A span's page index: its header and a start per record of its pages (api/pageindex.py)."""
    pages = pageindex.span_pages(books, PAGE_SIZE, span)
    return pageindex.HEADER.size + 4 * (min(pages[-1] + PAGE_SIZE, books) - pages[0])


class Request:
    """One probe's reads: the index's (counted by the plan) and the pages of the records
    checked on their documents and shown."""

    def __init__(self, files: dict[str, bytes], docs: list[dict], fields: dict) -> None:
        self.files, self.docs, self.fields = files, docs, fields
        self.pages: set[int] = set()

    def values(self, positions: list[int]) -> dict[int, dict]:
        self.pages.update(p // PAGE_SIZE for p in positions)
        return {p: termindex.document_values(self.docs[p], self.fields, str.lower) for p in positions}

    def run(self, terms: list[str]) -> termindex.Found:
        self.pages = set()
        found = termindex.search(self.files.get, [t.lower() for t in terms], self.values)
        self.pages.update(p // PAGE_SIZE for p in found.records[:PAGE_SIZE])  # (the page shown)
        return found


def probes(books: list[dict], authors: list[dict]) -> list[tuple[str, str, str]]:
    """(label, collection, search value) of the issue's search probes."""
    counted = collections.Counter(w for d in books for w in set(d["title"].split()))
    ranked = [w for w, _ in counted.most_common()]
    common, rare = ranked[0], ranked[-1]
    middling = next(w for w, n in counted.most_common() if n <= max(len(books) // 1000, 2) and len(w) >= 5)
    with_middling = next(d["title"].split() for d in books if middling in d["title"].split()
                         and len(d["title"].split()) > 1)
    at = with_middling.index(middling)
    phrase = with_middling[at:at + 2] if at + 1 < len(with_middling) else with_middling[at - 1:at + 1]
    two_authors = next(d for d in books if len(d["authors"]) > 1)
    rng = random.Random(SEED)
    thirty = list(dict.fromkeys(w for d in rng.sample(books, 40) for w in d["title"].split()))[:30]
    slug = authors[len(authors) // 2]["slug"]
    return [("a rare title word", "books", rare), ("a middling title word", "books", middling),
            ("the most common title word", "books", common), ("part of a word", "books", middling[1:4]),
            ("one letter", "books", "ی"), ("two letters", "books", "ان"),
            ("a quoted phrase", "books", f'"{" ".join(phrase)}"'),
            ("two common words, a phrase", "books", f'"{ranked[0]} {ranked[1]}"'),
            ("two words", "books", f"{middling} {ranked[3]}"),
            ("=isbn", "books", books[len(books) // 3]["isbn"]), ("^slug (authors)", "authors", slug[:6]),
            ("two authors' names", "books", f"{two_authors['authors'][0]['fullName'].split()[0]} "
                                             f"{two_authors['authors'][1]['fullName'].split()[-1]}"),
            ("30 distinct words", "books", " ".join(thirty))]


def edited(books: list[dict], specs: list[str], before: dict[str, bytes], whole: bool) -> int:
    """Files whose bytes differ, appear or go after one book's title is changed: one word of
    it replaced by another book's first word, or (`whole`) the title replaced by another's."""
    changed = list(books)
    at = len(books) // 2
    words, other = books[at]["title"].split(), books[at // 3]["title"]
    title = other if whole else " ".join(words[:-1] + other.split()[:1])
    changed[at] = dict(books[at], title=title)
    after, _ = build(changed, specs)
    return sum(1 for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=100000)
    parser.add_argument("--vocabulary", type=int, default=200000)
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench-work")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="profile the books' build")
    parser.add_argument("--no-edits", action="store_true", help="skip the two builds that measure an edit")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    data = catalogue(args.workdir, args.books, args.vocabulary)
    books, authors = documents(data)
    page = page_bytes(args.workdir, args.vocabulary)
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    book_files, seconds = build(books, BOOKS)
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    author_files, author_seconds = build(authors, AUTHORS)
    files = {"books": book_files, "authors": author_files}
    print(f"{args.books:,} books, {args.vocabulary:,}-word vocabulary")
    for name, held, took in (("books", book_files, seconds), ("authors", author_files, author_seconds)):
        sizes = sorted(len(d) for d in held.values())
        print(f"{name}: {len(sizes):,} files, {sum(sizes) / 1e6:.1f} MB (largest {sizes[-1] / 1e3:.0f} KB, "
              f"median {statistics.median(sizes) / 1e3:.1f} KB), built in {took[0]:.1f} s in one process "
              f"({took[1]:.1f} s of CPU)")
    if not args.no_edits:
        print(f"a one-title edit rewrites {edited(books, BOOKS, book_files, False)} files of the books' term index "
              f"(a word of the title changed), {edited(books, BOOKS, book_files, True)} (the whole title)")
    print(f"pages: {page / 1e3:.1f} KB a books page file of {PAGE_SIZE} (mean), a page index "
          f"{page_index_bytes(args.books, 0) / 1e3:.1f} KB")
    print(f"{'probe':<30} {'count':>8} {'objects':>8} {'bytes':>10} {'index obj':>9} {'index bytes':>11} "
          f"{'checked':>8} {'plan ms':>8} {'CPU ms':>7}")
    collections_ = {"books": books, "authors": authors}
    specs = {"books": BOOKS, "authors": AUTHORS}
    table = []
    for label, name, value in probes(books, authors):
        request = Request(files[name], collections_[name], termindex.TermIndexWriter(specs[name], 0).readers)
        terms = smart_terms(value)
        times, cpu = [], []
        for _ in range(args.repeat):
            started, used = time.perf_counter(), time.process_time()
            found = request.run(terms)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - used)
        spans = {pageindex.span_of(p * PAGE_SIZE) for p in request.pages}
        objects = 1 + found.index_objects + len(spans) + len(request.pages)  # (1: the site's meta, read first)
        read = (found.index_bytes + sum(page_index_bytes(len(collections_[name]), s) for s in spans)
                + len(request.pages) * page)
        table.append((objects, read))
        print(f"{label:<30} {len(found.records):>8,} {objects:>8} {read / 1e6:>8.2f}MB {found.index_objects:>9} "
              f"{found.index_bytes / 1e6:>9.3f}MB {found.checked:>8} {statistics.median(times) * 1000:>7.1f} "
              f"{statistics.median(cpu) * 1000:>7.1f}")
    objects = sorted(o for o, _ in table)
    read = sorted(b for _, b in table)
    p90 = int(0.9 * len(table) + 0.5) - 1
    print(f"90th percentile: {objects[p90]} objects, {read[p90] / 1e6:.2f} MB; most {objects[-1]} objects, "
          f"{read[-1] / 1e6:.2f} MB (the search probes; filters, orderings and deep pages read no term index)")


if __name__ == "__main__":
    main()
