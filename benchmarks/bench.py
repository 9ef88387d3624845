"""make bench: `catalogue build` as a user runs it (full, no-op and one-title edits of
synthetic catalogues), against the write floor measured in the same run.

    python benchmarks/bench.py [--sizes 10000,100000] [--workdir bench-work] [--floor-writer PROGRAM]

For each size: synthesise a catalogue (`catalogue synth`, CSV, seed 5; cached by size and
seed), then time, each as a whole process from outside with the peak RSS and PSS of its
process tree, the project's own `catalogue build --data D --out O --base-url URL`: a full
build into a fresh directory; the write floor of the tree it published; a no-op rebuild; one
book's title changed and rebuilt, in the first, the middle and the last row of books.csv,
one after the other on the same site. The floor is a minimal writer creating the same
files with the same sizes under the same relative paths (the served tree: links to shards
followed, the build's state and alias links such as pages/default left out), its
directories as it meets them, split among as many forked processes as the build used,
and one sync at the end, since a build flushes before it publishes; given --floor-writer,
another writer (TREE OUTDIR --procs N, printing "files bytes seconds") is run on the same
tree and shown beside it.

Nothing else of the bench runs during a timed step: after each build it waits for the
build's own background deletion of what it threw away (the collector, timed apart), and
before each timed step for I/O pressure to settle (see Quiet). Each build's figures (files,
bytes, files written, processes, seconds of each step) are read from the report it leaves
in <out>/.build/report.json (a no-op build leaves none: it touches nothing). Prints one
table, then the seconds of each step of each build.
"""
from __future__ import annotations

import argparse
import csv
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson

from workload import build_command, catalogue

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
# dirty, which the build's own new inodes in that block make it. So the bench flushes the
# deletion of its previous run's trees and waits out those 360 seconds.
SETTLE = 400  # seconds after the last deletion
REPORT = Path(".build/report.json")  # what each build leaves in its output directory (sitebuild/publish.py)
TRASH = Path(".build/trash")  # where a build moves what it throws away, emptied by its collector


class Quiet:
    """Waits until the disk is quiet: no writeback of another step's files still under way.
    Quiet: the share of time some task waited for I/O (/proc/pressure/io, "some" avg10) under
    `below` percent in `calm` readings in a row, `every` seconds apart; waited for at most
    `most` seconds (then the step runs anyway, and the table says how long the disk was not
    quiet). A recent deletion slows file creation without any I/O pressure: see SETTLE."""

    def __init__(self, below: float = 1.0, calm: int = 3, every: float = 5.0, most: float = 600.0) -> None:
        self.below, self.calm, self.every, self.most = below, calm, every, most
        self.unsettled = 0.0  # seconds of waiting that ended without quiet

    @staticmethod
    def pressure() -> float:
        try:
            with open("/proc/pressure/io") as f:
                some = next(line for line in f if line.startswith("some"))
            return float(some.split()[1].split("=")[1])
        except (OSError, StopIteration):
            return 0.0  # (no pressure stall information: nothing to wait for)

    def wait(self) -> None:
        started, calm, said = time.monotonic(), 0, False
        while calm < self.calm:
            waited = time.monotonic() - started
            if waited >= self.most:
                self.unsettled += waited
                return
            pressure = self.pressure()
            calm = calm + 1 if pressure < self.below else 0
            if waited >= 30 and not said:
                print(f"waiting for the disk's I/O pressure to settle ({pressure:.1f}%, at most {self.most:.0f} s)",
                      file=sys.stderr, flush=True)
                said = True
            if calm < self.calm:
                time.sleep(self.every)


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


