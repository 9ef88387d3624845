"""Appending a record keeps every byte of the file, reads back as written, survives a crash."""
from __future__ import annotations

import hashlib
import json
import re
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


CSV_ROW = '0b7e5d8c-1c55-4f4e-a0b3-6f3f5d1c2a10,true,"say ""hi"", then\nleave"'


@pytest.mark.parametrize("text, added", [
    ("id,username,bio\n", CSV_ROW + "\n"),
    ("id,username,bio\r\nx1,a,\r\n", CSV_ROW + "\r\n"),  # the file's own line ends
    ("\ufeffid,username,bio\nx1,a,b", "\n" + CSV_ROW + "\n"),  # no final newline: one comes first
])
def test_csv(tmp_path: Path, text: str, added: str):
    path = tmp_path / "users.csv"
    path.write_bytes(text.encode("utf-8"))
    rows = appended(path, ROW)
    assert rows[-1] == ROW
    assert path.read_bytes() == (text + added).encode("utf-8")


def test_csv_cells_in_the_header_order_a_missing_one_empty(tmp_path: Path):
    """A column the record does not give is an empty cell; a column whose name needs
    quoting (a comma in it) is read back as the build reads the header."""
    path = tmp_path / "users.csv"
    path.write_text('id,"user,name",note,bio\n', encoding="utf-8")
    row = {"bio": "b", "id": "x1", "user,name": "u"}
    assert appended(path, row)[-1] == {"id": "x1", "user,name": "u", "note": "", "bio": "b"}
    assert path.read_text(encoding="utf-8") == 'id,"user,name",note,bio\nx1,u,,b\n'


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("bio", ["a\rb", "a\nb", "a\r\nb", "ends\r", "\r"])
def test_a_cell_with_a_line_end_is_quoted_whatever_the_files_line_ends(tmp_path: Path, newline: str, bio: str):
    """A lone carriage return too, in a file of "\\n" lines (csv quotes only its own line
    terminator's characters): the cell reads back as written, the row ends as the file's do."""
    path = tmp_path / "users.csv"
    path.write_bytes(f"id,username,bio{newline}".encode())
    assert appended(path, {"id": "x1", "username": "u", "bio": bio}) == [{"id": "x1", "username": "u", "bio": bio}]
    assert path.read_bytes() == f'id,username,bio{newline}x1,u,"{bio}"{newline}'.encode()


def test_csv_without_a_header_row(tmp_path: Path):
    path = tmp_path / "users.csv"
    path.write_text("", encoding="utf-8")
    with pytest.raises(append.CannotAppend, match=f"^{re.escape(source(path).name)} has no header row: records cannot be added to it$"):
        append.DataFile(source(path))


