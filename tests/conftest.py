"""Fixtures: the sample catalogue copied into a temporary folder, and tree helpers; one
line at the end for the tests skipped because a program is not installed. Temporary
files go to a RAM file system where the machine has one (see RAM_TEMP)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from golden_files import served_files

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data"

# Every build publishes with syncfs (generator/sitebuild/publish.py), which waits for every
# dirty page of the file system it is on, other programs' included: on a disk file system a
# test's few files could wait seconds behind whatever else the machine writes. On tmpfs the
# same calls run and return at once, so the tests' temporary folders (pytest's tmp_path, the
# tempfile module, the servers and builds they start) go there, unless TMPDIR names a folder.
RAM_TEMP = Path("/dev/shm")
RAM_TEMP_FREE = 2 << 30  # bytes free at least (the suite writes a few hundred MB at most)


def ram_temp() -> Path | None:
    """The tmpfs for temporary files, if this machine has one with room and TMPDIR is unset."""
    if os.environ.get("TMPDIR") or not (RAM_TEMP.is_dir() and os.access(RAM_TEMP, os.W_OK | os.X_OK)):
        return None
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            tmpfs = any(line.split()[1:3] == [str(RAM_TEMP), "tmpfs"] for line in mounts)
        stat = os.statvfs(RAM_TEMP)
    except OSError:
        return None
    return RAM_TEMP if tmpfs and stat.f_bavail * stat.f_frsize >= RAM_TEMP_FREE else None


if (_ram := ram_temp()) is not None:
    os.environ["TMPDIR"] = str(_ram)  # (the processes the tests start)
    tempfile.tempdir = str(_ram)  # (this one's tempfile, and so pytest's tmp_path: set once, before it is used)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A private copy of the sample catalogue that a test may edit."""
    target = tmp_path / "data"
    shutil.copytree(SAMPLE, target)
    return target


def served(out: Path) -> dict[str, bytes]:
    """Every file a server sees under out/api, as relative path -> bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for p in served_files(out)}


def published_files(site: Path) -> set[str]:
    """Every file a host may be given of the published generation: what its api/ and _meta/
    hold, links followed, as paths relative to it (counted without the code under test)."""
    root = site / "current"
    return {os.path.relpath(os.path.join(directory, name), root)
            for top in ("api", "_meta") for directory, _dirs, names in os.walk(root / top, followlinks=True)
            for name in names}


def site_state(out: Path) -> dict[str, object]:
    """Everything in an output directory, links and build state included, but the trash
    (what a build threw away, on its way out)."""
    state: dict[str, object] = {}
    for p in sorted(out.rglob("*")):
        key = str(p.relative_to(out))
        if key.startswith(".build/trash/"):
            continue
        if p.is_symlink():
            state[key] = ("link", str(p.readlink()))
        elif p.is_file():
            state[key] = ("file", p.read_bytes(), p.stat().st_mtime_ns)
        else:
            state[key] = ("dir",)
    return state


def pytest_terminal_summary(terminalreporter) -> None:
    """One line per program whose tests were skipped because it is not installed."""
    missing: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        if reason.endswith(" is not installed"):
            program = reason.removeprefix("Skipped: ").removesuffix(" is not installed")
            missing[program] = missing.get(program, 0) + 1
    for program, count in sorted(missing.items()):
        terminalreporter.write_line(f"skipped {count} tests against {program}: it is not installed here "
                                    f"({HOW.get(program, '')}.ci/run installs it and sets "
                                    f"CATALOGUE_REQUIRE={program})")


HOW = {"cloudflare": "workerd: `make node_modules`, which `make test` runs where npm is; ",
       "deno": "`.venv/bin/pip install deno`; ", "chromium": "the system's chromium package; ",
       "wrangler": "`make node_modules`; ", "rsync": "the system's rsync package; "}
