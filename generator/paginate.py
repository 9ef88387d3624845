"""Pages as DRF's LimitOffsetPagination serves them, assembled from encoded records.

Encoded records are spooled to a scratch file in collection order while detail
documents are written, because a page's `count` is only known once the whole
collection has been read; pages are then cut from the spool, one pass per page
size, holding one page in memory at a time.
"""
from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

from .urls import Resource, Urls

_LENGTH = struct.Struct("<I")


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


def pages(resource: Resource, limit: int, spool: "Spool") -> Iterator[tuple[Page, list[bytes]]]:
    """Every pre-built page of one page size: offsets 0, limit, 2*limit, ... below count;
    an empty collection has one empty page at offset 0."""
    count = len(spool)
    batch: list[bytes] = []
    offset = 0
    for data in spool:
        batch.append(data)
        if len(batch) == limit:
            yield Page(resource, limit, offset, count), batch
            offset += limit
            batch = []
    if batch or count == 0:
        yield Page(resource, limit, offset, count), batch


class Spool:
    """Encoded records appended in order to an unlinked scratch file, read back in order."""

    def __init__(self, directory: Path | None = None) -> None:
        self._file = tempfile.TemporaryFile(dir=directory)
        self._count = 0

    def append(self, data: bytes) -> None:
        self._file.write(_LENGTH.pack(len(data)))
        self._file.write(data)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[bytes]:
        self._file.flush()
        self._file.seek(0)
        read = self._file.read
        for _ in range(self._count):
            (size,) = _LENGTH.unpack(read(4))
            yield read(size)
        self._file.seek(0, os.SEEK_END)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "Spool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
