"""Rebuilds after writes: a burst makes few builds, and a failed one is told, not hidden."""
from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

from generator.api.urls import ACCEPTED
from generator.writes.accepted import Accepted
from generator.writes.rebuild import Rebuilder


def test_a_failed_rebuild_is_logged_with_its_output_and_the_next_one_runs():
    logged: list[str] = []
    done = threading.Event()

    def log(message: str) -> None:
        logged.append(message)
        if len(logged) == 2:
            done.set()

    rebuilder = Rebuilder([sys.executable, "-c", "import sys; print('data/users.yaml:3: broken'); sys.exit(3)"], log)
    rebuilder.start()
    try:
        rebuilder.request()
        assert rebuilder.wait_idle(30)
        rebuilder.request()
        assert done.wait(30)
    finally:
        rebuilder.stop()
    assert logged == ["the rebuild failed (exit status 3); the site stays as it was:\ndata/users.yaml:3: broken"] * 2


def test_a_burst_of_requests_makes_few_builds(tmp_path):
    marks = tmp_path / "builds"
    command = [sys.executable, "-c", f"open({str(marks)!r}, 'a').write('x')"]
    rebuilder = Rebuilder(command, lambda message: None)
    rebuilder.start()
    try:
        for _ in range(50):
            rebuilder.request()
        assert rebuilder.wait_idle(30)
    finally:
        rebuilder.stop()
    assert 1 <= len(marks.read_text()) <= 2  # the one running when the burst began, and one more


def test_a_build_that_publishes_takes_away_what_it_published(tmp_path: Path):
    """What waited when the build started goes, and so does what the new generation holds;
    a record accepted while it ran (and not in it) waits for the next one."""
    out = tmp_path / "site"
    accepted = Accepted(out)
    accepted.keep("api/v1/user/aa/waited.json", b'{"a":1}')
    assert (out / ACCEPTED / "api/v1/user/aa/waited.json").read_bytes() == b'{"a":1}'
    (out / ACCEPTED / "api/v1/user/aa/.accepting-half").write_bytes(b"{")  # (one being written: not waiting)
    during = ("import pathlib, sys; out = pathlib.Path(sys.argv[1]); "
              "(out / '.accepted/api/v1/user/bb').mkdir(parents=True); "
              "(out / '.accepted/api/v1/user/bb/later.json').write_bytes(b'{}'); "
              "(out / '.accepted/api/v1/user/bb/built.json').write_bytes(b'{}'); "
              "(out / 'current/api/v1/user/bb').mkdir(parents=True); "
              "(out / 'current/api/v1/user/bb/built.json').write_bytes(b'{}')")
    logged: list[str] = []
    rebuilder = Rebuilder([sys.executable, "-c", during, str(out)], logged.append, accepted)
    rebuilder.start()
    try:
        rebuilder.request()
        assert rebuilder.wait_idle(30)
    finally:
        rebuilder.stop()
    assert accepted.waiting() == {out / ACCEPTED / "api/v1/user/bb/later.json"}
    assert (out / ACCEPTED / "api/v1/user/aa/.accepting-half").is_file()
    assert len(logged) == 1 and re.fullmatch(r"rebuilt and published in \d+\.\d\d s", logged[0])


def test_rebuilds_are_made_as_the_site_was(tmp_path: Path):
    """The same data, output, links and servers as the site's own build, by this Python."""
    rebuilder = Rebuilder.of(tmp_path / "data", tmp_path / "site", "https://ketab.example.ir", "127.0.0.1:8080",
                             "127.0.0.1:8081", lambda message: None, "paths")
    assert rebuilder.command == [sys.executable, "-m", "generator", "build", "--data", str(tmp_path / "data"),
                                 "--out", str(tmp_path / "site"), "--listen", "127.0.0.1:8080",
                                 "--write-service", "127.0.0.1:8081", "--links", "paths",
                                 "--base-url", "https://ketab.example.ir"]
    assert rebuilder._accepted.out == tmp_path / "site"
