"""django-filter's filter on a relation by the related record's id (docs/spec/query.md §5):
`?authors=<id>` lists the records whose `authors` include it. A to-many filter takes every
value given (any of them), a to-one the last; each must be the id of a record (UUIDs read
as Django's UUIDField reads them), else 400 with django-filter's words, every mistake of
the request together as its form reports them. relations.js.j2 is its JavaScript twin.

Its index, written by a build for each relation site.yaml's `filters` lists:
`_query/filter/<relation>/<xx>.json`, for each id of the related collection starting with
the two hex digits xx, the sorted positions of the records that refer to it (an id no
record refers to is there too, with none: it is one of the choices).
"""
from __future__ import annotations

import bisect
import os
from array import array
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple

import numpy
import orjson

from ...catalogue.querying import FILTERS, is_to_many, relations
from ...catalogue.resources import BY_NAME, RESOURCES, Resource
from ..querystring import digit_value, trimmed
from .common import (NUL, UUID_IN_URL, Backend, Change, DocumentField, Edit, NUL_MESSAGE, Flush, Reader, Records, Rejected, Request,
                     joined_texts, query_dir, related_id, related_records, texts_apart)

ID_PREFIX = 2  # characters of an id that name its filter file
# Django's and django-filter's words, with {value} for the value as given.
INVALID_UUID = "“{value}” is not a valid UUID."
UNKNOWN_MANY = "Select a valid choice. {value} is not one of the available choices."
UNKNOWN_ONE = "Select a valid choice. That choice is not one of the available choices."


@dataclass(frozen=True)
class RelationFilter:
    """One relation's parameter: its name is the relation's."""
    name: str
    many: bool

    def ids(self, values: list[str]) -> list[str]:
        """The canonical ids asked for ([]: no filter); Rejected as django-filter rejects."""
        if not self.many:
            values = values[-1:]
            if values in ([], [""]):
                return []
        found = []
        for value in values:
            if NUL in value:
                raise Rejected({self.name: [NUL_MESSAGE]})
            canonical = uuid_text(value)
            if canonical is None:
                raise Rejected({self.name: [INVALID_UUID.format(value=value)]})
            found.append(canonical)
        return found

    def openapi(self, target: str) -> dict:
        given = ("Given more than once, the records related to any of them are listed. Only an id's canonical "
                 "spelling (lower-case, with hyphens) is one of the choices.") if self.many else \
            "Given more than once, the last counts; empty, it filters nothing."
        return {"name": self.name, "in": "query", "required": False, "explode": True,
                "schema": {"type": "array", "items": {"type": "string", "format": "uuid"}} if self.many
                else {"type": "string", "format": "uuid"},
                "description": f"django-filter's filter by a related {target}'s id: the records whose "
                               f"`{self.name}` includes it. {given} An id that is not a UUID, or names no "
                               "record, answers 400 with django-filter's message."}

    def unknown(self, value: str) -> Rejected:
        """The answer when an id names no record."""
        if self.many:
            return Rejected({self.name: [UNKNOWN_MANY.format(value=value)]})
        return Rejected({self.name: [UNKNOWN_ONE]})


def uuid_text(value: str) -> str | None:
    """str(uuid.UUID(hex=value)), or None where that raises: Django's UUIDField.to_python.
    (Thirty-two hex digits, or a sign and thirty-one, are always below 2**128: uuid.UUID's
    range check never refuses what is left here.)"""
    hexed = value.replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "")
    if len(hexed) != 32:
        return None
    number = read_hex(hexed)
    if number is None:
        return None
    text = f"{number:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def read_hex(text: str) -> int | None:
    """What int(text, 16) returns for a text without `-` (uuid_text took them all out), or
    None where it raises: white space around, a `+`, underscores between digits, and the
    decimal digits of any script besides a-f."""
    body = trimmed(text)
    body = body[1:] if body[:1] == "+" else body
    if "" in body.split("_"):
        return None
    digits = ""
    for char in body.replace("_", ""):
        if char in "0123456789abcdefABCDEF":
            digits += char
        elif (value := digit_value(char)) is not None:
            digits += str(value)
        else:
            return None
    return int(digits, 16)


# ---- the index format ------------------------------------------------------------------


def filter_file(name: str, relation: str, prefix: str) -> str:
    """The ids starting with `prefix` (ID_PREFIX characters) of a filter's related collection."""
    return f"{query_dir(name)}/filter/{relation}/{prefix}.json"


def referring(request: Request, relation: str, id: str) -> list[int] | None:
    """The records referring to the record `id` (None: no such record)."""
    data = request.read(filter_file(request.name, relation, id[:ID_PREFIX]))
    if data is None:
        return None
    return orjson.loads(data).get(id)


