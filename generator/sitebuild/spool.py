"""The record store: each collection's encoded records, in order, on disk.

Encoded records are spooled to files in collection order while detail documents
are written (one spool per process), because a page's `count` is only known once
the whole collection has been read; pages are then cut from the spools, each
process its own range of pages, one page in memory at a time. The next build
refers to the records it keeps where they lie.
"""
from __future__ import annotations

import bisect
import os
import pickle
from array import array
from pathlib import Path
from typing import Iterator


SPOOL_BUFFER = 1 << 20


class Spool:
    """Encoded records of one part of a collection, in order. New records are appended to
    the spool's own data file; records the previous build had are only referred to in its
    data files (linked beside this spool), so that an edit does not copy a collection's
    bytes. The index, saved at `path` on close, holds each record's file and byte range,
    so that any process can read any range of records (Spools)."""

    def __init__(self, path: Path, tag: str = "data") -> None:
        self.path = path
        self._data = f"{path.name}.{tag}"  # the name is unique to the build that writes it
        self._file = None  # (created with its first record)
        self._names: list[str] = []
        self._numbers: dict[str, int] = {}
        self._files, self._starts, self._ends = array("H"), array("Q"), array("Q")
        self._size = 0

    def append(self, data: bytes) -> None:
        if self._file is None:
            # (a large buffer: a write call per few records costs more than the copying)
            self._file = (self.path.parent / self._data).open("wb", buffering=SPOOL_BUFFER)
            self._own = self._number(self._data)
        self._file.write(data)
        self._files.append(self._own)
        self._starts.append(self._size)
        self._size += len(data)
        self._ends.append(self._size)

    def refer(self, location: tuple[str, int, int]) -> None:
        """A record already in the data file `name` (in this spool's directory)."""
        name, start, end = location
        self._files.append(self._number(name))
        self._starts.append(start)
        self._ends.append(end)

    def refer_range(self, spools: "Spools", start: int, stop: int) -> None:
        """Records start to stop of `spools` (data files in this spool's directory), in slices."""
        for paths, files, starts, ends, low, high in spools.slices(start, stop):
            numbers = [self._number(path.name) for path in paths]
            if len(numbers) == 1:
                self._files.extend(array("H", numbers) * (high - low))
            else:
                self._files.extend(array("H", [numbers[f] for f in files[low:high]]))
            self._starts.extend(starts[low:high])
            self._ends.extend(ends[low:high])

    def _number(self, name: str) -> int:
        number = self._numbers.get(name)
        if number is None:
            number = self._numbers[name] = len(self._names)
            self._names.append(name)
        return number

    def __len__(self) -> int:
        return len(self._ends)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        with self.path.open("wb") as f:
            pickle.dump((self._names, self._files, self._starts, self._ends), f, pickle.HIGHEST_PROTOCOL)

    def __enter__(self) -> "Spool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def spool_files(path: Path) -> list[str]:
    """The data files a saved spool refers to (in its directory)."""
    with path.open("rb") as f:
        return pickle.load(f)[0]


READ_BLOCK = 1 << 22  # bytes read at once
# A collection looked up record by record this often is read whole into memory when its
# data files are this small: a read call a record costs more than the rest of the lookup,
# and a build looks up the publishers and authors of a million books several times each, and
# the user of every bookshelf (at a million books: 30, 107 and 85 MB of records). Held in
# every part, the authors and users cost twice their size in resident memory at the build's
# peak; read where they lie (the page cache holds them), a million books took no
# measurably longer.
HOLD_AFTER = 10_000
HOLD_BYTES = 48 << 20


