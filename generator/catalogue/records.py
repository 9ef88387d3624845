"""Turn raw rows into typed, checked records, applying every rule of docs/spec/data.md to them.

A record with a bad field is still yielded when its id is sound, so references to it
do not cascade into more, misleading problems; the run fails anyway. Ids (and the
values of a unique field, such as usernames) must be unique in their collection:
`Unique` keeps the first use of each and reports every later one, whether both are in
one process's range or not. What a collection holds comes from its declaration
(resources.py).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import orjson

from ..errors import Problems, meant
from .fields import Field, FieldError, derived_id, items, text
from .load import Source, readable_header
from .resources import BY_COLLECTION, DERIVED, Resource


@dataclass
class Known:
    """Ids of the collections checked so far, for reference checks, and where each was defined."""
    ids: dict[str, dict[str, int]] = field(default_factory=dict)


ROW = "_row"  # a record's row hash, kept for the next build
REUSED = "_reused"  # a row taken over from the previous build, unchecked and unrendered
CHILDREN = "children"  # in YAML, a node of a tree may list the nodes under it
IMAGES = "images"  # the namespace of images' derived ids


def row_hash(row: dict) -> bytes:
    """The identity of a row as written in the input, column names and YAML types
    included (its line number aside): the row as JSON, hashed."""
    try:
        encoded = orjson.dumps(row)
    except TypeError:  # a YAML integer too large for JSON's 64 bits
        encoded = repr(row).encode()
    return hashlib.sha256(encoded).digest()[:16]  # (most processors hash sha256 in hardware: faster than blake2b)


class Unique:
    """The ids (and the values of its unique field, such as usernames) of one collection
    seen so far, each with the line of its first use; a later use is reported against its
    own line."""

    def __init__(self, source: Source, problems: Problems) -> None:
        self.source = source
        self.problems = problems
        self.ids: dict[str, int] = {}
        self.values: dict[str, int] = {}

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

    def many_values(self, values: list[str | None], lines: Sequence[int]) -> None:
        """Values of the unique field read elsewhere, in order, as many() takes ids."""
        if self.values.keys().isdisjoint(values) and len(set(values)) == len(values):
            self.values.update((v, line) for v, line in zip(values, lines) if v is not None)
            return
        for value, line in zip(values, lines):
            if value is not None:
                self.value(value, line)

    def twice(self, id: str, first: int, line: int) -> None:
        self.problems.add(self.source.name, line, "id",
                          f"{id} is used twice in {self.source.collection}: first on line {first}")

    def value(self, value: str, line: int) -> None:
        """A value of the collection's unique field (a username), reported if taken before."""
        first = self.values.setdefault(value, line)
        if first != line:
            resource = BY_COLLECTION[self.source.collection]
            self.problems.add(self.source.name, line, resource.unique,
                              f"{value!r} is already taken by the {resource.label.lower()} on line {first}")


def records(source: Source, problems: Problems, known: Known,
            reuse: Callable[[dict, bytes], Any] | None = None,
            unique: Unique | None = None) -> Iterator[tuple[int, dict]]:
    """Checked records of one collection, streamed in file order as (line, record).
    reuse(row, hash) may return what the previous build made of an identical row (with
    .id and .username, the value of its unique field): the row is then taken over as it
    was, without checking it again. `unique` (a fresh one by default) learns every id and
    every value of the unique field."""
    collection = source.collection
    resource = BY_COLLECTION[collection]
    unique = unique if unique is not None else Unique(source, problems)
    unique_field, images = resource.unique, resource.images
    rows = source.rows(problems)
    plain = source.format == "csv"  # (every cell is text: the quick coercers may try it first)
    quick_record = _QUICK[collection] if plain and _plain_cells(source) else None
    if resource.tree:
        rows = _flatten_children(rows, source, problems)
    targets = _targets(collection, known)
    for line, row in rows:
        digest = row_hash(row)
        token = reuse(row, digest) if reuse is not None else None
        if token is not None:
            record = {"id": token.id, REUSED: token, ROW: digest}
            if unique_field is not None:
                record[unique_field] = token.username
        else:
            record = quick_record(row) if quick_record is not None else None
            if record is None:  # (a CSV file's columns were checked with its header)
                record = _coerce(row, resource.fields, source, line, problems, columns_checked=plain)
            record[ROW] = digest
            for name in images:
                _derive_image_ids(record, name)
        if unique_field is not None and record[unique_field] is not None:
            unique.value(record[unique_field], line)
        if not record["id"]:
            continue  # its id could not be worked out; the cause is reported already
        if not unique.id(record["id"], line):
            continue
        if token is None:
            _check_references(record, targets, source, line, problems)
        yield line, record
    if collection not in problems.unread:  # (else references to it are not checked: load.unreadable)
        known.ids[collection] = unique.ids


