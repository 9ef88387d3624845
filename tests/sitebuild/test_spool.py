"""The record store: the spools of several parts read back as one, any range."""
from __future__ import annotations

import pytest

from generator.sitebuild import spool
from generator.sitebuild.spool import Spool, Spools


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
