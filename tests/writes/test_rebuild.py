"""Rebuilds after writes: a burst makes few builds, and a failed one is told, not hidden."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from generator.api.urls import ACCEPTED
from generator.writes.accepted import Accepted
from generator.writes.rebuild import Rebuilder



def rebuild_once(rebuilder: Rebuilder, timeout: float = 30) -> None:
    """Start the rebuild thread, ask for one rebuild, wait until it has run, and stop."""
    rebuilder.start()
    try:
        rebuilder.request()
        assert rebuilder.wait_idle(timeout)
    finally:
        rebuilder.stop()

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


class Clock:
    """The rebuilder's time, moved on by the test alone, and when each build started by it: the
    test steps the rebuilder (a pause its move ends, it waits until the rebuilder has paused
    again or started a build), so what it sees does not depend on how the threads are scheduled."""

    def __init__(self) -> None:
        self.now = 0.0
        self.until: float | None = None  # the end of the rebuilder's pause, while it is in one
        self.builds: list[float] = []  # when each build started
        self.moved = threading.Condition()

    def monotonic(self) -> float:
        with self.moved:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self.moved:
            self.until = self.now + seconds
            self.moved.notify_all()
            self.moved.wait_for(lambda: self.now >= self.until)
            self.until = None
            self.moved.notify_all()

    def rebuilding(self) -> None:  # (as the Publishing the rebuilder tells of each build it starts)
        with self.moved:
            self.builds.append(self.now)
            self.moved.notify_all()

    def advance(self, seconds: float) -> None:
        with self.moved:
            builds, self.now = len(self.builds), self.now + seconds
            self.moved.notify_all()
            if self.until is not None and self.until <= self.now:
                assert self.moved.wait_for(lambda: self._pausing() or len(self.builds) > builds, 60)

    def paused(self) -> bool:
        """Whether the rebuilder is (or, within a minute, comes to be) in a pause."""
        with self.moved:
            return self.moved.wait_for(self._pausing, 60)

    def release(self) -> None:
        """Ends every pause, for good (the rebuilder's thread can stop)."""
        with self.moved:
            self.now = float("inf")
            self.moved.notify_all()

    def _pausing(self) -> bool:
        return self.until is not None and self.until > self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    from generator.writes import rebuild

    clock = Clock()
    monkeypatch.setattr(rebuild, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep,
                                                               time=time.time))
    monkeypatch.setattr(rebuild, "SETTLE", 0.5)
    return clock


def stepped(clock: Clock) -> Rebuilder:
    publishing = types.SimpleNamespace(rebuilding=clock.rebuilding, written=lambda files: None,
                                       rebuilt=lambda: None)
    return Rebuilder([sys.executable, "-c", "pass"], lambda message: None, publishing=publishing)


def burst(rebuilder: Rebuilder, clock: Clock, writes: int) -> None:
    """Writes 1/16 s apart (an eighth of SETTLE: binary fractions add up exactly), by the rebuilder's clock."""
    for _ in range(writes):
        clock.advance(1 / 16)
        rebuilder.request()


def test_a_build_waits_for_the_burst_to_end(monkeypatch, clock: Clock):
    """A build starts once no write has asked for SETTLE seconds: a burst's writes (2 s of them,
    within SETTLE_MAX) come in one build, not the first few in one of their own."""
    from generator.writes import rebuild

    monkeypatch.setattr(rebuild, "SETTLE_MAX", 30.0)
    rebuilder = stepped(clock)
    rebuilder.start()
    try:
        rebuilder.request()
        burst(rebuilder, clock, 32)
        clock.advance(rebuild.SETTLE - 1 / 16)
        assert clock.paused() and clock.builds == []  # (not a moment before SETTLE)
        clock.advance(1 / 16)
        assert rebuilder.wait_idle(60)
    finally:
        clock.release()
        rebuilder.stop()
    assert clock.builds == [2.0 + rebuild.SETTLE]


def test_a_stream_of_writes_is_not_waited_out(monkeypatch, clock: Clock):
    """A stream of writes longer than SETTLE_MAX: a build starts SETTLE_MAX after the first
    of them, and the writes after it come in the next."""
    from generator.writes import rebuild

    monkeypatch.setattr(rebuild, "SETTLE_MAX", 0.5)
    rebuilder = stepped(clock)
    rebuilder.start()
    try:
        rebuilder.request()
        assert clock.paused()  # (SETTLE_MAX counts from the first write)
        burst(rebuilder, clock, 12)  # (0.75 s: past SETTLE_MAX, never SETTLE without a write)
        assert clock.paused()
        clock.advance(rebuild.SETTLE)
        assert rebuilder.wait_idle(60)
    finally:
        clock.release()
        rebuilder.stop()
    assert clock.builds == [rebuild.SETTLE_MAX, 0.75 + rebuild.SETTLE]


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
    rebuild_once(rebuilder)
    assert accepted.waiting() == {out / ACCEPTED / "api/v1/user/bb/later.json"}
    assert (out / ACCEPTED / "api/v1/user/aa/.accepting-half").is_file()
    assert len(logged) == 1 and re.fullmatch(r"rebuilt and published in \d+\.\d\d s", logged[0])
    assert 0 < float(logged[0].split()[-2]) < 30


