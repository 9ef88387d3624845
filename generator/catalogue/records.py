"""Turn raw rows into typed, checked records, applying every rule of data.md to them.

A record with a bad field is still yielded when its id is sound, so references to it
do not cascade into more, misleading problems; the run fails anyway. Ids (and
usernames) must be unique in their collection: `Unique` keeps the first use of each
and reports every later one, whether both are in one process's range or not.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import orjson

from ..errors import Problems
from .fields import (DERIVED, ID_KEYS, NAMES, REFERENCES, SPECS, Field, FieldError, derived_id, items,
                     slug, text)
from .load import Source


@dataclass
class Known:
    """Ids of the collections checked so far, for reference checks, and where each was defined."""
    ids: dict[str, dict[str, int]] = field(default_factory=dict)


ROW = "_row"  # a record's row hash, kept for the next build
REUSED = "_reused"  # a row taken over from the previous build, unchecked and unrendered


def row_hash(row: dict) -> bytes:
    """The identity of a row as written in the input, column names and YAML types
    included (its line number aside): the row as JSON, hashed."""
    try:
        encoded = orjson.dumps(row)
    except TypeError:  # a YAML integer too large for JSON's 64 bits
        encoded = repr(row).encode()
    return hashlib.sha256(encoded).digest()[:16]  # (most processors hash sha256 in hardware: faster than blake2b)


class Unique:
    """The ids (and usernames) of one collection seen so far, each with the line of its
    first use; a later use is reported against its own line."""

    def __init__(self, source: Source, problems: Problems) -> None:
        self.source = source
        self.problems = problems
        self.ids: dict[str, int] = {}
        self.usernames: dict[str, int] = {}

    def id(self, id: str, line: int) -> bool:
        """Whether this is the id's first use."""
        first = self.ids.setdefault(id, line)
        if first != line:
            self.twice(id, first, line)
        return first == line

    def check_id(self, id: str, line: int) -> None:
        """Report the id if it was used before, without learning it."""
        first = self.ids.get(id, line)
        if first != line:
            self.twice(id, first, line)

    def many(self, ids: list[str], lines: Sequence[int], learn: bool) -> None:
        """Ids read elsewhere, in order (none used twice among them): each reported when it
        was used before; learnt too, with `learn`. (At C speed when none was used before.)"""
        if self.ids.keys().isdisjoint(ids):
            if learn:
                self.ids.update(zip(ids, lines))
            return
        for id, line in zip(ids, lines):
            self.id(id, line) if learn else self.check_id(id, line)

    def many_usernames(self, usernames: list[str | None], lines: Sequence[int]) -> None:
        """Usernames read elsewhere, in order, as many() takes ids."""
        if self.usernames.keys().isdisjoint(usernames) and len(set(usernames)) == len(usernames):
            self.usernames.update((u, line) for u, line in zip(usernames, lines) if u is not None)
            return
        for username, line in zip(usernames, lines):
            if username is not None:
                self.username(username, line)

    def twice(self, id: str, first: int, line: int) -> None:
        self.problems.add(self.source.name, line, "id",
                          f"{id} is used twice in {self.source.collection}: first on line {first}")

    def username(self, username: str, line: int) -> None:
        first = self.usernames.setdefault(username, line)
        if first != line:
            self.problems.add(self.source.name, line, "username",
                              f"{username!r} is already taken by the user on line {first}")


