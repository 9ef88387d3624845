"""The query indexes the build writes for the collections site.yaml gives `search`,
`ordering` or `filters` (query.md §2–5), and what they hold: enough for a host to answer
any search, ordering and filter exactly, reading a few files, without the data.

Records are named by their position in the collection's own order (the position of
their bytes in the pre-built pages, api/pageindex.py). Under `api/v1/<name>/_query/`:

- `search/<column>/<block>.txt`, for each search field (a column: `title`,
  `authors__fullName`): the folded values (filters.fold) of the block's records, UTF-8,
  as NUL, then each record's values each preceded by U+0001, followed by NUL. A record
  with no value (null, or no related record) has none; so a term is found in a value by
  a substring search, at the start of one after U+0001, equal to one between U+0001 and
  U+0001 or NUL; the record is the count of NULs before the match.
- `rank/<field>/<block>.u32`: each record's rank among the field's distinct values
  (1 the smallest; 0 null, which sorts first as SQLite sorts it), little-endian uint32.
- `sorted/<field>/<asc|desc>/<block>.u32`: the positions in the field's order, ties
  in the collection's order (the fast path of a whole collection in one ordering).
- `filter/<relation>/<xx>.json`: for each id of the related collection starting with
  the two hex digits xx, the sorted positions of the records that refer to it.

A block is BLOCK records (or positions in an order). A file is rewritten by a build
only when its bytes change.
"""
from __future__ import annotations

import re
import sys
from array import array
from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from typing import Any, Iterable

import orjson

from ..catalogue.querying import (FILTERS, NORMALISE, ORDERING, SEARCH, SearchField, relations, search_field,
                                  sort_kind)
from ..catalogue.resources import BY_NAME
from .filters import fold
from .urls import API, QUERY_DIR

BLOCK = 65536
ID_PREFIX = 2  # characters of an id that name its filter file
RECORD, ELEMENT = "\x00", "\x01"
BIG_ENDIAN = sys.byteorder == "big"
UUID_IN_URL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def query_dir(name: str) -> str:
    return f"{API}/{name}/{QUERY_DIR}"


def text_file(name: str, column: str, block: int) -> str:
    return f"{query_dir(name)}/search/{column}/{block}.txt"


def rank_file(name: str, field: str, block: int) -> str:
    return f"{query_dir(name)}/rank/{field}/{block}.u32"


def sorted_file(name: str, field: str, descending: bool, block: int) -> str:
    return f"{query_dir(name)}/sorted/{field}/{'desc' if descending else 'asc'}/{block}.u32"


def filter_file(name: str, relation: str, prefix: str) -> str:
    """The ids starting with `prefix` (ID_PREFIX characters) of a filter's related collection."""
    return f"{query_dir(name)}/filter/{relation}/{prefix}.json"


def blocks(count: int) -> range:
    """The blocks of a collection of `count` records (an empty one has its one, empty, block)."""
    return range(max(-(-count // BLOCK), 1))


def u32(values: Iterable[int]) -> bytes:
    data = array("I", values)
    if BIG_ENDIAN:
        data.byteswap()
    return data.tobytes()


def read_u32(data: bytes) -> array:
    values = array("I")
    values.frombytes(data)
    if BIG_ENDIAN:
        values.byteswap()
    return values


def configured(query: dict) -> list[str]:
    """The collections (URL segments) with any query index, in the API root's order."""
    named = {name for key in (SEARCH, ORDERING, FILTERS) for name in query.get(key, {})}
    return [name for name in BY_NAME if name in named]


def related_id(document: dict) -> str:
    """The id of an embedded record: its `id`, else the UUID in its `url`."""
    if "id" in document:
        return document["id"]
    return UUID_IN_URL.findall(document["url"])[-1]


# ---- the build's side -----------------------------------------------------------------


def index_files(name: str, query: dict, documents: list[dict],
                targets: dict[str, list[str]]) -> dict[str, bytes]:
    """Every query index file of one collection, from its records' documents in order and
    the ids of every record of each collection its filters name (by relation)."""
    resource = BY_NAME[name]
    files: dict[str, bytes] = {}
    normalise = query.get(NORMALISE)
    for spec in query.get(SEARCH, {}).get(name, []):
        files.update(_text_files(name, search_field(spec), documents, normalise))
    for field in query.get(ORDERING, {}).get(name, []):
        files.update(_order_files(name, field, sort_kind(resource, field), documents))
    for relation in query.get(FILTERS, {}).get(name, []):
        files.update(_filter_files(name, relation, documents, targets[relation]))
    return files


def values_of(document: dict, found: SearchField) -> list[str]:
    """A record's values in a search column: its field's, or each related record's."""
    if found.relation is None:
        value = document.get(found.field)
        return [] if value is None else [_text(value)]
    related = document.get(found.relation)
    if related is None:
        return []
    related = related if isinstance(related, list) else [related]
    return [_text(r[found.field]) for r in related if r.get(found.field) is not None]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"  # (as SQLite holds a boolean)
    return str(value)


def _text_files(name: str, found: SearchField, documents: list[dict], normalise: str | None) -> dict[str, bytes]:
    files = {}
    for block in blocks(len(documents)):
        parts = ["".join(ELEMENT + fold(v, normalise) for v in values_of(d, found))
                 for d in documents[block * BLOCK:(block + 1) * BLOCK]]
        files[text_file(name, found.column, block)] = (RECORD + RECORD.join(parts) + RECORD).encode()
    return files


def sort_key(kind: str, value: Any) -> Any:
    if kind == "number":
        return Decimal(str(value))
    if kind == "instant":
        return datetime.fromisoformat(value).timestamp()
    return value


def _order_files(name: str, field: str, kind: str, documents: list[dict]) -> dict[str, bytes]:
    values = [d.get(field) for d in documents]
    distinct = sorted({sort_key(kind, v) for v in values if v is not None})
    rank_of = {key: rank for rank, key in enumerate(distinct, 1)}
    ranks = [0 if v is None else rank_of[sort_key(kind, v)] for v in values]
    ascending = sorted(range(len(ranks)), key=ranks.__getitem__)  # (a stable sort: ties keep their order)
    descending = sorted(range(len(ranks)), key=lambda p: -ranks[p])
    files = {}
    for block in blocks(len(ranks)):
        part = slice(block * BLOCK, (block + 1) * BLOCK)
        files[rank_file(name, field, block)] = u32(ranks[part])
        files[sorted_file(name, field, False, block)] = u32(ascending[part])
        files[sorted_file(name, field, True, block)] = u32(descending[part])
    return files


def _filter_files(name: str, relation: str, documents: list[dict], ids: list[str]) -> dict[str, bytes]:
    referred: dict[str, list[int]] = {id: [] for id in ids}
    for position, document in enumerate(documents):
        related = document.get(relation)
        related = [] if related is None else related if isinstance(related, list) else [related]
        for id in dict.fromkeys(related_id(r) for r in related):
            referred.setdefault(id, []).append(position)
    shards: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for id in sorted(referred):
        shards[id[:ID_PREFIX]][id] = referred[id]
    return {filter_file(name, relation, prefix): orjson.dumps(shard) for prefix, shard in shards.items()}


def filter_targets(name: str, query: dict) -> dict[str, str]:
    """The collections (URL segments) whose ids the collection's filters take, by relation."""
    resource = BY_NAME[name]
    return {relation: relations(resource)[relation].name for relation in query.get(FILTERS, {}).get(name, [])}
