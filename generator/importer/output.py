"""Write the imported catalogue as a data directory, read it back, then put it in place.

The files are written into a new directory beside the target, in the data contract's
formats (YAML, or CSV where CSV can say everything a collection holds), and read back
with the build's own readers and checks: every record must come back with the values it
was written with, and every category with the path the service gave it. Only then does
the new directory take the target's place, in one rename; a directory that was there is
kept beside it, renamed, and never half overwritten.
"""
from __future__ import annotations

import csv
import os
import shutil
import time
from pathlib import Path

import yaml

from ..api.urls import Urls
from ..catalogue.fields import FieldError
from ..catalogue.load import read_catalogue
from ..catalogue.records import Known, Unique, collection_records
from ..catalogue.resources import BY_COLLECTION, COLLECTIONS
from ..errors import CatalogueError
from ..system import fsync_dir
from .convert import Frozen, image_csv_form

Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
FORMATS = ("yaml", "csv")


def check_target(out: Path, replace: bool) -> None:
    """Before anything is read: a target that holds files is replaced only when asked."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not replace:
        raise CatalogueError(f"{out} already exists and is not empty: import into a new directory, "
                             "or give --replace to put the import in its place (the old one is kept beside it)")


def write(frozen: Frozen, out: Path, format: str, replace: bool) -> tuple[dict[str, str], str | None]:
    """The data directory at `out`; the format each collection was written in, and where
    a directory that was there before was moved to."""
    check_target(out, replace)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.import-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        formats = {collection: _write_collection(staging, frozen, collection, format) for collection in COLLECTIONS}
        _write_site(staging / "site.yaml", frozen.site)
        _read_back(staging, frozen)
        _fsync_files(staging)
        kept = None
        if out.exists():
            kept = f"{out}.replaced-{time.strftime('%Y%m%d-%H%M%S')}"
            os.rename(out, kept)
        os.rename(staging, out)
        return formats, kept
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_collection(directory: Path, frozen: Frozen, collection: str, format: str) -> str:
    rows = frozen.rows[collection]
    cells = _csv_cells(collection, rows, frozen) if format == "csv" else None
    if format == "csv" and cells is None:
        format = "yaml"
        frozen.notes.append(f"{collection}: written as YAML, since CSV cannot hold what they have (image ids "
                            "that are not derived from the URL, a type_image_book, or a code_qoq that is empty "
                            "rather than null)")
    fields = [f.name for f in BY_COLLECTION[collection].fields]
    if cells is not None:
        with (directory / f"{collection}.csv").open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(fields)
            writer.writerows(cells)
    else:
        with (directory / f"{collection}.yaml").open("w", encoding="utf-8") as f:
            for row in rows:
                record = {name: row[name] for name in fields if row.get(name) is not None}
                f.write(yaml.dump([record], Dumper=Dumper, allow_unicode=True, sort_keys=False,
                                  default_flow_style=False, width=1 << 30))
            if not rows:
                f.write("[]\n")
    return format


def _csv_cells(collection: str, rows: list[dict], frozen: Frozen) -> list[list[str]] | None:
    """The rows as CSV cells in the fields' order; None when CSV cannot hold them (a book's
    image whose id its URL does not derive, or an empty code_qoq that CSV would read as null)."""
    resource = BY_COLLECTION[collection]
    fields = [f.name for f in resource.fields]
    # (an empty cell is a missing value: it gives the field's default, which here is null)
    nullable = [f.name for f in resource.fields if not f.required and f.default is None]
    cells = []
    for row in rows:
        if any(row.get(name) == "" for name in nullable):
            return None
        for name in resource.images:
            forms = [image_csv_form(row["id"], image, frozen.site["base_url"]) for image in row[name]]
            if None in forms:
                return None
            row = {**row, name: forms}
        cells.append([_cell(row.get(name)) for name in fields])
    return cells


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "|".join(value)
    return str(value)


def _write_site(path: Path, site: dict) -> None:
    text = ("# Imported with `catalogue import`: the settings of the service it was read from.\n"
            + yaml.dump(site, Dumper=Dumper, allow_unicode=True, sort_keys=False, default_flow_style=None))
    path.write_text(text, encoding="utf-8")


def _read_back(directory: Path, frozen: Frozen) -> None:
    """The written directory as the build reads it: the same records, the same values."""
    found = read_catalogue(directory)
    problems = found.problems
    known = Known()
    for collection in COLLECTIONS:
        resource = BY_COLLECTION[collection]
        source = found.sources[collection]
        read = collection_records(source, problems, known, Unique(source, problems))
        expected = frozen.rows[collection]
        got = list(read)
        if len(got) != len(expected):
            problems.add(source.name, 0, "", f"reads back {len(got)} records where {len(expected)} were written")
            continue
        for (line, record), row in zip(got, expected):
            for name in resource.images:  # (a root-relative image is published with the site's origin)
                record[name] = [dict(image, image=_absolute(image["image"], frozen.site["base_url"]))
                                for image in record[name]]
            for spec in resource.fields:
                if _value(spec, row.get(spec.name)) != record[spec.name]:
                    problems.add(source.name, line, spec.name, f"reads back as {record[spec.name]!r}, not as "
                                                               f"{row.get(spec.name)!r}")
            if resource.tree and record["path"] != frozen.paths.get(record["id"]):
                frozen.notes.append(f"{resource.name} {record['id']}: its path on the service was "
                                    f"{frozen.paths.get(record['id'])}, the build will give {record['path']} "
                                    "(paths follow the order of siblings, without gaps)")
    if problems:
        raise CatalogueError("the imported data does not read back as it was written (a bug of the importer):\n"
                             + problems.report())


def _absolute(url: str, base_url: str) -> str:
    return Urls(base_url, "api").origin() + url if url.startswith("/") else url


def _value(spec, value):
    """A value as the build's reader makes it."""
    if value is None:
        return spec.default if not spec.required else None
    try:
        coerced = spec.coerce(value)
    except FieldError:
        return value
    return coerced


def _fsync_files(directory: Path) -> None:
    """Every file on disk before the directory is renamed into place."""
    for path in directory.iterdir():
        with path.open("rb") as f:
            os.fsync(f.fileno())
    fsync_dir(directory)
