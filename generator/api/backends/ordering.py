"""DRF's OrderingFilter (docs/spec/query.md §4): `?ordering=` (the last value), comma-separated
fields of site.yaml's `ordering` for the collection, `-` for descending; other names are
dropped, and ties keep the collection's own order. ordering.js.j2 is its JavaScript twin.

Its index, for each field: `_query/rank/<field>/<block>.u32`, each record's rank among the
field's distinct values (1 the smallest; 0 null, which sorts first as SQLite sorts it),
and `_query/sorted/<field>/<asc|desc>/<block>.u32`, the positions in the field's order,
ties in the collection's order (the fast path of a whole collection in one ordering);
little-endian uint32, a block of positions a file; and `_query/ties/<field>/<block>.bits`,
a bit for each place of the ascending order, set where a run of ties starts (a value
unlike the one before; bit i % 8 of byte i // 8, least significant first): an edit moves
a few, where a rank shifts every record after it. Records narrowed to a few (BY_DOCUMENTS)
are ordered by their documents' values instead, the same keys the ranks were made from,
read from the pages their answer reads anyway.
"""
from __future__ import annotations

import bisect
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Callable, Sequence

import numpy

from ...catalogue.querying import ORDERING, scalars, sort_kind
from ...catalogue.resources import BY_NAME, RESOURCES, Resource
from . import common
from .common import SPACES, Backend, Change, DocumentField, Edit, Flush, Reader, Records, Request, need, query_dir, read_u32

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROSECOND = timedelta(microseconds=1)
# Records narrowed to this many or fewer are ordered by their documents' values (the pages
# the answer reads anyway, a few KB each), not by rank files (256 KB a block, a block a record).
BY_DOCUMENTS = 12


class Ordering(Backend):
    name = "ordering"
    parameter = "ordering"
    index_format = "2"  # (2: with the ties files)

    def fields(self, value: str | None, allowed: list[str]) -> list[tuple[str, bool]]:
        """The last value's names that are allowed, each (field, descending)."""
        if not value:
            return []
        found = []
        for term in (part.strip(SPACES) for part in value.split(",")):
            descending = term.startswith("-")
            if (term[1:] if descending else term) in allowed:
                found.append((term[1:] if descending else term, descending))
        return found

    def arrange(self, request: Request, matched: Records | None) -> Sequence[int] | None:
        orderable = request.settings(ORDERING)
        ordering = self.fields(request.last(self.parameter), orderable) if orderable else []
        if not ordering:
            return None
        if matched is None:
            return Whole(request.read, request.name, ordering, request.count)
        if len(matched) <= BY_DOCUMENTS and request.documents is not None:
            return by_documents(request, ordering, list(matched))
        return ordered(request.read, request.name, ordering, list(matched))

    def indexes(self, name: str, query: dict) -> bool:
        return bool(query.get(ORDERING, {}).get(name))

    def indexer(self, name: str, query: dict, first: int) -> "Keys":
        return Keys(name, query.get(ORDERING, {}).get(name, []))

    def reads(self, name: str, query: dict) -> list[DocumentField]:
        return [(field,) for field in query.get(ORDERING, {}).get(name, [])]

    def finish(self, name: str, query: dict, flush: Flush, parts: list, ids, processes: int = 1) -> None:
        for field in parts[0]:
            write_order(name, flush, field, [key for part in parts for key in part[field]])

    def edit(self, name: str, query: dict, previous: Reader, changes: list[Change], count: int,
             parts: Callable[[], list]) -> Edit:
        """The orders of the fields some changed record's value changed in made again (a
        record's move shifts every place between where it was and where it goes), and of
        every field where records were added (their places added), their ranks from the
        previous build's (edited_ranks); the other fields' files as they were."""
        then, now = Keys(name, query[ORDERING][name]), Keys(name, query[ORDERING][name])
        then.add([old for _, old, _ in changes])
        now.add([new for _, _, new in changes])
        before, after = then.close(), now.close()
        files: dict[str, bytes | None] = {}
        moved, held, positions = [], None, {position for position, _, _ in changes}
        for field in after:
            ranks = _previous_ranks(previous, name, field, count, positions)
            if ranks is not None and len(ranks) == count and after[field] == before[field]:
                continue
            moved.append(field)
            held = parts() if held is None else held
            keys = [key for part in held for key in part[field]]
            changed = [position for (position, _, _), old, new in zip(changes, before[field], after[field])
                       if old != new]
            write_ranks(name, files.__setitem__, field,
                        _ranks(keys) if ranks is None else edited_ranks(_padded(ranks, count), keys, changed))
        return Edit([folder for field in query[ORDERING][name] if field not in moved
                     for folder in field_folders(name, field)], files)

    def openapi(self, resource: Resource, settings) -> list[dict]:
        fields = settings.query.get(ORDERING, {}).get(resource.name)
        if not fields:
            return []
        choices = [name for field in fields for name in (field, f"-{field}")]
        return [{"name": self.parameter, "in": "query", "required": False,
                 "schema": {"type": "string", "examples": choices},
                 "description": "DRF's OrderingFilter: comma-separated fields, `-` for descending, of "
                                f"{', '.join(f'`{c}`' for c in choices)}; other names are dropped, and none left "
                                "means the collection's own order. Ties keep the collection's own order."}]

    def probes(self, resource: Resource, documents: list[dict]) -> list[dict[str, str]]:
        """Each field, descending."""
        return [{self.parameter: f"-{field}"} for field in scalars(resource)]

    def constants(self) -> dict:
        return {"setting": ORDERING, "parameter": self.parameter, "byDocuments": BY_DOCUMENTS,
                "kinds": {r.name: {f: sort_kind(r, f) for f in scalars(r)} for r in RESOURCES},
                "rank": rank_file("{name}", "{field}", "{block}"), "ties": ties_file("{name}", "{field}", "{block}"),
                "sorted": sorted_file("{name}", "{field}", False, "{block}").replace("/asc/", "/{direction}/")}


