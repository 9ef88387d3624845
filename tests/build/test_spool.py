"""The record store: pages cut from the spools of several parts, any range read back."""
from __future__ import annotations

import pytest

from generator.api.pages import pages
from generator.api.urls import BY_COLLECTION
from generator.build import spool
from generator.build.spool import Spool, Spools

BOOKS = BY_COLLECTION["books"]


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


def test_spools_read_any_range_across_files(tmp_path):
    with spools(tmp_path, [3, 0, 4, 2]) as records:
        everything = [b'{"n":%d}' % i for i in range(9)]
        for start in range(10):
            for stop in range(start, 10):
                assert list(records.read(start, stop)) == everything[start:stop], (start, stop)


@pytest.mark.parametrize("budget, held", [(1 << 20, True), (10, False)])
def test_records_looked_up_often_are_held_when_small(tmp_path, monkeypatch, budget, held):
    """Record by record, the same bytes whether read where they lie or, once looked up
    often enough, sliced from the data files held whole (only when they are small)."""
    monkeypatch.setattr(spool, "HOLD_AFTER", 5)
    monkeypatch.setattr(spool, "HOLD_BYTES", budget)
    with spools(tmp_path, [3, 0, 4, 2]) as records:
        for _ in range(3):
            assert [records.record(i) for i in range(9)] == [b'{"n":%d}' % i for i in range(9)]
        assert (records._held is not None) == held