def run_build(data: Path, out: Path, quiet: Quiet) -> dict:
    """One `catalogue build` on a quiet disk, timed from outside; its report, with the wall
    seconds, the peak RSS and PSS of its process tree, and the seconds its collector then took."""
    quiet.wait()
    started, before = time.monotonic(), cpu_of_children()
    process = subprocess.Popen(build_command(data, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
    errors = process.communicate()[1]
    seconds, cpu = time.monotonic() - started, cpu_of_children() - before
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"catalogue build failed:\n{errors.decode(errors='replace')}")
    report = out / REPORT
    result = orjson.loads(report.read_bytes())
    if report.stat().st_mtime < time.time() - seconds - 1:  # a no-op: it touches nothing, not even the report
        result.update(written=0, phases={}, seconds=seconds)
    result.update(wall=seconds, cpu=cpu, rss=peak[0], pss=peak[1], collector=wait_for_collector(out))
    return result


def cpu_of_children() -> float:
    """Processor seconds (user and system) of this process's children that ended, with their
    own children's: a build's with its parts', not its collector's (which it never waits for).
    On a busy machine they move far less than the wall's seconds."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wait_for_collector(out: Path) -> float:
    """Seconds until the build's background deletion has emptied its trash."""
    started = time.monotonic()
    while any((out / TRASH).iterdir()):
        time.sleep(0.2)
    return time.monotonic() - started


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


FLOOR_ITEMS: list[tuple[str, int]] = []  # (relative path, size) of the tree, inherited by the forked writers


def served_files(tree: Path) -> list[tuple[str, int]]:
    """(path, size) of every file the tree serves: links to shards followed; the build's
    state, and a link to a sibling (pages/default -> 12: a second name, not a second copy),
    left out."""
    files = []
    for root, dirs, names in os.walk(tree, followlinks=True):
        dirs[:] = [d for d in dirs if d != ".state" and not (
            os.path.islink(os.path.join(root, d)) and "/" not in os.readlink(os.path.join(root, d)))]
        for name in names:
            path = os.path.join(root, name)
            try:
                files.append((os.path.relpath(path, tree), os.stat(path).st_size))
            except FileNotFoundError:  # (a dangling link)
                continue
    return files


def _write_floor_part(target: str, start: int, step: int, filler: bytes) -> None:
    made = set()
    for relative, size in FLOOR_ITEMS[start::step]:
        path = os.path.join(target, relative)
        directory = os.path.dirname(path)
        if directory not in made:
            os.makedirs(directory, exist_ok=True)
            made.add(directory)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, filler[:size])
        os.close(fd)


