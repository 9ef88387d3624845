"""Where each record lies inside the pre-built pages of the default page size: what lets
a host answer any other page (docs/spec/query.md §1) from the files the build wrote, without the
data and without encoding a record again.

A page is its head, its records joined by commas, and TAIL (api/pages.py). For each
block of page offsets (a page shard directory, api/urls.py) the build writes one index
file beside the pages: a header (a magic, the collection's count, the page size and the
offset of the block's first page) and, for each record of the block's pages in order,
the byte where it starts inside its page, as little-endian 32-bit numbers. A record ends
one byte before the next record of its page starts, or, the last of its page, where
TAIL starts. So a page of any limit and offset is a new head and slices of a few page
files: `slices()` says which.
"""
from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass
from typing import Iterator

from .pages import TAIL
from .urls import PAGE_BUCKET

MAGIC = b"CIX1"
HEADER = struct.Struct("<4sIII")  # magic, count, page size, offset of the block's first page
BIG_ENDIAN = sys.byteorder == "big"  # (the starts are little-endian on disk)


def first_page(block: int, limit: int) -> int:
    """The offset of the first page (of `limit` records) whose offset lies in the block."""
    return -(-block * PAGE_BUCKET // limit) * limit


def block_of(offset: int) -> int:
    return offset // PAGE_BUCKET


def block_pages(count: int, limit: int, block: int) -> range:
    """The offsets of the pages of a block (the first page of an empty collection included)."""
    stop = min((block + 1) * PAGE_BUCKET, max(count, 1))
    return range(first_page(block, limit), stop, limit)


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
    if starts.itemsize != 4:
        raise ValueError("an index holds 32-bit starts")
    return HEADER.pack(MAGIC, count, limit, first) + u32(starts)


@dataclass(frozen=True)
class Index:
    """One block's index, read back."""
    count: int
    limit: int
    first: int  # offset of the block's first page
    starts: array  # of each record of the block's pages, in its page

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


def slices(index: Index, start: int, stop: int) -> Iterator[Slice]:
    """The pieces of the block's pages holding records start..stop (within the block)."""
    limit = index.limit
    at = start
    while at < stop:
        page = at - at % limit
        upto = min(stop, page + limit)
        begin = index.starts[at - index.first]
        end = None if upto == page + limit or upto >= index.count else index.starts[upto - index.first] - 1
        yield Slice(page, begin, end)
        at = upto


def record_starts(head_length: int, lengths: list[int]) -> Iterator[int]:
    """Where each record of a page starts, given its head's length and the records' lengths."""
    at = head_length
    for length in lengths:
        yield at
        at += length + 1
