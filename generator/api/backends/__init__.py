"""The query backends: each query parameter a collection's list takes has one home here, as
DRF's `filter_backends` and `pagination_class` each own theirs. A backend owns its
parameter names and how it reads their values, the index files a build writes for it
(encoder and decoder side by side), how it narrows or orders a request's records, its
OpenAPI parameters, its 400 bodies, and its JavaScript twin, a file of its own beside it
(`<module>.js.j2`: the same reading for the hosts that run JavaScript, rendered with the
constants its `constants()` gives).

    common.py    / common.js.j2     a request as backends read it, Rejected (the 400), blocks, u32
    relations.py / relations.js.j2  django-filter's filter by a related record's id  (?authors=<id>)
    search.py    / search.js.j2     DRF's SearchFilter: terms, folding, relations joined  (?search=)
    search_index.py / .js.j2        search's index format: the term index (root, leaves, postings)
                                    and the read plan of a request, written and read in one place
                                    (a format replaced as a unit)
    ordering.py  / ordering.js.j2   DRF's OrderingFilter: ranks and sorted positions  (?ordering=)
    paging.py    / paging.js.j2     LimitOffsetPagination: limit, offset, plain page file names

`BACKENDS` is the order they run in, as DRF runs django-filter, then SearchFilter, then
OrderingFilter, then paginates: `select()` (the request time of every host), the build
(sitebuild/queries.py), the OpenAPI document (api/openapi.py) and the JavaScript hosts'
code (hosts/query.py) iterate it, and name no backend. A new backend is a module and its
twin here, and its name in ORDER.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Callable, Iterable, Sequence

from ...catalogue.resources import BY_NAME
from . import common
from .common import Backend, Documents, Reader, Records, Rejected, Request

__all__ = ["Backend", "BACKENDS", "PAGINATION", "Paging", "Rejected", "Selection", "common", "select", "configured",
           "indexing", "index_files"]


# The order they run in: DRF's filter_backends (django-filter, SearchFilter, OrderingFilter),
# then its pagination_class. A backend is its module's name here (the module's BACKEND).
ORDER = ("relations", "search", "ordering", "paging")
BACKENDS: tuple[Backend, ...] = tuple(import_module(f"{__name__}.{name}").BACKEND for name in ORDER)
PAGINATION = BACKENDS[-1]  # (paging.Pagination: what reads limit and offset, and names the pre-built pages)
Paging = PAGINATION.Paging  # (what PAGINATION.read makes of a request)


@dataclass(frozen=True)
class Selection:
    """The records a request selects, by position, in the order its page lists them."""
    positions: Sequence[int]

    @property
    def count(self) -> int:
        return len(self.positions)

    def take(self, start: int, stop: int) -> Sequence[int]:
        return self.positions[start:stop]


def select(read: Reader, name: str, pairs: Sequence[tuple[str, str]], query: dict, count: int,
           documents: Documents | None = None) -> Selection | None:
    """What the request's backends select of the collection `name` of `count` records: None
    when none of them narrows or orders (the collection as it is: pages are slices of the
    pre-built ones). `documents` reads records' documents (a search checks some terms on
    its candidates'). Raises Rejected with DRF's 400 body."""
    request = Request(read, name, pairs, query, count, documents)
    matched: Records | None = None
    for backend in BACKENDS:
        kept = backend.narrow(request, matched)
        if kept is not None:
            matched = kept if matched is None else matched & kept
    for backend in BACKENDS:  # (the first that orders; none: the collection's own order)
        arranged = backend.arrange(request, matched)
        if arranged is not None:
            return Selection(arranged)
    return None if matched is None else Selection(matched)  # (Records: their positions in order)


def configured(query: dict) -> list[str]:
    """The collections (URL segments) some backend writes index files for, in the API root's order."""
    return [name for name in BY_NAME if any(backend.indexes(name, query) for backend in BACKENDS)]


def indexing(name: str, query: dict) -> list[Backend]:
    """The backends that write index files for the collection."""
    return [backend for backend in BACKENDS if backend.indexes(name, query)]


def index_files(name: str, query: dict, documents: Iterable[dict],
                ids: Callable[[str], Iterable[str]]) -> dict[str, bytes]:
    """Every index file of one collection, made in memory from its records' documents in order
    and `ids`, the ids of every record of a collection (by URL segment)."""
    files: dict[str, bytes] = {}
    chosen = indexing(name, query)
    indexers = [backend.indexer(name, query, 0) for backend in chosen]
    for document in documents:
        for indexer in indexers:
            indexer.add([document])
    for backend, indexer in zip(chosen, indexers):
        backend.finish(name, query, files.__setitem__, [indexer.close()], ids)
    return files