def test_rebuilds_are_made_as_the_site_was(tmp_path: Path):
    """The same data, output, links and servers as the site's own build, by this Python."""
    rebuilder = Rebuilder.of(tmp_path / "data", tmp_path / "site", "https://ketab.example.ir", "127.0.0.1:8080",
                             "127.0.0.1:8081", lambda message: None, "paths")
    assert rebuilder.command == [sys.executable, "-m", "generator", "build", "--data", str(tmp_path / "data"),
                                 "--out", str(tmp_path / "site"), "--listen", "127.0.0.1:8080",
                                 "--write-service", "127.0.0.1:8081", "--links", "paths",
                                 "--base-url", "https://ketab.example.ir"]
    assert rebuilder._accepted.out == tmp_path / "site"


def test_a_failed_rebuild_logs_what_it_wrote_to_either_stream():
    logged: list[str] = []
    script = "import sys; print('out'); sys.stdout.flush(); print('err', file=sys.stderr); sys.exit(2)"
    rebuilder = Rebuilder([sys.executable, "-c", script], logged.append)
    rebuild_once(rebuilder)
    assert logged == ["the rebuild failed (exit status 2); the site stays as it was:\nout\nerr"]


def test_waiting_for_a_rebuild_gives_up_after_its_timeout():
    rebuilder = Rebuilder([sys.executable, "-c", "import time; time.sleep(3)"], lambda message: None)
    rebuilder.start()
    try:
        assert [t.name for t in threading.enumerate()].count("rebuild") == 1
        rebuilder.request()
        assert rebuilder.wait_idle(0.2) is False
        assert rebuilder.wait_idle(30) is True
    finally:
        rebuilder.stop()


def test_the_rebuild_thread_does_not_keep_the_process_alive(tmp_path: Path):
    """A service that exits without stop() (an error as it starts) is not held by a rebuilder
    waiting for work: its thread is a daemon."""
    import generator.writes.rebuild
    script = ("import sys; from generator.writes.rebuild import SETTLE, Rebuilder; "
              "r = Rebuilder([sys.executable, '-c', 'pass'], print); r.start(); r.request(); r.wait_idle(30)")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(generator.writes.rebuild.__file__).parents[2],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"rebuilt and published in \d+\.\d\d s\n", done.stdout)


def test_a_rebuild_of_a_site_builds_it_as_it_was_built(data_dir: Path, tmp_path: Path):
    """Rebuilder.of: the site's own build again (its links kept), logged; the accepted
    documents it published taken away."""
    site = tmp_path / "site"
    logged: list[str] = []
    rebuilder = Rebuilder.of(data_dir, site, None, "127.0.0.1:8080", "127.0.0.1:8081", logged.append)
    Accepted(site).keep("api/v1/user/82/8162a4c5-73aa-444d-8a00-7877dd6972d1.json", b"{}")
    rebuild_once(rebuilder, 120)
    assert len(logged) == 1 and logged[0].startswith("rebuilt and published in "), logged
    assert json.loads((site / "current/api/v1/index.json").read_bytes())["books"] == \
        "https://ketab.example.ir/api/v1/books/"  # (--links api, the default)
    assert Accepted(site).waiting() == set()


class Crash(BaseException):
    """The process dying at that point."""


def test_an_accepted_document_is_written_whole_beside_its_place(tmp_path: Path, monkeypatch):
    """keep() writes a temporary file in the target's own folder (never the system's temporary
    folder: the rename that makes it whole must stay on one file system) and renames it; one
    cut short is never taken for a waiting document. A second document in the same folder,
    and one written again, are kept."""
    accepted = Accepted(tmp_path / "site")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "no-such-folder"))
    accepted.keep("api/v1/user/aa/one.json", b"1")
    accepted.keep("api/v1/user/aa/two.json", b"2")
    accepted.keep("api/v1/user/aa/two.json", b"22")
    folder = tmp_path / "site" / ACCEPTED / "api/v1/user/aa"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {"one.json": b"1", "two.json": b"22"}

    def crash(source, target):
        raise Crash
    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(Crash):
        accepted.keep("api/v1/user/aa/three.json", b"3")
    monkeypatch.undo()
    left = [p.name for p in folder.iterdir() if p.name not in ("one.json", "two.json")]
    assert len(left) == 1 and left[0].startswith(".accepting-")
    assert accepted.waiting() == {folder / "one.json", folder / "two.json"}


