"""Deleting what a build threw away: `python -m generator.sitebuild.trash TRASH`, the process of
its own that publish.py starts after each build that replaces a generation. It imports nothing
of the project, so that it starts at once (a hundredth of a second, not a tenth), and it runs
at the lowest priority: it is never waited for, and deleting a large tree costs a core and
the disk for minutes, which the next build, or the server, needs more."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def empty_trash(trash: Path) -> None:
    for entry in trash.iterdir():
        shutil.rmtree(entry, ignore_errors=True)


if __name__ == "__main__":  # the background deleter that publish.Site.throw_away starts
    os.nice(19)  # (the disk's schedulers take the I/O priority from it too, when none is set)
    empty_trash(Path(sys.argv[1]))
