"""Pages as DRF's LimitOffsetPagination serves them, assembled from encoded records.

A page is a sequence of encoded records (the build's record store) between its head
(count and links, written as DRF writes them) and TAIL; `count` is the length of the
whole sequence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol

import orjson

from .urls import Resource, Urls


class Records(Protocol):
    """Encoded records in collection order."""

    def __len__(self) -> int: ...

    def read(self, start: int, stop: int) -> Iterator[bytes]: ...


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
        return self.head(urls) + b",".join(results) + TAIL

    def head(self, urls: Urls) -> bytes:
        """The page's bytes before its first record."""
        return b'{"count":%d,"next":%b,"previous":%b,"results":[' % (
            self.count, orjson.dumps(self.next(urls)), orjson.dumps(self.previous(urls)))


TAIL = b"]}"  # a page's bytes after its last record


def page_count(count: int, limit: int) -> int:
    """Pages of one size: an empty collection still has its one, empty, first page."""
    return max(-(-count // limit), 1)
