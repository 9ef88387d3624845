"""Appending a record keeps every byte of the file, reads back as written, survives a crash."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from generator.catalogue import load
from generator.writes import append
from generator.errors import Problems

ROW = {"id": "0b7e5d8c-1c55-4f4e-a0b3-6f3f5d1c2a10", "username": "true", "bio": 'say "hi", then\nleave'}


def source(path: Path) -> load.Source:
    return load.Source("users", path, "csv" if path.suffix == ".csv" else "yaml", size=path.stat().st_size)


def appended(path: Path, row: dict) -> list[dict]:
    before = path.read_bytes()
    file = append.DataFile(source(path))
    file.append(file.encode(row), path.parent / append.JOURNAL)
    after = path.read_bytes()
    assert after.startswith(before)  # every existing byte kept
    assert not (path.parent / append.JOURNAL).exists()
    problems = Problems()
    rows = [r for _, r in source(path).rows(problems)]
    assert not problems
    return rows


@pytest.mark.parametrize("text", [
    "id,username,bio\n", "id,username,bio\r\nx1,a,\r\n", "\ufeffid,username,bio\nx1,a,b",  # no final newline
])
def test_csv(tmp_path: Path, text: str):
    path = tmp_path / "users.csv"
    path.write_bytes(text.encode("utf-8"))
    rows = appended(path, ROW)
    assert rows[-1] == ROW
    if "\r\n" in text:
        assert path.read_bytes().endswith(b"\r\n")


def test_csv_without_the_column(tmp_path: Path):
    path = tmp_path / "users.csv"
    path.write_text("id,username\n", encoding="utf-8")
    with pytest.raises(append.CannotAppend, match="has no column 'bio'"):
        append.DataFile(source(path)).encode(ROW)


@pytest.mark.parametrize("text", [
    "", "# users\n", "- username: a\n  bio: |\n    two\n    lines\n", "  - username: a\n    bio: b",
    "- {username: a}\n# the end\n",
])
def test_yaml(tmp_path: Path, text: str):
    path = tmp_path / "users.yaml"
    path.write_text(text, encoding="utf-8")
    rows = appended(path, ROW)
    assert rows[-1] == ROW


@pytest.mark.parametrize("text, message", [
    ("[{username: a}]", "not a block list"), ("username: a\n", "not a block list"),
    ("- username: a\n...\n", "document marker"), ("- username: [\n", "not valid YAML"),
])
def test_yaml_that_cannot_take_a_record(tmp_path: Path, text: str, message: str):
    path = tmp_path / "users.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(append.CannotAppend, match=message):
        append.DataFile(source(path))


def journal_for(path: Path, size: int, text: bytes) -> Path:
    journal = path.parent / append.JOURNAL
    journal.write_text(json.dumps({"path": str(path), "size": size, "length": len(text),
                                   "sha256": hashlib.sha256(text).hexdigest()}))
    return journal


@pytest.mark.parametrize("written, outcome", [(5, "removed a partly written record"), (12, "kept the record")])
def test_recover_after_a_crash_mid_append(tmp_path: Path, written: int, outcome: str):
    """Cut short, the record was never answered and goes; whole, it may have been, and stays."""
    path = tmp_path / "users.csv"
    path.write_bytes(b"id,username\nx1,a\n")
    record = b"x2,bbbbbbbb\n"
    journal = journal_for(path, 17, record)
    with path.open("ab") as f:
        f.write(record[:written])
    assert outcome in append.recover(journal)
    assert path.read_bytes() == b"id,username\nx1,a\n" + (record if written == len(record) else b"")
    assert not journal.exists()


def test_recover_drops_a_cut_journal(tmp_path: Path):
    journal = tmp_path / append.JOURNAL
    journal.write_text('{"path": "/x", "si')
    assert "incomplete journal" in append.recover(journal)
    assert not journal.exists()
    assert append.recover(journal) is None


def test_an_append_after_a_failed_one_recovers_first(tmp_path: Path):
    """A journal left for the same file (an append that failed) is settled, not waited on."""
    path = tmp_path / "users.csv"
    path.write_bytes(b"id,username,bio\n")
    journal_for(path, path.stat().st_size, b"x9,never,written\n")
    rows = appended(path, ROW)
    assert rows == [ROW]