def _derive_image_ids(record: dict, name: str) -> None:
    """An image given no id gets the one derived from its record's id and its URL."""
    for image in record[name] or ():
        if image["id"] is None:
            key = f"{record['id']}/{image['image']}" if record["id"] else None
            image["id"] = derived_id(IMAGES, key) if key else None


def check_row(collection: str, row: dict, source: Source, problems: Problems, known: Known,
              line: int = 0) -> dict:
    """One row as the build checks it, its references included (not whether its id or
    unique value is taken): the record it makes. For a record about to be added."""
    record = _coerce(row, BY_COLLECTION[collection].fields, source, line, problems)
    if record["id"]:
        _check_references(record, _targets(collection, known), source, line, problems)
    return record


def references(row: dict, collection: str) -> list[str]:
    """The ids a row refers to, read leniently (for deciding whether to take it over)."""
    found = []
    for relation in BY_COLLECTION[collection].relations:
        value = row.get(relation.name)
        try:
            found.extend(items(value) if relation.many else [text(value).strip()])
        except FieldError:
            pass
    return [str(v).strip() for v in found]


def _plain_cells(source: Source) -> bool:
    """Whether the rows of a CSV file may be tried by the quick coercion: every column is a
    field (else check_header reported the others) and no cell holds a NUL (which the text
    checks of _coerce report). Asked once for the whole file: each row's cells are the header's."""
    header = source.header if source.header is not None else readable_header(source.path)
    if header is None:
        return False  # (its reader reports why)
    return BY_COLLECTION[source.collection].names.issuperset(h.strip() for h in header) and not source.holds_nul()


def quick(row: dict[str, str], collection: str) -> dict[str, Any] | None:
    """The record of a CSV row every cell of which is plainly valid, as _coerce would make
    it, in a fraction of the time; None when a cell needs _coerce's care (and maybe words).
    The row's columns must all be fields and its cells hold no NUL (_plain_cells)."""
    return _QUICK[collection](row)


def _quick_maker(resource: Resource) -> Callable[[dict[str, str]], dict[str, Any] | None]:
    """One collection's quick coercion, compiled once (as the renderer compiles its documents):
    each of a book's twenty cells taken in a line of its own rather than in a loop over the
    fields' attributes."""
    namespace: dict[str, Any] = {"derive_id": _derive_id, "collection": resource.collection}
    lines = ["def quick(row):",
             "    get = row.get",
             "    try:"]
    for k, f in enumerate(resource.fields):
        namespace[f"c{k}"], namespace[f"d{k}"] = f.quick, f.default
        value = f"v{k}" if f.quick is None else f"c{k}(v{k})"
        default = f"list(d{k})" if isinstance(f.default, tuple) else f"d{k}"  # (a record's lists are its own)
        lines.append(f"        v{k} = get({f.name!r})")
        if f.required:
            lines += [f"        if not v{k}:", "            return None", f"        v{k} = {value}"]
        else:
            lines.append(f"        v{k} = {value} if v{k} else {default}")
    lines += ["    except (ValueError, KeyError):", "        return None",
              "    record = {" + ", ".join(f"{f.name!r}: v{k}" for k, f in enumerate(resource.fields)) + "}",
              "    derive_id(record, row, collection)", "    return record"]
    exec("\n".join(lines), namespace)
    return namespace["quick"]


def _default(default: Any) -> Any:
    """A field's default, a fresh list where it is a tuple (a record's lists are its own)."""
    return list(default) if isinstance(default, tuple) else default


def _derive_id(record: dict[str, Any], row: dict, collection: str) -> None:
    """A record given no id gets the one derived from its key fields (docs/spec/data.md)."""
    if record["id"] is None and row.get("id") in (None, ""):
        parts = [record[name] for name in BY_COLLECTION[collection].id_key]
        if None not in parts:
            record["id"] = derived_id(collection, "/".join(parts))


def _coerce(row: dict, spec: tuple[Field, ...], source: Source, line: int, problems: Problems,
            columns_checked: bool = False):
    """The typed record of a row, its mistakes reported; with columns_checked (a CSV row,
    whose header load.check_header reported on once) a field the header lacks or does not
    know is not reported again for the row."""
    resource = BY_COLLECTION[source.collection]
    names = resource.names
    if not columns_checked and not names.issuperset(row):
        for key in row:
            if key in names or (key == CHILDREN and resource.tree):
                continue
            if key in DERIVED:
                problems.add(source.name, line, key, "is computed by the build and cannot be given: remove it")
            else:
                problems.add(source.name, line, key,
                             f"is not a field of {source.collection}{meant(key, sorted(names), 'known fields')}")
    empty = "" if source.format == "csv" else None  # an empty CSV cell is a missing value
    record: dict[str, Any] = {}
    for f in spec:
        raw = row.get(f.name)
        if raw is None or raw == empty:
            if f.required and not (columns_checked and raw is None):
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


