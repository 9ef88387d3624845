"""make bench: full, no-op and one-edit builds of synthetic catalogues, against the disk's floor.

    python benchmarks/bench.py [--sizes 10000,100000] [--workdir bench-work]

For each size: synthesise a catalogue (cached by size and seed), build it into a fresh
directory, rebuild with no change, change one book's title and rebuild (the first, the
middle and the last row of books.csv, one after the other), then measure
the floor: a minimal writer creating the same directories and files with the same byte
counts, in as many processes as the build uses, and, given --floor-writer, the team's own
floor writer on the same tree: the build is reported against the faster of the two. Peak RSS and PSS are sampled over the build's
whole process tree. Prints one table, then the seconds of each step of each build. It starts
only once the previous run's trees are deleted and the disk has settled (see SETTLE).
"""
from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from workload import catalogue  # noqa: E402
BUILD = """
import json, sys
from generator.sitebuild import build
summary = build(sys.argv[1], sys.argv[2])
print(json.dumps({"files": summary.files, "bytes": summary.bytes, "written": summary.written,
                  "processes": summary.processes, "phases": summary.phases}))
"""

DELETE = """
import os, shutil, sys, time
os.nice(19)
marker, trees = sys.argv[1], sys.argv[2:]
with open(marker, "w") as f:
    f.write(str(os.getpid()))
for tree in trees:
    shutil.rmtree(tree, ignore_errors=True)
os.sync()  # (a deleted inode whose table block is still dirty slows creation for minutes more)
with open(marker, "w") as f:
    f.write(f"done {time.time()}")
"""
# Creating a file right after many were deleted costs several times more on some file systems:
# ext4 without a journal passes over every free inode deleted in the last 60 seconds before it
# takes one, and over those deleted in the last 360 seconds when their inode table block is
# dirty, which the build's own new inodes in that block make it. A run that starts within
# minutes of a large deletion measures the deletion, the build (first) more than the floor
# (minutes later): 1M builds 94 s and 2 minutes after one took 202 s and 193 s, 16% of the
# machine's time in that pass, against 127 s on a quiet disk, while their floors took 74 s and
# 69 s either way. So the bench flushes its deletion and waits out those 360 seconds.
SETTLE = 400  # seconds after the last deletion


def tree_memory(pid: int, pss: bool = True) -> tuple[int, int]:
    """Resident bytes of a process and all its descendants, as (RSS, PSS). RSS counts a page
    shared by several processes (since the fork, or of a file they map) in each of them;
    PSS divides it among them, so that their sum is what the tree holds. (PSS costs the
    kernel a walk of every page table: without `pss`, 0.)"""
    rss, shared, stack = 0, 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as f:
                rss += next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
            if pss:
                with open(f"/proc/{current}/smaps_rollup") as f:
                    shared += next(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))
            with open(f"/proc/{current}/task/{current}/children") as f:
                stack.extend(int(c) for c in f.read().split())
        except (OSError, StopIteration):
            pass
    return rss, shared


