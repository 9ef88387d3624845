"""`catalogue serve` stops as a user stops it, with every server installed here: Ctrl-C at
a terminal (SIGINT to the whole foreground process group, the page service and the write
service included, as a terminal sends it) and SIGTERM to the process alone (as a service
manager or `kill` sends it). Each time: exit status 0, at most one line on stderr after
the word that it is ready and no traceback, and not one process of those it started left.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SAMPLE
from generator.sitebuild import build
from servers import free_port, process_exists, release, server_params
from test_interrupted import descendants

READY_WITHIN = 120  # seconds (the write service's first rebuild and Node's start, on a loaded machine)
STOPPED_WITHIN = 20

# (the group's SIGINT, as a terminal's Ctrl-C; the process's SIGTERM, as a service manager's)
STOPS = [pytest.param(signal.SIGINT, True, id="ctrl-c"), pytest.param(signal.SIGTERM, False, id="sigterm")]


def start(site: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    """`catalogue serve` in a session of its own (its group, as a terminal's foreground
    job), its stderr in a file; once it says it is ready."""
    log = site.parent / "serve.log"
    port, write_port = free_port(), free_port()
    release(port)
    release(write_port)
    process = subprocess.Popen([sys.executable, "-m", "generator", "serve", "--site", str(site), "--port", str(port),
                                "--write-port", str(write_port), *args],
                               stdout=subprocess.DEVNULL, stderr=log.open("wb"), start_new_session=True)
    deadline = time.monotonic() + READY_WITHIN
    while "ready: " not in log.read_text(encoding="utf-8"):
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):  # (it ended, and its group with it: none left to stop)
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            pytest.fail(f"serve did not get ready:\n{log.read_text(encoding='utf-8')}")
        time.sleep(0.1)
    return process, log


def stop_and_check(process: subprocess.Popen, log: Path, signum: int, whole_group: bool) -> None:
    started = descendants(process.pid)  # (nginx, its page service, Node, Deno, the write service)
    if whole_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    try:
        status = process.wait(STOPPED_WITHIN)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"serve did not stop within {STOPPED_WITHIN} s")
    said = log.read_text(encoding="utf-8").split("(Ctrl-C stops)\n", 1)[1]
    assert status == 0, said
    assert "Traceback" not in said and len(said.splitlines()) <= 1, said
    deadline = time.monotonic() + 5
    while (left := {pid for pid in started if process_exists(pid)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == set(), f"left running: {left}"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    build(SAMPLE, tmp_path / "site")
    return tmp_path / "site"


@pytest.mark.parametrize("signum, whole_group", STOPS)
@pytest.mark.parametrize("kind", server_params())
def test_a_signal_stops_serve_quietly(kind: str, signum: int, whole_group: bool, site: Path):
    """And before it is ready, it says what it starts and nothing else (Deno printed a
    notice of its legacy abort behaviour)."""
    process, log = start(site, "--server", kind)
    before = log.read_text(encoding="utf-8").split("ready: ", 1)[0].splitlines()
    assert before and all(line.startswith("starting ") for line in before), before
    stop_and_check(process, log, signum, whole_group)


@pytest.mark.parametrize("signum, whole_group", STOPS)
def test_a_signal_stops_serve_with_its_write_service_quietly(signum: int, whole_group: bool, data_dir: Path,
                                                            tmp_path: Path):
    """serve --data: the default server, and the write service with its first rebuild."""
    tokens = tmp_path / "tokens"
    subprocess.run([sys.executable, "-m", "generator", "token", "add", "librarian", "--tokens", str(tokens)],
                   check=True, capture_output=True)
    process, log = start(tmp_path / "site", "--data", str(data_dir), "--tokens", str(tokens))
    stop_and_check(process, log, signum, whole_group)
