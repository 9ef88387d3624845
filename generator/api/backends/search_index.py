"""The search backend's index format (search.py), as one replaceable unit: what the build
writes for each search column, and what reads it at request time, side by side; its
JavaScript twin is search_index.js.j2. search.py asks it one question, `hits()`: the
records whose values in a field a term matches (and, for relations, `elements()`: which
related records); another format answers them from other files.

Under `api/v1/<name>/_query/search/<column>/`, for each search column (`title`,
`authors__fullName`):

- `<block>.txt`: the folded values (common.fold) of the block's records, UTF-8, as NUL,
  then each record's values each preceded by U+0001, followed by NUL. A record with no
  value (null, or no related record) has none; so a term is found in a value by a
  substring search, at the start of one after U+0001, equal to one between U+0001 and
  U+0001 or NUL; the record is the count of NULs before the match. Read only to confirm
  what the token index below cannot answer alone (a term holding white space; which
  related record matched, when several terms match only in related records).
- the column's token index, so that a search reads no text: its keys, each with the
  sorted positions of the records it occurs in (its postings). A token is a piece of a
  folded value between white space (`str.split()`, white space as common.SPACES says);
  the keys of a column are its tokens (`"word"`, for `contains`), its values' first
  tokens (`" word"`, a space before: for `^`, only of values not starting with white
  space) and its whole values (`"\\tvalue"`, a tab before: for `=`), each kind made only
  where a search field of the column needs it.
  - `keys.txt`: the distinct tokens, sorted by code point, each between line feeds (a
    token holds no white space): a term without white space is in a value iff it is in
    one of its tokens, so a substring search of this file finds every key a `contains`
    term matches. `heads.txt`: the same of the first tokens.
  - `any.u32`: the positions of the records with a value at all (what an empty term
    matches), little-endian uint32.
  - `postings/<bucket>.bin`: the keys whose UTF-8 bytes' CRC-32 is `bucket` modulo
    BUCKETS (a file only for a bucket holding keys): uint32 n, then n uint32 byte lengths
    of the keys, n uint32 counts of their postings, the keys' bytes (in the order of
    their first record) padded with NULs to a multiple of 4, then each key's postings,
    little-endian uint32.
"""
from __future__ import annotations

import bisect
import itertools
import zlib
from array import array
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable

from ...catalogue.querying import NORMALISE, SEARCH, SearchField, search_field
from . import common
from .common import Flush, Request, fold, query_dir, read_u32, related_records, u32

BUCKETS = 1024  # postings files of a search column (a key's file: CRC-32 of its UTF-8 bytes modulo this)
TOKEN, HEAD, WHOLE = "", " ", "\t"  # what starts a search key of each kind: a token, a first token, a whole value
RECORD, ELEMENT = "\x00", "\x01"


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


def constants() -> dict:
    """What the JavaScript twin is rendered with."""
    return {"buckets": BUCKETS, "head": HEAD, "whole": WHOLE,
            "files": {"text": text_file("{name}", "{column}", "{block}"),
                      "keys": keys_file("{name}", "{column}"),
                      "heads": keys_file("{name}", "{column}", heads=True),
                      "any": any_file("{name}", "{column}"),
                      "postings": postings_file("{name}", "{column}", "{bucket}")}}


# ---- the build's side: the encoder ----------------------------------------------------------


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


