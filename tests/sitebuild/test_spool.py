"""The record store: the spools of several parts read back as one, any range."""
from __future__ import annotations

import orjson
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
        assert (records.held is not None) == held


@pytest.mark.parametrize("budget, held", [(1 << 20, True), (10, False)])
def test_records_referred_to_in_another_part_s_file_are_held_where_they_lie(tmp_path, monkeypatch, budget, held):
    """A spool that refers to records of another data file (as a rebuild's spools do): each
    record, and each embedded one (Stored, too large to be kept one by one), is its own bytes
    whether read where it lies or sliced from the held files."""
    from generator.sitebuild.state import Stored
    monkeypatch.setattr(spool, "HOLD_AFTER", 5)
    monkeypatch.setattr(spool, "HOLD_BYTES", budget)
    monkeypatch.setattr(Stored, "MEMO", 0)
    with Spool(tmp_path / "records.0") as first:
        for n in range(3):
            first.append(b'{"n":%d}' % n)
    with Spool(tmp_path / "records.1") as second:
        second.append(b'{"n":3}')
        second.refer(("records.0.data", 0, 7))  # (record 0 again, from the first part's file)
        second.append(b'{"n":5}')
    expected = [b'{"n":0}', b'{"n":1}', b'{"n":2}', b'{"n":3}', b'{"n":0}', b'{"n":5}']
    with Spools([tmp_path / "records.0", tmp_path / "records.1"]) as records:
        stored = Stored({f"id{i}": i for i in range(6)}, records)
        for _ in range(3):
            assert [records.record(i) for i in range(6)] == expected
            assert orjson.dumps([stored[f"id{i}"] for i in range(6)]) == b"[" + b",".join(expected) + b"]"
        assert (records.held is not None) == held