def records(source: Source, problems: Problems, known: Known,
            reuse: Callable[[dict, bytes], Any] | None = None,
            unique: Unique | None = None) -> Iterator[tuple[int, dict]]:
    """Checked records of one collection, streamed in file order as (line, record).
    reuse(row, hash) may return what the previous build made of an identical row (with
    .id and .username): the row is then taken over as it was, without checking it again.
    `unique` (a fresh one by default) learns every id and username."""
    collection = source.collection
    unique = unique if unique is not None else Unique(source, problems)
    rows = source.rows(problems)
    plain = source.format == "csv"  # (every cell is text: the quick coercers may try it first)
    if collection == "categories":
        rows = _flatten_children(rows, source, problems)
    for line, row in rows:
        digest = row_hash(row)
        token = reuse(row, digest) if reuse is not None else None
        if token is not None:
            record = {"id": token.id, "username": token.username, REUSED: token, ROW: digest}
        else:
            record = quick(row, collection) if plain else None
            if record is None:
                record = _coerce(row, SPECS[collection], source, line, problems)
            record[ROW] = digest
            if collection == "books":
                for image in record["images"] or ():
                    if image["id"] is None:
                        key = f"{record['id']}/{image['image']}" if record["id"] else None
                        image["id"] = derived_id("images", key) if key else None
        if collection == "users" and record["username"] is not None:
            unique.username(record["username"], line)
        if not record["id"]:
            continue  # its id could not be worked out; the cause is reported already
        if not unique.id(record["id"], line):
            continue
        if token is None:
            _check_references(record, collection, source, line, problems, known)
        yield line, record
    known.ids[collection] = unique.ids


def check_row(collection: str, row: dict, source: Source, problems: Problems, known: Known,
              line: int = 0) -> dict:
    """One row as the build checks it, its references included (not whether its id or
    username is taken): the record it makes. For a record about to be added."""
    record = _coerce(row, SPECS[collection], source, line, problems)
    if record["id"]:
        _check_references(record, collection, source, line, problems, known)
    return record


def references(row: dict, collection: str) -> list[str]:
    """The ids a row refers to, read leniently (for deciding whether to take it over)."""
    found = []
    for name in REFERENCES.get(collection, {}):
        value = row.get(name)
        try:
            found.extend(items(value) if name != "user" else [text(value).strip()])
        except FieldError:
            pass
    return [str(v).strip() for v in found]


def quick(row: dict[str, str], collection: str) -> dict[str, Any] | None:
    """The record of a CSV row every cell of which is plainly valid, as _coerce would make
    it, in a fraction of the time; None when a cell needs _coerce's care (and maybe words)."""
    if not NAMES[collection].issuperset(row) or "\x00" in "".join(row.values()):
        return None  # (with no NUL in the row, the text checks of _coerce pass)
    record: dict[str, Any] = {}
    try:
        for name, convert, required, default in _QUICK[collection]:
            raw = row.get(name)
            if not raw:
                if required:
                    return None
                record[name] = _default(default)
            else:
                record[name] = raw if convert is None else convert(raw)
    except (ValueError, KeyError):
        return None
    _derive_id(record, row, collection)
    return record


# (plain tuples: a field's attributes are looked up twenty million times at a million books)
_QUICK = {collection: [(f.name, f.quick, f.required, f.default) for f in spec] for collection, spec in SPECS.items()}


def _default(default: Any) -> Any:
    """A field's default, a fresh list where it is a tuple (a record's lists are its own)."""
    return list(default) if isinstance(default, tuple) else default


def _derive_id(record: dict[str, Any], row: dict, collection: str) -> None:
    """A record given no id gets the one derived from its key fields (data.md)."""
    if record["id"] is None and row.get("id") in (None, ""):
        parts = [record[name] for name in ID_KEYS[collection]]
        if None not in parts:
            record["id"] = derived_id(collection, "/".join(parts))


def _coerce(row: dict, spec: list[Field], source: Source, line: int, problems: Problems):
    names = NAMES[source.collection]
    if not names.issuperset(row):
        for key in row:
            if key in names or (key == "children" and source.collection == "categories"):
                continue
            if key in DERIVED:
                problems.add(source.name, line, key, "is computed by the build and cannot be given: remove it")
            else:
                problems.add(source.name, line, key,
                             f"is not a field of {source.collection}; known fields: {', '.join(sorted(names))}")
    empty = "" if source.format == "csv" else None  # an empty CSV cell is a missing value
    record: dict[str, Any] = {}
    for f in spec:
        raw = row.get(f.name)
        if raw is None or raw == empty:
            if f.required:
                problems.add(source.name, line, f.name, "is missing: it is required")
            record[f.name] = _default(f.default)
            continue
        try:
            record[f.name] = f.coerce(raw)
        except FieldError as exc:
            problems.add(source.name, line, f.name, str(exc))
            record[f.name] = None
    _derive_id(record, row, source.collection)
    return record


