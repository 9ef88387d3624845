"""make bench (import): records per second of `catalogue import` from a served catalogue.

    python benchmarks/import_rate.py [--books 10000] [--workdir bench-work]

Builds a synthetic catalogue of N books (cached by size), serves it with the built-in
server, imports it (4 requests at a time, the default), builds the import and checks
that the two sites publish the same bytes. Prints the time and records/s.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from generator.sitebuild import build  # noqa: E402
from generator.importer import Options, freeze  # noqa: E402
from generator.importer.crawl import Progress  # noqa: E402
from workload import catalogue  # noqa: E402
from servers import Server  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--books", type=int, default=10000)
    parser.add_argument("--workdir", default="bench-work", type=Path)
    args = parser.parse_args()
    work = args.workdir.absolute()
    data = catalogue(work, args.books)
    site = work / f"import-site-{args.books}"
    build(data, site)
    imported, rebuilt = work / f"imported-{args.books}", work / f"imported-site-{args.books}"
    for path in (imported, rebuilt):
        shutil.rmtree(path, ignore_errors=True)
    server = Server(site)
    try:
        started = time.monotonic()
        summary = freeze(f"http://127.0.0.1:{server.port}/api/v1/", Options(imported, "csv"),
                         Progress(open("/dev/null", "w")))
        seconds = time.monotonic() - started
    finally:
        server.stop()
    build(imported, rebuilt)
    differ = subprocess.run(["diff", "-rq", str(site / "current" / "api"), str(rebuilt / "current" / "api")],
                            capture_output=True, text=True)
    records = sum(summary.records.values())
    print(f"import of {args.books:,} books ({records:,} records) from the built-in server: {seconds:.1f} s, "
          f"{records / seconds:,.0f} records/s; rebuilt: {'identical' if differ.returncode == 0 else 'DIFFERENT'}")
    if differ.returncode != 0:
        print(differ.stdout[:2000])
        sys.exit(1)


if __name__ == "__main__":
    main()
