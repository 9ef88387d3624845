"""A collection's records cut into stretches, and a stretch's parts: what every query
backend's indexer (api/backends/) makes of its records, kept as one file.

The cuts are fixed by the collection's count and the build's processes, not by who makes a
stretch's parts: the part of the build that cuts the pages holding a stretch's first record
makes them from the records it has just spooled (part.py), where the stretch holds a record
new or moved; the query-index step (queries.py) takes those over, and makes the others'
from the default pages, or from the previous build's state. Both read a record's document
alike: only the fields the indexers read (Backend.reads).
"""
from __future__ import annotations

import functools
import os
import pickle
import struct
from array import array
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from ..api.backends import common, indexing
from ..api.backends.common import DocumentField

PART_PAGES = 256  # pages of the default size whose records' parts are kept as one file of the state
RUNS_EACH = 4  # runs of records a process reads, at most (where more than one process reads)


def runs(count: int, processes: int) -> list[tuple[int, int]]:
    """Runs of whole blocks of records, RUNS_EACH a process where there are blocks enough (a
    process free takes the next: runs' costs differ, and one process was left waiting)."""
    blocks = len(common.blocks(count))
    share = -(-blocks // (processes * RUNS_EACH if processes > 1 else 1))  # (more runs than blocks: a block each)
    return [(first * common.BLOCK, min(first + share, blocks) * common.BLOCK) for first in range(0, blocks, share)]


def cut(run: tuple[int, int], count: int, page_size: int) -> list[tuple[int, int]]:
    """A run of a collection of `count` records cut where the records of PART_PAGES pages end
    (the cuts fixed by the collection, not the run: a stretch is found again whichever run
    holds it)."""
    size = PART_PAGES * page_size
    start, stop = run[0], min(run[1], count)
    cuts = [start, *range(start - start % size + size, stop, size), max(start, stop)]
    return list(zip(cuts, cuts[1:]))


def every(count: int, processes: int, page_size: int) -> list[tuple[int, int]]:
    """Every stretch of a collection of `count` records, in order."""
    return [bounds for run in runs(count, processes) for bounds in cut(run, count, page_size)]


def made_here(scratch: Path, name: str, bounds: tuple[int, int]) -> Path:
    """Where a part of the build keeps the parts it made of a stretch, for the query-index step."""
    return scratch / f"query-parts-{name}-{bounds[0]}-{bounds[1]}"


@functools.cache
def decoder(fields: frozenset[DocumentField], page: bool) -> msgspec.json.Decoder:
    """A decoder of a page (`page`) or of a JSON array of records that makes, of each record's
    document, the `fields` alone (a field, or a field of the records of a relation, a
    to-one's or a to-many's): what else a record holds is skipped, not made (a book's page of
    twelve is read in half orjson's time: most of its bytes are the related records' other
    fields)."""
    whole = {field[0] for field in fields if len(field) == 1}
    related: dict[str, dict] = {}
    for relation, key in (field for field in fields if len(field) == 2 and field[0] not in whole):
        related.setdefault(relation, {})[key] = Any
    shapes = {relation: TypedDict(f"Related_{relation}", keys, total=False) for relation, keys in related.items()}
    document = TypedDict("Document", {**dict.fromkeys(whole, Any),
                                      **{relation: list[shape] | shape | None for relation, shape in shapes.items()}},
                         total=False)
    return msgspec.json.Decoder(TypedDict("Page", {"results": list[document]}, total=False) if page
                                else list[document])


def reads(name: str, query: dict) -> frozenset[DocumentField]:
    """The fields of a collection's documents its backends' indexers read."""
    return frozenset(field for backend in indexing(name, query) for field in backend.reads(name, query))


def parts(name: str, query: dict, start: int, documents: list[dict]) -> bytes:
    """The parts file of the stretch of records from `start` whose documents these are: each
    indexing backend's part, in the order of indexing(), pickled apart (a backend's are read
    without the others', read_part)."""
    indexers = [backend.indexer(name, query, start) for backend in indexing(name, query)]
    for indexer in indexers:  # (the stretch's at once: each add's own work, done once, not a page at a time)
        indexer.add(documents)
    made = [pickle.dumps(indexer.close(), pickle.HIGHEST_PROTOCOL) for indexer in indexers]
    return _PART_SIZES.pack(len(made)) + array("Q", map(len, made)).tobytes() + b"".join(made)


_PART_SIZES = struct.Struct("<I")  # (a parts file: the number of parts, each one's size, uint64s, then the parts)


def read_part(path: Path, at: int) -> Any:
    """One backend's part (the `at`-th) of a stretch's parts file, the others' bytes unread
    (an edit of one backend reads its own: a million books' ordering, 50 MB of 390)."""
    with open(path, "rb") as f:
        number, = _PART_SIZES.unpack(f.read(_PART_SIZES.size))
        sizes = array("Q", f.read(8 * number))
        f.seek(sum(sizes[:at]), os.SEEK_CUR)
        return pickle.loads(f.read(sizes[at]))
