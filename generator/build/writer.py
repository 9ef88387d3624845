"""A process of its own that creates the files one part of a build writes.

Creating a file costs the kernel about as much as rendering the record costs Python,
and part of that is waiting: for the journal, for the disk to take dirty pages. A part
that created its own files would wait with it. Fed through a pipe, this process creates
them while the part renders the next ones; the part pays one buffered copy per file.
It ends at the end of its input, so it never outlives its part (even one killed), and
then tells the part what it could not write. The part has made the directories.

Run as a script (`python -I writer.py`), it is that process: it imports nothing but
the standard library, so that it starts in milliseconds and holds a few megabytes.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

FRAME = struct.Struct("<II")  # before each file: the length of its path, of its data
BUFFER = 1 << 20


class FileWriter:
    """The part's end of the pipe."""

    def __init__(self) -> None:
        self._process = subprocess.Popen([sys.executable, "-I", __file__], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, bufsize=BUFFER)

    def write(self, target: str, data: bytes) -> None:
        """Create the file `target` (it must not exist) holding `data`, soon."""
        path = target.encode()
        pipe = self._process.stdin
        pipe.write(FRAME.pack(len(path), len(data)))
        pipe.write(path)
        pipe.write(data)

    def close(self) -> None:
        """Wait until every file is written; raise the first failure: FileExistsError for
        a file that was there already, another OSError for the rest."""
        self._process.stdin.close()
        report = self._process.stdout.read()
        status = self._process.wait()
        if report:
            number, reason, path = json.loads(report)
            raise OSError(number, reason, path)  # (OSError makes FileExistsError of EEXIST)
        if status != 0:
            raise OSError(f"the process writing the build's files stopped with status {status}")

    def abandon(self) -> None:
        """The part failed: let the process end without waiting for it to tell."""
        self._process.stdin.close()
        self._process.wait()


def create(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        written = os.write(fd, data)
        if written < len(data):  # (a file takes it all at once, short of a signal or a full disk)
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def serve(source, report) -> None:
    """Create the files framed in `source` until it ends; after a failure, only read on.
    Write the first failure to `report` as [errno, reason, path]."""
    failure = None
    while len(head := source.read(FRAME.size)) == FRAME.size:
        path_size, data_size = FRAME.unpack(head)
        path, data = source.read(path_size).decode(), source.read(data_size)
        if failure is None and len(data) == data_size:
            try:
                create(path, data)
            except OSError as exc:
                failure = [exc.errno, exc.strerror, path]
    if failure is not None:
        report.write(json.dumps(failure).encode())


if __name__ == "__main__":
    serve(open(0, "rb", buffering=BUFFER), sys.stdout.buffer)
