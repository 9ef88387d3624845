"""The golden output of the sample catalogue, and the one way to refresh it.

    make golden    (rebuilds the sample into a temporary folder and rewrites tests/golden/)

Refresh only on purpose, after checking the difference by hand against the spec.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
ROOT = HERE.parent

# Chosen to cover, between them, every rule a reader would check by eye: the API
# root, first / middle / last pages of two page sizes, an empty previous link, a
# book with translators, images (one root-relative), a multi-line comment and a
# U+2028 in `about`, an author whose name ends in a space, a nested category, a
# user with a Persian username and a bookshelf embedding its owner.
FILES = [
    "api/v1/index.json",
    "api/v1/category/index.json",
    "api/v1/category/pages/12/0/12.json",
    "api/v1/publisher/pages/24/0/0.json",
    "api/v1/books/pages/12/0/36.json",
    "api/v1/books/76/76f9d815-44dc-545f-890b-4419e8e5e6da.json",
    "api/v1/books/b9/b9c8d6c0-fd3b-41c9-be0b-8324d58529dd.json",
    "api/v1/author/18/187b102f-27c8-4e95-9f12-42ebc7b73cb1.json",
    "api/v1/category/99/99f72799-9e19-41dd-ac52-26d489f45595.json",
    "api/v1/user/index.json",
    "api/v1/bookshelf/index.json",
]
MANIFEST = "tree.sha256"


def served_files(site_root: Path, gz: bool = False) -> list[Path]:
    """Every JSON file (or .gz file) a server sees under site/api, following the site's links.
    The .gz files are left out of the golden manifest: zlib versions may compress differently."""
    found = []
    for directory, _dirs, names in os.walk(site_root / "api", followlinks=True):
        found.extend(Path(directory) / name for name in names if name.endswith(".gz") == gz)
    return sorted(found)


def manifest(site_root: Path) -> str:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(site_root)}"
             for p in served_files(site_root)]
    return "\n".join(lines) + "\n"


def refresh() -> None:
    from generator.build import build

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "site"
        build(ROOT / "data", out)
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for name in FILES:
            target = GOLDEN / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((out / name).read_bytes())
        (GOLDEN / MANIFEST).write_text(manifest(out), encoding="utf-8")
    print(f"refreshed {len(FILES)} golden files and {MANIFEST} in {GOLDEN.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    refresh()
