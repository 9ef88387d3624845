"""The query indexes the build writes for the collections site.yaml gives `search`,
`ordering` or `filters` (docs/spec/query.md §2–5), and what they hold: enough for a host to answer
any search, ordering and filter exactly, reading a few files, without the data.

Records are named by their position in the collection's own order (the position of
their bytes in the pre-built pages, api/pageindex.py). Under `api/v1/<name>/_query/`:

- `search/<column>/<block>.txt`, for each search field (a column: `title`,
  `authors__fullName`): the folded values (filters.fold) of the block's records, UTF-8,
  as NUL, then each record's values each preceded by U+0001, followed by NUL. A record
  with no value (null, or no related record) has none; so a term is found in a value by
  a substring search, at the start of one after U+0001, equal to one between U+0001 and
  U+0001 or NUL; the record is the count of NULs before the match. Read only to confirm
  what the token index below cannot answer alone (a term holding white space; which
  related record matched, when several terms match only in related records).
- the column's token index, so that a search reads no text: its keys, each with the
  sorted positions of the records it occurs in (its postings). A token is a piece of a
  folded value between white space (`str.split()`, white space as filters.SPACES says);
  the keys of a column are its tokens (`"word"`, for `contains`), its values' first
  tokens (`" word"`, a space before: for `^`, only of values not starting with white
  space) and its whole values (`"\tvalue"`, a tab before: for `=`), each kind made only
  where a search field of the column needs it.
  - `search/<column>/keys.txt`: the distinct tokens, sorted by code point, each between
    line feeds (a token holds no white space): a term without white space is in a value
    iff it is in one of its tokens, so a substring search of this file finds every key a
    `contains` term matches. `search/<column>/heads.txt`: the same of the first tokens.
  - `search/<column>/any.u32`: the positions of the records with a value at all (what
    an empty term matches), little-endian uint32.
  - `search/<column>/postings/<bucket>.bin`: the keys whose UTF-8 bytes' CRC-32 is
    `bucket` modulo BUCKETS (a file only for a bucket holding keys): uint32 n, then n
    uint32 byte lengths of the keys, n uint32 counts of their postings, the keys' bytes
    (in the order of their first record) padded with NULs to a multiple of 4, then each
    key's postings, little-endian uint32.
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

import bisect
import itertools
import re
import zlib
from array import array
from dataclasses import dataclass
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Callable, Iterable

import orjson

from ..catalogue.querying import (FILTERS, NORMALISE, ORDERING, SEARCH, SearchField, relations, search_field,
                                  sort_kind)
from ..catalogue.resources import BY_NAME
from .filters import fold
from .pageindex import BIG_ENDIAN, read_u32, u32
from .urls import API, QUERY_DIR

BLOCK = 65536
BUCKETS = 1024  # postings files of a search column (a key's file: CRC-32 of its UTF-8 bytes modulo this)
TOKEN, HEAD, WHOLE = "", " ", "\t"  # what starts a search key of each kind: a token, a first token, a whole value
ID_PREFIX = 2  # characters of an id that name its filter file
RECORD, ELEMENT = "\x00", "\x01"
UUID_IN_URL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def query_dir(name: str) -> str:
    return f"{API}/{name}/{QUERY_DIR}"


def text_file(name: str, column: str, block: int) -> str:
    return f"{query_dir(name)}/search/{column}/{block}.txt"


def keys_file(name: str, column: str, heads: bool = False) -> str:
    return f"{query_dir(name)}/search/{column}/{'heads' if heads else 'keys'}.txt"


def any_file(name: str, column: str) -> str:
    return f"{query_dir(name)}/search/{column}/any.u32"


def postings_file(name: str, column: str, bucket: int) -> str:
    return f"{query_dir(name)}/search/{column}/postings/{bucket}.bin"


def bucket_of(key: str) -> int:
    return zlib.crc32(key.encode()) % BUCKETS


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


def configured(query: dict) -> list[str]:
    """The collections (URL segments) with any query index, in the API root's order."""
    named = {name for key in (SEARCH, ORDERING, FILTERS) for name in query.get(key, {})}
    return [name for name in BY_NAME if name in named]


def related_id(document: dict) -> str:
    """The id of an embedded record: its `id`, else the UUID in its `url`."""
    if "id" in document:
        return document["id"]
    url = document["url"]
    last = url[-37:-1]  # (an API link ends with "<id>/")
    if url[-1] == "/" and len(last) == 36 and last[8] == last[13] == last[18] == last[23] == "-":
        return last
    return UUID_IN_URL.findall(url)[-1]


# ---- the build's side -----------------------------------------------------------------


@dataclass
class Partial:
    """What a collector keeps of its records until every part of the collection is read:
    each ordering field's sort keys and each filter's records by related id, in order."""
    keys: dict[str, list]
    referred: dict[str, dict[str, array]]
    search: dict[str, "Packed"]