# ---- the index format ------------------------------------------------------------------


def rank_file(name: str, field: str, block: int) -> str:
    return f"{query_dir(name)}/rank/{field}/{block}.u32"


def sorted_file(name: str, field: str, descending: bool, block: int) -> str:
    return f"{query_dir(name)}/sorted/{field}/{'desc' if descending else 'asc'}/{block}.u32"


def ties_file(name: str, field: str, block: int) -> str:
    return f"{query_dir(name)}/ties/{field}/{block}.bits"


def field_folders(name: str, field: str) -> list[str]:
    """The folders of a field's files."""
    return [f"{query_dir(name)}/{kind}/{field}" for kind in ("rank", "sorted", "ties")]


class Keys:
    """A run of records' sort keys, each ordering field's in order."""

    def __init__(self, name: str, fields: list[str]) -> None:
        resource = BY_NAME[name]
        self.order = {field: (sort_kind(resource, field), []) for field in fields}

    def add(self, documents: list[dict]) -> None:
        for field, (kind, keys) in self.order.items():
            if kind == "text":
                keys.extend([d.get(field) for d in documents])
            else:
                keys.extend([None if d.get(field) is None else sort_key(kind, d[field]) for d in documents])

    def close(self) -> dict[str, list]:
        return {field: keys for field, (_, keys) in self.order.items()}


def sort_key(kind: str, value: Any) -> Any:
    """A value as it sorts: numbers as exact numbers, instants as microseconds since 1970."""
    if kind == "number":
        if value.__class__ is int:  # (a million books' page counts: as exact already)
            return value
        if value.__class__ is str and value.isascii() and value.isdigit():  # (a whole price: its Decimal's int)
            return int(value)
        number = Decimal(str(value))
        return int(number) if number == number.to_integral_value() else number
    if kind == "instant":
        moment = datetime.fromisoformat(value)
        return (moment - EPOCH) // MICROSECOND
    return value


def write_order(name: str, flush: Flush, field: str, keys: list) -> None:
    write_ranks(name, flush, field, _ranks(keys))