def run_build(data: Path, out: Path) -> dict:
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", BUILD, str(data), str(out)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0, 0]

    def sample():
        # RSS every 0.2 s, PSS every 2 s: sampled every 50 ms, PSS took 5% of the machine's
        # time from the build, which the floor does not pay. (The peak lasts tens of seconds.)
        count = 0
        while process.poll() is None:
            peak[:] = map(max, peak, tree_memory(process.pid, pss=count % 10 == 0))
            count += 1
            time.sleep(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    stdout, stderr = process.communicate()
    seconds = time.monotonic() - started
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"build failed:\n{stderr}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(seconds=seconds, rss=peak[0], pss=peak[1])
    return result


# Where an edit falls in books.csv (the row, of the data rows' count): an edit anywhere in the
# file is measured, one after the other on the same site.
EDITED_ROWS = {"first": lambda count: 1, "middle": lambda count: count // 2, "last": lambda count: count}


def edit_one_title(data: Path, where: str) -> None:
    path = data / "books.csv"
    rows = list(csv.reader(path.open(encoding="utf-8", newline="")))
    title = rows[0].index("title")
    rows[EDITED_ROWS[where](len(rows) - 1)][title] += " (ویرایش)"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def inventory(site: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """Directories and (file, size) of the published tree, as the floor writer recreates them."""
    root = (site / "current").resolve()
    dirs, files = [], []
    for directory, subdirs, names in os.walk(root, followlinks=True):
        if ".state" in directory.split(os.sep):
            continue  # the build's own bookkeeping, not part of what it publishes
        rel = os.path.relpath(directory, root)
        dirs.append(rel)
        for name in names:
            files.append((os.path.join(rel, name), os.stat(os.path.join(directory, name)).st_size))
    return dirs, files


def _floor_part(target: str, files: list[tuple[str, int]], blob: bytes) -> None:
    for path, size in files:
        fd = os.open(os.path.join(target, path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, blob[:size]) if size <= len(blob) else os.write(fd, b"x" * size)
        os.close(fd)


def floor(site: Path, target: Path, processes: int) -> float:
    dirs, files = inventory(site)
    blob = os.urandom(1 << 20)
    started = time.monotonic()
    for d in dirs:
        os.makedirs(target / d, exist_ok=True)
    parts = [files[k::processes] for k in range(processes)]
    workers = [multiprocessing.Process(target=_floor_part, args=(str(target), part, blob)) for part in parts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    os.sync()  # the build flushes its files before publishing; so does the floor
    return time.monotonic() - started


def shared_floor(writer: Path, site: Path, target: Path, processes: int) -> float:
    """The floor as another writer measures it on the same tree (a script that takes TREE OUTDIR
    --procs N and prints "files bytes seconds"): the team's one instrument, when given."""
    done = subprocess.run([sys.executable, str(writer), str((site / "current").resolve()), str(target),
                           "--procs", str(processes)], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def settle(work: Path) -> None:
    """Wait until this bench's last deletion is over and SETTLE seconds old."""
    marker = work / "deleting"
    while marker.exists():
        state = marker.read_text()
        if state.startswith("done "):
            left = float(state.split()[1]) + SETTLE - time.time()
            if left <= 0:
                return
            print(f"waiting {left:.0f} s for the disk to settle after the last deletion", file=sys.stderr, flush=True)
            time.sleep(left)
            return
        try:
            os.kill(int(state), 0)
        except (ValueError, ProcessLookupError):
            return  # (the deleting process was stopped)
        print("waiting for the previous run's trees to be deleted", file=sys.stderr, flush=True)
        time.sleep(10)


def bench(size: int, work: Path, writer: Path | None) -> dict:
    data = catalogue(work, size)
    shutil.copy(data / "books.csv", data / "books.csv.orig")
    out, floor_out = work / f"site-{size}-{time.time_ns()}", work / f"floor-{size}-{time.time_ns()}"
    shared_out = work / f"shared-floor-{size}-{time.time_ns()}"
    try:
        full = run_build(data, out)
        noop = run_build(data, out)
        edits = {}
        for where in EDITED_ROWS:
            edit_one_title(data, where)
            edits[where] = run_build(data, out)
        floors = {"own": floor(out, floor_out, full["processes"])}
        if writer is not None:
            floors["shared"] = shared_floor(writer, out, shared_out, full["processes"])
    finally:
        shutil.move(data / "books.csv.orig", data / "books.csv")
    # The floor is the fastest known way to do the writing: the faster of the two writers.
    return {"books": size, "full": full, "noop": noop, "edits": edits, "floor": min(floors.values()),
            "floors": floors, "trees": [out, floor_out, shared_out]}


def table(rows: list[dict]) -> str:
    head = ("books", "files", "MB", "full s", "files/s", "MB/s", "peak RSS MB", "peak PSS MB", "no-op s",
            "no-op files", f"edit s ({'/'.join(EDITED_ROWS)})", "edit files", "own floor s", "shared floor s",
            "build/floor")
    lines = [head]
    for r in rows:
        f, edits = r["full"], r["edits"].values()
        lines.append((f"{r['books']:,}", f"{f['files']:,}", f"{f['bytes'] / 1e6:,.0f}", f"{f['seconds']:.1f}",
                      f"{f['files'] / f['seconds']:,.0f}", f"{f['bytes'] / 1e6 / f['seconds']:.1f}",
                      *(f"{max(b[kind] for b in (f, r['noop'], *edits)) / 2**20:,.0f}" for kind in ("rss", "pss")),
                      f"{r['noop']['seconds']:.1f}", f"{r['noop']['written']:,}",
                      "/".join(f"{e['seconds']:.1f}" for e in edits), "/".join(f"{e['written']:,}" for e in edits),
                      f"{r['floors']['own']:.1f}",
                      f"{r['floors']['shared']:.1f}" if "shared" in r["floors"] else "-",
                      f"{f['seconds'] / r['floor']:.2f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines)


def phase_table(rows: list[dict]) -> str:
    """Where each build's time went, step by step (seconds)."""
    lines = []
    for r in rows:
        builds = {"full": r["full"], "noop": r["noop"], **{f"edit {where}": e for where, e in r["edits"].items()}}
        for kind, result in builds.items():
            lines.append(f"{r['books']:>9,} {kind:>11}: "
                         + ", ".join(f"{step} {s:.1f}" for step, s in result["phases"].items()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--workdir", default="bench-work", type=Path)
    parser.add_argument("--floor-writer", type=Path, default=os.environ.get("CATALOGUE_FLOOR_WRITER") or None,
                        help="the team's floor writer (TREE OUTDIR --procs N), run on the same tree; the build "
                             "is reported against the faster floor (also CATALOGUE_FLOOR_WRITER)")
    args = parser.parse_args()
    args.workdir.mkdir(exist_ok=True)
    rows = []
    settle(args.workdir)
    for size in map(int, args.sizes.split(",")):
        rows.append(bench(size, args.workdir.absolute(), args.floor_writer))
        print(f"{size:,} books done", file=sys.stderr, flush=True)
    print(table(rows), flush=True)
    print(phase_table(rows), flush=True)
    # Deleting a large tree slows the file system for minutes: only after measuring, in a
    # process of its own at the lowest priority (this run's trees only: another may be at work).
    trees = [str(tree) for row in rows for tree in row["trees"]]
    marker = str(args.workdir.absolute() / "deleting")  # (settle() waits for it)
    subprocess.Popen([sys.executable, "-c", DELETE, marker, *trees], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"deleting {len(trees)} trees in the background (the disk stays slower until it is done)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
