"""Write a build as a new generation beside the published one and swap it in atomically.

    <out>/api -> current/api              stable path that servers and users name
    <out>/current -> .build/gens/<N>      replaced by one rename(2) when a build publishes
    <out>/.build/gens/<N>/api/v1/...      the files of generation N
    <out>/.build/lock                     one build at a time

A reader following `current` sees one whole generation or the other, never a
mix; a build that fails or is killed never touches `current`, and its partial
generation is removed (or, after a kill, collected by the next build).
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import CatalogueError
# Measured: a 1.5 KB book costs ~70 us to gzip (zlib's set-up) and shrinks by under half;
# a page of 12 books shrinks 3.5-5x at ~120 MB/s with level 1, twice level 6's speed.
GZIP_MIN = 4096  # bytes; smaller answers are served as they are
GZIP_LEVEL = 1
STATE = ".build"
CURRENT = "current"
SERVED = ("api",)  # top-level names in a generation, linked from <out>/


class OutputError(CatalogueError):
    """The output directory cannot be written as asked."""


class Generation:
    """A directory the build fills; it becomes visible only when the site publishes it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = f"{root}/"  # plain strings: pathlib joins cost more than the write
        self.files = 0
        self.bytes = 0
        self._dirs: set[str] = set()

    def write(self, path: str, data: bytes) -> None:
        """Write a new file, and beside it path.gz for nginx's gzip_static when it is large."""
        self._write(path, data)
        if len(data) >= GZIP_MIN:
            self._write(path + ".gz", gzip(data))

    def link(self, path: str, target: str) -> None:
        """A relative symlink at path pointing to target."""
        self._make_parent(path)
        os.symlink(target, self._prefix + path)

    def _make_parent(self, path: str) -> None:
        directory, _, _ = path.rpartition("/")
        if directory not in self._dirs:
            os.makedirs(self._prefix + directory, exist_ok=True)
            self._dirs.add(directory)

    def _write(self, path: str, data: bytes) -> None:
        self._make_parent(path)
        fd = os.open(self._prefix + path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        self.files += 1
        self.bytes += len(data)


def gzip(data: bytes) -> bytes:
    """gzip with a zero timestamp and no name: the same bytes always give the same file."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


class Site:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.gens = out / STATE / "gens"

    @contextmanager
    def locked(self) -> Iterator["Site"]:
        self.gens.mkdir(parents=True, exist_ok=True)
        with open(self.out / STATE / "lock", "a") as lock:  # "a": no truncation, mtime kept
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise OutputError(f"another build is writing {self.out} right now; try again when it ends")
                raise
            self._check_served_names()
            yield self

    def published(self) -> Path | None:
        link = self.out / CURRENT
        return (self.out / os.readlink(link)) if link.is_symlink() else None

    @contextmanager
    def new_generation(self) -> Iterator[Generation]:
        """A fresh generation; removed again unless published before the block ends."""
        numbers = [int(p.name) for p in self.gens.iterdir() if p.name.isdigit()]
        root = self.gens / f"{max(numbers, default=0) + 1:06d}"
        root.mkdir()
        generation = Generation(root)
        try:
            yield generation
        finally:
            if self.published() != root:
                shutil.rmtree(root, ignore_errors=True)

    def publish(self, generation: Generation) -> Path | None:
        """Make the generation the served one; returns the one it replaced."""
        previous = self.published()
        _syncfs(self.out)  # the files must be on disk before the link that makes them visible
        target = os.path.relpath(generation.root, self.out)
        temporary = self.out / f".{CURRENT}.new"
        temporary.unlink(missing_ok=True)
        os.symlink(target, temporary)
        os.replace(temporary, self.out / CURRENT)
        for name in SERVED:
            if not (self.out / name).is_symlink():
                os.symlink(f"{CURRENT}/{name}", self.out / name)
        _fsync_dir(self.out)
        return previous

    def collect_garbage(self, keep: list[Path | None]) -> None:
        """Remove every generation but those kept (the served one and the one it replaced,
        which readers may still be in), including any left by a killed build. Call it
        holding the lock: an unpublished generation is otherwise another build's."""
        kept = {path.name for path in keep if path is not None}
        for path in self.gens.iterdir():
            if path.name not in kept:
                shutil.rmtree(path, ignore_errors=True)

    def _check_served_names(self) -> None:
        for name in SERVED:
            path = self.out / name
            if path.exists() and not path.is_symlink():
                raise OutputError(
                    f"{path} is a real directory, not the link this tool keeps there; "
                    "move it away (it was not written by this tool) and build again")


def _syncfs(path: Path) -> None:
    """Flush the file system holding path (all of it: os.sync on systems without syncfs)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if ctypes.CDLL(None, use_errno=True).syncfs(fd) != 0:
            os.sync()
    except AttributeError:
        os.sync()
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
