"""DRF LimitOffsetPagination's links and page bytes, case by case."""
from __future__ import annotations

import pytest

from generator.api.pages import Page, page_count
from generator.api.urls import BY_COLLECTION, Urls

BOOKS = BY_COLLECTION["books"]
URLS = Urls("https://ketab.example.ir")
B = "https://ketab.example.ir/api/v1/books/"


def links(count: int, limit: int, offset: int) -> tuple:
    page = Page(BOOKS, limit, offset, count)
    return page.next(URLS), page.previous(URLS)


@pytest.mark.parametrize("count, limit, offset, expected_next, expected_previous", [
    # first page of several
    (42, 12, 0, B + "?limit=12&offset=12", None),
    # second page: previous drops the offset, as DRF does when it would be 0
    (42, 12, 12, B + "?limit=12&offset=24", B + "?limit=12"),
    # a middle page
    (42, 12, 24, B + "?limit=12&offset=36", B + "?limit=12&offset=12"),
    # last, partial page
    (42, 12, 36, None, B + "?limit=12&offset=24"),
    # exact multiple: the last page is full and has no next
    (36, 12, 24, None, B + "?limit=12&offset=12"),
    (24, 12, 12, None, B + "?limit=12"),
    # one item, and a collection that fits one page exactly
    (1, 12, 0, None, None),
    (12, 12, 0, None, None),
    # empty collection
    (0, 12, 0, None, None),
    # other page sizes
    (42, 24, 0, B + "?limit=24&offset=24", None),
    (42, 24, 24, None, B + "?limit=24"),
    (100, 5, 95, None, B + "?limit=5&offset=90"),
    (100, 1, 1, B + "?limit=1&offset=2", B + "?limit=1"),
])
def test_links(count, limit, offset, expected_next, expected_previous):
    assert links(count, limit, offset) == (expected_next, expected_previous)


def test_envelope_bytes_are_drf_compact():
    page = Page(BOOKS, 2, 2, 5)
    assert page.encode(URLS, [b'{"a":1}', b'{"b":2}']) == (
        b'{"count":5,"next":"https://ketab.example.ir/api/v1/books/?limit=2&offset=4",'
        b'"previous":"https://ketab.example.ir/api/v1/books/?limit=2","results":[{"a":1},{"b":2}]}')
    assert Page(BOOKS, 12, 0, 0).encode(URLS, []) == b'{"count":0,"next":null,"previous":null,"results":[]}'


def test_the_envelope_to_check_is_the_pages_fields_without_records():
    assert Page(BOOKS, 2, 2, 5).envelope(URLS) == {
        "count": 5, "next": B + "?limit=2&offset=4", "previous": B + "?limit=2", "results": []}
    assert Page(BOOKS, 12, 0, 0).envelope(URLS) == {"count": 0, "next": None, "previous": None, "results": []}


@pytest.mark.parametrize("count, limit, pages", [
    (0, 12, 1), (1, 12, 1), (11, 12, 1), (12, 12, 1), (13, 12, 2), (24, 12, 2), (25, 12, 3), (42, 5, 9), (1, 1, 1),
])
def test_a_size_has_a_page_for_every_offset_below_the_count_and_an_empty_collection_one(count, limit, pages):
    assert page_count(count, limit) == pages
