"""A test run killed while its servers run leaves nothing behind, under pytest-xdist's workers
too (as `make test` runs the suite): the servers the workers started (nginx's master and
workers, its page service, or the built-in server) and the workers themselves all end."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT
from servers import process_exists

INNER = '''
import os, time
from pathlib import Path

import pytest

from generator.sitebuild import build
from servers import Server, runnable


@pytest.mark.parametrize("n", [0, 1])
def test_serve_until_killed(n, tmp_path):
    build(Path(os.environ["SAMPLE"]), tmp_path / "site")
    server = Server(tmp_path / "site", kind="nginx" if runnable("nginx") else "builtin")
    (Path(os.environ["STARTED"]) / str(n)).write_text(str(server.process.pid))
    time.sleep(120)
'''


def descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += children - found
            found |= children
    return found


def inner_environment() -> dict[str, str]:
    """This run's environment for the run it starts, without PYTEST_ADDOPTS: the inner run is
    all in its arguments (an outer `--basetemp` given there would have the inner run empty the
    folder this test's files lie in, its own among them)."""
    return {name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"}


def test_a_run_killed_under_xdist_leaves_no_process_behind(tmp_path: Path):
    (tmp_path / "test_inner.py").write_text(INNER, encoding="utf-8")
    started = tmp_path / "started"
    started.mkdir()
    # (its temporary folders in this test's: killed, it deletes none of them; pytest's own
    # folder of runs would keep them for three days)
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "temporary"), "-n", "2", str(tmp_path / "test_inner.py")],
        cwd=tmp_path, env={**inner_environment(), "SAMPLE": str(ROOT / "data"), "STARTED": str(started)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while len(list(started.iterdir())) < 2:  # (each worker's server answers)
            assert run.poll() is None and time.monotonic() < deadline, "the inner run did not start its servers"
            time.sleep(0.1)
        everything = descendants(run.pid)
        servers = {int(f.read_text()) for f in started.iterdir()}
        assert servers <= everything and len(everything) >= 4  # (two workers, two servers and theirs)
        os.kill(run.pid, signal.SIGKILL)  # (no chance to clean up: what is left must end by itself)
        run.wait(timeout=15)
        # (each worker notices its controller gone, waits 5 s for the test, interrupts it and
        # waits 10 s more, as execnet does: under heavy load from other programs that took
        # more than 20 s once)
        deadline = time.monotonic() + 45
        while (left := {pid for pid in everything if process_exists(pid)}) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == set()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