@pytest.mark.parametrize("suffix, row", [
    (".yaml", {"username": "a", "bio": "\ud800"}),  # (a surrogate: YAML escapes it, and cannot read it back)
    (".yaml", {"username": "a", "bio": "next\x85line"}),  # (NEL: written, read back as a space)
    (".csv", {"username": ""}),  # (one empty cell reads back as a blank line: no record)
])
def test_a_record_that_would_not_read_back_the_same_is_refused(tmp_path: Path, suffix: str, row: dict):
    path = tmp_path / f"users{suffix}"
    path.write_text("username\n" if suffix == ".csv" else "", encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(append.CannotAppend,
                       match=f"^the record cannot be written to {re.escape(source(path).name)} so that it "
                             "reads back the same$"):
        append.DataFile(source(path)).encode(row)
    assert path.read_bytes() == before


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


def test_yaml_text_as_a_librarian_would_write_it(tmp_path: Path):
    """Block style at the list's indentation, the record's own field order, Persian as it
    is (not escaped), a long value on one line, a word YAML 1.1 reads as false quoted; and
    a value the build's reader takes (a tab after a key) does not stop an append."""
    path = tmp_path / "users.yaml"
    path.write_text("  - username: a\n    bio: \t\n", encoding="utf-8")
    row = {"username": "کتاب‌خوان", "bio": "واژه " * 30, "first_name": "no"}
    assert appended(path, row)[-1] == row
    assert path.read_text(encoding="utf-8") == (
        "  - username: a\n    bio: \t\n"
        "  - username: کتاب‌خوان\n    bio: '" + "واژه " * 30 + "'\n    first_name: 'no'\n")


@pytest.mark.parametrize("text, message", [
    ("[{username: a}]", "not a block list"), ("username: a\n", "not a block list"),
    ("- username: a\n...\n", "document marker"), ("- username: [\n", "not valid YAML"),
    ("- username: a\n...\n# the end\n", "document marker"),
])
def test_yaml_that_cannot_take_a_record(tmp_path: Path, text: str, message: str):
    path = tmp_path / "users.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(append.CannotAppend, match=f"^{re.escape(source(path).name)} (is|ends with) [^:]*{message}"):
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
    assert append.recover(journal).startswith(outcome)
    assert path.read_bytes() == b"id,username\nx1,a\n" + (record if written == len(record) else b"")
    assert not journal.exists()


def test_recover_cuts_a_record_of_the_right_length_but_other_bytes(tmp_path: Path):
    path = tmp_path / "users.csv"
    path.write_bytes(b"id,username\nx1,a\n")
    journal = journal_for(path, 17, b"x2,bbbbbbbb\n")
    with path.open("ab") as f:
        f.write(b"x2,bbbbbbbX\n")
    assert append.recover(journal) == "removed a partly written record from the end of users.csv"
    assert path.read_bytes() == b"id,username\nx1,a\n"


class Crash(BaseException):
    """The process dying at that point (nothing after it runs)."""


@pytest.mark.parametrize("whole", [True, False])
def test_a_crash_after_the_journal_is_written_is_recovered(tmp_path: Path, monkeypatch, whole: bool):
    """The journal, flushed before the file is touched, names the file, its size before and
    the record's length and hash (readable by its owner only); after a crash mid-write,
    recover() keeps a whole record and cuts a partial one."""
    path = tmp_path / "users.csv"
    path.write_bytes(b"id,username\nx1,a")  # (no final newline: the record gets one first)
    file = append.DataFile(source(path))
    text = file.encode({"id": "x2", "username": "b"})
    real = append.os.pwrite

    def pwrite(fd, data, offset):
        real(fd, data if whole else data[:3], offset)
        raise Crash
    monkeypatch.setattr(append.os, "pwrite", pwrite)
    journal = tmp_path / append.JOURNAL
    with pytest.raises(Crash):
        file.append(text, journal)
    monkeypatch.undo()
    record = b"\n" + text
    assert json.loads(journal.read_bytes()) == {"path": str(path.absolute()), "size": 16, "length": len(record),
                                                "sha256": hashlib.sha256(record).hexdigest()}
    assert journal.stat().st_mode & 0o777 == 0o600
    assert append.recover(journal) == (
        "kept the record appended last to users.csv: it was written whole" if whole
        else "removed a partly written record from the end of users.csv")
    assert path.read_bytes() == b"id,username\nx1,a" + (record if whole else b"")
    assert not journal.exists()


def test_a_short_write_is_cut_off_and_raised(tmp_path: Path, monkeypatch):
    path = tmp_path / "users.csv"
    path.write_bytes(b"id,username\n")
    file = append.DataFile(source(path))
    text = file.encode({"id": "x2", "username": "b"})
    real = append.os.pwrite
    monkeypatch.setattr(append.os, "pwrite", lambda fd, data, offset: real(fd, data[:3], offset))
    with pytest.raises(OSError, match=f"^only 3 of {len(text)} bytes could be written$"):
        file.append(text, tmp_path / append.JOURNAL)
    monkeypatch.undo()
    assert path.read_bytes() == b"id,username\n"


def test_recover_drops_a_cut_journal(tmp_path: Path):
    journal = tmp_path / append.JOURNAL
    journal.write_text('{"path": "/x", "si')
    assert append.recover(journal) == "removed an incomplete journal entry; no data file had been changed"
    assert not journal.exists()
    assert append.recover(journal) is None


def test_an_append_after_a_failed_one_recovers_first(tmp_path: Path):
    """A journal left for the same file (an append that failed) is settled, not waited on."""
    path = tmp_path / "users.csv"
    path.write_bytes(b"id,username,bio\n")
    journal_for(path, path.stat().st_size, b"x9,never,written\n")
    rows = appended(path, ROW)
    assert rows == [ROW]
