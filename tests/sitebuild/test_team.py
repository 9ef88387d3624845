"""However many processes build it, the site is the same, and problems are found across parts."""
from __future__ import annotations

import csv
import errno
import os
import re
import signal
from pathlib import Path

import pytest

from generator.catalogue import synth
from generator.sitebuild import build, check
from generator.sitebuild import part, pipeline
from generator.sitebuild.part import Part
from generator.sitebuild.team import PartFailed
from generator.errors import DataError
from conftest import SAMPLE, served


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("synthetic") / "data"
    synth.write(data, 1500, seed=3)
    return data


@pytest.mark.parametrize("source", ["sample", "synthetic", "synthetic-yaml"])
def test_any_number_of_processes_builds_the_same_site(tmp_path: Path, synthetic: Path, source: str):
    data = {"sample": SAMPLE, "synthetic": synthetic}.get(source)
    if data is None:
        data = tmp_path / "yaml"
        synth.write(data, 700, seed=4, fmt="yaml")
    trees = []
    for processes in (1, 2, 3):
        out = tmp_path / f"site-{processes}"
        summary = build(data, out, processes=processes)
        assert summary.processes == processes
        trees.append(served(out))
    assert trees[0] == trees[1] == trees[2]
    assert len(trees[0]) > 100


def test_a_small_catalogue_is_built_in_one_process_a_larger_in_one_a_core(tmp_path: Path, synthetic: Path):
    assert build(SAMPLE, tmp_path / "sample").processes == 1
    assert sum(f.stat().st_size for f in synthetic.iterdir()) >= pipeline.ONE_PROCESS_BELOW
    assert build(synthetic, tmp_path / "synthetic").processes == max(1, min(os.cpu_count() or 1, 8))


def test_synthetic_catalogue_is_valid_and_deterministic(tmp_path: Path):
    for run in ("a", "b"):
        synth.write(tmp_path / run, 300, seed=9)
    for name in ("books.csv", "users.csv", "site.yaml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    summary = check(tmp_path / "a")
    assert summary.records["books"] < 300  # a few are disabled
    assert summary.records["author"] == 100 and summary.records["category"] == 372


@pytest.mark.parametrize("processes, chunk", [(2, None), (3, 2)])
def test_duplicates_across_parts_are_found(tmp_path: Path, synthetic: Path, monkeypatch, processes: int,
                                           chunk: int | None):
    if chunk is not None:  # (the first part checks the others' ids a few at a time)
        monkeypatch.setattr(part, "EXCHANGE_CHUNK", chunk)
    data = tmp_path / "data"
    synth.write(data, 1500, seed=3)
    users = list(csv.reader((data / "users.csv").open(encoding="utf-8")))
    copy = list(users[1])
    copy[0] = "0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c"  # a new id, the first user's username
    with (data / "users.csv").open("a", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([users[2], copy])  # last lines: the last part
    last = len(users) + 1
    with pytest.raises(DataError) as caught:
        check(data, processes=processes)
    assert [str(p) for p in caught.value.problems.items] == [
        f"data/users.csv:{last}: field 'id': {users[2][0]} is used twice in users: first on line 3",
        f"data/users.csv:{last}: field 'username': {users[2][1]!r} is already taken by the user on line 3",
        f"data/users.csv:{last + 1}: field 'username': {users[1][1]!r} is already taken by the user on line 2",
    ]


def test_another_parts_ids_are_checked_in_chunks_covering_every_range(monkeypatch):
    monkeypatch.setattr(part, "EXCHANGE_CHUNK", 2)
    assert list(part._chunks([(0, 5), (7, 8), (9, 9)])) == [(0, 2), (2, 4), (4, 5), (7, 8)]


def broken_make(number: int, how: str):
    """Part.make, failing in part `number` on books: raising, or killed."""
    original = Part.make

    def make(self, collection):
        if self.number == number and collection == "books":
            if how == "raise":
                raise RuntimeError("deliberately broken")
            if how == "full":
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, collection)
    return make


@pytest.mark.parametrize("processes, number", [(1, 0), (2, 1)])
def test_a_part_that_raises_is_a_bug_report_with_its_traceback_in_a_file(data_dir, tmp_path, monkeypatch,
                                                                         processes, number):
    monkeypatch.setattr(Part, "make", broken_make(number, "raise"))
    with pytest.raises(PartFailed) as caught:
        build(data_dir, tmp_path / "site", processes=processes)
    message = str(caught.value)
    assert message.startswith(f"part {number + 1} of {processes} of the build failed: "
                              "RuntimeError: deliberately broken\nThis is a bug in the generator")
    trace = Path(re.search(r"The traceback is in (\S+): please report it", message)[1])
    try:
        assert "in make" in trace.read_text() and "deliberately broken" in trace.read_text()
    finally:
        trace.unlink()
    assert not (tmp_path / "site" / "api").exists()


def test_a_part_that_finds_the_disk_full_says_so_not_a_bug(data_dir, tmp_path, monkeypatch):
    """A part whose write fails for want of space (ENOSPC, as a full disk raises it in the
    part's write) is reported as the disk's, not as a bug to report."""
    monkeypatch.setattr(Part, "make", broken_make(1, "full"))
    with pytest.raises(PartFailed) as caught:
        build(data_dir, tmp_path / "site", processes=2)
    message = str(caught.value)
    assert message.startswith("part 2 of 2 of the build failed: OSError: [Errno 28] No space left on device\n"
                              "The disk holding the site is full (or its quota is spent); nothing was published. "
                              "Free some space there and build again"), message
    assert "bug" not in message
    Path(re.search(r"the traceback is in (\S+)\)", message)[1]).unlink()
    assert not (tmp_path / "site" / "api").exists()


def test_a_part_killed_is_named(data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(Part, "make", broken_make(1, "kill"))
    with pytest.raises(PartFailed, match=r"^part 2 of 2 of the build died \(killed by signal 9\): "):
        build(data_dir, tmp_path / "site", processes=2)
    assert not (tmp_path / "site" / "api").exists()


def test_the_disk_full_in_the_build_s_own_process_says_so_and_publishes_nothing(tmp_path, monkeypatch):
    """A write of the build's own process (here the query indexes') failing for want of space:
    the build says the disk is full, with the file it was writing, keeps the generation
    published before and throws the new one away."""
    from generator.catalogue import synth
    from generator.errors import DiskFull
    from generator.sitebuild import queries
    from query_probes import with_settings

    synth.write(tmp_path / "plain", 60, seed=3)
    data, site = with_settings(tmp_path / "plain", tmp_path / "data"), tmp_path / "site"
    build(data, site)
    published = os.readlink(site / "current")

    def full(job, path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
    monkeypatch.setattr(queries.Job, "flush", full)
    monkeypatch.setattr(queries.Job, "read_previous", lambda job, path: None)  # (no edit: every file made again)
    with pytest.raises(DiskFull) as caught:
        build(data, site, base_url="https://elsewhere.example")
    assert str(caught.value).startswith("[Errno 28] No space left on device: '"), caught.value
    assert str(caught.value).endswith("\nThe disk holding the site is full (or its quota is spent); nothing was "
                                      "published. Free some space there and build again.")
    assert os.readlink(site / "current") == published
    assert [path.name for path in (site / ".build" / "gens").iterdir()] == [Path(published).name]
