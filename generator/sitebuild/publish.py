"""Write a build as a new generation beside the published one and swap it in atomically.

    <out>/api -> current/api               the stable path that users and servers name
    <out>/current -> .build/gens/<N>       one rename(2) publishes build N
    <out>/.build/gens/<N>/                 the skeleton: real directories, the few top files
                                           (API root, first pages, _meta) and a symlink for
                                           every shard directory
    <out>/.build/store/<shard>@<N>         shard directories, immutable once published: the
                                           detail documents of one id prefix, or a block of pages
    <out>/.build/trash/                    garbage on its way out, deleted in the background
    <out>/.build/lock                      one build at a time
    <out>/.build/report.json               what the last build that published did (its Summary):
                                           files, bytes, files written, seconds of each step

A rebuild writes only the files whose bytes changed, into new shard directories
that it completes with hard links to the unchanged files of the old ones (same
inode and mtime: ETags, rsync and CDN syncs see no change); unchanged shards are
linked as they are. A reader following `current` sees one whole generation; a
failed or killed build never touches it.
"""
from __future__ import annotations

import dataclasses
import errno
import fcntl
import os
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import orjson
from isal import isal_zlib

from ..api.serving import GZIP_MIN
from ..api.urls import BUILD_DIR, CURRENT, PAGE_INDEX, QUERY_DIR, SERVED, is_shard
from ..errors import CatalogueError
from ..system import fsync_dir, syncfs
from . import trash

_QUERY_FILES = f"/{QUERY_DIR}/"  # in the path of a query backend's file

# Files of GZIP_MIN bytes or more get a .gz twin. A page of 12 books shrinks 3.5-5x, at
# ~120 MB/s with zlib's level 1 and ~520 MB/s with ISA-L's level 1 (the same ratio).
GZIP_LEVEL = 1
REPORT = "report.json"  # <out>/.build/report.json


class OutputError(CatalogueError):
    """The output directory cannot be written as asked."""


def store_name(shard: str, number: int) -> str:
    return f"{shard.replace('/', '+')}@{number:06d}"


def shard_of_store(name: str) -> tuple[str, int]:
    shard, _, number = name.rpartition("@")
    return shard.replace("+", "/"), int(number)


class Output(Protocol):
    """Where a part of a build writes its files (with a tally of them)."""
    files: int
    bytes: int
    sizes: dict[str, list[int]]  # shard -> [files, bytes] written into it

    def write(self, path: str, data: bytes, twin: bytes | None = None) -> None: ...

    def link(self, path: str, target: str) -> None: ...

    def lying(self, path: str) -> list[tuple[str, str]]: ...


class Discard:
    """An output that keeps only the tally: `catalogue check` runs the whole build into it."""

    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0
        self.sizes: dict[str, list[int]] = {}

    def write(self, path: str, data: bytes, twin: bytes | None = None) -> None:
        self.files += 1
        self.bytes += len(data)

    def link(self, path: str, target: str) -> None:
        pass

    def lying(self, path: str) -> list[tuple[str, str]]:
        return []  # (nothing was written)


