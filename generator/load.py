"""Read the data directory: find each collection's one file and yield its raw rows.

A row is `(line, mapping)`: the line the record starts on and its fields as
written. CSV cells are strings; YAML scalars are strings, integers, floats,
booleans or null. Turning them into typed values is the next stage's job
(validate.py), so that both formats go through the same rules.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from .errors import Problems

# Data-file stems in the order the build needs them: a collection comes after
# the collections its records embed.
COLLECTIONS = ("categories", "publishers", "authors", "users", "books", "bookshelves")
SITE_FILE = "site.yaml"


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML 1.2-like scalars: only true/false are booleans and dates stay text.

    PyYAML follows YAML 1.1, where `no` is false and `2020-01-01 10:00` a naive
    datetime; a librarian writing a title "No" or a timestamp would be surprised,
    and CSV never does that, so both formats read alike.
    """


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if not tag.endswith((":bool", ":timestamp"))]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


@dataclass(frozen=True)
class Source:
    collection: str
    path: Path
    format: str  # "yaml" or "csv"

    @property
    def name(self) -> str:
        """The file as reports name it: relative to the data directory's parent."""
        return f"{self.path.parent.name}/{self.path.name}"

    def rows(self, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
        reader = _yaml_rows if self.format == "yaml" else _csv_rows
        try:
            yield from reader(self, problems)
        except UnicodeDecodeError as exc:
            problems.add(self.name, 0, "", f"is not UTF-8 text (byte {exc.start}): save it as UTF-8")
        except OSError as exc:
            problems.add(self.name, 0, "", f"cannot be read: {exc.strerror}")


def find_sources(data_dir: Path, problems: Problems) -> dict[str, Source]:
    """Each collection's source file; both formats present, or neither, is a problem."""
    sources = {}
    for collection in COLLECTIONS:
        found = [
            Source(collection, data_dir / f"{collection}.{ext}", fmt)
            for ext, fmt in (("yaml", "yaml"), ("yml", "yaml"), ("csv", "csv"))
            if (data_dir / f"{collection}.{ext}").is_file()
        ]
        if len(found) == 1:
            sources[collection] = found[0]
        elif not found:
            problems.add(
                f"{data_dir.name}/", 0, "",
                f"collection {collection!r} has no data file: add {collection}.yaml or {collection}.csv",
            )
        else:
            names = " and ".join(s.path.name for s in found)
            problems.add(
                f"{data_dir.name}/", 0, "",
                f"collection {collection!r} comes from {names}: keep exactly one of them",
            )
    return sources


def read_site(data_dir: Path, problems: Problems) -> tuple[str, dict[str, Any]]:
    """site.yaml as a mapping (empty when missing or broken, with the problem noted)."""
    path = data_dir / SITE_FILE
    name = f"{data_dir.name}/{SITE_FILE}"
    try:
        with path.open("rb") as f:
            value = yaml.load(f, Loader=_Loader)
    except FileNotFoundError:
        problems.add(name, 0, "", "is missing: it must at least set base_url")
        return name, {}
    except yaml.YAMLError as exc:
        problems.add(name, _mark_line(exc), "", f"is not valid YAML: {_yaml_reason(exc)}")
        return name, {}
    if value is None:
        value = {}
    if not isinstance(value, dict):
        problems.add(name, 1, "", "must be a mapping of settings (key: value)")
        return name, {}
    return name, value


def _csv_rows(source: Source, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    # utf-8-sig drops the byte-order mark spreadsheets like to write.
    with source.path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                problems.add(source.name, 0, "", "is empty: a CSV file needs a header row")
                return
            header = [h.strip() for h in header]
            for column in {h for h in header if header.count(h) > 1 or not h}:
                what = "an empty column name" if not column else f"column {column!r} twice"
                problems.add(source.name, 1, column, f"header has {what}")
            end = reader.line_num
            for row in reader:
                start, end = end + 1, reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                if len(row) != len(header):
                    problems.add(
                        source.name, start, "",
                        f"has {len(row)} cells but the header has {len(header)}: "
                        "quote cells that contain commas",
                    )
                    continue
                yield start, dict(zip(header, row))
        except csv.Error as exc:
            problems.add(source.name, reader.line_num, "", f"is not valid CSV: {exc}")


def _yaml_rows(source: Source, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    with source.path.open("rb") as f:
        loader = _Loader(f)
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            problems.add(source.name, _mark_line(exc), "", f"is not valid YAML: {_yaml_reason(exc)}")
            return
        finally:
            loader.dispose()
        if root is None:
            return
        if not isinstance(root, yaml.SequenceNode):
            problems.add(source.name, root.start_mark.line + 1, "", "must be a list of records (- key: value)")
            return
        for node in root.value:
            row = _construct_with_lines(loader, node, source, problems)
            if row is not None:
                yield row


def _construct_with_lines(loader, node, source: Source, problems: Problems):
    """(line, mapping) for a record node; nested `children` records keep their own lines."""
    line = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        problems.add(source.name, line, "", "must be a mapping of fields (key: value)")
        return None
    record: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key == "children" and isinstance(value_node, yaml.SequenceNode):
            children = [_construct_with_lines(loader, n, source, problems) for n in value_node.value]
            record[key] = [c for c in children if c is not None]
        else:
            record[str(key)] = loader.construct_object(value_node, deep=True)
    return line, record


def _mark_line(exc: yaml.YAMLError) -> int:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return mark.line + 1 if mark else 0


def _yaml_reason(exc: yaml.YAMLError) -> str:
    return getattr(exc, "problem", None) or str(exc).splitlines()[0]
