"""Rebuilds after writes: a burst makes few builds, and a failed one is told, not hidden."""
from __future__ import annotations

import sys
import threading

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