class Indexer:
    """A run of records' search columns, given a page at a time in order from the record at
    `first` (a block's first): each block's text is written as soon as it is full, and its
    tokens posted; `close()` gives each column's packed token index for `finish`."""

    def __init__(self, name: str, query: dict, flush: Flush, first: int) -> None:
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
        self.count = self.held_from = first  # (records from held_from on: their values held)

    def add(self, documents: list[dict]) -> None:
        """The next records (a page's): a list comprehension a field, cheaper than a call a value."""
        for found, values in zip(self.search, self.values):
            values.extend(_column(documents, found))
        self.count += len(documents)
        while self.count - self.held_from >= common.BLOCK:  # (a block filled up: those past its end kept)
            self._flush(self.held_from // common.BLOCK, common.BLOCK)
            self.held_from += common.BLOCK

    def close(self) -> dict[str, Packed]:
        """The last block's text (unless it ended full), and each column's token index."""
        if self.count % common.BLOCK or self.count == 0:
            self._flush(self.count // common.BLOCK, None)
        return {column: index.packed() for column, index in self.index.items()}

    def _flush(self, block: int, size: int | None) -> None:
        """The values of a block: the first `size` held (None: all)."""
        indexed = set()
        for found, values in zip(self.search, self.values):
            part = values if size is None else values[:size]
            if found.column not in indexed:  # (once a column: "title" and "^title" look in the same)
                indexed.add(found.column)
                # (folded once a block: lower() and the Persian folding never touch the separators)
                text = fold(RECORD + RECORD.join(part) + RECORD, self.normalise)
                self.flush(text_file(self.name, found.column, block), text.encode())
                self.index[found.column].add(text, block * common.BLOCK, len(part))
            del values[:len(part)]


def finish(name: str, flush: Flush, parts: list[dict[str, Packed]]) -> None:
    """Each column's token index files, from the runs' packed indexes in order."""
    for column in parts[0]:
        _write_column(name, column, flush, [part[column] for part in parts])


def _write_column(name: str, column: str, flush: Flush, parts: list[Packed]) -> None:
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
    flush(any_file(name, column), u32(anys))
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
    return b"".join([u32(head), keys, bytes(-len(keys) % 4), u32(flat)])


# ---- the decoder -------------------------------------------------------------------------


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


def key_matches(blob: bytes, word: str, starts: bool, ends: bool) -> list[str]:
    """The keys of a keys file (each between line feeds) that the word is in: that it
    starts (`starts`), ends (`ends`), is (both), or is anywhere in (neither); each once."""
    needle = ("\n" if starts else "") + word + ("\n" if ends else "")
    data = needle.encode()
    found, at = [], 0
    while (hit := blob.find(data, at)) >= 0:
        first = hit + 1 if starts else blob.rfind(b"\n", 0, hit) + 1
        stop = hit + len(data) - 1 if ends else blob.find(b"\n", hit + len(data))
        found.append(blob[first:stop].decode())
        at = stop
    return found


def matches(blob: bytes, term: bytes, lookup: str, many: bool):
    """(record, element) of each value in a search column's block that the term matches:
    contains, startswith or exact, each value once (the text file's layout)."""
    record_sep, element_sep = RECORD.encode(), ELEMENT.encode()
    if not term and lookup == "contains":
        lookup = "startswith"  # ('' is in every value, but a null is no value: NULL LIKE '%%')
    needle = term if lookup == "contains" else element_sep + term
    at, record, counted = 0, -1, 0
    while True:
        found = blob.find(needle, at)
        if found < 0:
            return
        end = found + len(needle)
        if lookup == "exact" and blob[end:end + 1] not in (record_sep, element_sep):
            at = found + 1
            continue
        record += blob.count(record_sep, counted, found + 1)
        counted = found + 1
        start = blob.rfind(record_sep, 0, found + 1)
        element = blob.count(element_sep, start, found + (lookup != "contains")) - 1
        yield record, element
        # Past this value: the next element (a relation's), or the next record.
        stop = blob.find(record_sep, max(end, found + 1))
        if many:
            following = blob.find(element_sep, max(end, found + 1))
            stop = following if 0 <= following < stop else stop
        at = stop


# ---- the reader: what search.py asks ---------------------------------------------------------


def hits(request: Request, field: SearchField, term: str) -> set[int]:
    """The records whose values in a search field the (folded) term matches, from the
    column's token index; where a term holds white space, its candidates from the index,
    each confirmed in the text of its block. Where the keys a term matches lie in more
    postings files than the column has text blocks (a letter's keys), the text blocks
    are read instead: never more files than a scan."""
    name, column, count = request.name, field.column, request.count
    if field.lookup == "exact":
        return set(_postings(request, column, WHOLE + term))
    if not term:  # ('' is in every value, but a null is no value: NULL LIKE '%%')
        return _with_value(request, column)
    words = term.split()
    if words == [term]:  # (no white space: a substring of a value iff of one of its tokens)
        if field.lookup == "contains":
            keys = key_matches(request.need(keys_file(name, column)), term, False, False)
        else:
            keys = [HEAD + key for key in key_matches(request.need(keys_file(name, column, heads=True)),
                                                      term, True, False)]
        found = _keys_postings(request, column, [keys])
        return found[0] if found is not None else _scanned(request, field, term, common.blocks(count))
    if field.lookup == "startswith":
        candidates = (_with_value(request, column) if term[0].isspace()
                      else set(_postings(request, column, HEAD + words[0])))
    else:
        candidates = _phrase_candidates(request, column, term, words)
        if candidates is None:
            return _scanned(request, field, term, common.blocks(count))
    return _confirmed(request, field, term, candidates)


def _phrase_candidates(request: Request, column: str, term: str, words: list[str]) -> set[int] | None:
    """The records holding every word of a term with white space in it as it may lie in a
    value: a word with white space on both sides is a whole token; the first, unless the
    term starts with white space, ends one; the last, unless it ends with some, starts one.
    When some word is a whole token, those alone. None: the keys lie in more postings files
    than the column has text blocks."""
    if not words:
        return _with_value(request, column)
    lead, trail, last = term[0].isspace(), term[-1].isspace(), len(words) - 1
    bounded = [(word, at > 0 or lead, at < last or trail) for at, word in enumerate(words)]
    whole = [word for word, starts, ends in bounded if starts and ends]
    if whole:
        sets = [set(_postings(request, column, word)) for word in dict.fromkeys(whole)]
    else:
        blob = request.need(keys_file(request.name, column))
        found = _keys_postings(request, column,
                               [key_matches(blob, word, starts, ends) for word, starts, ends in bounded])
        if found is None:
            return None
        sets = found
    return sets[0].intersection(*sets[1:])


def _keys_postings(request: Request, column: str, groups: list[list[str]]) -> list[set[int]] | None:
    """Each group's records: those of any of its keys. None when the keys lie in more postings
    files than the column has text blocks (a scan reads fewer files)."""
    if len({bucket_of(key) for keys in groups for key in keys}) > len(common.blocks(request.count)):
        return None
    found = []
    for keys in groups:
        records: set[int] = set()
        for key in keys:
            records.update(_postings(request, column, key))
        found.append(records)
    return found


def _with_value(request: Request, column: str) -> set[int]:
    """The records with a value in the column at all (what an empty term matches)."""
    return set(read_u32(request.need(any_file(request.name, column))))


def _confirmed(request: Request, field: SearchField, term: str, candidates: set[int]) -> set[int]:
    """The candidates whose values the term matches, read in the text of their blocks."""
    return _scanned(request, field, term, sorted({position // common.BLOCK for position in candidates})) & candidates


def _scanned(request: Request, field: SearchField, term: str, blocks: Iterable[int]) -> set[int]:
    """The records of those blocks whose values the term matches, read in their text."""
    return {position for block in blocks for position, _ in _block_matches(request, field, term, block)}


def _block_matches(request: Request, field: SearchField, term: str, block: int) -> list[tuple[int, int]]:
    """(record's position, related record's element) of each match of the term in a block's text."""
    first = block * common.BLOCK
    blob = request.need(text_file(request.name, field.column, block))
    return [(first + position, element)
            for position, element in matches(blob, term.encode(), field.lookup, field.relation is not None)]


def elements(request: Request, field: SearchField, at: int, term: str, t: int, position: int,
             held: dict[tuple[int, int, int], dict[int, set[int]]]) -> set[int]:
    """Which of a record's related records (in the relation field `at` of the search list)
    the term `t` matches, read in the text of its block (each block once a field and term)."""
    block = position // common.BLOCK
    key = (at, t, block)
    if key not in held:
        found: dict[int, set[int]] = {}
        for record, element in _block_matches(request, field, term, block):
            found.setdefault(record, set()).add(element)
        held[key] = found
    return held[key].get(position, set())


def _postings(request: Request, column: str, key: str) -> array:
    return postings(request.read(postings_file(request.name, column, bucket_of(key))), key)


# ---- a record's values ------------------------------------------------------------------------


def _column(documents: list[dict], found: SearchField) -> list[str]:
    """The documents' values in a search column, as the text file's layout writes a record's."""
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
