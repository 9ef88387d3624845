"""Run the DRF service over a data directory: python -m tests.drf.serve DATA_DIR WORK_DIR PORT

Reads the data's settings (default page size, max_limit, time zone), creates a fresh sqlite
database in WORK_DIR, loads the catalogue into it and serves it on 127.0.0.1:PORT with
Django's threaded development server, as runserver does but without autoreload.
Root-relative image paths resolve against --base-url (default: where it serves).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:  # (the Django project is the package `drf` under tests/)
    sys.path.insert(0, str(TESTS))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.drf.serve", description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("port", type=int)
    parser.add_argument("--base-url", help="against which root-relative image paths resolve")
    args = parser.parse_args(argv)
    configure(args.data, args.work)

    import django
    from django.core.management import call_command
    from django.core.servers.basehttp import get_internal_wsgi_application, run

    django.setup()
    from drf.load import load

    call_command("migrate", run_syncdb=True, verbosity=0)
    counts = load(args.data, args.base_url or f"http://127.0.0.1:{args.port}")
    print("loaded: " + ", ".join(f"{c} {n}" for c, n in counts.items()), flush=True)
    run("127.0.0.1", args.port, get_internal_wsgi_application(), threading=True)


def configure(data: Path, work: Path) -> None:
    """Django's settings from the data's site.yaml, and a new, empty database."""
    from generator.catalogue.load import read_catalogue

    settings = read_catalogue(data).settings
    if settings is None:
        sys.exit(f"{data}/site.yaml is missing or has problems: run `catalogue check --data {data}`")
    work.mkdir(parents=True, exist_ok=True)
    database = work / "drf.sqlite3"
    database.unlink(missing_ok=True)
    os.environ["DJANGO_SETTINGS_MODULE"] = "drf.settings"
    os.environ["CATALOGUE_DRF_DATABASE"] = str(database)
    os.environ["CATALOGUE_DRF_PAGE_SIZE"] = str(settings.default_page_size)
    os.environ["CATALOGUE_DRF_TIME_ZONE"] = settings.time_zone
    os.environ["CATALOGUE_DRF_MAX_LIMIT"] = str(settings.max_limit or "")
    os.environ["CATALOGUE_DRF_QUERY"] = json.dumps(settings.query)


if __name__ == "__main__":
    main()
