"""Pages that no file holds, put together at request time from what the build wrote: the
pre-built pages (and, for a count no page read tells, the first span's index,
api/pageindex.py). Any limit and offset DRF answers, with DRF's count and links
(docs/spec/query.md §1), never from the data and never encoding a record again: a page is a
new head, slices of page files and TAIL. A run of the collection's own order is cut from the
pages of the size that holds it in the fewest files (a page of 100 from pages of 24, where
the build wrote them: 5 or 6 files, not 9 or 10).

`read` is the host's way to read a file of the published generation (None when there is
none); this module is the Python hosts' one implementation of request-time pages, and
hosts/templates/answers.js.j2 the JavaScript hosts'. Both answer the same requests
byte for byte (tests/hosts/test_pages_js.py).
"""
from __future__ import annotations

import functools
import re
from collections import OrderedDict
from typing import Callable, Iterator, Sequence

import orjson

from . import pageindex
from .pages import TAIL
from .backends import Paging, select
from .backends.common import Documents
from .serving import SiteInfo
from .urls import PAGE_BUCKET, page_file, page_index_file

COUNT = re.compile(rb'\{"count":(\d+),')  # (what a page's head opens with: head())

Reader = Callable[[str], "bytes | None"]


class Pages:
    """A collection's pages of the default size, and the count the first span's index tells
    (read once per answer)."""

    def __init__(self, read: Reader, name: str, page_size: int) -> None:
        self.read = read
        self.name = name
        self.page_size = page_size

    @functools.cached_property
    def count(self) -> int:
        data = self.read(page_index_file(self.name, str(self.page_size), "0", "0"))
        if data is None:
            raise FileNotFoundError(f"the index of the first pages of {self.name}")
        return decoded(data).count


@functools.lru_cache(maxsize=64)  # (a host that keeps the files it read hands the same bytes again)
def decoded(data: bytes) -> pageindex.Index:
    return pageindex.Index.decode(data)


def head(count: int, base: str, links: tuple[str | None, str | None]) -> bytes:
    """A page's bytes before its first record; `base` is the collection's absolute URL."""
    following, previous = (None if q is None else f"{base}?{q}" for q in links)
    return b'{"count":%d,"next":%b,"previous":%b,"results":[' % (
        count, orjson.dumps(following), orjson.dumps(previous))


def answer(read: Reader, wanted: Paging, info: SiteInfo, base: str) -> Iterator[bytes]:
    """The page's bytes, in pieces (a large page is never held whole): the head, the records
    a piece per page file they come from, and TAIL. With the site's query settings, the
    request's query backends pick the records (api/backends/). Raises
    FileNotFoundError when a file it needs is missing (a generation built before there were
    indexes), backends.Rejected for a request DRF answers with 400."""
    query = info.query
    if query:  # (records picked from one page, or checked by a search and then shown, read it once)
        read = recent(read)
    pages = Pages(read, wanted.name, info.page_size)
    selection = select(read, wanted.name, wanted.pairs, query, pages.count, documents(read, pages)) \
        if query else None
    if selection is None:  # (the count the backends were given, else the run's first page's)
        run = Run.of(read, pages, wanted, info.page_sizes, pages.count if query else None)
        count, pieces = run.count, run.records(min(wanted.offset + wanted.limit, run.count))
    else:
        count = selection.count
        pieces = picked(read, pages, selection.take(wanted.offset, min(wanted.offset + wanted.limit, count)))
    yield head(count, base, wanted.links(count))
    first = True
    for piece in pieces:
        yield piece if first else b"," + piece
        first = False
    yield TAIL


def recent(read: Reader, keep: int = 16) -> Reader:
    """`read`, remembering the last few files read."""
    held: OrderedDict[str, bytes | None] = OrderedDict()

    def reading(path: str) -> bytes | None:
        if path in held:
            held.move_to_end(path)
        else:
            held[path] = read(path)
            if len(held) > keep:
                held.popitem(last=False)
        return held[path]
    return reading


def picked(read: Reader, pages: Pages, positions: Sequence[int]) -> Iterator[bytes]:
    """The records at these positions, in this order: each run of neighbours on one page at
    once, found in the page (no span's index read: a query's records lie here and there)."""
    at = 0
    while at < len(positions):
        end = at + 1
        while end < len(positions) and positions[end] == positions[end - 1] + 1 and positions[end] % pages.page_size:
            end += 1
        yield found(read, pages, positions[at], positions[end - 1] + 1)
        at = end


def documents(read: Reader, pages: Pages) -> Documents:
    """The way a request's backends read records' documents: from the pages holding them."""
    def of(positions: Sequence[int]) -> dict[int, dict]:
        return {position: orjson.loads(found(read, pages, position, position + 1)) for position in positions}
    return of


def found(read: Reader, pages: Pages, start: int, stop: int) -> bytes:
    """Records start..stop, all on one page, found in its bytes (pageindex.found_in)."""
    page = start - start % pages.page_size
    data = _page(read, pages.name, pages.page_size, page)
    return pageindex.found_in(data, page, start, stop).cut(data)


def _read_page(read: Reader, name: str, size: int, offset: int) -> bytes | None:
    """The page of `size` records at `offset` (None: there is none)."""
    return read(page_file(name, str(size), str(offset // PAGE_BUCKET), str(offset)))


def _page(read: Reader, name: str, size: int, offset: int) -> bytes:
    data = _read_page(read, name, size, offset)
    if data is None:
        raise FileNotFoundError(f"page {offset} of {name}")
    return data


class Run:
    """A run of the collection's own order from an offset: the size of the pages it is cut
    from, and the collection's count."""

    def __init__(self, read: Reader, name: str, size: int, start: int, count: int) -> None:
        self.read, self.name, self.size, self.start, self.count = read, name, size, start, count

    @classmethod
    def of(cls, read: Reader, pages: Pages, wanted: Paging, sizes: Sequence[int], count: int | None) -> "Run":
        """The run a page asks for, from the pages of the size (the default, or one the build
        wrote no larger than the limit: no more than three times the page's records) that
        hold it in the fewest files (of two such, the smaller). Where the `count` is not
        known, the first of them tells it (kept for the records), or, past the last page,
        the first span's index."""
        start, stop = wanted.offset, wanted.offset + wanted.limit
        size = min({pages.page_size, *(s for s in sizes if s <= wanted.limit)},
                   key=lambda s: ((stop - 1) // s - start // s, s))
        read = recent(read, keep=1)
        if count is None:
            first = _read_page(read, wanted.name, size, start - start % size)
            count = pages.count if first is None else int(COUNT.match(first)[1])
        return cls(read, wanted.name, size, start, count)

    def records(self, stop: int) -> Iterator[bytes]:
        """Records start..stop, a piece a page: of a page wholly wanted its results as they
        stand, of the others those found in its bytes (each page read once)."""
        if stop <= self.start:  # (past the collection's end: no record)
            return
        for page in range(self.start - self.start % self.size, stop, self.size):
            data = _page(self.read, self.name, self.size, page)
            if self.start <= page and min(page + self.size, self.count) <= stop:
                found = pageindex.every_record(data, page)
            else:
                found = pageindex.found_in(data, page, max(self.start, page), min(stop, page + self.size))
            yield found.cut(data)