class Generation:
    """What one build writes: skeleton files in its own directory, shard files into new
    shard directories of the store. Each process of a build has its own writer."""

    def __init__(self, root: Path, store: Path, number: int) -> None:
        self.root = root
        self.store = store
        self.number = number
        self._prefix = f"{root}/"  # plain strings: pathlib joins cost more than the write
        # directory -> (its shard's tally in `sizes`, or None outside shards; where its files go, with "/")
        self._places: dict[str, tuple[list[int] | None, str]] = {}
        self._dirs: set[str] = set()
        self.files = 0
        self.bytes = 0
        # Each shard's files and bytes, counted as they are written: measuring a million
        # files again afterwards (a stat each) would cost a tenth of the build.
        self.sizes: dict[str, list[int]] = {}

    def writer(self) -> "Generation":
        """Another writer of this generation, for another process (with its own tally)."""
        return Generation(self.root, self.store, self.number)

    def write(self, path: str, data: bytes, twin: bytes | None = None) -> None:
        """A new file, and beside it path.gz for nginx's gzip_static when it is large
        (`twin`, when the caller has it already)."""
        directory, _, name = path.rpartition("/")
        place = self._places.get(directory)
        if place is None:
            place = self._places[directory] = self._place(directory)
        tally, where = place
        self._write(where + name, data)
        files, size = 1, len(data)
        if size >= GZIP_MIN and not name.endswith(PAGE_INDEX) and _QUERY_FILES not in path:  # (read by hosts, never served)
            twin = gzip(data) if twin is None else twin
            self._write(where + name + ".gz", twin)
            files, size = 2, size + len(twin)
        if tally is not None:
            tally[0] += files
            tally[1] += size

    def lying(self, path: str) -> list[tuple[str, str]]:
        """A file this writer wrote, and its .gz twin when it has one: each as (its path in the
        generation, where it lies now), before the generation links its shard."""
        directory, _, name = path.rpartition("/")
        where = self._places[directory][1] + name
        return [(path, where)] + ([(f"{path}.gz", f"{where}.gz")] if os.path.exists(f"{where}.gz") else [])

    def link(self, path: str, target: str) -> None:
        """A relative symlink in the skeleton."""
        self._make_dir(self._prefix + path.rpartition("/")[0])
        os.symlink(target, self._prefix + path)

    def _place(self, directory: str) -> tuple[list[int] | None, str]:
        """A directory of the site as (its shard's tally or None, where its files go), made."""
        if not is_shard(directory):
            self._make_dir(self._prefix + directory)
            return None, f"{self._prefix}{directory}/"
        where = f"{self.store}/{store_name(directory, self.number)}"
        self._make_dir(where)
        return self.sizes.setdefault(directory, [0, 0]), f"{where}/"

    def _make_dir(self, directory: str) -> None:
        if directory not in self._dirs:
            os.makedirs(directory, exist_ok=True)
            self._dirs.add(directory)

    def _write(self, target: str, data: bytes) -> None:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            written = os.write(fd, data)
            if written < len(data):  # (a file takes it all at once, short of a signal or a full disk)
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        self.files += 1
        self.bytes += len(data)


def gzip(data: bytes) -> bytes:
    """gzip with a zero timestamp and no name: the same bytes always give the same file."""
    compressor = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


Live = Callable[[str, str], bool]  # live(shard, file name): does the file still belong?


