"""Page files and their gzip twins, assembled from runs of encoded records that are each
read, joined and compressed once for all the page sizes that hold them.

The page sizes of a site are usually multiples of one another (12 and 24): a page of 24
books is two runs of 12, each also a page of 12. So every page is laid out as runs of
the largest divisor of its size up to 12 records, a length that depends on nothing else:
a page's twin is the same bytes whatever the site's other page sizes, so that a page a
rebuild takes over is the one a clean build would make.

A deflate stream may be cut into pieces that each end on a byte boundary (a sync flush)
and refer to nothing before them (a fresh compressor each): such pieces laid side by
side are one valid stream. A run is therefore compressed once and spliced into the twin
of every page that holds it, between stored blocks for the few bytes that differ from
page to page (its count and links, the commas between runs, the closing brackets);
gzip's trailer is the CRC-32 and length of the whole page. Compressing each page whole
took more of a build than checking every document against its schema.
"""
from __future__ import annotations

import struct
from typing import Iterator

from isal import isal_zlib

from ..api import pageindex
from ..api.pages import TAIL, Page, Records, page_count
from ..api.serving import GZIP_MIN
from ..api.urls import Urls
from .publish import GZIP_LEVEL

# The records of a run: at most RUN, and at least MIN_RUN (shorter runs compress too
# poorly alone): a page of 25 has no such divisor and is compressed whole.
RUN = 12
MIN_RUN = 8
# gzip's header with no name and no time (as publish.gzip writes it): the same bytes
# always make the same file.
HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
STORED_MAX = 0xFFFF


def deflated(data: bytes) -> bytes:
    """data as raw deflate blocks that end on a byte boundary, to be joined with others."""
    compressor = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(isal_zlib.Z_SYNC_FLUSH)


def stored(data: bytes, final: bool = False) -> bytes:
    """data as stored (uncompressed) deflate blocks; `final` ends the stream."""
    pieces = []
    for start in range(0, max(len(data), 1), STORED_MAX):
        chunk = data[start:start + STORED_MAX]
        last = final and start + STORED_MAX >= len(data)
        pieces.append(struct.pack("<BHH", last, len(chunk), len(chunk) ^ 0xFFFF) + chunk)
    return b"".join(pieces)


def gzip_file(data: bytes, pieces: list[bytes]) -> bytes:
    """The gzip file of `data`, given the deflate pieces it was cut into (the last final)."""
    return b"".join((HEADER, *pieces, struct.pack("<II", isal_zlib.crc32(data), len(data) & 0xFFFFFFFF)))


_COMMA, _TAIL = stored(b","), stored(TAIL, final=True)


def run_size(limit: int) -> int:
    """The length of the runs a page of `limit` records is made of (`limit`: one run)."""
    for size in range(min(limit, RUN), MIN_RUN - 1, -1):
        if limit % size == 0:
            return size
    return limit


def offsets_of_part(count: int, sizes: tuple[int, ...], part: int, parts: int) -> tuple[int, int]:
    """The range of page offsets one of `parts` parts makes pages for: cut at multiples of
    the largest size so that the parts share few runs."""
    step = max(sizes)
    blocks = page_count(count, step)
    low = blocks * part // parts * step
    high = blocks * (part + 1) // parts * step if part < parts - 1 else count + 1
    return low, high


def share(count: int, sizes: tuple[int, ...], part: int, parts: int) -> list[tuple[int, int]]:
    """(offset, limit) of the pages of every size that one of `parts` parts makes, in
    offset order: those starting in its range of the records."""
    low, high = offsets_of_part(count, sizes, part, parts)
    found = []
    for limit in sizes:
        last = (page_count(count, limit) - 1) * limit
        found.extend((offset, limit) for offset in range(-(-low // limit) * limit, min(high, last + 1), limit))
    return sorted(found)


class Runs:
    """A collection's encoded records as runs, each joined with commas once and deflated
    once (when a page holding it is large enough to have a twin). Pages must be asked for
    in offset order: the runs before the last page asked for are let go."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self._joined: dict[tuple[int, int], bytes] = {}
        self._deflated: dict[tuple[int, int], bytes] = {}

    def page(self, page: Page, urls: Urls) -> tuple[bytes, bytes | None]:
        """The page's bytes and, when it is large enough, its gzip twin."""
        self._let_go(page.offset)
        keys = list(self._runs(page))
        head = page.head(urls)
        data = b"".join((head, b",".join(self._join(key) for key in keys), TAIL))
        if len(data) < GZIP_MIN:
            return data, None
        pieces = [stored(head)]
        for key in keys:
            if len(pieces) > 1:
                pieces.append(_COMMA)
            pieces.append(self._deflate(key))
        pieces.append(_TAIL)
        return data, gzip_file(data, pieces)

    def _runs(self, page: Page) -> Iterator[tuple[int, int]]:
        """(start, length) of the runs that make up the page."""
        stop = min(page.offset + page.limit, page.count)
        size = run_size(page.limit)
        for start in range(page.offset, stop, size):
            yield start, min(size, stop - start)

    def _join(self, key: tuple[int, int]) -> bytes:
        joined = self._joined.get(key)
        if joined is None:
            start, length = key
            joined = self._joined[key] = b",".join(self.records.read(start, start + length))
        return joined

    def _deflate(self, key: tuple[int, int]) -> bytes:
        done = self._deflated.get(key)
        if done is None:
            done = self._deflated[key] = deflated(self._join(key))
        return done

    def _let_go(self, offset: int) -> None:
        for held in (self._joined, self._deflated):
            for key in [key for key in held if key[0] < offset]:
                del held[key]


def index_spans(count: int, limit: int, low: int, high: int) -> Iterator[tuple[range, int]]:
    """(page offsets, end of their records) of each span of pages of `limit` records whose
    first page's offset lies in low..high: whose index a part writes."""
    for span in range(pageindex.span_of(low), pageindex.span_of(min(high, max(count, 1)) - 1) + 1):
        pages = pageindex.span_pages(count, limit, span)
        if pages and low <= pages[0] < high:
            yield pages, min(pages[-1] + limit, count)
