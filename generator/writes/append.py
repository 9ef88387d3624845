"""Append one record to a collection's data file, durably, in the file's own format.

Every existing byte of the file stays as it is: the record is added at its end (after
a newline, if the last line had none) as one more CSV row in the header's column
order, or one more item of the YAML list at the list's indentation. The text is read
back with the build's own readers before it is written, so what is appended is what
the next build loads.

A crash must never leave a file that does not load. Before the file is touched, the
append is written to a journal (its offset and bytes) and flushed; the file is then
written in one call and flushed; only then is the journal removed and the caller told.
`recover()` completes the picture after a crash: an append found whole in the file
stays (its request may have been answered), a partial one is cut off (it was not).
Writers hold an exclusive lock of the file while appending; a build takes a shared
lock to learn how far to read (catalogue/load.settled), so it never sees half a record.
"""
from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from ..catalogue import load
from ..errors import CatalogueError, Problems
from ..system import fsync_dir

JOURNAL = "append.journal"


class CannotAppend(CatalogueError):
    """The data file cannot take a record without being rewritten."""


class DataFile:
    """A collection's data file, as far as appending to it goes."""

    def __init__(self, source: load.Source) -> None:
        self.source = source
        self.path = source.path
        if source.format == "csv":
            self.columns = tuple(h.strip() for h in load.csv_header(self.path))
            if not self.columns:
                raise CannotAppend(f"{source.name} has no header row: records cannot be added to it")
            with self.path.open("rb") as f:
                header_line = f.readline()
            self._newline = "\r\n" if header_line.endswith(b"\r\n") else "\n"  # as the file has it
        else:
            self.columns = None
            self._indent = _yaml_indent(self.path, source.name)

    @property
    def holds_ids(self) -> bool:
        """Whether a record's id can be written (else the build derives it from the record)."""
        return self.columns is None or "id" in self.columns

    def encode(self, row: dict[str, Any]) -> bytes:
        """The text of one more record, fields in `row`'s order (in CSV, the header's)."""
        if self.columns is not None:
            missing = [name for name in row if name not in self.columns]
            if missing:
                raise CannotAppend(f"{self.source.name} has no column {missing[0]!r}: add it to the header row")
            out = io.StringIO()
            # (written with CRLF, so that a cell holding either character is quoted, whichever
            # the file's line ends: csv quotes only its own terminator's characters, and a lone
            # "\r" unquoted in a file of "\n" lines would read back as two rows)
            csv.writer(out, lineterminator="\r\n").writerow([_cell(row.get(c)) for c in self.columns])
            text = out.getvalue().removesuffix("\r\n") + self._newline
        else:
            dumped = yaml.safe_dump([row], allow_unicode=True, sort_keys=False, default_flow_style=False,
                                    width=1 << 30)
            text = "".join(self._indent + line for line in dumped.splitlines(keepends=True))
        self._check(text, row)
        return text.encode("utf-8")

    def _check(self, text: str, row: dict[str, Any]) -> None:
        """Read the text back as the build reads the file: one record, the same fields."""
        scratch = Problems()
        if self.columns is not None:
            header = ",".join(_quote(c) for c in self.columns) + self._newline
            rows = list(load.csv_rows_of(io.StringIO(header + text), self.source, scratch))
            expected = {c: _cell(row.get(c)) for c in self.columns}
        else:
            rows = list(load.yaml_rows_of(io.StringIO(text), self.source, scratch))
            expected = row
        if scratch or len(rows) != 1 or rows[0][1] != expected:
            raise CannotAppend(f"the record cannot be written to {self.source.name} so that it reads back the same")

    def append(self, text: bytes, journal: Path) -> None:
        """Add the text at the end of the file and flush it to disk; with the journal,
        a crash at any point leaves either the file as it was or with the whole record."""
        recover(journal)  # (before the lock: it takes the file's lock itself, on a descriptor of its own)
        fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                text = b"\n" + text
            _write_journal(journal, self.path, size, text)
            try:
                written = os.pwrite(fd, text, size)
                if written != len(text):
                    raise OSError(f"only {written} of {len(text)} bytes could be written")
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)  # never leave part of a record behind
                os.fsync(fd)
                raise
            journal.unlink()
            fsync_dir(journal.parent)
        finally:
            os.close(fd)  # (and the lock with it)


def recover(journal: Path) -> str | None:
    """Finish what a crashed append left: keep its record if it was written whole, else
    cut off what part of it was. Returns what was done, for the log."""
    try:
        entry = json.loads(journal.read_bytes())
        path, size, length, digest = Path(entry["path"]), entry["size"], entry["length"], entry["sha256"]
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):  # the journal itself was cut short: the file was not touched
        journal.unlink()
        return "removed an incomplete journal entry; no data file had been changed"
    with path.open("r+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(size)
        tail = f.read(length + 1)
        if len(tail) == length and hashlib.sha256(tail).hexdigest() == digest:
            done = f"kept the record appended last to {path.name}: it was written whole"
        else:
            f.truncate(size)
            done = f"removed a partly written record from the end of {path.name}"
        os.fsync(f.fileno())
    journal.unlink()
    fsync_dir(journal.parent)
    return done


def _write_journal(journal: Path, path: Path, size: int, text: bytes) -> None:
    entry = {"path": str(path.absolute()), "size": size, "length": len(text),
             "sha256": hashlib.sha256(text).hexdigest()}
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(entry).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(journal.parent)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _quote(name: str) -> str:
    return f'"{name}"' if re.search(r'[",\r\n]', name) else name


_ITEM = re.compile(rb"^( *)-(?: |$)", re.M)


def _yaml_indent(path: Path, name: str) -> str:
    """The indentation of the top-level list's dashes; a file that is not a block list
    (a flow list `[...]`, several documents) cannot be appended to."""
    text = path.read_bytes()
    try:
        node = yaml.compose(text, Loader=load.Loader)
    except yaml.YAMLError as exc:
        raise CannotAppend(f"{name} is not valid YAML: fix it before records are added") from exc
    if node is None:
        return ""  # empty: the record starts the list
    if not isinstance(node, yaml.SequenceNode) or node.flow_style:
        raise CannotAppend(f"{name} is not a block list of records (- key: value): records cannot be added to it")
    if re.search(rb"^(?:---|\.\.\.)\s*$", text[node.end_mark.index:], re.M):
        raise CannotAppend(f"{name} ends with a YAML document marker: remove it before records are added")
    return " " * node.start_mark.column