def same_bytes(path: Path, data: bytes) -> bool:
    """Whether the file at `path` (the previous build's) holds these bytes: then it is linked, not
    written again."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


class Site:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.state = out / BUILD_DIR
        self.gens = self.state / "gens"
        self.store = self.state / "store"
        self.trash = self.state / "trash"
        self._shards: dict[Path, dict[str, str]] = {}

    @contextmanager
    def locked(self) -> Iterator["Site"]:
        for directory in (self.gens, self.store, self.trash):
            directory.mkdir(parents=True, exist_ok=True)
        with open(self.state / "lock", "a") as lock:  # "a": no truncation, mtime kept
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise OutputError(f"another build is writing {self.out} right now; try again when it ends")
                raise
            self._check_served_names()
            yield self

    def report(self, summary: Any) -> None:
        """Keep what a build did (a dataclass) for whoever ran it as a process, `make bench`
        among them."""
        temporary = self.state / f".{REPORT}.new"
        temporary.write_bytes(orjson.dumps(dataclasses.asdict(summary)))
        os.replace(temporary, self.state / REPORT)

    def published(self) -> Path | None:
        link = self.out / CURRENT
        return (self.out / os.readlink(link)) if link.is_symlink() else None

    def next_number(self) -> int:
        """Above every generation and every shard left, published or not."""
        numbers = [int(p.name) for p in self.gens.iterdir() if p.name.isdigit()]
        numbers += [shard_of_store(p.name)[1] for p in self.store.iterdir() if "@" in p.name]
        return max(numbers, default=0) + 1

    @contextmanager
    def new_generation(self) -> Iterator[Generation]:
        """A fresh generation; thrown away unless published before the block ends."""
        number = self.next_number()
        root = self.gens / f"{number:06d}"
        root.mkdir()
        generation = Generation(root, self.store, number)
        try:
            yield generation
        finally:
            if self.published() != root:
                self.throw_away([root] + [p for p in self.store.iterdir() if p.name.endswith(f"@{number:06d}")])

    def shards(self, generation_root: Path) -> dict[str, str]:
        """shard path -> store directory name, for a generation's skeleton (a published
        skeleton never changes: read once)."""
        if generation_root in self._shards:
            return self._shards[generation_root]
        found = self._shards[generation_root] = {}
        _find_shards(str(generation_root), "", found)
        return found

    def finish(self, generation: Generation, previous: Path | None, check: set[str], live: Live,
               sizes: dict[str, list[int]]) -> dict[str, list[int]]:
        """Link every shard into the new skeleton: new ones completed with the old one's
        files that still belong (hard links), old ones whose files all still belong as they
        are (`check` lists the old shards that may have lost files; the others are taken
        as they are). `sizes` holds the [files, bytes] of the old shards. Returns the [files,
        bytes] linked into each new shard."""
        old = self.shards(previous) if previous is not None else {}
        written = {}
        for entry in os.scandir(self.store):
            shard, number = shard_of_store(entry.name)
            if number == generation.number:
                written[shard] = entry.name
        linked: dict[str, list[int]] = {}
        links: dict[str, str] = {}  # shard -> its store directory, in the new skeleton
        for shard in sorted(set(old) | set(written)):
            source = old.get(shard)
            if shard in written:
                linked[shard] = self._complete(written[shard], source, shard, live, sizes.get(shard))
                name = written[shard]
            elif shard in check:
                names = os.listdir(self.store / source)
                if all(live(shard, n) for n in names):
                    name = source
                elif any(live(shard, n) for n in names):
                    name = store_name(shard, generation.number)
                    (self.store / name).mkdir()
                    linked[shard] = self._complete(name, source, shard, live, sizes.get(shard))
                else:
                    continue  # nothing of it is left
            else:
                name = source
            links[shard] = name
        self._link(generation.root, links, previous, old)
        return linked

    def _link(self, root: Path, links: dict[str, str], previous: Path | None, old: dict[str, str]) -> None:
        """A generation's skeleton's symlink to each shard's store directory (relative): the
        previous skeleton's own link where the shard is the same (a hard link to the symlink,
        which names the same directory from the same place in the new skeleton: no new inode),
        else a new one. Plain strings, each directory made once: a million books have some
        2,000 shards, which an edit links again."""
        store = os.path.relpath(self.store, root)  # (from the skeleton's root: each level below adds "../")
        made: set[str] = set()
        for shard, name in links.items():
            parent = shard.rpartition("/")[0]
            if parent not in made:
                os.makedirs(f"{root}/{parent}", exist_ok=True)
                made.add(parent)
            if old.get(shard) == name:
                os.link(f"{previous}/{shard}", f"{root}/{shard}", follow_symlinks=False)
            else:
                os.symlink(f"{'../' * shard.count('/')}{store}/{name}", f"{root}/{shard}")
        self._shards[root] = dict(links)  # (what a walk of the new skeleton would find)

    def _complete(self, name: str, source: str | None, shard: str, live: Live,
                  size: list[int] | None) -> list[int]:
        """Hard-link into new shard `name` the files of old shard `source` that still belong
        and were not written anew (nor, for a .gz twin, its document): [files, bytes] linked,
        worked out from the old shard's `size` and the files left out (an edit leaves out
        one or two of thousands, whose inodes may no longer be in memory). Linked by name
        within the two directories held open: an edit links some 10,000 files at a million
        books, each otherwise two long paths for the kernel to walk."""
        if source is None:
            return [0, 0]
        new = os.open(self.store / name, os.O_RDONLY | os.O_DIRECTORY)
        old = os.open(self.store / source, os.O_RDONLY | os.O_DIRECTORY)
        try:
            present = set(os.listdir(new))
            entries = os.listdir(old)
            left_out = set()
            for entry in entries:
                document = entry[:-3] if entry.endswith(".gz") else entry
                if document in present or entry in present or not live(shard, entry):
                    left_out.add(entry)
                    continue
                os.link(entry, entry, src_dir_fd=old, dst_dir_fd=new)
            if size is None or size[0] != len(entries):  # (not known: measured)
                kept = [e for e in entries if e not in left_out]
                return [len(kept), sum(os.stat(e, dir_fd=new).st_size for e in kept)]
            return [size[0] - len(left_out), size[1] - sum(os.stat(e, dir_fd=old).st_size for e in left_out)]
        finally:
            os.close(new)
            os.close(old)

    def carry(self, generation: Generation, previous: Path | None, path: str) -> None:
        """A skeleton file no part wrote this time is the previous one, unchanged: link it
        and its .gz twin."""
        target = generation.root / path
        if previous is None or target.exists() or not (previous / path).exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", ".gz"):
            if (previous / (path + suffix)).exists():
                os.link(previous / (path + suffix), generation.root / (path + suffix))

    def carry_folder(self, generation: Generation, previous: Path, folder: str, skip: set[str]) -> None:
        """Every file under a folder of the previous generation (paths from its root) that
        this build did not write and `skip` does not name, linked: a directory at a time,
        through open directories (a million books' index folders hold tens of thousands)."""
        for directory, _dirs, files in os.walk(previous / folder, followlinks=True):
            relative = os.path.relpath(directory, previous)
            target = generation.root / relative
            target.mkdir(parents=True, exist_ok=True)
            old, new = os.open(directory, os.O_RDONLY), os.open(target, os.O_RDONLY)
            try:
                for name in files:
                    if f"{relative}/{name}" not in skip:
                        try:
                            os.link(name, name, src_dir_fd=old, dst_dir_fd=new)
                        except FileExistsError:  # (written by this build)
                            pass
            finally:
                os.close(new)
                os.close(old)

    def publish(self, generation: Generation) -> Path | None:
        """Make the generation the served one; returns the one it replaced."""
        previous = self.published()
        syncfs(self.out)  # the files must be on disk before the link that makes them visible
        target = os.path.relpath(generation.root, self.out)
        temporary = self.out / f".{CURRENT}.new"
        temporary.unlink(missing_ok=True)
        os.symlink(target, temporary)
        os.replace(temporary, self.out / CURRENT)
        for name in SERVED:
            if not (self.out / name).is_symlink():
                os.symlink(f"{CURRENT}/{name}", self.out / name)
        fsync_dir(self.out)
        return previous

    def collect_garbage(self, keep: list[Path | None], background: bool = True) -> None:
        """Throw away every generation but those kept (the served one and the one it
        replaced, which readers may still be in) and every store directory none of them
        links to, including what a killed build left. Call it holding the lock."""
        kept = [path for path in keep if path is not None]
        linked = {name for root in kept for name in self.shards(root).values()}
        garbage = [p for p in self.gens.iterdir() if p not in kept]
        garbage += [p for p in self.store.iterdir() if p.name not in linked]
        self.throw_away(garbage, background)

    def throw_away(self, paths: list[Path], background: bool = True) -> None:
        """Move paths into the trash at once (a rename each) and delete the trash in a
        process of its own: deleting a large tree is slower than writing it."""
        for path in paths:
            try:
                os.rename(path, self.trash / f"{uuid.uuid4().hex}")
            except FileNotFoundError:
                pass
        if not any(self.trash.iterdir()):
            return
        if background:
            subprocess.Popen([sys.executable, "-m", trash.__name__, str(self.trash)], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            trash.empty_trash(self.trash)

    def _check_served_names(self) -> None:
        for name in SERVED:
            path = self.out / name
            if path.exists() and not path.is_symlink():
                raise OutputError(
                    f"{path} is a real directory, not the link this tool keeps there; "
                    "move it away (it was not written by this tool) and build again")


def _find_shards(directory: str, prefix: str, found: dict[str, str]) -> None:
    """Site.shards() below directory (its path from the generation's root: prefix). A walk of
    its own rather than os.walk: a directory entry says whether it is a link, where os.walk
    and relpath cost a build of a few hundred records more than it wrote (12 ms a walk)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return  # (as os.walk: a generation that is not there holds no shard)
    for entry in entries:
        relative = prefix + entry.name
        if entry.is_symlink():
            if is_shard(relative) and entry.is_dir():
                found[relative] = os.path.basename(os.readlink(entry.path))
        elif entry.is_dir():
            _find_shards(entry.path, relative + "/", found)
