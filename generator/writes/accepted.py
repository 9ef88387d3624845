"""Read your writes: a record the write service accepted is served until a build publishes it.

A 201 names the new record's URL, and DRF answered a GET of it at once. Here the record
is published by the next build, a second or more later, so the write service keeps its
detail document (the very bytes the build will publish) under <out>/.accepted/, at the
path it will have in a generation, and the servers answer a detail that is not published
yet from there. A build that publishes takes away what it published: the files that were
waiting when it started, and any whose document the new generation holds.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..api.urls import ACCEPTED, CURRENT


class Accepted:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.root = out / ACCEPTED

    def keep(self, file: str, body: bytes) -> None:
        """The document of an accepted record, written whole (a reader never sees part of it)."""
        path = self.root / file
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".accepting-")
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(temporary, path)

    def waiting(self) -> set[Path]:
        """The documents waiting now (before a build starts)."""
        return {Path(d) / name for d, _, names in os.walk(self.root) for name in names
                if not name.startswith(".accepting-")}

    def published(self, waited: set[Path]) -> None:
        """After a build published: what waited before it, and what it holds, goes."""
        for path in self.waiting():
            if path in waited or (self.out / CURRENT / path.relative_to(self.root)).is_file():
                path.unlink(missing_ok=True)