class ColumnIndex:
    """A search column's token index as a run of records makes it: each key's postings (a
    position alone until a second comes, then an array), and the records with a value."""

    def __init__(self, kinds: tuple[str, ...], many: bool) -> None:
        self.kinds, self.many = kinds, many
        self.keys: dict[str, "int | array"] = {}
        self.any = array("I")

    def add(self, text: str, first: int, count: int) -> None:
        """A block's folded text (the layout of its text file) of `count` records from `first`."""
        if not count:
            return
        tokens, heads, whole = "contains" in self.kinds, "startswith" in self.kinds, "exact" in self.kinds
        anys, many, post = self.any, self.many, self._post
        records = text[1:-1].split(RECORD)
        if not many and not heads and tokens != whole:  # (a field of the record's own, one kind: quicker)
            self._add_one_kind(records, first, tokens)
            return
        for position, record in enumerate(records, first):
            if not record:
                continue
            anys.append(position)
            found: set[str] = set()
            for value in (record[1:].split(ELEMENT) if many else (record[1:],)):
                if tokens:
                    found.update(value.split())
                if heads and value and not value[0].isspace():
                    found.add(HEAD + value.split(None, 1)[0])
                if whole:
                    found.add(WHOLE + value)
            post(found, position)

    def _add_one_kind(self, records: list[str], first: int, tokens: bool) -> None:
        """`add` of a field of the record itself and only its tokens, or only its whole values."""
        anys, post = self.any, self._post
        for position, record in enumerate(records, first):
            if not record:
                continue
            anys.append(position)
            post(set(record[1:].split()) if tokens else (WHOLE + record[1:],), position)

    def _post(self, found: Iterable[str], position: int) -> None:
        """A record's keys, each posted once."""
        keys = self.keys
        for key in found:
            held = keys.get(key)
            if held is None:
                keys[key] = position
            elif held.__class__ is int:
                keys[key] = array("I", (held, position))
            else:
                held.append(position)

    def packed(self) -> "Packed":
        """What `finish` needs of it, compact (bytes rather than a dict of objects a key): each
        postings file's bytes, the keys files' keys."""
        keys = self.keys
        buckets: dict[int, list[str]] = defaultdict(list)
        for key in keys:
            buckets[bucket_of(key)].append(key)
        encoded = {bucket: encode_bucket([(key, keys[key]) for key in held]) for bucket, held in buckets.items()}
        tokens = "\n".join(k for k in keys if k[:1] not in (HEAD, WHOLE)) if "contains" in self.kinds else None
        heads = "\n".join(k[1:] for k in keys if k[:1] == HEAD) if "startswith" in self.kinds else None
        self.keys = {}
        return Packed(tokens, heads, self.any, encoded)


@dataclass
class Packed:
    """A search column's token index of a run of records: its tokens and first tokens
    (line-feed separated, None where not made), the records with a value, and its postings
    files' bytes by bucket."""
    tokens: str | None
    heads: str | None
    any: array
    buckets: dict[int, bytes]


def _flush_column(name: str, column: str, flush: Callable[[str, bytes], None], parts: list[Packed]) -> None:
    """A column's token index files, from its packed runs in order: a postings file in
    several runs' is decoded and joined (the keys in the order of their first record)."""
    first = parts[0]
    if first.tokens is not None:
        flush(keys_file(name, column), _lines({k for part in parts for k in part.tokens.split("\n") if k}))
    if first.heads is not None:
        flush(keys_file(name, column, heads=True), _lines({k for part in parts for k in part.heads.split("\n") if k}))
    anys = array("I")
    for part in parts:
        anys.extend(part.any)
    flush(any_file(name, column), _little(anys))
    for bucket in sorted({b for part in parts for b in part.buckets}):
        held = [part.buckets[bucket] for part in parts if bucket in part.buckets]
        if len(held) == 1:
            flush(postings_file(name, column, bucket), held[0])
            continue
        joined: dict[str, array] = {}
        for data in held:
            for key, found in decode_bucket(data):
                mine = joined.get(key)
                if mine is None:
                    joined[key] = found
                else:
                    mine.extend(found)
        flush(postings_file(name, column, bucket), encode_bucket(list(joined.items())))


def _lines(keys: Iterable[str]) -> bytes:
    return ("\n" + "".join(key + "\n" for key in sorted(keys))).encode()


def _little(values: array) -> bytes:
    if BIG_ENDIAN:
        values = array("I", values)
        values.byteswap()
    return values.tobytes()


