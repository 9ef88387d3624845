"""What the benchmarks share: the synthetic catalogues they measure, made once per size
(and seed) and kept in the work directory for the next run, and the `catalogue` command
they run as a user does."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# The project's own command, from the environment the benchmark runs in (make bench: .venv).
CATALOGUE = Path(sys.executable).with_name("catalogue")
SEED = 5  # the seed of the catalogues the performance figures are measured on
BASE_URL = "http://127.0.0.1:18099"  # a local build's links: where it would be served


def build_command(data: Path, out: Path) -> list[str]:
    """`catalogue build` as a user runs it: the command and the options, a process of its own."""
    return [str(CATALOGUE), "build", "--data", str(data), "--out", str(out), "--base-url", BASE_URL]


def user_build(data: Path, out: Path) -> None:
    subprocess.run(build_command(data, out), check=True, stdout=subprocess.DEVNULL)


def catalogue(work: Path, books: int, seed: int = SEED, vocabulary: int | None = None) -> Path:
    """The data directory of the synthetic catalogue of this many books (CSV files), its text
    from `vocabulary` words by Zipf's law when given."""
    data = work / (f"data-{books}-seed{seed}" + (f"-v{vocabulary}" if vocabulary else ""))
    if not (data / "site.yaml").exists():
        words = ["--vocabulary", str(vocabulary)] if vocabulary else []
        subprocess.run([str(CATALOGUE), "synth", str(data), "--books", str(books), "--seed", str(seed),
                        "--format", "csv", *words], check=True, stdout=subprocess.DEVNULL)
    return data
