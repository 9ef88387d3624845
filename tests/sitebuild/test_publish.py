"""Publishing: atomic, survives a killed build, keeps two generations, one build at a time."""
from __future__ import annotations

import csv
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from generator.sitebuild import build
from generator.sitebuild.publish import Generation, OutputError, Site
from conftest import ROOT, served, site_state

KILL_AFTER = """
import os, signal, sys
from generator.sitebuild import publish as write
from generator.sitebuild import build
limit, count = int(sys.argv[3]), [0]
original = write.Generation.write
def write_then_die(self, path, data):
    count[0] += 1
    if count[0] > limit:  # the whole build, all its processes, no cleanup: as if killed
        os.killpg(0, signal.SIGKILL)
    original(self, path, data)
write.Generation.write = write_then_die
build(sys.argv[1], sys.argv[2], processes=int(sys.argv[4]))
"""


def generations(out: Path) -> list[str]:
    return sorted(p.name for p in (out / ".build/gens").iterdir())


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("after", [0, 1, 40, 70])
def test_killed_build_leaves_site_intact_and_next_build_correct(data_dir: Path, tmp_path: Path, after: int,
                                                                processes: int):
    out = tmp_path / "site"
    build(data_dir, out)
    published = served(out)
    state = site_state(out)
    (data_dir / "site.yaml").write_text(  # every file changes: a kill can land anywhere
        "base_url: https://new.example\npage_sizes: [5]\n", encoding="utf-8")
    killed = subprocess.run([sys.executable, "-c", KILL_AFTER, str(data_dir), str(out), str(after),
                             str(processes)], cwd=ROOT, capture_output=True, start_new_session=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert served(out) == published and str((out / "current").readlink()) == state["current"][1]
    assert generations(out) == ["000001", "000002"]  # the killed build's partial generation
    build(data_dir, out, background=False)
    assert generations(out) == ["000001", "000003"]  # collected by the next build
    assert "api/v1/books/pages/5/0/40.json" in served(out)
    assert b'"next":"https://new.example/api/v1/books/?limit=5&offset=5"' in served(out)[
        "api/v1/books/index.json"]


def test_two_generations_are_kept(data_dir: Path, tmp_path: Path):
    out = tmp_path / "site"
    for n in range(4):
        build(data_dir, out, base_url=f"https://host{n}.example", background=False)
    assert generations(out) == ["000003", "000004"]
    assert os.readlink(out / "current") == ".build/gens/000004"
    assert os.readlink(out / "api") == "current/api"


def test_an_edit_links_the_old_shards_and_they_outlive_their_generation(data_dir: Path, tmp_path: Path):
    """An edit's skeleton takes the previous skeleton's link of each shard it did not touch (a
    hard link to the symlink): the site reads as a clean build's, also once the generations it
    took them from are deleted, and a shard it wrote is linked anew."""
    out = tmp_path / "site"
    build(data_dir, out, background=False)
    first = out / os.readlink(out / "current")
    books = data_dir / "books.csv"
    with books.open(encoding="utf-8", newline="") as f:
        titles = [row["title"] for row in csv.DictReader(f)][:2]
    for n, title in enumerate(titles):  # the second edit's build collects the first generation
        books.write_text(books.read_text(encoding="utf-8").replace(f",{title},", f",{title} (ویرایش),", 1),
                         encoding="utf-8")
        build(data_dir, out, background=False)
        if n == 0:
            second = out / os.readlink(out / "current")
            shards = Site(out).shards(second)
            shared = [s for s in shards if (first / s).is_symlink()
                      and os.lstat(first / s).st_ino == os.lstat(second / s).st_ino]
            assert shared and len(shared) < len(shards)  # the edited book's shard is new
    assert not first.exists()
    clean = tmp_path / "clean"
    build(data_dir, clean, background=False)
    assert served(out) == served(clean)


def test_publishing_replaces_the_tree_as_one(data_dir: Path, tmp_path: Path):
    out = tmp_path / "site"
    build(data_dir, out, base_url="https://one.example")
    held = (out / "api").resolve()  # what a reader that opened the old tree holds
    build(data_dir, out, base_url="https://two.example")
    assert all(b"https://two.example/" in data for data in served(out).values())  # (.gz left out)
    assert b"https://one.example/" in (held / "v1/index.json").read_bytes()


def test_one_build_at_a_time(data_dir: Path, tmp_path: Path):
    out = tmp_path / "site"
    with Site(out).locked():
        with pytest.raises(OutputError, match="another build is writing .* right now"):
            build(data_dir, out)


def test_refuses_to_replace_a_real_directory(data_dir: Path, tmp_path: Path):
    out = tmp_path / "site"
    (out / "api").mkdir(parents=True)
    (out / "api/keep.txt").write_text("not ours")
    with pytest.raises(OutputError, match="is a real directory"):
        build(data_dir, out)
    assert (out / "api/keep.txt").read_text() == "not ours"


def test_unchanged_data_writes_nothing(data_dir: Path, tmp_path: Path):
    out = tmp_path / "site"
    first = build(data_dir, out)
    state = site_state(out)
    again = build(data_dir, out)
    assert again.written == 0 and (again.files, again.bytes, again.records) == (first.files, first.bytes, first.records)
    assert site_state(out) == state  # not a file touched, not a generation made


REBUILD_LOOP = """
import sys
from generator.sitebuild import build
for n in range(int(sys.argv[3])):
    build(sys.argv[1], sys.argv[2], base_url=f"https://host{n % 2}.example", processes=1, background=False)
"""


def test_a_reader_never_finds_the_site_missing_or_mixed_while_builds_publish(data_dir: Path, tmp_path: Path):
    """Builds publish again and again in another process; a reader going through `api`
    always finds a whole generation: the file there, its bytes of one build."""
    out = tmp_path / "site"
    build(data_dir, out, base_url="https://host1.example", background=False)
    stop, seen, reads = threading.Event(), [], [0]

    def reader() -> None:
        root, page = out / "api/v1/index.json", out / "api/v1/books/pages/default/0/12.json"
        while not stop.is_set():
            try:
                first, second = root.read_bytes(), page.read_bytes()
            except OSError as exc:
                seen.append(repr(exc))
                continue
            for data in (first, second):  # each whole (it parses), of one build (one host)
                json.loads(data)
                hosts = set(re.findall(rb"https://([^/]+)/api/v1/", data))
                if len(hosts) != 1 or not hosts <= {b"host0.example", b"host1.example"}:
                    seen.append(hosts)
            reads[0] += 1

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        subprocess.run([sys.executable, "-c", REBUILD_LOOP, str(data_dir), str(out), "12"], cwd=ROOT, check=True)
    finally:
        stop.set()
        thread.join()
    assert seen == [] and reads[0] > 100


def test_a_gzip_twin_from_4_kib_exactly(tmp_path: Path):
    """docs/architecture.md: files of 4 KiB or more have a .gz twin; smaller ones are served as they are."""
    (tmp_path / "gen").mkdir()
    (tmp_path / "store").mkdir()
    generation = Generation(tmp_path / "gen", tmp_path / "store", 1)
    generation.write("api/v1/small.json", b"x" * 4095)
    generation.write("api/v1/large.json", b"y" * 4096)
    assert not (tmp_path / "gen/api/v1/small.json.gz").exists()
    assert gzip.decompress((tmp_path / "gen/api/v1/large.json.gz").read_bytes()) == b"y" * 4096
