"""Small operating-system helpers that more than one subsystem needs: flushing
directories and file systems to disk, child processes that end with their parent, a
child kept running (restarted with backoff when it dies), moments as status documents
write them, the lines by which a build tells whoever runs it of files it wrote, the
cycle collector paused while a build makes millions of objects, and memory kept for reuse
while it makes arrays of hundreds of MB."""
from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a file created, renamed or removed in it) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def no_cycle_collector() -> Iterator[None]:
    """Python's cyclic garbage collector off within (and in the processes forked there): a
    build's records, keys and parts make no reference cycles, and the collector, run again
    and again as millions of objects are made, walks every object held each time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@contextlib.contextmanager
def big_arrays() -> Iterator[None]:
    """Memory as a step that makes and drops arrays of hundreds of MB wants it (the query
    indexes of a million books): glibc's malloc keeps the blocks freed, those under 32 MB
    too, for the next ones rather than handing each back to the kernel (for the rest of the
    process: mallopt is not undone), and numpy asks for no transparent huge pages within.
    Where the page cache holds the files a build just wrote, the kernel pays a fault for
    each fresh page and a compaction for each huge one (at a million books, 0.95 s of
    system time for the key table's concatenations alone): the index step took 9.9-10.2 s
    of system time and 34.4-35.1 s in all, and so 8.8-9.2 s and 33.6-34.0 s."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)  # (glibc's; elsewhere, nothing to keep)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # (glibc's most: a block over it is mapped alone, and unmapped)
        mallopt(_M_TRIM_THRESHOLD, 128 << 20)  # (free memory kept at the top of the heap, up to 128 MB)
    import numpy  # (here: the rest of this module, and its every user, does without it)
    huge_pages = getattr(numpy._core.multiarray, "_set_madvise_hugepage", None)  # (NUMPY_MADVISE_HUGEPAGE's switch)
    asked = huge_pages(False) if huge_pages is not None else None
    try:
        yield
    finally:
        if huge_pages is not None:
            huge_pages(asked)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # (glibc's malloc.h)


def moment(seconds: float | None) -> str | None:
    """A time.time() as a status document gives it: ISO 8601 in UTC, to the millisecond."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def syncfs(path: Path) -> None:
    """Flush the file system holding path (all of them: os.sync where syncfs is missing)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if ctypes.CDLL(None, use_errno=True).syncfs(fd) != 0:
            os.sync()
    except AttributeError:
        os.sync()
    finally:
        os.close(fd)


def stop_with_parent() -> None:
    """In a child, before exec: if the parent dies without stopping it, the kernel sends it
    SIGTERM (Linux; elsewhere nothing happens)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# The kernel's "stop me when my parent dies" (Linux's) is set by setpriv (util-linux) between
# the fork and the exec where it is installed, else by stop_with_parent() in the child (preexec_fn).
_SETPRIV = shutil.which("setpriv") if sys.platform.startswith("linux") else None


def dying_with_parent(command: list[str]) -> dict:
    """Popen's `args` (and `preexec_fn`) for a child that gets SIGTERM if its parent dies
    without stopping it. With setpriv, Python starts the child without a preexec_fn, so with
    vfork: a preexec_fn makes it fork, which copies the parent's page tables first (27 ms of
    processor time for each server a 500 MB test worker started, 0.6 ms with vfork). The
    price: setpriv asks for the signal a few milliseconds after Popen returns, so a parent
    killed within them leaves the child running (the preexec_fn asks before Popen returns)."""
    if _SETPRIV is not None:
        return {"args": [_SETPRIV, "--pdeathsig", "TERM", "--", *command]}
    return {"args": command, "preexec_fn": stop_with_parent}


def foreground(command: list[str], env: dict[str, str] | None = None) -> int:
    """Run a server in the foreground until it stops; Ctrl-C, SIGTERM and SIGHUP stop it
    with SIGTERM (its clean shutdown), and it dies with us. It runs in a process group of
    its own, and whatever of that group outlives it (nginx's workers, the workerd that
    miniflare starts) goes when it has stopped. Its exit status."""
    told: list[int] = []  # (a signal that came before the server started)
    process: subprocess.Popen | None = None

    def forward(signum, _frame) -> None:
        told.append(signum)
        if process is not None:
            process.send_signal(signal.SIGTERM)

    # (before the server starts: once it answers, a thread of ours may say "ready", and a
    # SIGTERM that came before these handlers would end this process, not stop the server)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    process = subprocess.Popen(**dying_with_parent(command), start_new_session=True, env=env)
    if told:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait()
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # (nothing left: the usual case)


def command(*args: str, base_url: str | None = None) -> list[str]:
    """A `catalogue` command line, run by this Python (with --base-url when one is given)."""
    return [sys.executable, "-m", "generator", *args, *(("--base-url", base_url) if base_url is not None else ())]


class Supervised:
    """A child process kept running: when it exits, it is started again after a pause that
    doubles with each quick failure (up to MAX_PAUSE), until stop()."""

    FIRST_PAUSE = 0.5  # seconds
    MAX_PAUSE = 30.0
    STEADY = 30.0  # a child that ran this long failed afresh: the pause starts again at FIRST_PAUSE

    def __init__(self, command: list[str], name: str, log: Callable[[str], None]) -> None:
        self.command = command
        self.name = name
        self._log = log
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        # (the thread starts the child: it ends, and with it the child, only after stop())
        self._thread = threading.Thread(target=self._run, name=f"supervise {name}", daemon=True)

    def start(self) -> "Supervised":
        self._thread.start()
        return self

    def _run(self) -> None:
        pause = self.FIRST_PAUSE
        while True:
            with self._lock:
                if self._stopping.is_set():
                    return
                # (a session of its own: a terminal's Ctrl-C, or a SIGTERM to the whole group, reaches
                # only the process that started it, which stops it once; twice, uvicorn's second
                # signal, forced an exit, with a traceback)
                self.process = subprocess.Popen(**dying_with_parent(self.command), start_new_session=True)
            started = time.monotonic()
            status = self.process.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= self.STEADY:
                pause = self.FIRST_PAUSE
            self._log(f"{self.name} exited with status {status}; starting it again in {pause:g} s")
            if self._stopping.wait(pause):
                return
            pause = min(pause * 2, self.MAX_PAUSE)
            self.restarts += 1

    def stop(self, timeout: float = 15) -> None:
        with self._lock:
            self._stopping.set()
            process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._thread.join(timeout)


WRITTEN = "written"  # `catalogue build --announce`: "written<TAB>path in the generation<TAB>where it lies"


def announce_written(path: str, file: str) -> None:
    """Tell whoever runs this build (on standard output) of a file it wrote: one write(2) of a
    line shorter than a pipe's atomic size, whole even beside the other parts' lines."""
    os.write(1, f"{WRITTEN}\t{path}\t{file}\n".encode())


def written_file(line: str) -> tuple[str, str] | None:
    """(path, where it lies) of a line announce_written() wrote; None for any other line."""
    kind, *fields = line.rstrip("\n").split("\t")
    return (fields[0], fields[1]) if kind == WRITTEN and len(fields) == 2 else None
