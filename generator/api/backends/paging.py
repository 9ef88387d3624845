"""DRF's LimitOffsetPagination (docs/spec/query.md §1), the registry's `pagination_class`:
`limit` and `offset`, each an object that owns its name, how a raw value is read, its
default, its part of a pre-built page file's name and its OpenAPI entry; `Paging`, what a
request asks for, and DRF's links. paging.js.j2 is its JavaScript twin.

Where "pre-built file or computed at request time" is decided: `plain_page()`. A query
string of pagination parameters alone, spelled plainly (the site's own links), names a
page file, by patterns every host holds (the route table, nginx's map, the JavaScript
router); the host serves it when the build wrote it and otherwise puts the page together
(api/assemble.py) from what `Paging.read()` makes of the query string. Any other
parameter (`utm_source=x`) appears in DRF's links, which no pre-built page holds: such a
request is always put together. Patterns are in the common subset of Python's, PCRE's
and JavaScript's regular expressions. Its index is the page index the build writes with
every page (api/pageindex.py).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from .. import querystring
from ..serving import SiteInfo
from ..urls import BUCKET_DIGITS, DEFAULT_LIMIT, PAGE_INDEX_SPAN, page_file
from .common import Backend

# A plain spelling: what a pattern may match to a file without reading the value as int() would.
PLAIN_LIMIT = "[1-9][0-9]{0,8}"
PLAIN_SMALL_OFFSET = f"0|[1-9][0-9]{{0,{BUCKET_DIGITS - 1}}}"  # an offset of the first block of pages
PLAIN_OFFSET_BLOCK = "[1-9][0-9]{0,10}"  # the block of a larger one (15 digits in all: exact in JavaScript)


@dataclass(frozen=True)
class Limit:
    """DRF's `limit`: a positive integer, clamped to max_limit; otherwise the default."""
    name: str = "limit"
    default_part: str = DEFAULT_LIMIT  # the pages/default link, for a host that does not know the size

    def plain(self) -> list[tuple[str, dict[str, str]]]:
        """Its plain spellings, each with the parts of a page file's name its groups give."""
        return [(f"{self.name}=(?P<catalogue_limit>{PLAIN_LIMIT})", {"limit": "catalogue_limit"})]

    def read(self, value: str | None, site: SiteInfo) -> int:
        return querystring.limit_of(value, site.page_size, site.max_limit)

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
    default_part: str = "0"

    def plain(self) -> list[tuple[str, dict[str, str]]]:
        return [(f"{self.name}=(?P<catalogue_offset>{PLAIN_SMALL_OFFSET})", {"offset": "catalogue_offset"}),
                (f"{self.name}=(?P<catalogue_offset>(?P<catalogue_bucket>{PLAIN_OFFSET_BLOCK})[0-9]{{{BUCKET_DIGITS}}})",
                 {"offset": "catalogue_offset", "bucket": "catalogue_bucket"})]

    def read(self, value: str | None, site: SiteInfo) -> int:
        return querystring.offset_of(value)

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
PARAMETERS = (LIMIT, OFFSET)


@dataclass(frozen=True)
class PlainSpelling:
    """A query string of pagination parameters only, spelled plainly: its pattern (named
    groups), and the parts of the page file it names: a group's name, or the part itself."""
    pattern: str
    limit: str
    bucket: str
    offset: str


def plain_spellings() -> list[PlainSpelling]:
    """Every plain spelling: no parameter, or some of them once each in any order."""
    found = []
    for size in range(len(PARAMETERS) + 1):
        for order in itertools.permutations(PARAMETERS, size):
            for chosen in itertools.product(*(p.plain() for p in order)):
                parts = {"limit": LIMIT.default_part, "bucket": "0", "offset": OFFSET.default_part}
                for _, named in chosen:
                    parts.update(named)
                found.append(PlainSpelling("&".join(pattern for pattern, _ in chosen), **parts))
    return found


_PLAIN = [(re.compile(spelling.pattern), spelling) for spelling in plain_spellings()]


def plain_page(name: str, query: str) -> str | None:
    """The page file a plainly spelled query string names (it may not exist), or None."""
    for pattern, spelling in _PLAIN:
        if found := pattern.fullmatch(query):
            parts = [found[part] if part.startswith("catalogue_") else part
                     for part in (spelling.limit, spelling.bucket, spelling.offset)]
            return page_file(name, *parts)
    return None


@dataclass(frozen=True)
class Paging:
    """What a request to a collection asks for: its records offset..offset+limit, and its
    query string as received (DRF's links keep every parameter of it)."""
    name: str  # the collection's URL segment
    limit: int
    offset: int
    query: str
    pairs: tuple[tuple[str, str], ...] = ()  # the query string's parameters, as request.GET holds them

    @classmethod
    def read(cls, name: str, query: str, site: SiteInfo) -> "Paging":
        """Raises querystring.TooManyFields as Django does."""
        pairs = tuple(querystring.parse(query))
        limit = LIMIT.read(querystring.last(pairs, LIMIT.name), site)
        offset = OFFSET.read(querystring.last(pairs, OFFSET.name), site)
        return cls(name, limit, offset, query, pairs)

    def links(self, count: int) -> tuple[str | None, str | None]:
        """The query strings of `next` and `previous` (None: null), as DRF writes them."""
        following = None
        if self.offset + self.limit < count:
            following = querystring.links_query(self.query, self.limit, self.offset + self.limit)
        previous = None
        if self.offset > 0:
            back = self.offset - self.limit
            previous = querystring.links_query(self.query, self.limit, back if back > 0 else None)
        return following, previous


class Pagination(Backend):
    """The backend: what it reads is `Paging`; its files are the pages and their indexes."""
    name = "paging"
    index_format = f"an index a span of {PAGE_INDEX_SPAN}"  # ("1": one a block of PAGE_BUCKET offsets)
    parameters = PARAMETERS
    Paging = Paging
    read = staticmethod(Paging.read)
    plain_page = staticmethod(plain_page)
    plain_spellings = staticmethod(plain_spellings)

    def shared_openapi(self, settings) -> list[dict]:
        return [p.openapi(settings.page_sizes, settings.default_page_size, settings.max_limit) for p in PARAMETERS]

    def constants(self) -> dict:
        return {"limit": LIMIT.name, "offset": OFFSET.name}


BACKEND = Pagination()
