"""generator/system.py: children that die with their parent, started through setpriv where it
is installed (so Python can start them with vfork) or with a preexec_fn, either way stopped by
the kernel when the process that started them is killed without stopping them; numpy's huge
pages off while big_arrays holds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from generator import system

PARENT = """
import subprocess, sys, time
from generator import system
if sys.argv[1] == "preexec_fn":
    system._SETPRIV = None
child = subprocess.Popen(**system.dying_with_parent(["sleep", "60"]))
print(child.pid, flush=True)
time.sleep(60)
"""


def gone(pid: int) -> bool:
    """Dead: no longer there, or a zombie nobody has reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent's death signal is Linux's")
@pytest.mark.parametrize("way", ["setpriv", "preexec_fn"])
def test_a_child_dies_with_its_killed_parent(way):
    if way == "setpriv" and system._SETPRIV is None:
        pytest.skip("setpriv is not installed")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, way], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        # (setpriv asks for the signal once it runs, a few milliseconds after Popen returns:
        # a parent killed before that leaves the child running; wait until the command runs)
        deadline = time.monotonic() + 30  # (a bound against a hang, not a measure)
        while not Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"sleep\0") and time.monotonic() < deadline:
            time.sleep(0.01)  # (an exec under way may read as nothing)
        assert not gone(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while not gone(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert gone(child)
    finally:
        if not gone(child):
            os.kill(child, signal.SIGTERM)  # (ours: started by our parent above, still alive)


def test_where_setpriv_is_used_the_command_is_run_as_given():
    spawn = system.dying_with_parent(["echo", "a b"])
    assert subprocess.run(**spawn, capture_output=True, text=True).stdout == "a b\n"
    assert ("preexec_fn" in spawn) == (system._SETPRIV is None)


def test_big_arrays_turns_numpy_huge_pages_off_within_and_back_after():
    """big_arrays: numpy asks for no transparent huge pages within (each one a compaction where
    the page cache fills memory), and asks again after, as before it."""
    import numpy
    switch = numpy._core.multiarray._set_madvise_hugepage  # (returns the setting it replaces)
    before = switch(True)
    try:
        with system.big_arrays():
            assert switch(False) is False
        assert switch(True) is True
    finally:
        switch(before)
