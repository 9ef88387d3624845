"""Pages that no file holds, put together at request time from what the build wrote: the
pre-built pages of the default size and their indexes (api/pageindex.py). Any limit and
offset DRF answers, with DRF's count and links (docs/spec/query.md §1), never from the data and
never encoding a record again: a page is a new head, slices of page files and TAIL.

`read` is the host's way to read a file of the published generation (None when there is
none); this module is the Python hosts' one implementation of request-time pages, and
hosts/templates/answers.js.j2 the JavaScript hosts'. Both answer the same requests
byte for byte (tests/hosts/test_pages_js.py).
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Callable, Iterator, Sequence

import orjson

from . import pageindex
from .pages import TAIL
from .backends import Paging, select
from .backends.common import Documents
from .urls import PAGE_BUCKET, page_file, page_index_file

Reader = Callable[[str], "bytes | None"]


class Spans:
    """The indexes of a collection's spans of pages, each read once per answer."""

    def __init__(self, read: Reader, name: str, page_size: int) -> None:
        self.read = read
        self.name = name
        self.page_size = page_size
        self._held: dict[int, pageindex.Index | None] = {}

    def index(self, span: int) -> pageindex.Index | None:
        if span not in self._held:
            first = pageindex.first_page(span, self.page_size)
            data = self.read(page_index_file(self.name, str(self.page_size), str(first // PAGE_BUCKET), str(first)))
            self._held[span] = decoded(data) if data is not None else None
        return self._held[span]

    def count(self, offset: int) -> int:
        """The collection's count: from the span of the page the offset falls in, or the first's."""
        found = self.index(pageindex.span_of(offset - offset % self.page_size))
        if found is None:
            found = self.index(0)
        if found is None:
            raise FileNotFoundError(f"the index of the first pages of {self.name}")
        return found.count


@functools.lru_cache(maxsize=64)  # (a host that keeps the files it read hands the same bytes again)
def decoded(data: bytes) -> pageindex.Index:
    return pageindex.Index.decode(data)


def head(count: int, base: str, links: tuple[str | None, str | None]) -> bytes:
    """A page's bytes before its first record; `base` is the collection's absolute URL."""
    following, previous = (None if q is None else f"{base}?{q}" for q in links)
    return b'{"count":%d,"next":%b,"previous":%b,"results":[' % (
        count, orjson.dumps(following), orjson.dumps(previous))


def answer(read: Reader, wanted: Paging, page_size: int, base: str, query: dict | None = None) -> Iterator[bytes]:
    """The page's bytes, in pieces (a large page is never held whole): the head, the records
    a piece per page file they come from, and TAIL. With the site's `query` settings, the
    request's query backends pick the records (api/backends/). Raises
    FileNotFoundError when a file it needs is missing (a generation built before there were
    indexes), backends.Rejected for a request DRF answers with 400."""
    if query:  # (records picked from one page, or checked by a search and then shown, read it once)
        read = recent(read)
    spans = Spans(read, wanted.name, page_size)
    selection = select(read, wanted.name, wanted.pairs, query, spans.count(0), documents(read, spans)) \
        if query else None
    count = spans.count(wanted.offset) if selection is None else selection.count
    stop = min(wanted.offset + wanted.limit, count)
    yield head(count, base, wanted.links(count))
    if selection is None:
        pieces = records(read, spans, wanted.offset, stop)
    else:
        pieces = picked(read, spans, selection.take(wanted.offset, stop))
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


def picked(read: Reader, spans: Spans, positions: Sequence[int]) -> Iterator[bytes]:
    """The records at these positions, in this order: each run of neighbours on one page at
    once, found in the page (no span's index read: a query's records lie here and there)."""
    at = 0
    while at < len(positions):
        end = at + 1
        while end < len(positions) and positions[end] == positions[end - 1] + 1 and positions[end] % spans.page_size:
            end += 1
        yield found(read, spans, positions[at], positions[end - 1] + 1)
        at = end


def documents(read: Reader, spans: Spans) -> Documents:
    """The way a request's backends read records' documents: from the pages holding them."""
    def of(positions: Sequence[int]) -> dict[int, dict]:
        return {position: orjson.loads(found(read, spans, position, position + 1)) for position in positions}
    return of


def found(read: Reader, spans: Spans, start: int, stop: int) -> bytes:
    """Records start..stop, all on one page, found in its bytes (pageindex.found_in)."""
    page = start - start % spans.page_size
    data = _page(read, spans, page)
    return pageindex.found_in(data, page, start, stop).cut(data)


def _page(read: Reader, spans: Spans, offset: int) -> bytes:
    """The default page at `offset`."""
    data = read(page_file(spans.name, str(spans.page_size), str(offset // PAGE_BUCKET), str(offset)))
    if data is None:
        raise FileNotFoundError(f"page {offset} of {spans.name}")
    return data


def records(read: Reader, spans: Spans, start: int, stop: int) -> Iterator[bytes]:
    """Records start..stop, as slices of the default size's pages (each page read once)."""
    at = start
    while at < stop:
        span = pageindex.span_of(at - at % spans.page_size)
        index = spans.index(span)
        if index is None:
            raise FileNotFoundError(f"the index of span {span} of {spans.name}")
        upto = min(stop, pageindex.first_page(span + 1, spans.page_size))
        for piece in pageindex.slices(index, at, upto):
            yield piece.cut(_page(read, spans, piece.page))
        at = upto
