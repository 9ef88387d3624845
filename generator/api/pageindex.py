"""Where the records lie inside the pre-built pages: what lets a host answer any other page
(docs/spec/query.md §1) from the files the build wrote, without the data and without
encoding a record again.

A page is its head, its records joined by commas, and TAIL (api/pages.py). The page
offsets are cut into spans of PAGE_INDEX_SPAN (api/urls.py), a divisor of a page shard
directory's PAGE_BUCKET; a span's pages are those whose offset lies in it, so its first
page is the first multiple of the page size at or after the span's start (`first_page`)
(with pages larger than a span, some spans have none). For each span with pages the build
writes one index file beside them, named after its first page: a header (a magic, the
collection's count, the page size and the offset of the span's first page) and, for each
record of the span's pages in order, the byte where it starts inside its page, as
little-endian 32-bit numbers (some 4 KB a span). A record ends one byte before the next
record of its page starts, or, the last of its page, where TAIL starts. A host reads the
first span's index for the count alone, where no page it reads tells it (a query's, or an
offset past the last page): it finds the records in their pages' bytes (`found_in`), so
that a run of records, or a record a query picks here and there, costs its pages alone,
where the spans' indexes would add one file for each span the pages lie in.
"""
from __future__ import annotations

import re
import struct
import sys
from array import array
from dataclasses import dataclass
from typing import Iterator

from .pages import TAIL
from .urls import PAGE_INDEX_SPAN

MAGIC = b"CIX1"
RESULTS = b'"results":['  # (where a page's head ends: api/assemble.head)
# the next bracket outside a string, past the strings and the rest (possessive: a page that is
# not one fails at once, never backtracks)
BRACKET = re.compile(rb'(?:[^"{}\[\]]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([{}\[\]])')
HEADER = struct.Struct("<4sIII")  # magic, count, page size, offset of the span's first page
BIG_ENDIAN = sys.byteorder == "big"  # (the starts are little-endian on disk)


def first_page(span: int, limit: int) -> int:
    """The offset of the first page (of `limit` records) whose offset lies in the span or,
    when none does, after it."""
    return -(-span * PAGE_INDEX_SPAN // limit) * limit


def span_of(offset: int) -> int:
    return offset // PAGE_INDEX_SPAN


def span_pages(count: int, limit: int, span: int) -> range:
    """The offsets of the pages of a span (the first page of an empty collection included)."""
    stop = min((span + 1) * PAGE_INDEX_SPAN, max(count, 1))
    return range(first_page(span, limit), stop, limit)


def u32(values) -> bytes:
    """Numbers as little-endian uint32s (page and query indexes)."""
    data = array("I", values)
    if BIG_ENDIAN:
        data.byteswap()
    return data.tobytes()


def read_u32(data: bytes) -> array:
    values = array("I")
    values.frombytes(data)
    if BIG_ENDIAN:
        values.byteswap()
    return values


def encode(count: int, limit: int, first: int, starts: array) -> bytes:
    return HEADER.pack(MAGIC, count, limit, first) + u32(starts)


@dataclass(frozen=True)
class Index:
    """One span's index, read back."""
    count: int
    limit: int
    first: int  # offset of the span's first page
    starts: array  # of each record of the span's pages, in its page

    @classmethod
    def decode(cls, data: bytes) -> "Index":
        magic, count, limit, first = HEADER.unpack_from(data)
        if magic != MAGIC:
            raise ValueError("not a page index")
        return cls(count, limit, first, read_u32(data[HEADER.size:]))


@dataclass(frozen=True)
class Slice:
    """Some records, all in the page at offset `page`: its bytes from `begin` to `end`,
    where `end` is None for "up to TAIL"."""
    page: int
    begin: int
    end: int | None

    def cut(self, page: bytes) -> bytes:
        return page[self.begin:len(page) - len(TAIL) if self.end is None else self.end]


def every_record(page: bytes, offset: int) -> Slice:
    """The records of the page at `offset`, all of them: its `results` array's inside."""
    return Slice(offset, page.index(RESULTS) + len(RESULTS), None)


def found_in(page: bytes, offset: int, start: int, stop: int) -> Slice:
    """Records start..stop, all in the page at `offset`, found in its bytes: the objects of
    its `results` array, each ending where the brackets outside strings close it."""
    first, last = start - offset, stop - offset
    at = every_record(page, offset).begin
    depth, seen, begin = 0, 0, at
    for bracket in BRACKET.finditer(page, at):
        if bracket[1] in b"{[":
            depth += 1
            continue
        depth -= 1
        if depth == 0:
            seen += 1
            if seen == first:
                begin = bracket.end() + 1  # (past the comma)
            if seen == last:
                return Slice(offset, begin, bracket.end())
    raise ValueError(f"the page at {offset} holds no records {start}..{stop}")


def record_starts(head_length: int, lengths: list[int]) -> Iterator[int]:
    """Where each record of a page starts, given its head's length and the records' lengths."""
    at = head_length
    for length in lengths:
        yield at
        at += length + 1
