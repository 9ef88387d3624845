"""DRF LimitOffsetPagination's links and page cuts, case by case."""
from __future__ import annotations

import pytest

from generator.paginate import Page, Spool, Spools, pages
from generator.urls import BY_COLLECTION, Urls

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


def spools(tmp_path, sizes: list[int]) -> Spools:
    """Records 0..n-1 spread over one spool file per part, of the given sizes."""
    paths, n = [], 0
    for part, size in enumerate(sizes):
        with Spool(tmp_path / f"records.{part}") as spool:
            for _ in range(size):
                spool.append(b'{"n":%d}' % n)
                n += 1
        paths.append(tmp_path / f"records.{part}")
    return Spools(paths)


@pytest.mark.parametrize("count, limit, offsets", [
    (42, 12, [0, 12, 24, 36]),
    (36, 12, [0, 12, 24]),
    (1, 12, [0]),
    (0, 12, [0]),  # one empty page for an empty collection
    (5, 1, [0, 1, 2, 3, 4]),
    (42, 100, [0]),
])
@pytest.mark.parametrize("split", [[1.0], [0.5, 0.5], [0.0, 0.3, 0.0, 0.7]])
def test_pages_cover_the_collection_once(tmp_path, count, limit, offsets, split):
    sizes = [round(count * share) for share in split]
    sizes[-1] = count - sum(sizes[:-1])
    with spools(tmp_path, sizes) as records:
        assert len(records) == count
        total = len(offsets)
        for parts in (1, 2, 3):  # pages cut by several parts, each its range
            cut = [(page.offset, results) for k in range(parts)
                   for page, results in pages(BOOKS, limit, records, total * k // parts, total * (k + 1) // parts)]
            assert [offset for offset, _ in cut] == offsets
            items = [item for _, results in cut for item in results]
            assert items == [b'{"n":%d}' % i for i in range(count)]
            assert all(len(results) <= limit for _, results in cut)


def test_envelope_bytes_are_drf_compact():
    page = Page(BOOKS, 2, 2, 5)
    assert page.encode(URLS, [b'{"a":1}', b'{"b":2}']) == (
        b'{"count":5,"next":"https://ketab.example.ir/api/v1/books/?limit=2&offset=4",'
        b'"previous":"https://ketab.example.ir/api/v1/books/?limit=2","results":[{"a":1},{"b":2}]}')
    assert Page(BOOKS, 12, 0, 0).encode(URLS, []) == b'{"count":0,"next":null,"previous":null,"results":[]}'


def test_spools_read_any_range_across_files(tmp_path):
    with spools(tmp_path, [3, 0, 4, 2]) as records:
        everything = [b'{"n":%d}' % i for i in range(9)]
        for start in range(10):
            for stop in range(start, 10):
                assert list(records.read(start, stop)) == everything[start:stop], (start, stop)