def _check_references(record, collection, source, line, problems, known: Known) -> None:
    for name, target in _REFERRING[collection]:
        ids = known.ids.get(target)
        if ids is None:
            continue  # that collection's file is missing, which is reported once
        given = record[name]
        for value in given if isinstance(given, list) else (given,):
            if value is not None and value not in ids:
                problems.add(source.name, line, name, f"refers to {target[:-1]} {value}, which does not exist")


# Each collection's references to others, as (field, collection): a category's parent is
# checked with the whole tree.
_REFERRING = {collection: tuple((name, target) for name, target in REFERENCES.get(collection, {}).items()
                                if target != collection) for collection in SPECS}


def _flatten_children(rows, source: Source, problems: Problems):
    """Nested YAML categories in top-down order, each child naming its parent."""
    for line, row in rows:
        children = row.pop("children", None)
        yield line, row
        if children is None:
            continue
        if not isinstance(children, list):
            problems.add(source.name, line, "children", "must be a list of categories")
            continue
        parent_id = row.get("id")
        if parent_id in (None, ""):
            try:
                parent_id = derived_id("categories", slug(row.get("slug")))
            except FieldError:
                parent_id = None
        for child_line, child in children:
            given = child.get("parent")
            if given not in (None, "") and given != parent_id:
                problems.add(source.name, child_line, "parent",
                             f"{given} contradicts the enclosing category {parent_id}")
            child["parent"] = parent_id
        yield from _flatten_children(children, source, problems)


def category_tree(source: Source, problems: Problems, known: Known,
                  unique: Unique | None = None) -> list[tuple[int, dict]]:
    """Categories as (line, record) in file order, with path, depth and numchild
    worked out from the parents; the tree needs them all before the first is done."""
    cats = list(records(source, problems, known, unique=unique))
    by_id = {rec["id"]: (line, rec) for line, rec in cats}
    siblings: dict[str | None, list[str]] = {}
    for line, rec in cats:
        parent = rec["parent"]
        if parent is not None and parent not in by_id:
            problems.add(source.name, line, "parent", f"refers to category {parent}, which does not exist")
            parent = rec["parent"] = None
        siblings.setdefault(parent, []).append(rec["id"])
    for parent, children in siblings.items():
        if len(children) > 9999:
            line = by_id[children[9999]][0]
            problems.add(source.name, line, "parent",
                         "a category can have at most 9999 sub-categories (four digits of its path)")
    for parent, children in siblings.items():
        for position, child in enumerate(children, 1):
            by_id[child][1]["_position"] = position
    paths: dict[str, str | None] = {}  # None: under a cycle, no path
    for line, rec in cats:
        chain, node = [], rec["id"]
        while node is not None and node not in paths and node not in chain:
            chain.append(node)
            node = by_id[node][1]["parent"]
        if node is not None and node in chain:
            cycle = chain[chain.index(node):]
            for member in cycle:
                problems.add(source.name, by_id[member][0], "parent",
                             f"category {member} is its own ancestor (a cycle of {len(cycle)})")
                paths[member] = None
        for member in reversed(chain):
            if member in paths:
                continue
            parent = by_id[member][1]["parent"]
            base = "" if parent is None else paths[parent]
            paths[member] = None if base is None else base + f"{by_id[member][1]['_position']:04d}"
    result = []
    for line, rec in cats:
        del rec["_position"]
        if paths[rec["id"]] is None:
            continue
        rec["path"] = paths[rec["id"]]
        rec["depth"] = len(rec["path"]) // 4
        rec["numchild"] = len(siblings.get(rec["id"], ()))
        result.append((line, rec))
    return result


