"""What the benchmarks share: the synthetic catalogues they measure, made once per size
(and seed) and kept in the work directory for the next run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 7


def catalogue(work: Path, books: int) -> Path:
    """The data directory of the synthetic catalogue of this many books."""
    data = work / f"data-{books}"
    if not (data / "site.yaml").exists():
        subprocess.run([sys.executable, "-m", "generator", "synth", str(data), "--books", str(books),
                        "--seed", str(SEED)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return data
