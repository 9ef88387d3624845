"""The query parameters a collection takes, each an object that owns its name, how a raw
value is read, its default, its part of a pre-built page file's name and its OpenAPI
entry, as DRF's pagination and filter classes each own theirs. The route table
(routes.py), the nginx configuration, the JavaScript router and the OpenAPI document
loop over `PAGINATION`; a new parameter is a new class here and its entry there.

Where "pre-built file or computed at request time" is decided: `Paging.file()`. A
request whose parameters are all pagination parameters, spelled plainly, names a page
file; the host serves it when the build wrote it and otherwise puts the page together
(api/assemble.py). Any other parameter (`utm_source=x`) appears in DRF's links, which no
pre-built page holds: such a request is always put together.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import querystring
from .urls import DEFAULT_LIMIT, PAGE_BUCKET, page_file
from .serving import SiteInfo

# A plain spelling: what nginx may match to a file without reading the value as int() would.
PLAIN_LIMIT = "[1-9][0-9]{0,8}"
PLAIN_OFFSET = "0|[1-9][0-9]{0,14}"  # (15 digits: exact as a JavaScript number, past any count)


@dataclass(frozen=True)
class Limit:
    """DRF's `limit`: a positive integer, clamped to max_limit; otherwise the default."""
    name: str = "limit"
    plain: str = PLAIN_LIMIT
    default_part: str = DEFAULT_LIMIT  # the pages/default link, for a host that does not know the size

    def read(self, value: str | None, site: SiteInfo) -> int:
        number = None if value is None else querystring.read_int(value)
        if number is None or number <= 0:
            return site.page_size
        return min(number, site.max_limit) if site.max_limit else number

    def openapi(self, sizes: tuple[int, ...], default: int, max_limit: int | None) -> dict[str, Any]:
        clamp = f" A larger value is taken as {max_limit} (max_limit)." if max_limit else ""
        return {
            "name": self.name, "in": "query", "required": False,
            "description": f"The page size, as DRF's LimitOffsetPagination reads it with int(): a positive "
                           f"integer is the page size; a missing, zero, negative or non-integer value is not "
                           f"an error but means the default, {default}.{clamp} Pages of "
                           f"{', '.join(map(str, sizes))} are pre-built; any other size is put together "
                           "when asked for. When given more than once, the last value counts.",
            "schema": {"anyOf": [{"type": "integer", "description": "A page size."},
                                 {"type": "string", "description": "Not an integer: the default page size."}]},
            "examples": {str(size): {"value": size} for size in sizes}}


@dataclass(frozen=True)
class Offset:
    """DRF's `offset`: a non-negative integer; otherwise 0."""
    name: str = "offset"
    plain: str = PLAIN_OFFSET
    default_part: str = "0"

    def read(self, value: str | None, site: SiteInfo) -> int:
        number = None if value is None else querystring.read_int(value)
        return 0 if number is None or number < 0 else number

    def openapi(self, sizes: tuple[int, ...], default: int, max_limit: int | None) -> dict[str, Any]:
        return {
            "name": self.name, "in": "query", "required": False,
            "description": "The index of the page's first item, as DRF reads it with int(): a non-negative "
                           "integer; a missing, negative or non-integer value is not an error but means 0. "
                           "An offset at or past the end answers an empty page. When given more than once, "
                           "the last value counts.",
            "schema": {"anyOf": [{"type": "integer", "description": "An offset."},
                                 {"type": "string", "description": "Not an integer: offset 0."}]},
            "examples": {"first": {"value": 0}, "second": {"value": default}}}


LIMIT, OFFSET = Limit(), Offset()
PAGINATION = (LIMIT, OFFSET)  # in the order a page file's name takes them


@dataclass(frozen=True)
class Paging:
    """What a request to a collection asks for: its records offset..offset+limit, the
    pairs of its query string (kept in the links), and whether it names only pagination
    parameters."""
    name: str  # the collection's URL segment
    limit: int
    offset: int
    pairs: tuple[tuple[str, str], ...]
    only_paging: bool

    @classmethod
    def read(cls, name: str, query: str, site: SiteInfo) -> "Paging":
        """Raises querystring.TooManyFields as Django does."""
        pairs = tuple(querystring.parse(query))
        limit = LIMIT.read(querystring.last(pairs, LIMIT.name), site)
        offset = OFFSET.read(querystring.last(pairs, OFFSET.name), site)
        only = all(key in (LIMIT.name, OFFSET.name) for key, _ in pairs)
        return cls(name, limit, offset, pairs, only)

    def file(self) -> str | None:
        """The pre-built page this request may be answered with (when the build wrote it)."""
        if not self.only_paging or self.offset % self.limit:
            return None
        return page_file(self.name, str(self.limit), str(self.offset // PAGE_BUCKET), str(self.offset))

    def links(self, count: int) -> tuple[str | None, str | None]:
        """The query strings of `next` and `previous` (None: null), as DRF writes them."""
        following = None
        if self.offset + self.limit < count:
            following = querystring.links_query(self.pairs, self.limit, self.offset + self.limit)
        previous = None
        if self.offset > 0:
            back = self.offset - self.limit
            previous = querystring.links_query(self.pairs, self.limit, back if back > 0 else None)
        return following, previous