def test_a_document_removed_meanwhile_is_no_error(tmp_path: Path):
    """Between listing the waiting documents and removing one, someone else removed it (an
    operator clearing the folder): publishing goes on."""
    class Raced(Accepted):
        def waiting(self):
            found = super().waiting()
            for path in found:
                path.unlink()
            return found
    accepted = Raced(tmp_path / "site")
    accepted.keep("api/v1/user/aa/one.json", b"1")
    waited = Accepted(tmp_path / "site").waiting()
    accepted.published(waited)
    assert Accepted(tmp_path / "site").waiting() == set()


def test_a_stop_while_a_rebuild_settles_ends_the_thread(monkeypatch):
    """stop() between a request and the rebuild it starts (within SETTLE) is not lost: the
    service shuts down after its last write instead of waiting for ever. The settling is held
    until stop() has been asked (events, not a sleep guessing where the thread is)."""
    from generator.writes import rebuild

    rebuilder = Rebuilder([sys.executable, "-c", "pass"], lambda message: None)
    settling = threading.Event()

    def settle(seconds: float) -> None:
        settling.set()
        deadline = time.monotonic() + 30
        while not rebuilder._stopping and time.monotonic() < deadline:
            time.sleep(0.01)

    monkeypatch.setattr(rebuild, "time", types.SimpleNamespace(sleep=settle, monotonic=time.monotonic, time=time.time))
    for name in ("SETTLE", "SETTLE_MAX"):  # (the thread settles however late it wakes, until stop())
        monkeypatch.setattr(rebuild, name, 60.0)
    rebuilder.start()
    assert rebuilder.wait_idle(30)
    rebuilder.request()
    assert settling.wait(30)  # (the rebuild thread woke and is settling)
    stopping = threading.Thread(target=rebuilder.stop, daemon=True)
    stopping.start()
    stopping.join(30)
    assert not stopping.is_alive()


class Told:
    """A publishing that writes down what the rebuilder tells it, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def rebuilding(self) -> None:
        self.calls.append(("rebuilding",))

    def written(self, files: list[tuple[str, str]]) -> None:
        self.calls.append(("written", files))

    def rebuilt(self) -> None:
        self.calls.append(("rebuilt",))


@pytest.mark.parametrize("status", [0, 3])
def test_the_files_a_build_announces_are_passed_on_as_they_come_and_left_out_of_its_output(status: int):
    """Between rebuilding() and rebuilt() (a build that publishes: none after a failed one), the
    files the build announced, in order (those read at once in one call); its other lines are
    what a failure logs."""
    script = ("import sys, time; from generator.system import announce_written as a; print('reading', flush=True); "
              "a('api/v1/user/aa/1.json', '/s/1'); a('api/v1/user/bb/2.json', '/s/2'); time.sleep(0.5); "
              f"a('api/v1/user/cc/3.json', '/s/3'); print('broken', flush=True); sys.exit({status})")
    told, logged = Told(), []
    rebuild_once(Rebuilder([sys.executable, "-c", script], logged.append, publishing=told))
    kinds = [call[0] for call in told.calls]
    assert kinds[0] == "rebuilding" and kinds[-1] == ("rebuilt" if status == 0 else "written")
    assert [file for call in told.calls if call[0] == "written" for file in call[1]] == [
        ("api/v1/user/aa/1.json", "/s/1"), ("api/v1/user/bb/2.json", "/s/2"), ("api/v1/user/cc/3.json", "/s/3")]
    assert 2 <= kinds.count("written") <= 3  # (the pause between the second and the third)
    if status:
        assert "reading\nbroken" in logged[0] and "written" not in logged[0]


def test_the_build_s_output_is_read_on_while_announced_files_go_up(tmp_path):
    """A publishing slow to take announced files (an upload) does not stop the build: its output
    is read on meanwhile. The build announces a file, then says more than a pipe holds, then
    leaves a mark; the publishing takes the file only once the mark is there (waiting for it:
    read in turn, the build would stop at a full pipe and never make it)."""
    mark = tmp_path / "done"
    script = ("import sys; from generator.system import announce_written as a; a('api/v1/user/aa/1.json', '/s/1'); "
              f"sys.stdout.write('x' * (1 << 20) + '\\n'); sys.stdout.flush(); open({str(mark)!r}, 'w').close()")

    class Slow(Told):
        def written(self, files: list[tuple[str, str]]) -> None:
            for _ in range(600):  # (a guard: a minute at most)
                if mark.exists():
                    break
                time.sleep(0.1)
            self.calls.append(("written", files, mark.exists()))

    told = Slow()
    rebuild_once(Rebuilder([sys.executable, "-c", script], lambda message: None, publishing=told), timeout=120)
    assert told.calls == [("rebuilding",), ("written", [("api/v1/user/aa/1.json", "/s/1")], True), ("rebuilt",)]
