"""The process that creates a part's files: what it writes, what it reports, that it ends."""
from __future__ import annotations

import io
import os

import pytest

from generator.build.writer import FRAME, FileWriter, serve


def framed(*files: tuple[str, bytes]) -> bytes:
    out = b""
    for path, data in files:
        out += FRAME.pack(len(path.encode()), len(data)) + path.encode() + data
    return out


def test_serve_creates_every_file_framed(tmp_path):
    report = io.BytesIO()
    serve(io.BytesIO(framed((f"{tmp_path}/a.json", b"{}"), (f"{tmp_path}/ب.json", b"x" * 100_000),
                            (f"{tmp_path}/empty", b""))), report)
    assert (tmp_path / "a.json").read_bytes() == b"{}"
    assert (tmp_path / "ب.json").read_bytes() == b"x" * 100_000
    assert (tmp_path / "empty").read_bytes() == b""
    assert report.getvalue() == b""


def test_serve_reports_the_first_failure_and_writes_nothing_after_it(tmp_path):
    (tmp_path / "taken").write_bytes(b"old")
    report = io.BytesIO()
    serve(io.BytesIO(framed((f"{tmp_path}/first", b"1"), (f"{tmp_path}/taken", b"new"),
                            (f"{tmp_path}/after", b"2"))), report)
    assert (tmp_path / "first").exists() and not (tmp_path / "after").exists()
    assert (tmp_path / "taken").read_bytes() == b"old"
    assert report.getvalue() == f'[17, "File exists", "{tmp_path}/taken"]'.encode()


def test_serve_drops_a_file_cut_short(tmp_path):
    # (the part died while sending it: a file must never be half-written)
    whole = framed((f"{tmp_path}/whole", b"1"), (f"{tmp_path}/cut", b"0123456789"))
    serve(io.BytesIO(whole[:-3]), io.BytesIO())
    assert (tmp_path / "whole").exists() and not (tmp_path / "cut").exists()


def children() -> set[int]:
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
        return {int(pid) for pid in f.read().split()}


def test_the_writer_process_writes_and_ends(tmp_path):
    before = children()
    writer = FileWriter()
    for k in range(1000):
        writer.write(f"{tmp_path}/{k}.json", b'{"k":%d}' % k)
    writer.close()
    assert children() == before
    assert len(os.listdir(tmp_path)) == 1000
    assert (tmp_path / "999.json").read_bytes() == b'{"k":999}'


def test_the_writer_process_raises_a_file_already_there(tmp_path):
    (tmp_path / "taken").write_bytes(b"old")
    writer = FileWriter()
    writer.write(f"{tmp_path}/taken", b"new")
    with pytest.raises(FileExistsError) as raised:
        writer.close()
    assert raised.value.filename == f"{tmp_path}/taken"


def test_the_writer_process_raises_any_other_failure(tmp_path):
    writer = FileWriter()
    writer.write(f"{tmp_path}/no-such-directory/a.json", b"{}")
    with pytest.raises(FileNotFoundError):
        writer.close()


def test_an_abandoned_writer_process_ends(tmp_path):
    before = children()
    writer = FileWriter()
    writer.write(f"{tmp_path}/a.json", b"{}")
    writer.abandon()
    assert children() == before