class Referred:
    """A run of records' references, by relation: each related record as the document names
    it (its `id`, else its `url`: the id is taken from the urls in the finish, by columns, a
    million books naming some 430,000 records), one after another, and the position of the
    record referring with each, in order (a record naming a record twice: both kept, one
    position in the finish). Flat, so that the finish groups millions of them by columns,
    not an id at a time."""

    def __init__(self, relations: list[str], first: int) -> None:
        self.references: dict[str, list[str]] = {relation: [] for relation in relations}
        self.positions: dict[str, array] = {relation: array("I") for relation in relations}
        self.count = first

    def add(self, documents: list[dict]) -> None:
        positions = numpy.arange(self.count, self.count + len(documents), dtype=numpy.uint32)
        for relation, references in self.references.items():
            # (a to-many relation's records, a list; a to-one's, a dict or None)
            related = [records if records.__class__ is list else (records,) if records else ()
                       for records in [document.get(relation) for document in documents]]
            references.extend([record.get("id") or record["url"] for records in related for record in records])
            named = numpy.fromiter(map(len, related), numpy.int64, len(related))
            self.positions[relation].frombytes(numpy.repeat(positions, named).tobytes())
        self.count += len(documents)

    def close(self) -> dict[str, "References"]:
        return {relation: References.of(references, self.positions[relation])
                for relation, references in self.references.items()}


class References(NamedTuple):
    """A run's references in one relation, as the finish takes them: the start they all share
    up to a `/` (a relation's urls: the site's address and the collection's, half their
    bytes), the rest of each (joined: common.joined_texts), the positions referring."""
    shared: str
    rests: bytes
    positions: array

    @classmethod
    def of(cls, references: list[str], positions: array) -> "References":
        shared = os.path.commonprefix(references)
        shared = shared[:shared.rfind("/") + 1]
        cut, joined = shared.encode(), joined_texts(references)
        return cls(shared, joined[len(cut):].replace(NUL.encode() + cut, NUL.encode()) if cut else joined, positions)

    def apart(self, pl) -> Any:
        """The references, a polars String series."""
        rests = texts_apart(pl, [self.rests])
        return self.shared + rests if self.shared else rests


def write_filter(name: str, flush: Flush, relation: str, parts: list[References], ids: Iterable[str]) -> None:
    """A filter's files from its runs' references (Referred's, in order) and the ids of the
    related collection: for each id, the positions referring to it, in order (none: `[]`),
    the ids in order, as orjson writes {id: [positions]} (the JSON made by columns). A
    reference's id is taken once for each distinct reference: an id (a UUID, no `/`) as it
    is, a url's last UUID (common.related_id's rule)."""
    import polars as pl  # (here: a request, and a build without filters, do without it)

    referring = pl.DataFrame({
        "ref": pl.concat([pl.Series([], dtype=pl.String)] + [part.apart(pl) for part in parts if part.positions]),
        "positions": numpy.concatenate([numpy.zeros(0, numpy.int64)] + [numpy.frombuffer(part.positions, numpy.uint32)
                                                                         for part in parts if part.positions])})
    every = pl.DataFrame({"id": pl.Series(list(ids), dtype=pl.String)})
    ref = pl.col("ref")
    # (within a group polars keeps the rows' order: each reference's positions in order; an id
    # named in two ways, its references' positions merged, a record that named it both ways once)
    by_id = (referring.group_by("ref").agg("positions")
             .select(id=pl.when(ref.str.contains("/", literal=True))
                     .then(ref.str.extract_all(UUID_IN_URL.pattern).list.last()).otherwise(ref), positions="positions")
             .group_by("id").agg(pl.col("positions").explode().unique().sort()))
    listed = (by_id.select("id", pl.col("positions").cast(pl.List(pl.String)).list.join(","))
              .join(every, on="id", how="full", coalesce=True).sort("id")
              .select(prefix=pl.col("id").str.slice(0, ID_PREFIX),
                      entry=pl.format('"{}":[{}]', "id", pl.col("positions").fill_null("")))
              .group_by("prefix", maintain_order=True).agg(pl.col("entry").str.join(",")))
    for prefix, entries in listed.iter_rows():
        flush(filter_file(name, relation, prefix), f"{{{entries}}}".encode())