def _targets(collection: str, known: Known) -> tuple[tuple[str, str, dict[str, int], bool], ...]:
    """The collection's references to others as (field, target collection, its ids, whether the
    field holds a list), looked up once for all its records: a target whose file is missing is
    left out (that is reported once)."""
    return tuple((name, target, known.ids[target], many) for name, target, many in _REFERRING[collection]
                 if target in known.ids)


def _check_references(record, targets, source, line, problems) -> None:
    for name, target, ids, many in targets:
        given = record[name]
        for value in (given or ()) if many else (given,):
            if value is not None and value not in ids:
                # (the target's data file stem less its last letter, as these messages have always
                # named it: "author", "user", and also "categorie")
                problems.add(source.name, line, name, f"refers to {target[:-1]} {value}, which does not exist")


# Each collection's references to others, as (field, collection, whether a list): a node's
# parent is checked with the whole tree.
_REFERRING = {r.collection: tuple((f.name, f.to, f.many) for f in r.relations if f.to != r.collection)
              for r in BY_COLLECTION.values()}
_QUICK = {r.collection: _quick_maker(r) for r in BY_COLLECTION.values()}


def _flatten_children(rows, source: Source, problems: Problems):
    """Nested YAML nodes of a tree (categories) in top-down order, each child naming its parent."""
    resource = BY_COLLECTION[source.collection]
    parent, what = resource.tree.name, resource.label.lower()
    for line, row in rows:
        children = row.pop(CHILDREN, None)
        yield line, row
        if children is None:
            continue
        if not isinstance(children, list):
            problems.add(source.name, line, CHILDREN, f"must be a list of {resource.collection}")
            continue
        parent_id = row.get("id")
        if parent_id in (None, ""):
            parent_id = _derived_parent_id(resource, row)
        for child_line, child in children:
            given = child.get(parent)
            if given not in (None, "") and given != parent_id:
                problems.add(source.name, child_line, parent,
                             f"{given} contradicts the enclosing {what} {parent_id}")
            child[parent] = parent_id
        yield from _flatten_children(children, source, problems)


def _derived_parent_id(resource: Resource, row: dict) -> str | None:
    """The id a node given none has (docs/spec/data.md), for its children to name; None when its key
    is not valid (reported with the node itself)."""
    try:
        key = "/".join(resource.field(name).coerce(row.get(name)) for name in resource.id_key)
    except FieldError:
        return None
    return derived_id(resource.collection, key)


def category_tree(source: Source, problems: Problems, known: Known,
                  unique: Unique | None = None) -> list[tuple[int, dict]]:
    """The nodes of a tree (categories) as (line, record) in file order, with path, depth,
    numchild and no_child worked out from the parents; the tree needs them all before the
    first is done."""
    resource = BY_COLLECTION[source.collection]
    parent_field, what = resource.tree.name, resource.label.lower()
    cats = list(records(source, problems, known, unique=unique))
    by_id = {rec["id"]: (line, rec) for line, rec in cats}
    siblings: dict[str | None, list[str]] = {}
    for line, rec in cats:
        parent = rec[parent_field]
        if parent is not None and parent not in by_id:
            problems.add(source.name, line, parent_field, f"refers to {what} {parent}, which does not exist")
            parent = rec[parent_field] = None
        siblings.setdefault(parent, []).append(rec["id"])
    for parent, children in siblings.items():
        if len(children) > 9999:
            line = by_id[children[9999]][0]
            problems.add(source.name, line, parent_field,
                         f"a {what} can have at most 9999 sub-{resource.collection} (four digits of its path)")
    for parent, children in siblings.items():
        for position, child in enumerate(children, 1):
            by_id[child][1]["_position"] = position
    paths: dict[str, str | None] = {}  # None: under a cycle, no path
    for line, rec in cats:
        chain, node = [], rec["id"]
        while node is not None and node not in paths and node not in chain:
            chain.append(node)
            node = by_id[node][1][parent_field]
        if node is not None and node in chain:
            cycle = chain[chain.index(node):]
            for member in cycle:
                problems.add(source.name, by_id[member][0], parent_field,
                             f"{what} {member} is its own ancestor (a cycle of {len(cycle)})")
                paths[member] = None
        for member in reversed(chain):
            if member in paths:
                continue
            parent = by_id[member][1][parent_field]
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
        rec["no_child"] = rec["numchild"] == 0
        result.append((line, rec))
    return result


def collection_records(source: Source, problems: Problems, known: Known,
                       unique: Unique | None = None) -> Iterable[tuple[int, dict]]:
    """Checked records of any collection, as (line, record): a tree's all at once, with
    their paths; the others streamed."""
    if BY_COLLECTION[source.collection].tree:
        return category_tree(source, problems, known, unique)
    return records(source, problems, known, unique=unique)