def encode_bucket(items: list[tuple[str, "int | array"]]) -> bytes:
    """A postings file (the module's layout) of these keys and their postings."""
    encoded = [key.encode() for key, _ in items]
    head = array("I", [len(items)])
    head.extend(map(len, encoded))
    flat = array("I")
    for _, held in items:
        if held.__class__ is int:
            head.append(1)
            flat.append(held)
        else:
            head.append(len(held))
            flat.extend(held)
    keys = b"".join(encoded)
    return b"".join([_little(head), keys, bytes(-len(keys) % 4), _little(flat)])


def decode_bucket(data: bytes) -> list[tuple[str, array]]:
    """Every key of a postings file with its postings, in the file's order."""
    count = int.from_bytes(data[:4], "little")
    sizes = read_u32(data[4:4 + 8 * count])
    at = 4 + 8 * count
    keys = []
    for length in sizes[:count]:
        keys.append(data[at:at + length].decode())
        at += length
    at += -at % 4
    found = []
    for key, held in zip(keys, sizes[count:]):
        found.append((key, read_u32(data[at:at + 4 * held])))
        at += 4 * held
    return found


def postings(data: bytes | None, key: str) -> array:
    """A key's postings in its postings file (none: the file is missing, or lacks it): the
    key found among the file's keys by a byte search, its place told by their lengths."""
    if data is None:
        return array("I")
    count = int.from_bytes(data[:4], "little")
    sizes = read_u32(data[4:4 + 8 * count])
    lengths = sizes[:count]
    starts = list(itertools.accumulate(lengths, initial=4 + 8 * count))
    wanted, stop = key.encode(), starts[-1]
    at = starts[0]
    while (hit := data.find(wanted, at, stop)) >= 0:
        index = bisect.bisect_left(starts, hit)
        if index < count and starts[index] == hit and lengths[index] == len(wanted):
            first = stop + -stop % 4 + 4 * sum(sizes[count:count + index])
            return read_u32(data[first:first + 4 * sizes[count + index]])
        at = hit + 1
    return array("I")


