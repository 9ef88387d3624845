"""The paging backend's parameters (api/backends/paging.py): what each says of itself in the OpenAPI
document, word for word (clients read it: it is part of the contract, and a change to it is
made here on purpose), how each reads a raw value, and the plain spellings they make
together."""
from __future__ import annotations

import pytest

from generator.api import querystring
from generator.api.backends.paging import LIMIT, OFFSET, PARAMETERS, Paging, PlainSpelling, plain_page, plain_spellings
from generator.api.serving import SiteInfo

LIMIT_WORDS = ("The page size, as DRF's LimitOffsetPagination reads it with int(): a positive integer is the page "
               "size; a missing, zero, negative or non-integer value is not an error but means the default, 12.{} "
               "Pages of 12, 24 are pre-built; any other size is put together when asked for. When given more "
               "than once, the last value counts.")
OFFSET_WORDS = ("The index of the page's first item, as DRF reads it with int(): a non-negative integer; a missing, "
                "negative or non-integer value is not an error but means 0. An offset at or past the end answers an "
                "empty page. When given more than once, the last value counts.")


def test_limit_describes_itself():
    assert LIMIT.openapi((12, 24), 12, None) == {
        "name": "limit", "in": "query", "required": False, "description": LIMIT_WORDS.format(""),
        "schema": {"anyOf": [{"type": "integer", "description": "A page size."},
                             {"type": "string", "description": "Not an integer: the default page size."}]},
        "examples": {"12": {"value": 12}, "24": {"value": 24}}}
    clamped = LIMIT.openapi((12, 24), 12, 100)
    assert clamped["description"] == LIMIT_WORDS.format(" A larger value is taken as 100 (max_limit).")


def test_offset_describes_itself():
    assert OFFSET.openapi((12, 24), 12, None) == {
        "name": "offset", "in": "query", "required": False, "description": OFFSET_WORDS,
        "schema": {"anyOf": [{"type": "integer", "description": "An offset."},
                             {"type": "string", "description": "Not an integer: offset 0."}]},
        "examples": {"first": {"value": 0}, "second": {"value": 12}}}
    assert OFFSET.openapi((24,), 24, 5)["examples"]["second"] == {"value": 24}


SITE = SiteInfo("https://x.example", "no-cache", page_size=12, max_limit=50)


@pytest.mark.parametrize("query, limit, offset", [
    ("", 12, 0), ("limit=24", 24, 0), ("limit=0", 12, 0), ("limit=-3", 12, 0), ("limit=x", 12, 0),
    ("limit=51", 50, 0), ("limit=50", 50, 0), ("offset=7", 12, 7), ("offset=-1", 12, 0), ("offset=x", 12, 0),
    ("limit=5&limit=6&offset=1&offset=2", 6, 2), ("limit=+7&offset=%2B3", 7, 3),
])
def test_a_query_string_is_read_as_drf_reads_it(query, limit, offset):
    paging = Paging.read("books", query, SITE)
    assert (paging.name, paging.limit, paging.offset, paging.query) == ("books", limit, offset, query)
    assert paging.pairs == tuple(querystring.parse(query))  # (what search, ordering and filters read)
    assert LIMIT.read(None, SITE) == 12 and OFFSET.read(None, SITE) == 0


def test_the_links_keep_the_other_parameters_and_drop_a_zero_offset():
    paging = Paging.read("books", "search=x&limit=5&offset=5", SITE)
    assert paging.links(12) == ("limit=5&offset=10&search=x", "limit=5&search=x")
    assert paging.links(10) == (None, "limit=5&search=x")
    assert Paging.read("books", "limit=5&offset=6", SITE).links(20) == ("limit=5&offset=11", "limit=5&offset=1")
    assert Paging.read("books", "limit=5", SITE).links(5) == (None, None)
    assert Paging.read("books", "limit=5", SITE).links(6) == ("limit=5&offset=5", None)


def test_the_plain_spellings_are_every_order_of_each_parameter_once():
    spellings = plain_spellings()
    patterns = [s.pattern for s in spellings]
    assert len(patterns) == len(set(patterns)) == 1 + 1 + 2 + 2 * 2 * 1  # (none; limit; 2 offsets; both, in either order)
    assert patterns[0] == "" and (spellings[0].limit, spellings[0].bucket, spellings[0].offset) == (
        LIMIT.default_part, "0", OFFSET.default_part)
    assert len(PARAMETERS) == 2
    assert plain_page("books", "") == "api/v1/books/pages/default/0/0.json"
    assert plain_page("books", "offset=24") == "api/v1/books/pages/default/0/24.json"
    assert plain_page("books", "offset=123456&limit=24") == "api/v1/books/pages/24/12/123456.json"
    assert plain_page("books", "limit=24&limit=24") is None and plain_page("books", "x=1") is None
    # (a zero among a plain value's digits, after the first: a page of 10 or 20 is a pre-built file's too)
    assert plain_page("books", "limit=100&offset=10") == "api/v1/books/pages/100/0/10.json"
    # (an offset of 15 digits at most: JavaScript's numbers hold it exactly; a longer one is put together)
    assert plain_page("books", "offset=123456789012345") == "api/v1/books/pages/default/12345678901/123456789012345.json"
    assert plain_page("books", "offset=1234567890123456") is None
    assert PlainSpelling("a", "b", "c", "d").offset == "d"