def floor(tree: Path, target: Path, processes: int, quiet: Quiet) -> float:
    """Seconds the minimal writer takes to write the tree's files under target."""
    FLOOR_ITEMS[:] = served_files(tree)
    filler = b"x" * max((size for _, size in FLOOR_ITEMS), default=0)
    context = multiprocessing.get_context("fork")
    quiet.wait()
    started = time.monotonic()
    writers = [context.Process(target=_write_floor_part, args=(str(target), k, processes, filler))
               for k in range(processes)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    os.sync()  # the build flushes its files before publishing; so does the floor
    return time.monotonic() - started


def other_floor(writer: Path, tree: Path, target: Path, processes: int, quiet: Quiet) -> float:
    """The floor as another writer measures it on the same tree."""
    quiet.wait()
    done = subprocess.run([sys.executable, str(writer), str(tree), str(target), "--procs", str(processes)],
                          capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def settled_deletion(tree: Path) -> None:
    """Delete a tree between two timed steps, then wait until the deletion is SETTLE seconds old."""
    shutil.rmtree(tree)
    os.sync()
    print(f"waiting {SETTLE} s for the disk to settle after deleting {tree.name}", file=sys.stderr, flush=True)
    time.sleep(SETTLE)


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


def bench(size: int, work: Path, writer: Path | None, quiet: Quiet) -> dict:
    data = catalogue(work, size)
    shutil.copy(data / "books.csv", data / "books.csv.orig")
    stamp = time.time_ns()
    out, floor_out, other_out = (work / f"{kind}-{size}-{stamp}" for kind in ("site", "floor", "other-floor"))
    try:
        full = run_build(data, out, quiet)
        tree = (out / "current").resolve()
        floors = {"own": floor(tree, floor_out, full["processes"], quiet)}
        if writer is not None:
            floors["other"] = other_floor(writer, tree, other_out, full["processes"], quiet)
        noop = run_build(data, out, quiet)
        edits = {}
        for where in EDITED_ROWS:
            edit_one_title(data, where)
            edits[where] = run_build(data, out, quiet)
    finally:
        shutil.move(data / "books.csv.orig", data / "books.csv")
    return {"books": size, "full": full, "noop": noop, "edits": edits, "floors": floors,
            "trees": [out, floor_out, other_out]}


def table(rows: list[dict]) -> str:
    head = ("books", "files", "MB", "full s", "full cpu s", "files/s", "peak RSS MB", "peak PSS MB",
            "outside steps s", "no-op s", "no-op files", f"edit s ({'/'.join(EDITED_ROWS)})", "edit cpu s",
            "edit files", "collector s (max)",
            "floor s", "other floor s", "build/floor")
    lines = [head]
    for r in rows:
        f, edits = r["full"], r["edits"].values()
        builds = (f, r["noop"], *edits)
        lines.append((f"{r['books']:,}", f"{f['files']:,}", f"{f['bytes'] / 1e6:,.0f}", f"{f['wall']:.1f}",
                      f"{f['cpu']:.1f}", f"{f['files'] / f['wall']:,.0f}",
                      *(f"{max(b[kind] for b in builds) / 2**20:,.0f}" for kind in ("rss", "pss")),
                      f"{f['wall'] - f['seconds']:.1f}",
                      f"{r['noop']['wall']:.1f}", f"{r['noop']['written']:,}",
                      "/".join(f"{e['wall']:.1f}" for e in edits), "/".join(f"{e['cpu']:.1f}" for e in edits),
                      "/".join(f"{e['written']:,}" for e in edits),
                      f"{max(b['collector'] for b in builds):.1f}",
                      f"{r['floors']['own']:.1f}",
                      f"{r['floors']['other']:.1f}" if "other" in r["floors"] else "-",
                      f"{f['wall'] / r['floors']['own']:.2f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines)


def phase_table(rows: list[dict]) -> str:
    """Where each build's time went, step by step (seconds; "outside": the process's start,
    its imports and the hosts' files, which the report does not time)."""
    lines = []
    for r in rows:
        builds = {"full": r["full"], "noop": r["noop"], **{f"edit {where}": e for where, e in r["edits"].items()}}
        for kind, result in builds.items():
            steps = {**result["phases"], "outside": result["wall"] - result["seconds"]}
            lines.append(f"{r['books']:>9,} {kind:>11}: " + ", ".join(f"{step} {s:.1f}" for step, s in steps.items()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--workdir", default="bench-work", type=Path)
    parser.add_argument("--floor-writer", type=Path, default=os.environ.get("CATALOGUE_FLOOR_WRITER") or None,
                        help="another floor writer (TREE OUTDIR --procs N), run on the same tree and shown "
                             "beside the bench's own (also CATALOGUE_FLOOR_WRITER)")
    parser.add_argument("--quiet-within", type=float, default=600.0,
                        help="seconds to wait at most for I/O pressure to settle before each timed step")
    args = parser.parse_args()
    args.workdir.mkdir(exist_ok=True)
    quiet = Quiet(most=args.quiet_within)
    rows = []
    settle(args.workdir)
    for size in map(int, args.sizes.split(",")):
        rows.append(bench(size, args.workdir.absolute(), args.floor_writer, quiet))
        print(f"{size:,} books done", file=sys.stderr, flush=True)
    print(table(rows), flush=True)
    print(phase_table(rows), flush=True)
    if quiet.unsettled:
        print(f"(the disk was not quiet: {quiet.unsettled:.0f} s of waiting for I/O pressure to settle ran out; "
              "the figures are of a busy machine)", flush=True)
    delete_in_background(args.workdir, [tree for row in rows for tree in row["trees"]])


def delete_in_background(work: Path, trees: list) -> None:
    """Deleting a large tree slows the file system for minutes: only after measuring, in a
    process of its own at the lowest priority (this run's trees only: another may be at work),
    marked in `work` so that the next timed run waits until it is over and SETTLE seconds
    old (settle())."""
    marker = str(work.absolute() / "deleting")
    subprocess.Popen([sys.executable, "-c", DELETE, marker, *map(str, trees)], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"deleting {len(trees)} trees in the background (the disk stays slower until it is done)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
