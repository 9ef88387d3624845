"""Segments: a CSV file's cuts are record boundaries a full read makes too, and after any
edit, the old segments found again hold exactly their old bytes."""
from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLE
from generator.sitebuild import build, segments

CELL = st.text(alphabet=st.sampled_from(list('ab ,"\nکتاب')), max_size=12)
ROW = st.lists(CELL, min_size=3, max_size=3)


def encoded(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([["id", "title", "about"], *rows])
    return out.getvalue().encode()


def record_starts(data: bytes) -> set[int]:
    """The byte offsets at which a full read (csv.reader) ends a record."""
    lines = data.decode().splitlines(keepends=True)
    ends = [0]
    for line in lines:
        ends.append(ends[-1] + len(line.encode()))
    reader = csv.reader(lines)
    return {ends[reader.line_num] for _ in reader} | {len(data)}


def check_cuts(table: segments.Table, data: bytes) -> None:
    starts = record_starts(data)
    position = len(table.header)
    for segment in table.segments:
        assert segment.start == position and segment.start in starts | {len(table.header)}
        assert segment.digest == segments.digest(data[segment.start:segment.end])
        assert segment.line == data[:segment.start].count(b"\n") + 1
        position = segment.end
    assert position == len(data) or (not table.segments and position >= len(data))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ROW, max_size=40), st.lists(ROW, max_size=40), st.integers(0, 40), st.integers(0, 5),
       st.sampled_from([32, 64, 200]))
def test_segments_found_again_hold_their_old_bytes(tmp_path: Path, monkeypatch, rows, inserted, at, deleted, size):
    monkeypatch.setattr(segments, "SEGMENT", size)
    monkeypatch.setattr(segments, "SMALLEST", size)
    old_path, new_path = tmp_path / "old.csv", tmp_path / "new.csv"
    old_data = encoded(rows)
    old_path.write_bytes(old_data)
    old = segments.table(old_path, len(old_data))
    check_cuts(old, old_data)
    old = old.counted([0] * len(old.segments))
    edited = rows[:at] + inserted + rows[at + deleted:]
    new_data = encoded(edited)
    new_path.write_bytes(new_data)
    new = segments.table(new_path, len(new_data), old)
    check_cuts(new, new_data)
    for segment in new.segments:
        if segment.old >= 0:
            was = old.segments[segment.old]
            assert new_data[segment.start:segment.end] == old_data[was.start:was.end]
    if edited == rows:
        assert all(s.old >= 0 for s in new.segments)


def test_an_unclosed_quote_reads_the_rest_again(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(segments, "SEGMENT", 40)
    monkeypatch.setattr(segments, "SMALLEST", 40)
    data = encoded([[str(n), f"title {n}", "about"] for n in range(30)])
    path = tmp_path / "books.csv"
    path.write_bytes(data)
    old = segments.table(path, len(data))
    broken = data.replace(b"title 3,", b'"title 3,', 1)
    path.write_bytes(broken)
    new = segments.table(path, len(broken), old)
    first_changed = next(i for i, s in enumerate(new.segments) if s.old < 0)
    assert all(s.old < 0 for s in new.segments[first_changed:])


@pytest.mark.parametrize("newline", ["\r", "\n\r"])
def test_lines_ended_by_carriage_returns_are_read_whole(tmp_path: Path, newline: str):
    """csv counts a lone carriage return as a line end, and segments count newlines: such a
    file is not read by segment, and builds as the same file with newlines does."""
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    expected = build(data, tmp_path / "plain", processes=2).records
    books = data / "books.csv"
    text = books.read_bytes()
    assert b"\r" not in text
    books.write_bytes(text.replace(b"\n", newline.encode()))
    assert segments.table(books, books.stat().st_size) is None
    assert build(data, tmp_path / "site", processes=2).records == expected