def write_ranks(name: str, flush: Flush, field: str, ranks: numpy.ndarray) -> None:
    """A field's files from its records' ranks (_ranks)."""
    ascending = numpy.argsort(ranks, kind="stable")  # (a stable sort: ties keep their order)
    descending = numpy.argsort(-ranks, kind="stable")
    in_order = ranks[ascending]
    starts = numpy.concatenate(([True], in_order[1:] != in_order[:-1]))
    block_size = common.BLOCK
    for block in common.blocks(len(ranks)):
        part = slice(block * block_size, (block + 1) * block_size)
        flush(rank_file(name, field, block), _u32(ranks[part]))
        flush(sorted_file(name, field, False, block), _u32(ascending[part]))
        flush(sorted_file(name, field, True, block), _u32(descending[part]))
        flush(ties_file(name, field, block), numpy.packbits(starts[part], bitorder="little").tobytes())


def _ranks(keys: list) -> numpy.ndarray:
    """Each key's rank among the distinct keys (1 the smallest; 0 for None): by vectors where
    the keys are whole numbers (instants among them) or texts (a text's order, its code
    points', is its UTF-8 bytes' order), else as Python orders them (exact numbers)."""
    kinds = set(map(type, keys)) - {type(None)}
    if kinds == {str}:  # (the nulls polars' too, ranked 0: no list of the keys present made)
        import polars  # (here: a request, and a build without ordering, do without it)
        return polars.Series(keys, dtype=polars.String).rank("dense").fill_null(0).cast(polars.Int64).to_numpy()
    present = [key for key in keys if key is not None]
    ranks = numpy.zeros(len(keys), numpy.int64)
    where = numpy.fromiter((key is not None for key in keys), bool, len(keys))
    if kinds == {int} and -2 ** 63 < min(present) and max(present) < 2 ** 63:
        ranks[where] = numpy.unique(numpy.array(present, numpy.int64), return_inverse=True)[1] + 1
    elif present:
        rank_of = {key: rank for rank, key in enumerate(sorted(set(present)), 1)}
        ranks[where] = numpy.fromiter(map(rank_of.__getitem__, present), numpy.int64, len(present))
    return ranks


def _previous_ranks(previous: Reader, name: str, field: str, count: int, changed: set[int]) -> numpy.ndarray | None:
    """A field's ranks as the previous build wrote them, of the records it had (of `count`
    now: those added since among those `changed`); None where a block of them is gone."""
    found = []
    for block in common.blocks(count):
        data = previous(rank_file(name, field, block))
        if data is None:
            break
        found.append(data)
    ranks = numpy.frombuffer(b"".join(found), "<u4").astype(numpy.int64)
    return ranks if found and len(ranks) <= count and changed.issuperset(range(len(ranks), count)) else None


def _padded(ranks: numpy.ndarray, count: int) -> numpy.ndarray:
    """Ranks of `count` records, those after the ranks given 0 (records added: changed)."""
    return numpy.concatenate((ranks, numpy.zeros(count - len(ranks), numpy.int64)))


def edited_ranks(before: numpy.ndarray, keys: list, changed: list[int]) -> numpy.ndarray:
    """_ranks(keys), from the ranks `before` of the same records where only the keys at
    `changed` differ (a million titles ranked again took an edit 0.7 s): the ranks some
    unchanged record keeps numbered again, each changed record's new key placed among them
    by bisection (a key of an unchanged record of each rank compared, as _ranks compares
    them: texts by code point, numbers exactly), those no unchanged record has between."""
    kept = numpy.ones(len(keys), bool)
    kept[changed] = False
    present = numpy.zeros(int(before.max(initial=0)) + 1, bool)
    present[before[kept]] = True
    present[0] = False  # (None: 0, before and after)
    values = numpy.flatnonzero(present)  # (the ranks kept, in order)
    holder = numpy.zeros(len(present), numpy.int64)
    holder[before[kept]] = numpy.flatnonzero(kept)  # (a record of each rank kept)
    new = sorted({keys[at] for at in changed if keys[at] is not None})
    places = [bisect.bisect_left(_KeysAt(keys, holder[values]), key) for key in new]
    fresh = [key != keys[holder[values[place]]] if place < len(values) else True for key, place in zip(new, places)]
    inserted = numpy.array([place for place, apart in zip(places, fresh) if apart], numpy.int64)
    renumbered = numpy.zeros(len(present), numpy.int64)  # (a rank kept: those kept and the new keys below it, + 1)
    renumbered[values] = numpy.arange(1, len(values) + 1) + numpy.searchsorted(inserted, numpy.arange(len(values)),
                                                                              side="right")
    ranks = renumbered[before]
    rank_of, apart_before = {}, 0
    for key, place, apart in zip(new, places, fresh):
        rank_of[key] = place + apart_before + 1 if apart else int(renumbered[values[place]])
        apart_before += apart
    for at in changed:
        ranks[at] = 0 if keys[at] is None else rank_of[keys[at]]
    return ranks