class Collector:
    """Query index files made from a collection's documents given a page at a time in order,
    from the record at `first` (a block's first): each block of search values is encoded
    as soon as it is full (`flush` takes each file); the sort keys and the filters' lists
    are kept compact for `finish`, which may join those of several collectors."""

    def __init__(self, name: str, query: dict, flush: Callable[[str, bytes], None], first: int = 0) -> None:
        resource = BY_NAME[name]
        self.name, self.flush = name, flush
        self.normalise = query.get(NORMALISE)
        self.search = [search_field(spec) for spec in query.get(SEARCH, {}).get(name, [])]
        self.values: list[list[str]] = [[] for _ in self.search]
        lookups: dict[str, set[str]] = {}
        for found in self.search:
            lookups.setdefault(found.column, set()).add(found.lookup)
        self.index: dict[str, ColumnIndex] = {}
        for found in self.search:
            if found.column not in self.index:
                self.index[found.column] = ColumnIndex(tuple(sorted(lookups[found.column])), found.relation is not None)
        self.order = {field: (sort_kind(resource, field), []) for field in query.get(ORDERING, {}).get(name, [])}
        self.filters: dict[str, dict[str, array]] = {r: {} for r in query.get(FILTERS, {}).get(name, [])}
        self.count = self.held_from = first  # (records from held_from on: their search values held)

    def add(self, documents: list[dict]) -> None:
        """The next records (a page's): a list comprehension a field, cheaper than a call a value."""
        start = self.count
        for found, values in zip(self.search, self.values):
            values.extend(_column(documents, found))
        for field, (kind, keys) in self.order.items():
            if kind == "text":
                keys.extend([d.get(field) for d in documents])
            else:
                keys.extend([None if d.get(field) is None else sort_key(kind, d[field]) for d in documents])
        for relation, referred in self.filters.items():
            for position, document in enumerate(documents, start):
                related = related_records(document, relation)
                ids = map(related_id, related) if len(related) < 2 else dict.fromkeys(map(related_id, related))
                for id in ids:
                    held = referred.get(id)
                    if held is None:
                        held = referred[id] = array("I")
                    held.append(position)
        self.count += len(documents)
        while self.count - self.held_from >= BLOCK:  # (a block filled up: those past its end kept)
            self._flush_search(self.held_from // BLOCK, BLOCK)
            self.held_from += BLOCK

    def close(self) -> Partial:
        """The last block of search values (unless it ended full), and what `finish` needs."""
        if self.count % BLOCK or self.count == 0:
            self._flush_search(self.count // BLOCK, None)
        return Partial({field: keys for field, (_, keys) in self.order.items()}, self.filters,
                       {column: index.packed() for column, index in self.index.items()})

    def _flush_search(self, block: int, size: int | None) -> None:
        """The search values of a block: the first `size` held (None: all)."""
        indexed = set()
        for found, values in zip(self.search, self.values):
            part = values if size is None else values[:size]
            if found.column not in indexed:  # (once a column: "title" and "^title" look in the same)
                indexed.add(found.column)
                # (folded once a block: lower() and the Persian folding never touch the separators)
                text = fold(RECORD + RECORD.join(part) + RECORD, self.normalise)
                self.flush(text_file(self.name, found.column, block), text.encode())
                self.index[found.column].add(text, block * BLOCK, len(part))
            del values[:len(part)]


def finish(name: str, flush: Callable[[str, bytes], None], parts: list[Partial],
           targets: dict[str, Iterable[str]]) -> None:
    """The orderings' and the filters' files, from the partials of the collection's records in
    order and every id of the related collection of each filter, by relation (an id no record
    refers to is a choice too)."""
    for field in parts[0].keys:
        _flush_order(name, flush, field, [key for part in parts for key in part.keys[field]])
    for column in parts[0].search:
        _flush_column(name, column, flush, [part.search[column] for part in parts])
    for relation in parts[0].referred:
        referred = parts[0].referred[relation]
        for part in parts[1:]:
            for id, positions in part.referred[relation].items():
                held = referred.get(id)
                if held is None:
                    referred[id] = positions
                else:
                    held.extend(positions)
        _flush_filter(name, flush, relation, referred, targets[relation])


def _flush_order(name: str, flush: Callable[[str, bytes], None], field: str, keys: list) -> None:
    distinct = sorted({key for key in keys if key is not None})
    rank_of = {key: rank for rank, key in enumerate(distinct, 1)}
    ranks = array("I", (0 if key is None else rank_of[key] for key in keys))
    del rank_of, distinct
    ascending = sorted(range(len(ranks)), key=ranks.__getitem__)  # (a stable sort: ties keep their order)
    descending = sorted(range(len(ranks)), key=lambda p: -ranks[p])
    for block in blocks(len(ranks)):
        part = slice(block * BLOCK, (block + 1) * BLOCK)
        flush(rank_file(name, field, block), u32(ranks[part]))
        flush(sorted_file(name, field, False, block), u32(ascending[part]))
        flush(sorted_file(name, field, True, block), u32(descending[part]))


def _flush_filter(name: str, flush: Callable[[str, bytes], None], relation: str, referred: dict[str, array],
                  ids: Iterable[str]) -> None:
    shards: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for id in ids:
        referred.setdefault(id, array("I"))
    for id in sorted(referred):
        shards[id[:ID_PREFIX]][id] = referred[id].tolist()
    for prefix, shard in shards.items():
        flush(filter_file(name, relation, prefix), orjson.dumps(shard))


def index_files(name: str, query: dict, documents: Iterable[dict],
                targets: dict[str, Iterable[str]]) -> dict[str, bytes]:
    """Every query index file of one collection, from its records' documents in order and
    the ids of every record of each collection its filters name (by relation)."""
    files: dict[str, bytes] = {}
    collector = Collector(name, query, files.__setitem__)
    for document in documents:
        collector.add([document])
    finish(name, files.__setitem__, [collector.close()], targets)
    return files


def related_records(document: dict, relation: str) -> list[dict]:
    """The records a document embeds in a relation, a to-one's as a list of one or none."""
    related = document.get(relation)
    return [] if related is None else related if isinstance(related, list) else [related]


def _column(documents: list[dict], found: SearchField) -> list[str]:
    """The documents' values in a search column, as queryindex's layout writes a record's."""
    if found.relation is None:
        field = found.field
        return ["" if (v := d.get(field)) is None else ELEMENT + (v if isinstance(v, str) else _text(v))
                for d in documents]
    return [(ELEMENT + ELEMENT.join(values)) if (values := values_of(d, found)) else "" for d in documents]


def values_of(document: dict, found: SearchField) -> list[str]:
    """A record's values in a search column: its field's, or each related record's."""
    if found.relation is None:
        value = document.get(found.field)
        return [] if value is None else [_text(value)]
    return [_text(r[found.field]) for r in related_records(document, found.relation) if r.get(found.field) is not None]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"  # (as SQLite holds a boolean)
    return str(value)


def sort_key(kind: str, value: Any) -> Any:
    """A value as it sorts: numbers as exact numbers, instants as microseconds since 1970."""
    if kind == "number":
        number = Decimal(str(value))
        return int(number) if number == number.to_integral_value() else number
    if kind == "instant":
        moment = datetime.fromisoformat(value)
        return (moment - EPOCH) // MICROSECOND
    return value


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROSECOND = timedelta(microseconds=1)


def filter_targets(name: str, query: dict) -> dict[str, str]:
    """The collections (URL segments) whose ids the collection's filters take, by relation."""
    resource = BY_NAME[name]
    return {relation: relations(resource)[relation].name for relation in query.get(FILTERS, {}).get(name, [])}
