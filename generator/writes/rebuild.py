"""Rebuild and publish the site after writes, a burst of writes making few builds.

A write asks for a build; one thread runs them, one at a time, each as a separate
`catalogue build` process (the build forks its parts, which a threaded server should
not do, and its memory goes back to the system when it ends). Writes that arrive
while a build runs are published by the next one, which starts as soon as the
running one ends: a burst costs at most the build running when it began and one more.
A build waits for a burst to end before it starts (SETTLE seconds without a write, SETTLE_MAX
at most): the burst's writes come in one build, rather than the first few in a build of their
own that the rest wait behind (seconds at 100K books).
The write service's publishing beyond this machine, when it has one, is told as each build
starts, of the few detail documents the build announces as it writes them (the new records:
up before the build's thousands of pages are written), and after each build that published,
before the next starts.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Protocol

from ..system import command, moment, written_file
from .accepted import Accepted

SETTLE = 0.05  # seconds without a write a build waits for before it starts (the rest of a burst)
SETTLE_MAX = 2.0  # seconds at most it waits so (a stream of writes)


class Publishing(Protocol):
    """Publishing each rebuild beyond this machine: started and stopped with the service,
    told as each rebuild starts, of the files it announces written (path in its generation,
    where the file lies), and after each one that published (before the next starts),
    asked for its status."""

    def start(self) -> None: ...

    def rebuilding(self) -> None: ...

    def written(self, files: list[tuple[str, str]]) -> None: ...

    def rebuilt(self) -> None: ...

    def status(self) -> dict: ...

    def stop(self) -> None: ...


class Rebuilder:
    def __init__(self, command: list[str], log: Callable[[str], None], accepted: Accepted | None = None,
                 publishing: Publishing | None = None) -> None:
        self.command = command
        self._log = log
        self._accepted = accepted
        self._publishing = publishing
        self._since: float | None = None  # when the oldest write no build has started for asked for one
        self._asked = 0.0  # when the last write asked (time.monotonic())
        self._building: float | None = None  # the same, of the writes the build under way publishes
        self._last: dict | None = None
        self._wanted = threading.Event()
        self._idle = threading.Event()  # nothing wanted, nothing running
        self._idle.set()
        self._lock = threading.Lock()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="rebuild", daemon=True)

    @classmethod
    def of(cls, data: Path, out: Path, base_url: str | None, listen: str, write_service: str,
           log: Callable[[str], None], links: str = "api", publishing: Publishing | None = None) -> "Rebuilder":
        """Builds as the site's own were made: the same links (a `--links paths` site stays one);
        announcing the details they write when they are published beyond this machine."""
        return cls(command("build", "--data", str(data), "--out", str(out), "--listen", listen,
                           "--write-service", write_service, "--links", links,
                           *(("--announce",) if publishing else ()), base_url=base_url),
                   log, Accepted(out), publishing)

    def start(self) -> None:
        self._thread.start()

    def request(self) -> None:
        with self._lock:
            self._idle.clear()
            self._wanted.set()
            self._since = self._since or time.time()
            self._asked = time.monotonic()

    def status(self) -> dict:
        """Whether a write waits for a build, since when, and how the last build went."""
        with self._lock:
            waiting = [t for t in (self._since, self._building) if t is not None]
            return {"pending": bool(waiting), "since": moment(min(waiting, default=None)), "last": self._last}

    def wait_idle(self, timeout: float) -> bool:
        """Until every build asked for has run (for tests and benchmarks); False on timeout."""
        return self._idle.wait(timeout)

    def stop(self) -> None:
        with self._lock:  # (so that _run cannot clear the wish this sets: see there)
            self._stopping = True
            self._wanted.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted.is_set():
                    self._idle.set()
            self._wanted.wait()
            if self._stopping:
                return
            self._settle()
            with self._lock:  # (a stop() while settling would be cleared with the wish, and lost)
                if self._stopping:
                    return
                self._wanted.clear()
                self._building, self._since = self._since or time.time(), None
            started = time.monotonic()
            waited = self._accepted.waiting() if self._accepted else set()
            if self._publishing:
                self._publishing.rebuilding()
            status, output = self._build()
            seconds = time.monotonic() - started
            with self._lock:
                self._last = {"at": moment(time.time()), "published": status == 0, "seconds": round(seconds, 3)}
            if status == 0:
                if self._accepted:
                    self._accepted.published(waited)
                self._log(f"rebuilt and published in {seconds:.2f} s")
                if self._publishing:  # (before the build stops counting as pending: nothing seems done in between)
                    self._publishing.rebuilt()
            else:
                self._log(f"the rebuild failed (exit status {status}); the site stays as it was:\n{output.strip()}")
            with self._lock:
                if status != 0:  # (still waiting: for the next write, or someone mending the data)
                    self._since = min(self._since or self._building, self._building)
                self._building = None

    def _settle(self) -> None:
        """Until no write has asked for SETTLE seconds, or SETTLE_MAX seconds have passed."""
        deadline = time.monotonic() + SETTLE_MAX
        while not self._stopping and (pause := min(self._asked + SETTLE, deadline) - time.monotonic()) > 0:
            time.sleep(pause)

    def _build(self) -> tuple[int, str]:
        """Run the build, passing the files it announces on to the publishing as they come (those
        read at once together: a part tells of its collection's files one after another), in
        order, by a thread of their own: the build's output is read on while they go up (a full
        pipe would stop the build); its exit status and the rest of what it said, once every
        announced file is passed on."""
        said, rest = [], b""
        with subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as build, \
                ThreadPoolExecutor(1, thread_name_prefix="announced") as announced:
            while chunk := os.read(build.stdout.fileno(), 1 << 16):
                *lines, rest = (rest + chunk).split(b"\n")
                files = []
                for line in lines:
                    text = line.decode(errors="replace")
                    written = written_file(text)
                    if written is None:
                        said.append(text)
                    else:
                        files.append(written)
                if files and self._publishing:
                    announced.submit(self._publishing.written, files)  # (written() never raises)
        return build.returncode, "\n".join(said + [rest.decode(errors="replace")])