class Spools:
    """The spools of all parts of a collection, read as one sequence of records."""

    def __init__(self, paths: list[Path]) -> None:
        self._parts = []
        self._fds: dict[Path, int] = {}
        self._contiguous: list[bool] = []
        for path in paths:
            with path.open("rb") as f:
                names, files, starts, ends = pickle.load(f)
            self._parts.append(([path.parent / name for name in names], files, starts, ends))
            self._contiguous.append(len(names) == 1 and starts[1:] == ends[:-1])
        self._firsts = array("Q", [0])  # each part's first record
        for _, files, _, _ in self._parts:
            self._firsts.append(self._firsts[-1] + len(files))
        self._lookups = 0
        # Once held: the data files read whole, and which holds each record and where, so
        # that a lookup is a few array reads and a slice (record()).
        self.held: tuple[list[bytes], array, array, array] | None = None

    def __len__(self) -> int:
        return self._firsts[-1]

    def data_paths(self) -> set[Path]:
        return {path for paths, _, _, _ in self._parts for path in paths}

    def live_bytes(self) -> int:
        return sum(sum(ends) - sum(starts) for _, _, starts, ends in self._parts)

    def slices(self, start: int, stop: int):
        """(data paths, files, starts, ends, low, high) of each part holding records start to
        stop: its records low to high are among them."""
        for part, (paths, files, starts, ends) in enumerate(self._parts):
            first = self._firsts[part]
            low, high = max(start - first, 0), min(stop - first, len(files))
            if low < high:
                yield paths, files, starts, ends, low, high

    def lengths(self, start: int, stop: int) -> list[int]:
        """The lengths of records start to stop, without reading them."""
        found: list[int] = []
        for _paths, _files, starts, ends, low, high in self.slices(start, stop):
            found.extend(map(int.__sub__, ends[low:high], starts[low:high]))
        return found

    def record(self, index: int) -> bytes:
        """Record `index` alone: read where it lies, or sliced from the data files held once
        they are looked up often and small. (Not sliced from a mapping: mapped, the files
        would count whole in the resident memory of every process.)"""
        if self.held is not None:
            blobs, files, starts, ends = self.held
            return blobs[files[index]][starts[index]:ends[index]]
        part = bisect.bisect_right(self._firsts, index) - 1
        paths, files, starts, ends = self._parts[part]
        i = index - self._firsts[part]
        self._lookups += 1
        if self._lookups == HOLD_AFTER:
            self._hold()
        return os.pread(self._fd(paths[files[i]]), ends[i] - starts[i], starts[i])

    def _hold(self) -> None:
        paths = sorted(self.data_paths())
        if sum(os.stat(path).st_size for path in paths) > HOLD_BYTES:
            return
        number = {path: k for k, path in enumerate(paths)}
        files = array("H")
        for names, part_files, _, _ in self._parts:
            numbers = [number[name] for name in names]
            files.extend(array("H", numbers) * len(part_files) if len(numbers) == 1
                         else array("H", [numbers[f] for f in part_files]))
        # (each file a bytes object of its own: joined, they would be held twice for a moment)
        self.held = ([path.read_bytes() for path in paths], files,
                     array("Q", b"".join(part[2] for part in self._parts)),
                     array("Q", b"".join(part[3] for part in self._parts)))

    def locate(self, index: int) -> tuple[str, int, int]:
        """Record `index` as (data file name, start, end)."""
        part = bisect.bisect_right(self._firsts, index) - 1
        paths, files, starts, ends = self._parts[part]
        i = index - self._firsts[part]
        return paths[files[i]].name, starts[i], ends[i]

    def read(self, start: int, stop: int) -> Iterator[bytes]:
        """Records start to stop (exclusive), one read per run of records that lie side by
        side in a data file (up to a block)."""
        for part, (paths, files, starts, ends) in enumerate(self._parts):
            first = self._firsts[part]
            low, high = max(start - first, 0), min(stop - first, len(files))
            contiguous = self._contiguous[part]
            while low < high:
                number, base = files[low], starts[low]
                if contiguous:  # one file, records side by side: find the block's end at once
                    upto = max(bisect.bisect_right(ends, base + READ_BLOCK, low, high), low + 1)
                else:
                    upto = low + 1
                    while (upto < high and files[upto] == number and starts[upto] == ends[upto - 1]
                           and ends[upto] - base <= READ_BLOCK):
                        upto += 1
                blob = os.pread(self._fd(paths[number]), ends[upto - 1] - base, base)
                for i in range(low, upto):
                    yield blob[starts[i] - base:ends[i] - base]
                low = upto

    def _fd(self, path: Path) -> int:
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, os.O_RDONLY)
        return fd

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self.held = None

    def __enter__(self) -> "Spools":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