def edit_filter(name: str, relation: str, previous: Reader, changes: list[Change]) -> dict[str, bytes]:
    """A filter's files where the records `changes` names changed: a record moved from the
    lists of the ids it no longer refers to into those of the ids it now refers to (the
    lists in order, the ids in order, as write_filter writes them); the other files as they were."""
    moves: dict[str, list[tuple[str, int, bool]]] = defaultdict(list)  # by file: (id, position, whether it refers now)
    for position, then, now in changes:
        before = set(map(related_id, related_records(then, relation)))
        after = set(map(related_id, related_records(now, relation)))
        for id in before ^ after:
            moves[filter_file(name, relation, id[:ID_PREFIX])].append((id, position, id in after))
    files = {}
    for path, moved in moves.items():
        shard = orjson.loads(previous(path) or b"{}")
        for id, position, refers in moved:
            held = shard.setdefault(id, [])
            if refers:
                bisect.insort(held, position)
            else:
                held.remove(position)
        files[path] = orjson.dumps(dict(sorted(shard.items())))
    return files


def targets(name: str, query: dict) -> dict[str, str]:
    """The collections (URL segments) whose ids the collection's filters take, by relation."""
    resource = BY_NAME[name]
    return {relation: relations(resource)[relation].name for relation in query.get(FILTERS, {}).get(name, [])}


# ---- the backend -----------------------------------------------------------------------


class Relations(Backend):
    name = "relations"

    def narrow(self, request: Request, matched: Records | None) -> Records | None:
        """The records every filter given keeps (None: no filter given); all mistakes
        together, as django-filter's form reports them."""
        resource = BY_NAME[request.name]
        errors: dict[str, list[str]] = {}
        kept: Records | None = None
        for relation in request.settings(FILTERS):
            param = RelationFilter(relation, is_to_many(resource, relation))
            values = request.values(relation)
            try:
                ids = param.ids(values)
                if not ids:
                    continue
                found: list[int] = []
                for id, value in zip(ids, values[-len(ids):]):
                    records = referring(request, relation, id)
                    # (a to-many filter compares the value as given with str() of the ids it
                    # found: only the canonical spelling of an id is one of its choices)
                    if records is None or (param.many and value != id):
                        raise param.unknown(value)
                    found.extend(records)
            except Rejected as rejected:
                errors.update(rejected.body)
                continue
            chosen = Records.of(found, request.count)
            kept = chosen if kept is None else kept & chosen
        if errors:
            raise Rejected(errors)
        return kept

    def indexes(self, name: str, query: dict) -> bool:
        return bool(query.get(FILTERS, {}).get(name))

    def indexer(self, name: str, query: dict, first: int) -> Referred:
        return Referred(query.get(FILTERS, {}).get(name, []), first)

    def reads(self, name: str, query: dict) -> list[DocumentField]:
        return [(relation, key) for relation in query.get(FILTERS, {}).get(name, []) for key in ("id", "url")]

    def finish(self, name: str, query: dict, flush: Flush, parts: list, ids: Callable[[str], Iterable[str]],
               processes: int = 1) -> None:
        for relation, target in targets(name, query).items():
            write_filter(name, flush, relation, [part[relation] for part in parts], ids(target))

    def given_ids(self, name: str, query: dict) -> list[str]:
        return list(targets(name, query).values())

    def edit(self, name: str, query: dict, previous: Reader, changes: list[Change], count: int, parts) -> Edit:
        """Every filter's files where some records changed (the related collections' ids as
        before: the caller edits only then)."""
        files = {path: data for relation in targets(name, query) for path, data in
                 edit_filter(name, relation, previous, changes).items()}
        return Edit([f"{query_dir(name)}/filter"], files)

    def openapi(self, resource: Resource, settings) -> list[dict]:
        return [RelationFilter(relation, is_to_many(resource, relation)).openapi(relations(resource)[relation].label.lower())
                for relation in settings.query.get(FILTERS, {}).get(resource.name, [])]

    def rejects(self, name: str, query: dict) -> bool:
        return self.indexes(name, query)

    def probes(self, resource: Resource, documents: list[dict]) -> list[dict[str, str]]:
        """A filter by each relation: the first related record's id."""
        asked = []
        for relation in relations(resource):
            related = next((r for d in documents for r in related_records(d, relation)), None)
            if related is not None:
                asked.append({relation: related_id(related)})
        return asked

    def constants(self) -> dict:
        return {"setting": FILTERS, "idPrefix": ID_PREFIX, "file": filter_file("{name}", "{relation}", "{prefix}"),
                "messages": {"invalid": INVALID_UUID, "unknownMany": UNKNOWN_MANY, "unknownOne": UNKNOWN_ONE},
                "many": {r.name: {relation: is_to_many(r, relation) for relation in relations(r)} for r in RESOURCES}}


BACKEND = Relations()
