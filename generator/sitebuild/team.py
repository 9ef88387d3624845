"""Run one function in several forked processes ("parts") that meet at barriers.

The build gives each part a range of every collection. The parts share a barrier
(to exchange what they wrote to scratch files after each collection), a flag that
stops all of them from producing once one has found bad data, a scratch
directory (each part's file of a kind is `<name>.<part>`), and a queue for progress. Records never travel through the parent:
parts exchange them through files, and the parent receives small results.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from ..errors import CatalogueError, DiskFull
from .spool import Spool

# progress(resource name, records done so far, whether the collection is finished)
Progress = Callable[[str, int, bool], None]


class PartFailed(CatalogueError):
    """A part of the build died or raised: a bug, or the machine (memory, a kill, the disk
    full). The message names the part and the file that keeps the traceback."""

    @classmethod
    def raised(cls, part: int, count: int, trace: str) -> "PartFailed":
        fd, path = tempfile.mkstemp(prefix="catalogue-failure-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(trace)
        last = trace.strip().splitlines()[-1] if trace.strip() else "no message"
        head = f"part {part + 1} of {count} of the build failed: {last}\n"
        if any(last.startswith(f"OSError: [Errno {number}]") for number in DiskFull.ERRNOS):
            return cls(f"{head}{DiskFull.ADVICE} (the traceback is in {path}).")
        return cls(f"{head}This is a bug in the generator, not in the data; nothing was published. "
                   f"The traceback is in {path}: please report it with that file.")

    @classmethod
    def died(cls, part: int, count: int, status: int) -> "PartFailed":
        cause = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        return cls(f"part {part + 1} of {count} of the build died ({cause}): stopped from outside or out "
                   "of memory; nothing was published")


def part_file(directory: Path, name: str, part: int) -> Path:
    return directory / f"{name}.{part}"


def part_files(directory: Path, name: str) -> list[Path]:
    """Every part's file `name` in a directory, in part order."""
    found = [p for p in directory.glob(f"{name}.*") if p.stem == name and p.suffix[1:].isdigit()]
    return sorted(found, key=lambda p: int(p.suffix[1:]))


class Team:
    def __init__(self, count: int, scratch: Path, progress: Progress | None, tag: str) -> None:
        self.count = count
        self.scratch = scratch
        self.tag = tag  # names the record data files of this build: unique among the site's builds
        context = multiprocessing.get_context("fork")
        self._barrier = context.Barrier(count) if count > 1 else None
        self._failed = context.RawValue("b", 0)
        self._queue = context.SimpleQueue() if count > 1 else None
        self._progress = progress
        self._done: dict[str, list[int]] = {}
        self._finished: dict[str, int] = {}
        self.waited = 0.0  # seconds this part spent waiting for the others (in a part)

    # ---- in the parts ---------------------------------------------------------------

    def wait(self) -> None:
        """Until every part has come this far."""
        if self._barrier is not None:
            started = time.monotonic()
            self._barrier.wait()
            self.waited += time.monotonic() - started

    @property
    def failed(self) -> bool:
        return bool(self._failed.value)

    def fail(self) -> None:
        self._failed.value = 1

    def report(self, part: int, resource: str, done: int, finished: bool = False) -> None:
        if self._queue is not None:
            self._queue.put(("progress", part, resource, done, finished))
        else:
            self._show(part, resource, done, finished)

    def file(self, name: str, part: int) -> Path:
        return part_file(self.scratch, name, part)

    def save(self, name: str, part: int, value: Any) -> None:
        with self.file(name, part).open("wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)

    def load(self, name: str, part: int) -> Any:
        with self.file(name, part).open("rb") as f:
            return pickle.load(f)

    def spool(self, name: str, part: int) -> Spool:
        # Its data file is named after this build, so that later builds can keep it beside
        # their own without a clash.
        return Spool(self.file(name, part), tag=self.tag)

    # ---- in the parent ------------------------------------------------------------------

    def _show(self, part: int, resource: str, done: int, finished: bool) -> None:
        if self._progress is None:
            return
        counts = self._done.setdefault(resource, [0] * self.count)
        counts[part] = done
        if finished:
            self._finished[resource] = self._finished.get(resource, 0) + 1
        self._progress(resource, sum(counts), self._finished.get(resource, 0) == self.count)

    def run(self, work: Callable[[int, "Team"], Any]) -> list[Any]:
        """work(part, team) in every part; their results in part order."""
        if self.count == 1:
            try:
                return [work(0, self)]
            except CatalogueError:
                raise
            except Exception as exc:
                raise PartFailed.raised(0, 1, traceback.format_exc()) from exc
        context = multiprocessing.get_context("fork")
        processes = [context.Process(target=self._main, args=(part, work), daemon=True)
                     for part in range(self.count)]
        for process in processes:
            process.start()
        results: dict[int, Any] = {}
        failure: PartFailed | None = None
        try:
            while len(results) < self.count and failure is None:
                try:
                    message = self._get(timeout=0.2)
                except queue.Empty:
                    dead = [k for k, p in enumerate(processes) if p.exitcode not in (None, 0)]
                    if dead:  # killed or crashed without a word: stop the others too
                        failure = PartFailed.died(dead[0], self.count, processes[dead[0]].exitcode)
                    continue
                kind, part, *rest = message
                if kind == "progress":
                    self._show(part, *rest)
                elif kind == "result":
                    results[part] = rest[0]
                elif kind == "error" and rest[0]:  # (an empty one: another part failed first)
                    failure = PartFailed.raised(part, self.count, rest[0])
        finally:
            if failure is not None:
                self._barrier.abort()
                for process in processes:
                    process.terminate()
            for process in processes:
                process.join()
        if failure is not None:
            raise failure
        return [results[part] for part in range(self.count)]

    def _get(self, timeout: float):
        # SimpleQueue has no timeout; poll its reader.
        if not self._queue._reader.poll(timeout):
            raise queue.Empty
        return self._queue.get()

    def _main(self, part: int, work: Callable[[int, "Team"], Any]) -> None:
        # Parts return problems and violations as data: an exception here is a bug.
        try:
            self._queue.put(("result", part, work(part, self)))
        except threading.BrokenBarrierError:
            self._queue.put(("error", part, ""))  # another part failed first
        except BaseException:
            self._barrier.abort()
            self._queue.put(("error", part, traceback.format_exc()))
