"""Pages as DRF's LimitOffsetPagination serves them, assembled from encoded records.

Encoded records are spooled to scratch files in collection order while detail
documents are written (one file per process), because a page's `count` is only
known once the whole collection has been read; pages are then cut from the
spools, each process its own range of pages, one page in memory at a time.
"""
from __future__ import annotations

import bisect
import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

from .urls import Resource, Urls

@dataclass(frozen=True)
class Page:
    resource: Resource
    limit: int
    offset: int
    count: int

    def next(self, urls: Urls) -> str | None:
        if self.offset + self.limit >= self.count:
            return None
        return urls.page(self.resource, self.limit, self.offset + self.limit)

    def previous(self, urls: Urls) -> str | None:
        if self.offset <= 0:
            return None
        # DRF drops the offset parameter when the previous page starts at 0.
        return urls.page(self.resource, self.limit, max(self.offset - self.limit, 0))

    def envelope(self, urls: Urls) -> dict:
        """The page's fields other than results, as a document to check."""
        return {"count": self.count, "next": self.next(urls), "previous": self.previous(urls),
                "results": []}

    def encode(self, urls: Urls, results: list[bytes]) -> bytes:
        return b'{"count":%d,"next":%b,"previous":%b,"results":[%b]}' % (
            self.count, orjson.dumps(self.next(urls)), orjson.dumps(self.previous(urls)),
            b",".join(results))


def page_count(count: int, limit: int) -> int:
    """Pages of one size: an empty collection still has its one, empty, first page."""
    return max(-(-count // limit), 1)


def pages(resource: Resource, limit: int, records: "Spools", first: int = 0,
          last: int | None = None) -> Iterator[tuple[Page, list[bytes]]]:
    """The pre-built pages of one page size, numbers first to last (exclusive; all by
    default): offsets 0, limit, 2*limit, ... below count; an empty collection has one
    empty page at offset 0."""
    count = len(records)
    total = page_count(count, limit)
    last = total if last is None else min(last, total)
    for number in range(first, last):
        offset = number * limit
        yield Page(resource, limit, offset, count), list(records.read(offset, min(offset + limit, count)))


class Spool:
    """Encoded records appended in order to a scratch file; its index of offsets is saved
    beside it on close, so that any process can read any range of them (Spools)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("wb")
        self._ends = array("Q")
        self._size = 0

    def append(self, data: bytes) -> None:
        self._file.write(data)
        self._size += len(data)
        self._ends.append(self._size)

    def __len__(self) -> int:
        return len(self._ends)

    def close(self) -> None:
        self._file.close()
        with open(f"{self.path}.index", "wb") as f:
            self._ends.tofile(f)

    def __enter__(self) -> "Spool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


READ_BLOCK = 1 << 22  # bytes read at once


class Spools:
    """The spools of all parts of a collection, read as one sequence of records."""

    def __init__(self, paths: list[Path]) -> None:
        self._parts = []
        for path in paths:
            ends = array("Q")
            with open(f"{path}.index", "rb") as f:
                ends.frombytes(f.read())
            self._parts.append((os.open(path, os.O_RDONLY), ends))
        self._count = sum(len(ends) for _, ends in self._parts)

    def __len__(self) -> int:
        return self._count

    def read(self, start: int, stop: int) -> Iterator[bytes]:
        """Records start to stop (exclusive), a read per block of records."""
        for fd, ends in self._parts:
            low, high = max(start, 0), min(stop, len(ends))
            while low < high:
                base = ends[low - 1] if low else 0
                upto = min(high, bisect.bisect_right(ends, base + READ_BLOCK, low, high) or low + 1)
                upto = max(upto, low + 1)  # at least one record, however large
                blob = os.pread(fd, ends[upto - 1] - base, base)
                previous = base
                for end in ends[low:upto]:
                    yield blob[previous - base:end - base]
                    previous = end
                low = upto
            start, stop = start - len(ends), stop - len(ends)
            if stop <= 0:
                return

    def close(self) -> None:
        for fd, _ in self._parts:
            os.close(fd)

    def __enter__(self) -> "Spools":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