class _KeysAt:
    """The keys of some records, as a sequence bisect reads."""

    def __init__(self, keys: list, positions: numpy.ndarray) -> None:
        self.keys, self.positions = keys, positions

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, at: int) -> Any:
        return self.keys[self.positions[at]]


def _u32(values: numpy.ndarray) -> bytes:
    """common.u32's bytes (little-endian uint32s) of a vector."""
    return values.astype("<u4").tobytes()


class Whole:
    """A whole collection in an ordering, a slice at a time: the first field's sorted files;
    where more fields follow, the runs of records that tie on the first field around and
    inside the slice (its ties files say where runs start) are each sorted by the others (a
    run is the same records in any order of the first field: its place does not change)."""

    def __init__(self, read: Reader, name: str, ordering: list[tuple[str, bool]], count: int) -> None:
        self.read, self.name, self.ordering, self.count = read, name, ordering, count
        self.field, self.descending = ordering[0]
        self.ties: dict[int, numpy.ndarray] = {}

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, part: slice) -> list[int]:
        start, stop, _ = part.indices(self.count)
        if start >= stop or len(self.ordering) == 1:
            return self._sorted(start, stop)
        low = start
        while not self._starts(low):
            low -= 1
        high = stop
        while high < self.count and not self._starts(high):
            high += 1
        runs: list[list[int]] = []
        for at, position in enumerate(self._sorted(low, high), low):
            if self._starts(at):
                runs.append([])
            runs[-1].append(position)
        rest = self.ordering[1:]
        found = [p for run in runs for p in (run if len(run) == 1 else ordered(self.read, self.name, rest, run))]
        return found[start - low:stop - low]

    def _sorted(self, start: int, stop: int) -> list[int]:
        found: list[int] = []
        size = common.BLOCK
        for block in range(start // size, -(-stop // size)):
            values = read_u32(need(self.read, sorted_file(self.name, self.field, self.descending, block)))
            first = block * size
            found.extend(values[max(start - first, 0):stop - first])
        return found

    def _starts(self, at: int) -> bool:
        """Whether the record at `at` in this order starts a run of ties on the first field (a
        boundary between two records of the descending order is the same as between the
        two of the ascending one, mirrored)."""
        if at == 0:
            return True
        at = self.count - at if self.descending else at
        block = at // common.BLOCK
        if block not in self.ties:
            data = need(self.read, ties_file(self.name, self.field, block))
            self.ties[block] = numpy.unpackbits(numpy.frombuffer(data, numpy.uint8), bitorder="little")
        return bool(self.ties[block][at % common.BLOCK])


def by_documents(request: Request, ordering: list[tuple[str, bool]], positions: list[int]) -> list[int]:
    """The positions sorted by the fields of their documents, as their ranks would sort them
    (nulls first; ties: the collection's order): a stable sort a field, the last first."""
    documents = request.documents(positions)
    resource = BY_NAME[request.name]
    found = list(positions)
    for field, descending in reversed(ordering):
        kind = sort_kind(resource, field)
        keys = {p: _document_key(kind, documents[p].get(field)) for p in found}
        found.sort(key=keys.__getitem__, reverse=descending)
    return found


def _document_key(kind: str, value: Any) -> tuple:
    return (0,) if value is None else (1, sort_key(kind, value))


def ordered(read: Reader, name: str, ordering: list[tuple[str, bool]], positions: list[int]) -> list[int]:
    """The positions sorted by the fields (ties: the collection's order)."""
    size = common.BLOCK
    needed = sorted({p // size for p in positions})
    columns = []
    for field, descending in ordering:
        ranks = {block: read_u32(need(read, rank_file(name, field, block))) for block in needed}
        columns.append((ranks, -1 if descending else 1))

    def key(p: int) -> tuple:
        block, at = divmod(p, size)
        return tuple(sign * ranks[block][at] for ranks, sign in columns) + (p,)

    return sorted(positions, key=key)


BACKEND = Ordering()
