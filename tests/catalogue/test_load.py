"""The same catalogue written as YAML or as CSV builds to identical bytes."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from generator.sitebuild import build
from generator.catalogue.fields import derived_id
from generator.catalogue.resources import COLLECTIONS
from conftest import served

LISTS = {"authors", "translators", "publishers", "categories", "images"}


def rows(data_dir: Path, collection: str) -> tuple[str, list[dict]]:
    """A collection's format and rows, read with the standard readers (not the build's own,
    so that a column the build misreads cannot carry its mistake into the conversion): YAML
    scalars all as text, as the YAML base loader reads them; CSV cells as text."""
    [path] = [p for p in data_dir.glob(f"{collection}.*") if p.suffix in (".yaml", ".csv")]
    if path.suffix == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as f:
            return "csv", list(csv.DictReader(f))
    return "yaml", yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader) or []


def flatten(categories: list, parent: str = "") -> list[dict]:
    """Nested YAML categories as CSV rows naming their parent."""
    flat = []
    for row in categories:
        children = row.pop("children", [])
        row["parent"] = parent
        flat.append(row)
        own = row.get("id") or derived_id("categories", row["slug"])
        flat.extend(flatten(children, own))
    return flat


def cell(value) -> str:
    if value is None or value in ("null", "~", "Null", "NULL"):  # (YAML's nulls, as the base loader reads them)
        return ""
    if isinstance(value, list):
        return "|".join(item["image"] if isinstance(item, dict) else item for item in value)
    return str(value)


def to_csv(data_dir: Path, collection: str) -> None:
    path = data_dir / f"{collection}.yaml"
    _, found = rows(data_dir, collection)
    if collection == "categories":
        found = flatten(found)
    columns = list(dict.fromkeys(key for row in found for key in row))
    with (data_dir / f"{collection}.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows([cell(row.get(c)) for c in columns] for row in found)
    path.unlink()


def to_yaml(data_dir: Path, collection: str) -> None:
    path = data_dir / f"{collection}.csv"
    _, found = rows(data_dir, collection)
    records = []
    for row in found:
        record = {k: v for k, v in row.items() if v != ""}  # an empty cell means the default
        for key in LISTS & record.keys():
            record[key] = record[key].split("|")
        records.append(record)
    text = yaml.safe_dump(records, allow_unicode=True, sort_keys=False, width=1000)
    (data_dir / f"{collection}.yaml").write_text(text, encoding="utf-8")
    path.unlink()


def test_sample_mixes_both_formats(data_dir: Path):
    formats = {rows(data_dir, c)[0] for c in COLLECTIONS}
    assert formats == {"yaml", "csv"}


def test_every_collection_converted_to_the_other_format_builds_the_same(data_dir: Path, tmp_path: Path):
    build(data_dir, tmp_path / "before")
    formats = [rows(data_dir, c)[0] for c in COLLECTIONS]
    for collection, fmt in zip(COLLECTIONS, formats):
        (to_csv if fmt == "yaml" else to_yaml)(data_dir, collection)
    flipped = {"yaml": "csv", "csv": "yaml"}
    assert [rows(data_dir, c)[0] for c in COLLECTIONS] == [flipped[f] for f in formats]
    build(data_dir, tmp_path / "after")
    before, after = served(tmp_path / "before"), served(tmp_path / "after")
    assert len(before) == 138  # 127 documents + pages/default, the default size's pages again
    assert before == after


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_each_collection_alone_in_the_other_format(data_dir: Path, tmp_path: Path, collection: str):
    build(data_dir, tmp_path / "before")
    fmt, _ = rows(data_dir, collection)
    (to_csv if fmt == "yaml" else to_yaml)(data_dir, collection)
    build(data_dir, tmp_path / "after")
    assert served(tmp_path / "before") == served(tmp_path / "after")
