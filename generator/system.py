"""Small operating-system helpers that more than one subsystem needs: flushing
directories and file systems to disk, and child processes that end with their parent."""
from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a file created, renamed or removed in it) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
