"""The search backend's index format (search.py), as one replaceable unit: the term index,
a collection's search index made for object storage, where a host reads whole small
files, counts each as an object and pays for its bytes. Its writer (the build's side),
its reader and the read plan of one request, side by side; its JavaScript twin is
search_index.js.j2. search.py asks it one question, `searched()`: the records a
request's (folded) terms select. The files lie under `api/v1/<name>/_query/search/`
(`index_dir`); the paths below are relative to it.

A request's search costs: the root, the branches and leaves holding its terms' keys
(usually one of each a term; none in a field whose values lack a character of the term:
the root tells each field's alphabet), the postings files of the few terms whose lists are too
long to sit in a leaf, and, where few candidates are left, the pages of those candidates
(their documents), on which the remaining terms are checked exactly. The answers are DRF's SearchFilter's
(docs/spec/query.md §3), exactly: see `search`.

Values and terms are folded (common.fold, with the site's search_normalise) before the
writer and the plan see them: the index holds folded text only.

Formats
=======

Numbers are unsigned LEB128 varints ("varint": 7 bits a byte, low first, the high bit set
on every byte but the last) unless said otherwise. Text is UTF-8. Records are named by
their position in the collection's own order (0 .. count-1).

Fields. The collection's search specs as site.yaml writes them (`title`, `=isbn`,
`^slug`, `authors__fullName`), deduplicated by (column, lookup): field i is the i-th.
A field of a relation (`authors__fullName`) is a *relation field*: its values are the
related records' values, each at its *element*, the related record's index in the
document's list (a to-one relation: element 0).

Keys. Every fact is an entry under a key: one kind letter then a string.
- `A` (the string empty): the records with a value (what an empty term matches in a
  `contains` or `^` field).
- `E` + v: the records whose value is v (an `=` field).
- `G` + g, g of 1 or GRAM_MAX characters: the records with a token containing g (a
  `contains` field; a token is a piece of a value between white space, as str.split()
  cuts it), or with a value starting with g (a `^` field). What a term of one or two
  characters matches, precomputed.
- `S` + s, s of MIN_SUFFIX characters or more: the records with a token ending with s
  (a `contains` field): a term t without white space of MIN_SUFFIX or more characters is
  in a value iff it starts a suffix of one of its tokens, so its records are those of
  every `S` key starting with "S" + t, one contiguous range of keys.
- `H` + h: the records whose value's first token is h, the value not starting with white
  space (a `^` field): a term of MIN_SUFFIX or more characters without white space starts
  a value iff it starts its first token: the `H` keys starting with "H" + t.
- `P` + x + s + y (a `contains` field), for every run s of white space in a value, x a
  suffix (of one character or more) of the token X before it and y the token after it
  ("" at the value's end): the records with such a run. A phrase of two words w1 s w2
  is in a value iff some such X ends with w1, is followed by s and its Y starts with w2:
  the keys starting with "P" + w1 + s + w2; a word w with white space t after it, iff
  some X ends with w and is followed by a run starting with t: the keys starting with
  "P" + w + t.
- `P` + c + y + u: c the last character of such a run, y the token after it and u the run
  after y ("" at the end): a word w after one white space character c is in a value iff
  the keys starting with "P" + c + w hold it; with white space t after it, "P" + c + w +
  t. (Both made by _field_keys from _split's pairs.)
Keys sort by their UTF-8 bytes (that is, by code point).

Postings (the records of one key in one field), a *set*:
  varint form; form 0 (a list): varint n of groups, then per group varint high and
  varint count, then every position's low 16 bits as little-endian uint16, group after
  group (a position is high * 65536 + low); form 1 (a bitmap): varint n, then n bytes,
  record p present iff bit p % 8 (least significant first) of byte p // 8 is set (n =
  p // 8 + 1 for the last p: the bytes up to it). The writer takes a bitmap where its n is
  under 2 * positions + 8 * (the last position's high + 1), else a list: a set's bytes
  depend on its records alone, not on the collection's count.
  In a relation field the postings are varint m, then m sets: the records the key
  matched at element 0, 1, .. m-1 (their union: its records).

Key lists. Sorted keys, each front-coded against the one before (varint bytes shared,
varint length of the rest, the rest) and followed by what the list says of it, to the
end of the file; every RESTART-th key (the first among them) shares nothing, and the
list opens with varint number of such restarts, then each one's offset from the first
key as a little-endian uint32. A reader bisects the restarts' keys and decodes a few
keys from the last restart at or before the key it looks for (as LevelDB's blocks):
a lookup decodes some RESTART keys of a leaf, not its thousand.

Files (paths relative to the index's directory):
- `root.bin`: b"TIR1", varint version (6), varint record count, varint number of
  fields, each field's spec (varint length, bytes) and alphabet (varint length, bytes:
  every character its values hold, once, in code point order), varint levels; then a key list of the
  first key of each file of the level below, each followed by varint name: with levels 0
  the leaves (the leaf is `leaf/<name as 8 lower-case hex digits>.bin`), with levels 1 the
  branches (`branch/<name>.bin`).
- `branch/<name>.bin`: b"TIB1", then a key list of the first key of each leaf of a run of
  them, each followed by varint name (the leaf's). A branch starts at the first leaf and at
  each leaf whose first key's CRC-32 has its low BRANCH_BITS bits zero; where that makes
  one branch there is none (levels 0). So a lookup reads a few KB of root and branch at a
  million books, where one root listing every leaf was 150 KB.
- `leaf/<name>.bin`: b"TIL2", then a key list of its entries: each key followed by
  varint number of fields it has, and per field: varint field, varint size class (the
  bit length of the number of records the set holds, so at most 2**class - 1: what the
  plan ranks terms by before reading a set; coarse, so that an edit seldom changes it),
  varint where; where 0: varint length and the set's bytes inline (sets of up to
  INLINE_MAX bytes); where 1: varint name, varint ordinal: the set is the ordinal-th
  (from 0) of `post/<name>.bin`.
  The entries of all leaves, in the order the root (and its branches) list them, are
  every key in order. A leaf ends after an entry whose key's CRC-32 has its low LEAF_BITS
  bits zero (content-defined: an edit changes the leaves holding the keys it changes, and
  shifts no other boundary), or at the last key.
- `post/<name>.bin`: b"TIP1", varint number of sets, each one's length (varint), then
  the sets, in key order (so a range of keys has its sets in a run of files); an edit
  that changes a set rewrites its file, and its leaf only where its size class changes.
  A set over CHUNK_ALONE bytes has a file of its own; a file ends after a set once it
  holds CHUNK_MIN bytes and the set's tag (key, NUL, varint field) has a CRC-32 whose
  low CHUNK_BITS bits are zero, once it holds CHUNK_MAX bytes, or after the sets of a key
  whose CRC-32 has its low SPLIT_BITS bits zero (a leaf ends there too: the writer's
  processes divide the keys there, each making the files one writer would).
CRC-32 is zlib's (IEEE 802.3). Names are the CRC-32 of the branch's or leaf's first key
(of a postings file: of its first set's tag), plus 1 (modulo 2**32) as often as needed to
differ from every name of its kind given before it in key order. A reader needs none of
the writer's constants (INLINE_MAX, LEAF_BITS, BRANCH_BITS, RESTART, CHUNK_*, SPLIT_BITS):
only GRAM_MAX and MIN_SUFFIX, which the lookups below use.

Edits. Where only some records' values changed since the previous build (`edit`), the keys
they left and gained are moved in the previous build's index and only the files holding
those keys are written (made again, a million books' index takes minutes). The keys and
sets, the leaves (content-defined: those around a changed key are cut again as a fresh
build cuts them), their names, the branches and the root come out as a fresh build's; the postings
files are laid out by history: a changed set keeps its place in its file (the file
rewritten), a set grown too long for its leaf gets a file of its own, a set that left a
file leaves an empty place there (a file of empty places goes). A reader cannot tell.

Lookups. A (folded) term t in field f, t without white space: f `=`: the key "E" + t;
t empty: "A"; t of GRAM_MAX characters or fewer: "G" + t; else every key starting with
"S" + t (a `contains` f) or "H" + t (a `^` f). Those keys' sets, in f, united, are
exactly the records whose value in f the term matches (contains / startswith / equals
on folded values), and in a relation field, at which elements. A term with white space
(a phrase; smart_split's quotes keep it whole): f `=`: "E" + t, exact; a `^` f: the
records whose first token is its first word, "H" + it (t starting with white space:
"A"); a `contains` f: for each two neighbouring words w, v and the white space s between
them, the key "P" + w + s + v (every key starting with it where v ends the phrase: it may
start a longer token); white space first, every key starting with "P" + its last
character + the first word + the white space after it; white space t last, every key
starting with "P" + the last word + t; where none of these, each word's own lookup (no
word: "A"). Exact, where every field is `contains` or `=`, for two words, a word and
white space after it, or one white space character, a word (and white space after it);
else a superset, which the plan checks on the candidates' documents.

Combination (DRF's SearchFilter, one filter() over the joined relations): a record is
selected when every term matches in some field; a term matched in a field of the record
itself needs nothing more; the terms matched only in relation fields (two or more) must
be served by one choice of element per relation: some (relation, element) pairs, one per
relation, such that each such term matched at one of them.

The read plan (`search`): the root; the branches, then the leaves, of up to LEAF_BATCH
terms' keys at once,
the terms likeliest to be rare first (words before phrases, longer first); then the
terms of the batch from the fewest records up (as the leaves' size classes bound them),
each term's postings files, or, where the candidates (the records every term so far
holds) are a page's worth or fewer, or lie on fewer pages than the term has files to
read (the fewer reads), nothing: the term is checked on the candidates' documents (the
pages the answer reads anyway, when they are a page's worth). Batches go on while the
candidates are more than a page's worth; the terms left are checked on documents. A
phrase the keys do not hold exactly narrows the candidates by its keys' sets and is
checked on documents. The plan knows no host's limits: it reads the fewest files it can
on every host (hosts/contract.py Limits only guard where a platform would fail).
"""
from __future__ import annotations

import bisect
import functools
import itertools
import multiprocessing
import operator
import re
import zlib
from array import array
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field as dataclass_field, replace
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy

from ...catalogue.querying import NORMALISE, SEARCH, SearchField, search_field
from .common import (NUL, SPACES, Flush, Missing, Reader, Records, Request, folding, joined_texts, query_dir,
                     related_records, texts_apart)

ROOT, BRANCH_DIR, LEAF_DIR, POSTINGS_DIR = "root.bin", "branch", "leaf", "post"
ROOT_MAGIC, BRANCH_MAGIC, LEAF_MAGIC, POSTINGS_MAGIC = b"TIR1", b"TIB1", b"TIL2", b"TIP1"
VERSION = 6
ANY, EXACT, GRAM, HEAD, PAIR, SUFFIX = "A", "E", "G", "H", "P", "S"
GRAM_MAX = 2  # characters of the terms answered by a precomputed set
MIN_SUFFIX = GRAM_MAX + 1
LEAF_BITS = 10  # a leaf holds 2**LEAF_BITS keys on average
LEAF_MASK = (1 << LEAF_BITS) - 1
BRANCH_BITS = 6  # a branch lists 2**BRANCH_BITS leaves on average
BRANCH_MASK = (1 << BRANCH_BITS) - 1
RESTART = 16  # keys of a key list from one that shares nothing to the next
KEY_BATCH, WORD = 65536, 8  # keys the writer front-codes at once; the bytes of keys it compares at once
INLINE_MAX = 32  # bytes of a set kept in its leaf; longer ones go to postings files
CHUNK_MIN, CHUNK_MAX, CHUNK_ALONE, CHUNK_BITS = 16384, 65536, 4096, 3  # postings files' sizes (_Chunks)
CHUNK_MASK = (1 << CHUNK_BITS) - 1
LEAF_BATCH = 4  # terms whose leaves a round reads (the rest wait: the candidates may be few by then)
PAGE_SIZE = 12  # records of a page, as the plan reckons the pages its candidates' documents lie on
ELEMENT_BITS = 16  # the build's code of a relation field's match: record << ELEMENT_BITS | element
ELEMENT_MASK = (1 << ELEMENT_BITS) - 1
WHITE = re.compile(f"([{re.escape(SPACES)}]+)")  # a run of white space (what str.split() cuts at)
LIST, BITMAP = 0, 1
INLINE, FILE = 0, 1
LOW = 0xFFFF
PARALLEL_MIN = 4096  # keys for which the writer uses more than one process
SHARES = 8  # ranges of the keys a process (a process free takes the next: ranges' costs differ)
CODE_COST = 12  # codes of a key's sources that cost its writer as much as one more key (measured: ~1 µs)
SPLIT_BITS = 12  # a postings file (and a leaf) ends after a key whose CRC-32 has these low bits zero
SPLIT_MASK = (1 << SPLIT_BITS) - 1
VECTOR_MIN = 64  # positions of a set encoded or decoded with vector operations (fewer: a loop is quicker)
UNION_ALONE = 1024  # a key's sources of more codes are united alone, in a bitmap where it pays (_bitmap_pays)
UNION_SHARE = 256  # a bitmap pays for codes a 256th of its slots or more (a pass over them; a code a 15th of a sort's)


# ---- numbers ------------------------------------------------------------------------


def put_varint(out: bytearray, number: int) -> None:
    if number < 0x80:
        out.append(number)
        return
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)


def _varint(number: int) -> bytearray:
    out = bytearray()
    put_varint(out, number)
    return out


def get_varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at `at`, and where the next thing starts."""
    byte = data[at]
    if byte < 0x80:
        return byte, at + 1
    number, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, at
        shift += 7


def _name(taken: set[int], data: bytes) -> int:
    """A file's name: the CRC-32 of `data`, plus 1 until no file has it."""
    name = zlib.crc32(data)
    while name in taken:
        name = (name + 1) & 0xFFFFFFFF
    taken.add(name)
    return name


def leaf_file(name: int) -> str:
    return f"{LEAF_DIR}/{name:08x}.bin"


def branch_file(name: int) -> str:
    return f"{BRANCH_DIR}/{name:08x}.bin"


def postings_file(name: int) -> str:
    return f"{POSTINGS_DIR}/{name:08x}.bin"


# ---- fields -------------------------------------------------------------------------


def index_fields(specs: Iterable[str]) -> list[SearchField]:
    """The fields an index holds: the specs' search fields, one of each (column, lookup)."""
    found: dict[tuple[str, str], SearchField] = {}
    for spec in specs:
        field = search_field(spec)
        found.setdefault((field.column, field.lookup), field)
    return list(found.values())


def column_values(document: dict, field: SearchField) -> list[str | None]:
    """A record's values in a search field's column, unfolded, as text (a boolean as SQLite
    holds it, 1 or 0): of a field of its own, [value] or [] (null); of a relation field,
    each related record's at its element (None where it has none)."""
    if field.relation is None:
        value = document.get(field.field)
        return [] if value is None else [_text(value)]
    return [None if (value := record.get(field.field)) is None else _text(value)
            for record in related_records(document, field.relation)]


def _text(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


# ---- sets ---------------------------------------------------------------------------


def encode_set(positions: Sequence[int], out: bytearray) -> None:
    """Sorted distinct positions as a set, the smaller form (its bytes the same however many
    records the collection holds: a record added changes only the sets that hold it)."""
    if len(positions) > VECTOR_MIN:
        _encode_long_set(numpy.asarray(positions, dtype=numpy.uint32), out)
        return
    if positions.__class__ is numpy.ndarray:
        positions = positions.tolist()
    if positions and _bitmap_shorter(positions[-1], len(positions)):
        bitmap = bytearray(bitmap_size(positions[-1]))
        for position in positions:
            bitmap[position >> 3] |= 1 << (position & 7)
        put_varint(out, BITMAP)
        put_varint(out, len(bitmap))
        out += bitmap
        return
    put_varint(out, LIST)
    if not positions:
        out.append(0)  # (no group)
        return
    if len(positions) == 1:  # (most keys: one record)
        out += bytes((1, *_varint(positions[0] >> 16), 1)) + (positions[0] & LOW).to_bytes(2, "little")
        return
    high = positions[-1] >> 16
    if high == positions[0] >> 16 and high < 0x80 and len(positions) < 0x80:  # (one group: most sets)
        out += bytes((1, high, len(positions)))
        lows = array("H", [position & LOW for position in positions] if high else positions)
        if _BIG_ENDIAN:
            lows.byteswap()
        out += lows.tobytes()
        return
    groups = []
    at = 0
    while at < len(positions):
        high = positions[at] >> 16
        stop = bisect.bisect_left(positions, (high + 1) << 16, at)
        groups.append((high, stop - at))
        at = stop
    put_varint(out, len(groups))
    for high, size in groups:
        put_varint(out, high)
        put_varint(out, size)
    lows = array("H", map(operator.and_, positions, itertools.repeat(LOW)))
    if _BIG_ENDIAN:
        lows.byteswap()
    out += lows.tobytes()


def _encode_long_set(positions: numpy.ndarray, out: bytearray) -> None:
    """encode_set's bytes of a long set, a vector operation a step (a common letter's set
    holds most of a million records)."""
    if _bitmap_shorter(int(positions[-1]), len(positions)):
        present = numpy.zeros(int(positions[-1]) + 1, dtype=bool)
        present[positions] = True
        _put_bitmap(present, out)
        return
    highs = positions >> 16
    groups = numpy.flatnonzero(numpy.diff(highs)) + 1
    put_varint(out, LIST)
    starts = numpy.concatenate(([0], groups))
    sizes = numpy.diff(numpy.concatenate((starts, [len(positions)])))
    put_varint(out, len(starts))
    for high, size in zip(highs[starts].tolist(), sizes.tolist()):
        put_varint(out, high)
        put_varint(out, size)
    out += (positions & LOW).astype("<u2").tobytes()


def _put_bitmap(present: numpy.ndarray, out: bytearray) -> None:
    """A bitmap set of the positions `present` marks, the last of them its last slot."""
    put_varint(out, BITMAP)
    put_varint(out, bitmap_size(len(present) - 1))
    out += numpy.packbits(present, bitorder="little").tobytes()  # (its last byte's bits past the last: 0)


def _encode_marked(present: numpy.ndarray) -> tuple[bytes, int]:
    """encode_postings of a field's (not a relation's) positions that `present` marks, its
    last slot marked: a bitmap packed as it lies where the set is one (a letter's: most of a
    million records; their positions not listed first)."""
    out, count = bytearray(), int(numpy.count_nonzero(present))
    if _bitmap_shorter(len(present) - 1, count):
        _put_bitmap(present, out)
    else:
        encode_set(numpy.flatnonzero(present), out)
    return bytes(out), count


_BIG_ENDIAN = array("H", [1]).tobytes() == b"\x00\x01"


def bitmap_size(last: int) -> int:
    """The bytes of a bitmap whose last position is `last` (its bytes up to that one's)."""
    return (last >> 3) + 1


def _bitmap_shorter(last: Any, size: Any) -> Any:
    """Whether a set of `size` positions, the last `last`, is a bitmap (shorter than its list
    might be: two bytes a position, eight a group), of each where they are arrays."""
    return bitmap_size(last) < 2 * size + 8 * ((last >> 16) + 1)


def add_set(records: Records, data: bytes, at: int) -> int:
    """Adds the set at `at` to records being made (a bitmap as it lies, a list through its
    positions: one bitmap a lookup, not one a key of it); where the set ends."""
    form, at = get_varint(data, at)
    if form == BITMAP:
        size, at = get_varint(data, at)
        records.bits[:size] |= numpy.frombuffer(data, numpy.uint8, size, at)
        return at + size
    groups, at = get_varint(data, at)
    heads = []
    for _ in range(groups):
        high, at = get_varint(data, at)
        size, at = get_varint(data, at)
        heads.append((high, size))
    total = sum(size for _, size in heads)  # (the groups' low halves lie one after another)
    positions = numpy.frombuffer(data, "<u2", total, at).astype(numpy.int64)
    if any(high for high, _ in heads):
        positions += numpy.repeat([high << 16 for high, _ in heads], [size for _, size in heads])
    records.set(positions)
    return at + 2 * total


def encode_postings(codes: Sequence[int], relation: bool) -> tuple[bytes, int]:
    """A key's postings in a field: its positions (of a relation field: record << ELEMENT_BITS
    | element codes), sorted; and how many records they hold."""
    out = bytearray()
    if not relation:
        encode_set(codes, out)
        return bytes(out), len(codes)
    if len(codes) > VECTOR_MIN:
        coded = numpy.asarray(codes, dtype=numpy.uint64)
        records = (coded >> ELEMENT_BITS).astype(numpy.uint32)
        elements = (coded & ELEMENT_MASK).astype(numpy.uint16)
        distinct = 1 + int(numpy.count_nonzero(numpy.diff(records)))
        top = int(elements.max())
    else:
        if codes.__class__ is numpy.ndarray:
            codes = codes.tolist()  # (Python's numbers: numpy's unsigned ones overflow in encode_set's sums)
        records = [code >> ELEMENT_BITS for code in codes]
        elements = [code & ELEMENT_MASK for code in codes]
        top = max(elements)
        distinct = len(set(records)) if top else len(records)  # (at element 0 alone, one code a record)
    put_varint(out, top + 1)
    if not top:
        encode_set(records, out)
        return bytes(out), distinct
    for element in range(top + 1):
        encode_set(records[elements == element] if records.__class__ is numpy.ndarray else
                   [record for record, at in zip(records, elements) if at == element], out)
    return bytes(out), distinct


class Encoded(NamedTuple):
    """Sets encoded one after another (`data`, their bytes as a vector, the first set's from
    its first byte to the last's last; each set's `starts` and `sizes` in it) and how many
    records each holds."""
    data: numpy.ndarray
    starts: numpy.ndarray
    sizes: numpy.ndarray
    records: numpy.ndarray


def encode_many(codes: numpy.ndarray, sizes: numpy.ndarray, relation: bool) -> Encoded:
    """encode_postings of each of many sets (one or more codes: `sizes` each, one after another
    in `codes`), with vector operations across them all (a million books' index has millions
    of sets, most of a few codes: a call a set costs more than its bytes)."""
    if not relation:
        return Encoded(*_encode_lists(codes, sizes), sizes)
    owner = numpy.repeat(numpy.arange(len(sizes)), sizes)
    records, elements = codes >> ELEMENT_BITS, codes & ELEMENT_MASK
    starts = numpy.cumsum(sizes) - sizes
    top = numpy.maximum.reduceat(elements, starts)
    fresh = numpy.ones(len(codes), dtype=bool)  # (a record's first code: codes sort by record, then element)
    fresh[1:] = (records[1:] != records[:-1]) | (owner[1:] != owner[:-1])
    distinct = numpy.bincount(owner[fresh], minlength=len(sizes))
    subsets = top + 1  # (each set's records at element 0, 1, .. top: a list each, the empty ones too)
    first = numpy.cumsum(subsets) - subsets
    subset = first[owner] + elements
    order = numpy.argsort(subset, kind="stable")
    lists, at, lengths = _encode_lists(records[order], numpy.bincount(subset, minlength=int(subsets.sum())))
    # a set: the varint of its subsets, then their lists (one after another in `lists`)
    body = numpy.add.reduceat(lengths, first)
    head = _varint_widths(subsets)
    sizes = head + body
    out = Encoded(numpy.empty(int(sizes.sum()), numpy.uint8), numpy.cumsum(sizes) - sizes, sizes, distinct)
    _put_varints(out.data, out.starts, subsets, head)
    out.data[_ranges_of(out.starts + head, body)] = lists[_ranges_of(at[first], body)]
    return out


def _varint_widths(values: numpy.ndarray) -> numpy.ndarray:
    """How many bytes each value's varint takes (most: one, a pass)."""
    widths = numpy.ones(len(values), numpy.int64)
    longer = numpy.flatnonzero(values >= 0x80)
    if len(longer):
        values = values[longer]
        widths[longer] += sum(values >= 1 << bits for bits in range(14, 64, 7)) + 1
    return widths


def _put_varints(out: numpy.ndarray, at: numpy.ndarray, values: numpy.ndarray, widths: numpy.ndarray) -> None:
    """Each value's varint (of `widths` bytes) written in `out` where `at` says (those of
    one byte, most, as they are)."""
    one = widths == 1
    out[at[one]] = values[one]
    if one.all():
        return
    at, values, widths = at[~one], values[~one], widths[~one]
    where = _ranges_of(at, widths)
    byte = where - numpy.repeat(at, widths)
    last = byte == numpy.repeat(widths, widths) - 1
    out[where] = (numpy.repeat(values, widths) >> 7 * byte) & 0x7F | numpy.where(last, 0, 0x80)


def _encode_lists(positions: numpy.ndarray, sizes: numpy.ndarray) \
        -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """encode_set of each of runs of sorted positions (of `sizes` each, in order), one after
    another (bytes, each one's start and size): the lists written at once, their varints
    of any width; the sets a bitmap holds in fewer bytes (a common letter's) encoded alone."""
    owner = numpy.repeat(numpy.arange(len(sizes)), sizes)
    starts = numpy.cumsum(sizes) - sizes
    high = positions >> 16
    opens = numpy.ones(len(positions), dtype=bool)  # (a group's first position)
    opens[1:] = (high[1:] != high[:-1]) | (owner[1:] != owner[:-1])
    groups = numpy.flatnonzero(opens)
    group_owner, group_high = owner[groups], high[groups]
    group_sizes = numpy.diff(numpy.append(groups, len(positions)))
    counted = numpy.bincount(group_owner, minlength=len(sizes))
    last = positions[numpy.maximum(starts + sizes - 1, 0)] if len(positions) else numpy.zeros(len(sizes), numpy.int64)
    alone = (sizes > 0) & _bitmap_shorter(last, sizes)
    made = {}
    for index in numpy.flatnonzero(alone).tolist():
        made[index] = bytearray()
        encode_set(positions[starts[index]:starts[index] + sizes[index]].tolist(), made[index])
    # a list: LIST, varint groups, each group's varint high and varint size, then the lows
    high_widths, size_widths, counted_widths = (_varint_widths(values) for values in (group_high, group_sizes, counted))
    group_widths = high_widths + size_widths
    heads = 1 + counted_widths + numpy.bincount(group_owner, group_widths, len(sizes)).astype(numpy.int64)
    lengths = heads + 2 * sizes
    lengths[alone] = [len(data) for data in made.values()]
    at = numpy.cumsum(lengths) - lengths
    out = numpy.zeros(int(lengths.sum()), dtype=numpy.uint8)  # (LIST is 0)
    kept = ~alone
    _put_varints(out, at[kept] + 1, counted[kept], counted_widths[kept])
    written = kept[group_owner]
    before = numpy.cumsum(group_widths) - group_widths  # (the group heads' bytes before each, of every list)
    place = (at + 1 + counted_widths)[group_owner] + before - before[(numpy.cumsum(counted) - counted)[group_owner]]
    _put_varints(out, place[written], group_high[written], high_widths[written])
    _put_varints(out, place[written] + high_widths[written], group_sizes[written], size_widths[written])
    written = kept[owner]
    place = (at + heads)[owner] + 2 * (numpy.arange(len(positions)) - starts[owner])
    out[place[written]] = positions[written] & 0xFF
    out[place[written] + 1] = positions[written] >> 8 & 0xFF
    for index, data in made.items():
        out[at[index]:at[index] + lengths[index]] = numpy.frombuffer(bytes(data), numpy.uint8)
    return out, at, lengths


@dataclass
class Postings:
    """Some keys' records in a field, and of a relation field the records matched at each
    element: made empty (`none`), then each key's postings added."""
    records: Records
    by_element: list[Records]

    @classmethod
    def none(cls, count: int) -> "Postings":
        return cls(Records.none(count), [])

    def elements_of(self, record: int) -> set[int]:
        return {element for element, held in enumerate(self.by_element) if record in held}

    def add(self, data: bytes, at: int, relation: bool) -> None:
        """Adds the postings at `at` (a key's in the field; `relation`: a relation field's)."""
        if not relation:
            add_set(self.records, data, at)
            return
        elements, at = get_varint(data, at)
        for element in range(elements):
            if element == len(self.by_element):
                self.by_element.append(Records.none(self.records.count))
            add_set(self.records, data, at)
            at = add_set(self.by_element[element], data, at)


# ---- the build's side ---------------------------------------------------------------------


class _Column:
    """What a run of records holds in one column, as it comes (a million records pass here:
    appended, not looked up): each value there is (`texts`, after those of the runs taken
    in, `joined`) with its code (`codes`: a position, or of a relation column record <<
    ELEMENT_BITS | element), in the records' order. The writer cuts them into tokens, pairs
    and heads (_split) and groups them (_KeyTable), by columns: `frame` gives the values as
    polars reads them."""

    def __init__(self, relation: bool) -> None:
        self.relation = relation
        self.lookups: set[str] = set()
        self.texts: list[str] = []
        self.joined: list[_Joined] = []
        self.codes = array("Q" if relation else "I")

    def add(self, first: int, run: list[list[str | None]]) -> None:
        """The values of a run of records from `first`, each record's as column_values gives them."""
        if self.relation:
            self._check_elements(first, run)
            coded = [(position << ELEMENT_BITS | element, value) for position, values in enumerate(run, first)
                     for element, value in enumerate(values) if value is not None]
        else:
            coded = [(position, values[0]) for position, values in enumerate(run, first) if values]
        self._put(coded)

    def add_documents(self, first: int, documents: list[dict], field: SearchField, fold: Callable[[str], str]) -> None:
        """The folded values in a field's column of a run of records from `first`, read from
        their documents as column_values reads them (tight loops: a million records pass
        here, their values not put in a list a record first)."""
        name = field.field
        if field.relation is None:
            self._put([(position, fold(value if value.__class__ is str else _text(value)))
                       for position, document in enumerate(documents, first)
                       if (value := document.get(name)) is not None])
            return
        run = [related_records(document, field.relation) for document in documents]
        self._check_elements(first, run)
        self._put([(position << ELEMENT_BITS | element, fold(value if value.__class__ is str else _text(value)))
                   for position, records in enumerate(run, first)
                   for element, record in enumerate(records) if (value := record.get(name)) is not None])

    def _put(self, coded: list[tuple[int, str]]) -> None:
        self.texts += [value for _, value in coded]
        self.codes.extend([code for code, _ in coded])

    @staticmethod
    def _check_elements(first: int, run: list[list]) -> None:
        if any(len(values) > ELEMENT_MASK for values in run):
            raise ValueError(f"a record among {first}.. has more than {ELEMENT_MASK} related records "
                             f"in one relation: the term index numbers them in {ELEMENT_BITS} bits")

    def merge(self, later: "_Column") -> None:
        """The column of the run of records that follows this one's, taken in."""
        self.joined, self.texts = self._joined() + later._joined(), []
        self.codes.extend(later.codes)

    def frame(self, pl) -> "Any":
        """The values (v) and their codes (code), in order, as a polars frame: the runs'
        joined texts cut apart there (a million books' values never Python strings again)."""
        runs = [run for run in self._joined() if run.count]
        if all(isinstance(run.texts, bytes) for run in runs):
            texts = texts_apart(pl, [run.texts for run in runs])
        else:
            texts = pl.Series([text for run in runs for text in run.apart()], dtype=pl.String)
        return pl.DataFrame({"v": texts, "code": _int64(self.codes)})

    def _joined(self) -> "list[_Joined]":
        return self.joined + [_Joined.of(self.texts)] if self.texts else self.joined

    def characters(self) -> set[str]:
        """Every character its values hold."""
        return set().union(*(run.characters for run in self._joined()))

    def __getstate__(self) -> dict:
        """The texts joined (pickled a string, a run's million strings cost more than their
        characters)."""
        return {**self.__dict__, "texts": [], "joined": self._joined()}


class _Joined(NamedTuple):
    """Texts one after another (common.joined_texts), or (where some text holds a NUL: not the
    catalogue's, which refuses it) the list of them; how many; and every character they hold
    (in code point order: their alphabet, which the root tells)."""
    texts: bytes | list[str]
    count: int
    characters: str

    @classmethod
    def of(cls, texts: list[str]) -> "_Joined":
        data = joined_texts(texts)
        if data.count(NUL.encode()) == len(texts) - 1:
            return cls(data, len(texts), _characters(data.decode()).replace(NUL, ""))
        return cls(texts, len(texts), _characters("".join(texts)))

    def apart(self) -> list[str]:
        return self.texts.decode().split(NUL) if isinstance(self.texts, bytes) else self.texts


def _characters(text: str) -> str:
    """Every character a text holds, once, in code point order (counted by vector operations:
    a run's texts are millions of characters)."""
    codes = numpy.frombuffer(text.encode("utf-32-le", "surrogatepass"), "<u4")
    return "".join(map(chr, numpy.flatnonzero(numpy.bincount(codes)).tolist()))


def alphabets(fields: list[SearchField], runs: Iterable[dict[str, "_Column"]]) -> list[str]:
    """Each field's alphabet: every character its column's values hold (in the columns of
    every run of records), in code point order."""
    found: dict[str, set[str]] = {field.column: set() for field in fields}
    for columns in runs:
        for name, held in found.items():
            held |= columns[name].characters()
    return ["".join(sorted(found[field.column])) for field in fields]


class TermIndexWriter:
    """A collection's term index made from its records' folded values, given in order from
    the record at `first`; `finish` hands each file to `flush(path, bytes)` (paths relative
    to the index's directory: the caller writes a file only where its bytes changed). A run
    of records may be read by a writer of its own (elsewhere: another process), whose
    `columns` the collection's writer takes in (`merge`), runs in order."""

    def __init__(self, specs: Sequence[str], record_count: int, inline_max: int = INLINE_MAX, first: int = 0) -> None:
        self.fields = index_fields(specs)
        self.count, self.inline_max = record_count, inline_max
        self.columns: dict[str, _Column] = {}
        for field in self.fields:
            self.columns.setdefault(field.column, _Column(field.relation is not None)).lookups.add(field.lookup)
        self.readers = readers(self.fields)
        self.relations = [field.relation is not None for field in self.fields]
        self.first = self.added = first

    def add(self, first: int, run: dict[str, list[list[str | None]]]) -> None:
        """A run of records from `first` (runs come in order): by column, each record's
        folded values (as column_values gives them, folded)."""
        self._next(first)
        for name, column in self.columns.items():
            column.add(first, run[name])
        self.added += len(next(iter(run.values()), []))

    def add_documents(self, first: int, documents: list[dict], fold: Callable[[str], str]) -> None:
        """A run of records from their documents (api/render's), their values folded by `fold`."""
        self._next(first)
        for name, column in self.columns.items():
            column.add_documents(first, documents, self.readers[name], fold)
        self.added += len(documents)

    def merge(self, first: int, stop: int, columns: dict[str, _Column]) -> None:
        """Records first..stop, read by another writer (its `columns`)."""
        self._next(first)
        for name, column in self.columns.items():
            column.merge(columns[name])
        self.added = stop

    def _next(self, first: int) -> None:
        if first != self.added:
            raise ValueError(f"records from {first} given after {self.added} records")

    def finish(self, flush: Flush, processes: int = 1) -> None:
        """Every file, to `flush`: the entries in order (_KeyTable, made here, before any fork),
        cut in ranges where a postings file ends (_ranges), each range's sets encoded and put
        in leaves and postings files by one of `processes` processes (forked: they read the
        table where it is, with numpy alone: polars' threads do not survive a fork, and a forked
        process that used it would hang) as it comes free, their files flushed in key order;
        then the root."""
        table = _KeyTable.of(self.fields, self.columns)
        names = _Names(set(), set())
        ranges = _ranges(table, processes * SHARES) if processes > 1 else [(0, len(table))]
        if len(ranges) == 1:
            leaves = self._write(table, *ranges[0], flush, names)
        else:  # (the writer and table given to each process as it is forked, unpickled; set in it alone:
            # another collection's index may be written beside this one, by another thread)
            with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork"),
                                     initializer=_forked_with, initargs=(self, table)) as pool:
                leaves = []
                for within, (files, written, taken) in zip(ranges, pool.map(_write_apart, ranges)):
                    if names.leaves.isdisjoint(taken.leaves) and names.postings.isdisjoint(taken.postings):
                        names.leaves |= taken.leaves
                        names.postings |= taken.postings
                        for path, data in files:
                            flush(path, data)
                        leaves += written
                    else:  # (a name a range before it took: named again, here, in order)
                        leaves += self._write(table, *within, flush, names)
        levels, listing, branches = _upper(leaves)
        for name, data in branches.items():
            flush(branch_file(name), data)
        flush(ROOT, _root_data(self.count, self.fields, alphabets(self.fields, [self.columns]), levels, listing))

    def _write(self, table: "_KeyTable", start: int, stop: int, flush: Flush, names: "_Names") \
            -> list[tuple[bytes, int]]:
        """The table's entries start..stop (a range of the keys ending where a postings file
        ends), their sets encoded, put in leaves and postings files (to `flush`) named apart
        from `names`' (which takes theirs); the leaves' first keys and names. A batch of
        KEY_BATCH keys at a time: the sets too long for a leaf given to the postings files in
        order, then every key's and entry's bytes laid out at once (_Layout), cut in leaves."""
        leaves: list[tuple[bytes, int]] = []
        chunks = _Chunks(flush, names.postings)
        leaf = _Leaf()
        starts = table.key_starts(start, stop)
        for batch in range(0, len(starts) - 1, KEY_BATCH):
            bounds = starts[batch:batch + KEY_BATCH + 1]
            keys = table.keys(bounds[:-1])
            numbers = table.numbers[bounds[0]:bounds[-1]]
            sets = self._sets(table, bounds[0], bounds[-1])
            crcs = numpy.fromiter(map(zlib.crc32, keys), numpy.int64, len(keys))
            ends = crcs & LEAF_MASK == 0
            ends[-1] |= bounds[-1] == stop
            layout = _Layout(table, bounds, keys, leaf, ends)
            inline = sets.sizes <= self.inline_max
            placed = chunks.place(keys, numbers, sets, layout.owners, ~inline,
                                  numpy.flatnonzero(crcs & SPLIT_MASK == 0))
            classes = numpy.frexp(sets.records.astype(numpy.float64))[1]  # (each set's: its records' bit length)
            layout.entries(numbers, classes, inline, sets, placed)
            for at in numpy.flatnonzero(ends).tolist():
                first, encoded = leaf.cut(layout, at, keys)
                name = _name(names.leaves, first)
                flush(leaf_file(name), encoded)
                leaves.append((first, name))
            leaf.carry(layout, keys)
        chunks.close()
        return leaves

    def _sets(self, table: "_KeyTable", start: int, stop: int) -> Encoded:
        """The sets of entries start..stop, encoded: each entry's sources' codes united, the
        sets of each kind of field encoded together (encode_many), those of one record (most)
        at once by a shorter way (_encode_ones); those of over UNION_ALONE codes, where a
        bitmap of the records pays, before the union (a letter's, a pair of letters': many
        thousands of a million records) united and encoded alone."""
        relation = numpy.array(self.relations, dtype=bool)[table.numbers[start:stop]]
        totals = table.totals(start, stop)
        alone = (totals > UNION_ALONE) & _bitmap_pays(totals, self.count)
        codes, sizes = table.united(start, stop, ~alone)
        single = {at: table.encoded_union(start + at, bool(relation[at])) for at in numpy.flatnonzero(alone).tolist()}
        ones = numpy.flatnonzero(sizes == 1)  # (most keys': one record, a fixed few bytes, written at once)
        firsts = (numpy.cumsum(sizes) - sizes)[ones]
        listed = _listed_one(codes[firsts], relation[ones])
        ones, firsts = ones[listed], firsts[listed]
        together = [(ones, _encode_ones(codes[firsts], relation[ones]))] if len(ones) else []
        rest = ~alone
        rest[ones] = False
        for kind in (False, True):
            chosen = (relation == kind) & rest
            if chosen.any():
                together.append((numpy.flatnonzero(chosen), encode_many(codes[numpy.repeat(chosen, sizes)],
                                                                        sizes[chosen], kind)))
        return _joined_sets(stop - start, single, together)


def _listed_one(codes: numpy.ndarray, relation: numpy.ndarray) -> numpy.ndarray:
    """Which sets of one code each (`relation`: of a relation field) encode_postings writes
    as _encode_ones does: a list (not a bitmap: of a position past the first 72), its one
    group's high a byte (a position under 2**23), of a relation field at element 0."""
    positions = numpy.where(relation, codes >> ELEMENT_BITS, codes)
    return ((positions < 1 << 23) & ~_bitmap_shorter(positions, 1)
            & ~(relation & (codes & ELEMENT_MASK != 0)))


def _encode_ones(codes: numpy.ndarray, relation: numpy.ndarray) -> Encoded:
    """encode_postings of sets of one code each, those _listed_one chose, written at once:
    LIST, one group, its high, one position, its low 16 bits (of a relation field after the
    varint of its one element's set)."""
    positions = numpy.where(relation, codes >> ELEMENT_BITS, codes)
    sizes = 6 + relation.astype(numpy.int64)
    starts = numpy.cumsum(sizes) - sizes
    data = numpy.zeros(int(sizes.sum()), numpy.uint8)  # (LIST is 0)
    data[starts[relation]] = 1
    at = starts + relation
    data[at + 1], data[at + 2], data[at + 3] = 1, positions >> 16, 1
    data[at + 4], data[at + 5] = positions & 0xFF, positions >> 8 & 0xFF
    return Encoded(data, starts, sizes, numpy.ones(len(codes), numpy.int64))


def _joined_sets(count: int, single: dict[int, tuple[bytes, int]],
                 together: list[tuple[numpy.ndarray, Encoded]]) -> Encoded:
    """`count` sets one after another, in order: those encoded alone (by place: bytes,
    records), and runs of them encoded together (their places, their Encoded)."""
    places = numpy.fromiter(single, numpy.int64, len(single))
    sizes, records = numpy.zeros(count, numpy.int64), numpy.zeros(count, numpy.int64)
    sizes[places] = [len(data) for data, _ in single.values()]
    records[places] = [held for _, held in single.values()]
    for at, encoded in together:
        sizes[at], records[at] = encoded.sizes, encoded.records
    joined = Encoded(numpy.empty(int(sizes.sum()), numpy.uint8), numpy.cumsum(sizes) - sizes, sizes, records)
    for at, encoded in together:
        joined.data[_ranges_of(joined.starts[at], encoded.sizes)] = encoded.data
    for at, (data, _) in single.items():
        joined.data[joined.starts[at]:joined.starts[at] + len(data)] = numpy.frombuffer(data, numpy.uint8)
    return joined


def _ranges(table: "_KeyTable", shares: int) -> list[tuple[int, int]]:
    """The table's entries cut in about `shares` ranges of about the same cost each (a key
    costs its writer as much as CODE_COST of its sources' codes: the letters' few thousand
    keys, which hold most of the codes, cost as much as millions of pairs' keys), each
    ending after a key whose CRC-32 has its low SPLIT_BITS bits zero (where a postings file
    and a leaf end: the ranges written apart make one writer's files)."""
    starts = table.key_starts(0, len(table))
    keys = len(starts) - 1
    if keys < PARALLEL_MIN:
        return [(0, len(table))]
    costs = numpy.arange(keys + 1) + table.codes_before(0, len(table))[starts] // CODE_COST  # (of keys ..k)
    cuts = [0]
    for share in range(1, shares):
        at = max(int(numpy.searchsorted(costs, costs[-1] * share // shares)), bisect.bisect_right(starts, cuts[-1]) - 1)
        while at < keys and zlib.crc32(table.key(starts[at])) & SPLIT_MASK:
            at += 1
        if at >= keys - 1:
            break
        cuts.append(int(starts[at + 1]))
    return list(zip(cuts, [*cuts[1:], len(table)]))


@dataclass
class _KeyTable:
    """Every (key, field) entry of an index, sorted by key, then field, as plain arrays (what
    the writer's processes read after a fork): the keys' UTF-8 bytes one after another (entry
    i's, text[bounds[i]:bounds[i + 1]]; then WORD NUL bytes, so that a word may be read at any
    key's start: `words`), whether each entry's key differs from the one before
    it, its field, its sources (sources[via[i]:via[i + 1]]), and the sources' codes (source
    s's, codes[held[s]:held[s + 1]]: a position, or record << ELEMENT_BITS | element; sorted,
    each once). A source is a value, token, pair or head of a column (or its every code, the
    `A` key's), in whose keys its codes are; a key several sources make (a suffix, a letter)
    has the union of theirs."""
    text: bytes
    bounds: numpy.ndarray
    fresh: numpy.ndarray
    numbers: numpy.ndarray
    via: numpy.ndarray
    sources: numpy.ndarray
    codes: numpy.ndarray
    held: numpy.ndarray

    @classmethod
    def of(cls, fields: list[SearchField], columns: dict[str, _Column]) -> "_KeyTable":
        """The entries of the keys the columns' values make in each field (the module's
        docstring), by columns (polars: a million books' index has millions of keys)."""
        import polars  # (here: a build without search, and every request, does without it)

        sources = _Sources(polars, fields, columns)
        by_kind: dict[str, list] = {}
        for number, field in enumerate(fields):
            for kind, frame in _field_keys(polars, number, field, sources):
                by_kind.setdefault(kind, []).append(frame)
        # (a kind's keys after another's, as their letters sort: a kind at a time, the least memory)
        runs = [_sorted_run(polars, by_kind[kind]) for kind in sorted(by_kind)]
        text = b"".join([*(run[0] for run in runs), bytes(WORD)])
        lengths, fresh, numbers, counts, found = (numpy.concatenate([run[at] for run in runs]) for at in range(1, 6))
        codes, held = sources.arrays()
        return cls(text, _starts(lengths), fresh, numbers, _starts(counts), found, codes, held)

    def __len__(self) -> int:
        return len(self.numbers)

    @property
    def words(self) -> numpy.ndarray:
        return _words(self.text)

    def key(self, at: int) -> bytes:
        return self.text[self.bounds[at]:self.bounds[at + 1]]

    def keys(self, entries: list[int]) -> list[bytes]:
        """The keys of some entries."""
        text, at = self.text, numpy.asarray(entries, dtype=numpy.int64)
        return [text[start:stop] for start, stop in zip(self.bounds[at].tolist(), self.bounds[at + 1].tolist())]

    def key_starts(self, start: int, stop: int) -> numpy.ndarray:
        """Where each key of entries start..stop (start at a key's first) starts, and stop."""
        return numpy.append(start + numpy.flatnonzero(self.fresh[start:stop]), stop)

    def totals(self, start: int, stop: int) -> numpy.ndarray:
        """How many codes the sources of each of entries start..stop hold together."""
        return numpy.diff(self.codes_before(start, stop))

    def codes_before(self, start: int, stop: int) -> numpy.ndarray:
        """How many codes the sources of entries start..stop hold before each of them, and
        after the last (a source counted once for each entry it has)."""
        via = self.via[start:stop + 1]
        sources = self.sources[via[0]:via[-1]]
        return numpy.concatenate(([0], numpy.cumsum(self.held[sources + 1] - self.held[sources])))[via - via[0]]

    def united(self, start: int, stop: int, kept: numpy.ndarray) -> tuple[numpy.ndarray, numpy.ndarray]:
        """The codes of those of entries start..stop `kept` says, one after another, each
        entry's its sources' united (sorted, each once); and how many each entry has (none,
        those not kept)."""
        via = self.via[start:stop + 1]
        sources = self.sources[via[0]:via[-1]]
        owner = numpy.repeat(numpy.arange(stop - start), numpy.diff(via))
        sources, owner = sources[kept[owner]], owner[kept[owner]]
        sizes = self.held[sources + 1] - self.held[sources]
        owner = numpy.repeat(owner, sizes)
        codes = self.codes[_ranges_of(self.held[sources], sizes)]
        several = (numpy.diff(via) > 1)[owner]
        if several.any():  # (a suffix's, a letter's: sorted together, repeats dropped, put back in place)
            joined = numpy.sort(owner[several] << _OWNER_SHIFT | codes[several])
            joined = joined[numpy.append(True, joined[1:] != joined[:-1])]  # (numpy.unique: a hash table, slower)
            codes = numpy.concatenate((codes[~several], joined & _CODE_MASK))
            owner = numpy.concatenate((owner[~several], joined >> _OWNER_SHIFT))
            order = numpy.argsort(owner, kind="stable")  # (two sorted runs: merged)
            codes, owner = codes[order], owner[order]
        return codes, numpy.bincount(owner, minlength=stop - start)

    def encoded_union(self, at: int, relation: bool) -> tuple[bytes, int]:
        """encode_postings of entry `at`'s codes, its sources' united: marked in a bitmap (of a
        relation field's, a slot for each record's each element) where it pays, else sorted
        (a relation's element far from the first: most slots empty)."""
        sources = self.sources[self.via[at]:self.via[at + 1]]
        starts = self.held[sources]
        if len(sources) == 1:
            return encode_postings(self.codes[starts[0]:self.held[sources[0] + 1]], relation)
        # (a letter's: tens of thousands of sources, gathered at once)
        joined = self.codes[_ranges_of(starts, self.held[sources + 1] - starts)]
        width = int((joined & ELEMENT_MASK).max()) + 1 if relation else 1  # (a record's slots: one an element)
        slots = (joined >> ELEMENT_BITS) * width + (joined & ELEMENT_MASK) if relation else joined
        top = int(slots.max()) + 1
        if not _bitmap_pays(len(joined), top):
            joined.sort()
            return encode_postings(joined[numpy.append(True, joined[1:] != joined[:-1])], relation)
        present = numpy.zeros(top, dtype=bool)
        present[slots] = True
        if not relation:
            return _encode_marked(present)
        found = numpy.flatnonzero(present)
        return encode_postings((found // width) << ELEMENT_BITS | found % width, relation)

    def codes_of(self, at: int) -> set[int]:
        """Entry `at`'s codes."""
        return {code for source in self.sources[self.via[at]:self.via[at + 1]].tolist()
                for code in self.codes[self.held[source]:self.held[source + 1]].tolist()}


_OWNER_SHIFT = 40  # (an entry's codes united, sorted with it in the bits above: up to 2**24 records)
_CODE_MASK = (1 << _OWNER_SHIFT) - 1


def _bitmap_pays(codes: Any, slots: int) -> Any:
    """Whether codes are united quicker in a bitmap of `slots` slots than sorted (each count
    of codes of an array, where `codes` is one)."""
    return codes * UNION_SHARE >= slots


def _ranges_of(starts: numpy.ndarray, sizes: numpy.ndarray) -> numpy.ndarray:
    """The indexes start..start + size of each (start, size), one run after another."""
    total = int(sizes.sum())
    offsets = numpy.repeat(starts - (numpy.cumsum(sizes) - sizes), sizes)
    return offsets + numpy.arange(total)


def _sorted_run(pl, frames: list) -> tuple:
    """The entries of one kind's keys (lazy frames of key, field number, source), each (key,
    field) once, sorted: the keys' bytes one after another, their lengths, whether each differs
    from the one before it, the fields, the number of sources of each, the sources (each
    column made by polars, side by side, as numpy takes it: no copy made after)."""
    key, src = pl.col("key"), pl.col("src")
    found = (pl.concat(frames).group_by("key", "number").agg(src.unique()).sort("key", "number")
             .select(key, src, length=key.str.len_bytes().cast(pl.Int64), fresh=key.ne_missing(key.shift(1)),
                     number=pl.col("number").cast(pl.Int64), count=src.list.len().cast(pl.Int64))
             .collect())
    return (found["key"].str.join("").cast(pl.Binary).item(), found["length"].to_numpy(), found["fresh"].to_numpy(),
            found["number"].to_numpy(), found["count"].to_numpy(), found["src"].explode().to_numpy())


def _starts(sizes: numpy.ndarray) -> numpy.ndarray:
    """Where each of runs of `sizes` starts, one after another, and where the last ends."""
    starts = numpy.zeros(len(sizes) + 1, numpy.int64)
    numpy.cumsum(sizes, out=starts[1:])
    return starts


class _Sources:
    """The sources of an index's keys (_KeyTable), numbered: each distinct text of a kind
    (_split) a column's values make for its fields' lookups (_LOOKUP_KINDS), with its codes.
    The columns' values are cut and grouped by kind at once (polars runs them side by side)."""

    def __init__(self, pl, fields: list[SearchField], columns: dict[str, _Column]) -> None:
        self.pl = pl
        values = {name: column.frame(pl).lazy() for name, column in columns.items()}
        wanted = list(dict.fromkeys((field.column, kind) for field in fields
                                    for kind in _LOOKUP_KINDS[field.lookup]))
        grouped = pl.collect_all([_grouped(pl, values[column], kind, columns[column].relation)
                                  for column, kind in wanted])
        self.held = [frame["code"] for frame in grouped]  # (a list of codes a source)
        self.frames: dict[tuple[str, str], Any] = {}
        self.count = 0
        for found, frame in zip(wanted, grouped):
            first, self.count = self.count, self.count + frame.height
            self.frames[found] = frame.lazy().select("t", src=pl.int_range(first, self.count, dtype=pl.Int64))

    def of(self, column: str, kind: str) -> "Any":
        """A lazy frame of a kind's distinct texts in a column (t) and their sources' numbers (src)."""
        return self.frames[column, kind]

    def arrays(self) -> tuple[numpy.ndarray, numpy.ndarray]:
        """Every source's codes one after another, and where each starts (and the last ends)."""
        held = numpy.zeros(self.count + 1, numpy.int64)
        if not self.count:
            return numpy.zeros(0, numpy.int64), held
        runs = self.pl.concat(self.held)
        numpy.cumsum(runs.list.len().to_numpy(), out=held[1:])
        return runs.explode().to_numpy(), held  # (Int64: as numpy takes it)


def _grouped(pl, values: "Any", kind: str, relation: bool) -> "Any":
    """A column's texts of one kind (_split), each with its codes in the records' order, each once."""
    if relation and kind in _CUT:  # (a related record's value, in every record referring to it: cut once)
        cut = _split(pl, values.group_by("v").agg("code"), kind).explode("code")
        return cut.group_by("t").agg(pl.col("code").sort())  # (a value's codes are no other value's)
    # (within a group polars keeps the rows' order: the records')
    return _split(pl, values, kind).group_by("t").agg("code")


def _int64(codes: array) -> numpy.ndarray:
    return numpy.frombuffer(codes, dtype=_DTYPES[codes.typecode]).astype(numpy.int64)


_SPACE = "[" + "".join(f"\\x{{{ord(c):X}}}" for c in SPACES) + "]"  # (WHITE's class, as polars' patterns write it)
_NOT_SPACE = "[^" + _SPACE[1:]  # (any character but those)
_TOKEN = f"{_NOT_SPACE}+"  # (what str.split() gives)
_PAIR = f"{_NOT_SPACE}*{_SPACE}+{_NOT_SPACE}*{_SPACE}*"  # (L + s + R + t, from a token on)
_PAIR_PARTS = f"^({_NOT_SPACE}*)({_SPACE}+)({_NOT_SPACE}*)"  # (an adjacent pair's L, s and R)


_LOOKUP_KINDS = {"exact": ("wholes",), "startswith": ("any", "heads"), "contains": ("any", "tokens", "pairs")}
_CUT = ("heads", "tokens", "pairs")  # (the kinds _split cuts out of a value)


def _split(pl, values: "Any", kind: str) -> "Any":
    """A column's values and codes (v, code, a lazy frame) as texts of one kind and their
    codes (t, code), each text of a value once: "" (`any`), the value (`wholes`), its first
    token where it does not start with white space (`heads`), its tokens as str.split() cuts
    it (`tokens`), or L + s + R + t for every run s of white space, L the token before it
    and R the one after it ("" at the value's ends, not both), t the run after R (`pairs`:
    what a phrase can match across)."""
    v = pl.col("v")
    if kind == "any":
        return values.select(t=pl.lit(""), code="code")
    if kind == "wholes":
        return values.select(t=v, code="code")
    if kind == "heads":
        return values.select(t=v.str.extract(f"^({_TOKEN})", 1), code="code").drop_nulls("t")
    if kind == "tokens":
        texts = v.str.extract_all(_TOKEN)
    else:  # (a match takes L s R t, the next one starts at the token after R: the pairs from the
        # first token and every second one after it, then, the first token and run cut off, the others)
        after_first = v.str.replace(f"^{_NOT_SPACE}*{_SPACE}+", "")
        texts = pl.concat_list(v.str.extract_all(_PAIR), after_first.str.extract_all(_PAIR))
    found = values.select(t=texts.list.unique(), code="code").explode("t").drop_nulls("t")
    return found.filter(pl.col("t").str.contains(_TOKEN)) if kind == "pairs" else found


def _field_keys(pl, number: int, field: SearchField, sources: _Sources) -> list[tuple[str, Any]]:
    """The lazy frames (key, field number, source) of one field's keys, by kind (the module's
    docstring): `E` of an `=` field; `A`, then `S`, `G` and `P` of a `contains` field, `H`
    and `G` of a `^` field."""
    def frame(kind: str) -> "pl.LazyFrame":
        return sources.of(field.column, kind)

    def keyed(found: "pl.LazyFrame", kind: str, text: "pl.Expr") -> tuple[str, "pl.LazyFrame"]:
        return kind, found.select(key=pl.lit(kind) + text, number=pl.lit(number, pl.UInt16), src="src")

    def each(found: "pl.LazyFrame", starts: "pl.Expr") -> "pl.LazyFrame":  # (a row a start)
        return found.with_columns(at=starts).explode("at").drop_nulls("at")

    if field.lookup == "exact":
        return [keyed(frame("wholes"), EXACT, pl.col("t"))]
    found = [keyed(frame("any"), ANY, pl.lit(""))]
    text, at = pl.col("t"), pl.col("at")
    length = text.str.len_chars().cast(pl.Int64)  # (unsigned, it would wrap below zero)
    if field.lookup == "startswith":
        heads = frame("heads")
        found.append(keyed(heads, HEAD, text))
        found += [keyed(heads.filter(length >= size), GRAM, text.str.slice(0, size)) for size in range(1, GRAM_MAX + 1)]
        return found
    tokens = frame("tokens")
    found.append(keyed(each(tokens, pl.int_ranges(0, length - MIN_SUFFIX + 1)), SUFFIX, text.str.slice(at)))
    found += [keyed(each(tokens, pl.int_ranges(0, length - size + 1)), GRAM, text.str.slice(at, size))
              for size in range(1, GRAM_MAX + 1)]
    parts = pl.col("parts").struct
    pairs = frame("pairs").with_columns(parts=text.str.extract_groups(_PAIR_PARTS)).with_columns(
        left=parts["1"].str.len_chars().cast(pl.Int64),
        joined=(parts["1"].str.len_chars() + parts["2"].str.len_chars() + parts["3"].str.len_chars()).cast(pl.Int64),
        after=(parts["1"].str.len_chars() + parts["2"].str.len_chars() - 1).cast(pl.Int64),
        right=parts["3"].str.len_chars().cast(pl.Int64))
    # every suffix of L + s + R; and the run's last character + R + the run after R, where R is
    found.append(keyed(each(pairs, pl.int_ranges(0, pl.col("left"))), PAIR, text.str.slice(at, pl.col("joined") - at)))
    found.append(keyed(pairs.filter(pl.col("right") > 0), PAIR, text.str.slice(pl.col("after"))))
    return found


def _root_data(count: int, fields: list[SearchField], alphabets: list[str], levels: int, listing: bytes) -> bytes:
    out = bytearray(ROOT_MAGIC)
    for number in (VERSION, count, len(fields)):
        put_varint(out, number)
    for field, alphabet in zip(fields, alphabets):
        for text in (field.spec.encode(), alphabet.encode()):
            put_varint(out, len(text))
            out += text
    put_varint(out, levels)
    return bytes(out + listing)


def _upper(leaves: list[tuple[bytes, int]]) -> tuple[int, bytes, dict[int, bytes]]:
    """The levels above the leaves (first key, name; in key order): the root's levels and key
    list, and the branches (by name). A branch starts at the first leaf and at each leaf whose
    first key's CRC-32 has its low BRANCH_BITS bits zero (content-defined, as leaves are: an
    edit changes the branches listing the leaves it changes); leaves that make one branch are
    the root's own list (levels 0), else the root lists the branches (levels 1)."""
    runs: list[list[tuple[bytes, int]]] = []
    for leaf in leaves:
        if not runs or zlib.crc32(leaf[0]) & BRANCH_MASK == 0:
            runs.append([])
        runs[-1].append(leaf)
    if len(runs) < 2:
        return 0, _listing(leaves), {}
    taken: set[int] = set()
    branches = {_name(taken, run[0][0]): BRANCH_MAGIC + _listing(run) for run in runs}
    return 1, _listing([(run[0][0], name) for run, name in zip(runs, branches)]), branches


def _listing(named: list[tuple[bytes, int]]) -> bytes:
    """A key list of first keys, each followed by its file's name."""
    keys = _KeyList()
    for first, name in named:
        put_varint(keys.put(first), name)
    return keys.encoded()


_FORKED: "tuple[TermIndexWriter, _KeyTable] | None" = None  # (what a process finish forks reads)


def _forked_with(writer: TermIndexWriter, table: "_KeyTable") -> None:
    global _FORKED
    _FORKED = writer, table


@dataclass
class _Names:
    """The names of the leaves and of the postings files given so far."""
    leaves: set[int]
    postings: set[int]


def _write_apart(within: tuple[int, int]) -> tuple[list[tuple[str, bytes]], list[tuple[bytes, int]], _Names]:
    """A range of the entries written in a process of its own: its files, leaves and names."""
    files: list[tuple[str, bytes]] = []
    names = _Names(set(), set())
    writer, table = _FORKED
    leaves = writer._write(table, *within, lambda path, data: files.append((path, data)), names)
    return files, leaves, names


class _Chunks:
    """The postings files, filled with sets in key order: a set longer than CHUNK_ALONE has
    a file of its own; a file ends after a set, once it holds CHUNK_MIN bytes, where the
    set's tag (key, NUL, field) has a CRC-32 whose low CHUNK_BITS bits are zero, or once
    it holds CHUNK_MAX bytes (the rare long run without such a tag); the writer closes one
    after the sets of a key that ends a range of the keys (_ranges). A file's sets are
    taken from their batches' Encoded when it is written."""

    def __init__(self, flush: Flush, names: set[int]) -> None:
        self.flush = flush
        self.names = names  # (given so far: taken)
        self.name: int | None = None
        self.runs: list[tuple[Encoded, list[int]]] = []  # (the file's sets: each batch's, by place)
        self.sizes: list[int] = []
        self.size = 0

    def place(self, keys: list[bytes], numbers: numpy.ndarray, sets: Encoded, owners: numpy.ndarray,
              long: numpy.ndarray, splits: numpy.ndarray) -> numpy.ndarray:
        """The sets of a batch too long for a leaf (`long`; `owners`: each set's key, `numbers`
        its field) put in files in order, a file closed after the sets of each key in `splits`:
        each one's file name and ordinal, two columns (the other rows zero). (A step a file, its
        sets found by their sizes' running sums: a million books' index has 1.4 million such
        sets in some 20,000 files.)"""
        placed = numpy.zeros((len(sets.sizes), 2), numpy.int64)
        longs = numpy.flatnonzero(long)
        passed = numpy.searchsorted(splits, owners[longs])  # (the keys in `splits` before each set's)
        sizes = sets.sizes[longs]
        running = numpy.concatenate(([0], numpy.cumsum(sizes)))
        # (the sets before which a file ends: the first after a key in `splits`, those over CHUNK_ALONE bytes)
        breaks = [*numpy.flatnonzero((numpy.diff(passed, prepend=0) > 0) | (sizes > CHUNK_ALONE)).tolist(), len(longs)]

        def tag(at: int) -> bytes:
            return _set_tag(keys[owners[longs[at]]], int(numbers[longs[at]]))
        at = following = 0
        while at < len(longs):
            if at == breaks[following]:
                self.close()
                following += 1
            if self.name is None:
                self.name = _name(self.names, tag(at))
            stop, full = self._stop(at, breaks[following], sizes, running, tag)
            placed[longs[at:stop], 0] = self.name
            placed[longs[at:stop], 1] = numpy.arange(len(self.sizes), len(self.sizes) + stop - at)
            if not self.runs or self.runs[-1][0] is not sets:  # (the file's first set of this batch)
                self.runs.append((sets, []))
            self.runs[-1][1].extend(longs[at:stop].tolist())
            self.sizes += sizes[at:stop].tolist()
            self.size += int(running[stop] - running[at])
            if full:
                self.close()
            at = stop
        if len(splits) > (passed[-1] if len(passed) else 0):
            self.close()
        return placed

    def _stop(self, at: int, before: int, sizes: numpy.ndarray, running: numpy.ndarray,
              tag: Callable[[int], bytes]) -> tuple[int, bool]:
        """Where the sets from `at` that the open file takes end (at `before` at the latest), and
        whether it is full then: after a set over CHUNK_ALONE bytes, after the set that brings it
        to CHUNK_MAX bytes, or after one from CHUNK_MIN bytes on whose tag ends a file."""
        if sizes[at] > CHUNK_ALONE:
            return at + 1, True
        base = self.size - running[at]  # (its size with the sets at..stop: base + running[stop])
        most = int(numpy.searchsorted(running, CHUNK_MAX - base))
        for stop in range(max(int(numpy.searchsorted(running, CHUNK_MIN - base)), at + 1), min(most, before) + 1):
            if zlib.crc32(tag(stop - 1)) & CHUNK_MASK == 0:
                return stop, True
        return min(most, before), most <= before

    def close(self) -> None:
        if self.name is None:
            return
        sizes = numpy.array(self.sizes, numpy.int64)
        widths = _varint_widths(sizes)
        lengths = numpy.empty(int(widths.sum()), numpy.uint8)
        _put_varints(lengths, numpy.cumsum(widths) - widths, sizes, widths)
        data = [sets.data[_ranges_of(sets.starts[at], sets.sizes[at])] for sets, at in self.runs]
        self.flush(postings_file(self.name), POSTINGS_MAGIC + bytes(_varint(len(self.sizes))) + lengths.tobytes()
                   + b"".join(run.tobytes() for run in data))
        self.name, self.runs, self.sizes, self.size = None, [], [], 0


_DTYPES = {"I": numpy.uint32, "Q": numpy.uint64}


class _KeyList:
    """A key list as it is written a key at a time (the module's docstring): `put(key)` puts
    the next key and gives the bytes to append what is said of it to. (A build's leaves are
    laid out a batch at a time, _Layout: the same bytes.)"""

    def __init__(self) -> None:
        self.body = bytearray()
        self.restarts = array("I")
        self.previous = b""
        self.keys = 0
        self.first: bytes | None = None  # (of a list begun with a leaf's head, `kept`: its first key)

    @property
    def blocks(self) -> int:
        return len(self.restarts)

    @classmethod
    def kept(cls, data: bytes, key: bytes) -> "_KeyList":
        """A leaf's key list begun again before `key`: the restart blocks wholly before the one
        holding `key` (or where it would go) as their bytes lie, the next key put starting a
        block (a change to `key` and keys after it leaves them as they are)."""
        out = cls()
        restarts, at = get_varint(data, len(LEAF_MAGIC))
        keys = at + 4 * restarts
        if not restarts:
            return out
        offsets = array("I", data[at:at + 4 * restarts])
        if _BIG_ENDIAN:
            offsets.byteswap()
        offset = _restart(data, len(LEAF_MAGIC), key) - keys
        blocks = offsets.index(offset)
        if blocks:
            out.restarts, out.body = offsets[:blocks], bytearray(data[keys:keys + offset])
            out.keys, out.first = blocks * RESTART, _get_key(data, keys, b"")[0]
        return out

    def put(self, key: bytes) -> bytearray:
        if self.keys % RESTART == 0:
            self.restarts.append(len(self.body))
            self.previous = b""
            shared = 0
        else:
            shared = _shared(self.previous, key)
        rest = len(key) - shared
        if shared < 0x80 and rest < 0x80:
            self.body += bytes((shared, rest))
        else:
            put_varint(self.body, shared)
            put_varint(self.body, rest)
        self.body += key[shared:]
        self.previous = key
        self.keys += 1
        return self.body

    def encoded(self) -> bytes:
        head = _varint(len(self.restarts))
        restarts = array("I", self.restarts)
        if _BIG_ENDIAN:
            restarts.byteswap()
        return bytes(head + restarts.tobytes() + self.body)


def _set_tag(key: bytes, field: int) -> bytes:
    """What names a set in the postings files (_Chunks): its key, NUL, varint field."""
    return key + (_FIELD_TAGS[field] if field < 0x80 else b"\x00" + _varint(field))


_FIELD_TAGS = [bytes((0, field)) for field in range(0x80)]  # (NUL and a field of one byte: most)
_VARINT, _TEXT, _SETS = 0, 1, 2  # (a _Layout item: a varint, or bytes copied from the keys' text or the inline sets)


class _Layout:
    """A batch of keys' bytes in a leaf's key list (the module's docstring), laid out at
    once with vector operations: each key's front coding, its rest of bytes and its number
    of entries, each entry's field, size class, where, and its inline set's bytes or its
    postings file's name and ordinal: 4 items a key, 5 an entry, each a varint or a copy
    of bytes; `at(k)`: where key k's bytes start in `data`."""

    def __init__(self, table: "_KeyTable", bounds: numpy.ndarray, keys: list[bytes], leaf: "_Leaf",
                 ends: numpy.ndarray) -> None:
        count = len(bounds) - 1
        self.firsts = bounds[:-1] - bounds[0]  # (each key's first entry)
        self.owners = numpy.repeat(numpy.arange(count), numpy.diff(bounds))  # (each entry's key)
        self.base = 4 * numpy.arange(count) + 5 * self.firsts  # (each key's first item)
        items = 4 * count + 5 * int(bounds[-1] - bounds[0])
        self.kinds = numpy.zeros(items, numpy.int8)
        self.values = numpy.zeros(items, numpy.int64)
        self.sizes = numpy.zeros(items, numpy.int64)
        # each key's place in its leaf: after the previous batch's keys for the leaf it continues
        begins = numpy.zeros(count, bool)
        begins[1:] = ends[:-1]
        run = numpy.maximum.accumulate(numpy.where(begins, numpy.arange(count), -1))
        placed = numpy.where(run < 0, numpy.arange(count) + leaf.keys, numpy.arange(count) - run)
        self.restarts = placed % RESTART == 0
        starts, stops = table.bounds[bounds[:-1]], table.bounds[bounds[:-1] + 1]
        shared = numpy.zeros(count, numpy.int64)
        if count > 1:
            shared[1:] = _shared_prefixes(table.words, starts, stops - starts)
        if leaf.keys % RESTART:
            shared[0] = _shared(leaf.last, keys[0])
        shared[self.restarts] = 0
        self._put(self.base, _VARINT, shared)
        self._put(self.base + 1, _VARINT, stops - starts - shared)
        self._put(self.base + 2, _TEXT, starts + shared, stops - starts - shared)
        self._put(self.base + 3, _VARINT, numpy.diff(bounds))
        self.table = table

    def _put(self, items: numpy.ndarray, kind: int, values: Any, sizes: Any = None) -> None:
        self.kinds[items] = kind
        self.values[items] = values
        if sizes is not None:
            self.sizes[items] = sizes

    def entries(self, numbers: numpy.ndarray, classes: numpy.ndarray, inline: numpy.ndarray, sets: Encoded,
                placed: numpy.ndarray) -> None:
        """The entries' items, then every item's bytes (`data`)."""
        owners = self.owners
        items = self.base[owners] + 4 + 5 * (numpy.arange(len(numbers)) - self.firsts[owners])
        self._put(items, _VARINT, numbers)
        self._put(items + 1, _VARINT, classes)
        self._put(items + 2, _VARINT, numpy.where(inline, INLINE, FILE))
        self._put(items + 3, _VARINT, numpy.where(inline, sets.sizes, placed[:, 0]))
        self._put(items[~inline] + 4, _VARINT, placed[~inline, 1])
        self._put(items[inline] + 4, _SETS, sets.starts[inline], sets.sizes[inline])
        self.data = self._bytes(sets.data)

    def _bytes(self, sets: numpy.ndarray) -> numpy.ndarray:
        varint = self.kinds == _VARINT
        widths = _varint_widths(self.values[varint])
        self.sizes[varint] = widths
        self.offsets = numpy.concatenate(([0], numpy.cumsum(self.sizes)))
        out = numpy.empty(int(self.offsets[-1]), numpy.uint8)
        _put_varints(out, self.offsets[:-1][varint], self.values[varint], widths)
        for kind, source in ((_TEXT, numpy.frombuffer(self.table.text, numpy.uint8)), (_SETS, sets)):
            copies = self.kinds == kind
            sizes = self.sizes[copies]
            out[_ranges_of(self.offsets[:-1][copies], sizes)] = source[_ranges_of(self.values[copies], sizes)]
        return out

    def at(self, key: int) -> int:
        return int(self.offsets[self.base[key]]) if key < len(self.base) else int(self.offsets[-1])


class _Leaf:
    """The leaf being filled as the batches are laid out: its keys' bytes so far (parts),
    where its restarts are, how many keys it has, its first and last key."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.restarts: list[int] = []
        self.keys = 0
        self.first = self.last = b""
        self.taken = 0  # (the batch's keys before this leaf's: in an earlier leaf)

    def cut(self, layout: _Layout, at: int, keys: list[bytes]) -> tuple[bytes, bytes]:
        """The leaf ending with the batch's key `at`: its first key and bytes; the next begins."""
        self._take(layout, at + 1, keys)
        restarts = numpy.array(self.restarts, dtype="<u4").tobytes()
        data = LEAF_MAGIC + bytes(_varint(len(self.restarts))) + restarts + b"".join(self.parts)
        first = self.first
        self.__init__()
        self.taken = at + 1
        return first, data

    def carry(self, layout: _Layout, keys: list[bytes]) -> None:
        """The batch's keys after its last leaf's, kept for the next batch's."""
        if self.taken < len(keys):
            self._take(layout, len(keys), keys)
        self.taken = 0

    def _take(self, layout: _Layout, stop: int, keys: list[bytes]) -> None:
        begin, end = layout.at(self.taken), layout.at(stop)
        if self.keys == 0:
            self.first = keys[self.taken]
        restarts = numpy.flatnonzero(layout.restarts[self.taken:stop]) + self.taken
        self.restarts += (layout.offsets[layout.base[restarts]] - begin + self.size).tolist()
        self.parts.append(layout.data[begin:end].tobytes())
        self.size += end - begin
        self.keys += stop - self.taken
        self.last = keys[stop - 1]


def _shared_prefixes(words: numpy.ndarray, starts: numpy.ndarray, sizes: numpy.ndarray) -> numpy.ndarray:
    """How many bytes each of distinct sorted keys but the first shares with the one before it,
    with vector operations: the keys (at `starts`, of `sizes` bytes) read 8 bytes at a time as
    big-endian words (`words`: _KeyTable.words), each pair's first that differ found by
    their XOR's zero bytes at the top; the pairs whose 8 bytes were all the same compared
    again 8 bytes on (few: most keys share a few bytes)."""
    limit = numpy.minimum(sizes[:-1], sizes[1:])
    shared = numpy.zeros(len(limit), numpy.int64)
    first, second = starts[:-1], starts[1:]
    going = numpy.arange(len(limit))
    while len(going):
        at = shared[going]
        differ = words[first[going] + at] ^ words[second[going] + at]
        same = numpy.zeros(len(going), numpy.int64)
        for shift in _BYTE_SHIFTS:
            same += differ >> shift == 0
        shared[going] = at + same
        going = going[(same == 8) & (shared[going] < limit[going])]
    return numpy.minimum(shared, limit)


_BYTE_SHIFTS = [numpy.uint64(shift) for shift in range(56, -8, -8)]  # (a word's top byte, its top two, .. all 8)


def _words(text: bytes) -> numpy.ndarray:
    """Bytes (ending with WORD NUL bytes) as big-endian 8-byte words, one starting at each byte
    but the last 7 (a view: no copy)."""
    return numpy.ndarray((len(text) - WORD + 1,), ">u8", text, strides=(1,))


def _shared(a: bytes, b: bytes) -> int:
    """How many bytes two keys share at their start: the first set bit of their XOR (C
    speed, not a loop a byte)."""
    size = max(len(a), len(b))
    differ = int.from_bytes(a.ljust(size, b"\x00"), "big") ^ int.from_bytes(b.ljust(size, b"\x00"), "big")
    return min(size - (differ.bit_length() + 7) // 8, len(a), len(b))


def document_values(document: dict, fields: dict[str, SearchField], fold: Callable[[str], str]) \
        -> dict[str, list[str | None]]:
    """A record's folded values by column, from its document."""
    return {column: [None if value is None else fold(value) for value in column_values(document, field)]
            for column, field in fields.items()}


# ---- the reader's side --------------------------------------------------------------------


Lookup = tuple[bytes, bool]  # a key, and whether every key starting with it


@dataclass(frozen=True)
class Root:
    """What `root.bin` says: the record count, the fields and their alphabets, and (looked up)
    the files of the level below it: leaves (levels 0) or branches (levels 1)."""
    count: int
    fields: list[SearchField]
    alphabets: list[str]
    levels: int
    data: bytes
    keys: int  # where its key list of those files' first keys starts

    @classmethod
    def decode(cls, data: bytes) -> "Root":
        if data[:4] != ROOT_MAGIC:
            raise ValueError("not a term index's root")
        version, at = get_varint(data, 4)
        if version != VERSION:
            raise ValueError(f"a term index of version {version}; this reader reads {VERSION}")
        count, at = get_varint(data, at)
        size, at = get_varint(data, at)
        fields, alphabets = [], []
        for _ in range(size):
            for found in (fields, alphabets):
                length, at = get_varint(data, at)
                found.append(data[at:at + length].decode())
                at += length
        levels, at = get_varint(data, at)
        return cls(count, [search_field(spec) for spec in fields], alphabets, levels, data, at)

    def leaves(self, lookups: Iterable[Lookup], reads: "Reads") -> dict[Lookup, list[tuple[bytes, int]]]:
        """The leaves (first key, name) that may hold each lookup's keys, through the branches
        of them all (read together, in key order)."""
        found = {lookup: _covering(self.data, self.keys, *lookup) for lookup in lookups}
        if not self.levels:
            return found
        branches = {name: _checked(reads.get(branch_file(name)), BRANCH_MAGIC, "branch")
                    for _, name in sorted({branch for named in found.values() for branch in named})}
        return {lookup: [leaf for _, name in named for leaf in _covering(branches[name], len(BRANCH_MAGIC), *lookup)]
                for lookup, named in found.items()}


def _covering(data: bytes, at: int, key: bytes, prefix: bool) -> list[tuple[bytes, int]]:
    """The files (first key, name) a key list at `at` names that may hold the key (with
    `prefix`: every key starting with it): the last starting at or before it (else the first),
    and with `prefix` those after it starting before the keys that follow the ones starting with it."""
    end = key + b"\xff"
    found: list[tuple[bytes, int]] = []
    at, first = _restart(data, at, key), b""
    while at < len(data):
        first, at = _get_key(data, at, first)
        name, at = get_varint(data, at)
        if first <= key:
            found = [(first, name)]
        elif not found or prefix and first < end:
            found.append((first, name))
        else:
            break
    return found


def _checked(data: bytes, magic: bytes, what: str) -> bytes:
    if data[:4] != magic:
        raise ValueError(f"not a term index's {what}")
    return data


def _restart(data: bytes, at: int, key: bytes) -> int:
    """Where to decode the key list at `at` from to meet `key`: the last restart whose key
    is `key` or before it (the first restart where none is)."""
    restarts, at = get_varint(data, at)
    keys = at + 4 * restarts
    if not restarts:
        return keys
    offsets = numpy.frombuffer(data, "<u4", restarts, at)
    low, high = 0, restarts
    while high - low > 1:
        middle = (low + high) // 2
        if _get_key(data, keys + int(offsets[middle]), b"")[0] <= key:
            low = middle
        else:
            high = middle
    return keys + int(offsets[low])


def _get_key(data: bytes, at: int, previous: bytes) -> tuple[bytes, int]:
    shared, length = data[at], data[at + 1]
    if shared >= 0x80 or length >= 0x80:
        shared, at = get_varint(data, at)
        length, at = get_varint(data, at)
    else:
        at += 2
    return previous[:shared] + data[at:at + length], at + length


class Piece(NamedTuple):
    """One key's set in one field, as its leaf tells of it: inline in `data` from `start`,
    or (data None) the set at `start` among those of the postings file `name`; `records`:
    at most how many records it holds (the leaf tells their number's bit length)."""
    field: int
    records: int
    data: bytes | None
    start: int
    name: int


class Leaf:
    """A leaf's entries, looked up in its key list."""

    def __init__(self, data: bytes) -> None:
        self.data = _checked(data, LEAF_MAGIC, "leaf")

    def find(self, key: bytes, prefix: bool) -> list[list[Piece]]:
        """The pieces of the key (with `prefix`: of each key starting with it), in key order."""
        data, found = self.data, []
        at, entry = _restart(data, len(LEAF_MAGIC), key), b""
        while at < len(data):
            entry, at = _get_key(data, at, entry)
            pieces, at = _pieces(data, at)
            if entry < key:
                continue
            if entry != key and not (prefix and entry.startswith(key)):
                break
            found.append(pieces)
        return found


def _pieces(data: bytes, at: int) -> tuple[list[Piece], int]:
    """An entry's pieces, and where the next entry starts."""
    stored, at = _stored_pieces(data, at)
    return [Piece(held.field, (1 << held.size_class) - 1, held.data, 0, 0) if held.data is not None else
            Piece(held.field, (1 << held.size_class) - 1, None, held.ordinal, held.name) for held in stored], at


class Reads:
    """The index files a request read, each once: how many, and their bytes."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self.held: dict[str, bytes | None] = {}

    def get(self, path: str) -> bytes:
        if path not in self.held:
            self.held[path] = self.read(path)
        data = self.held[path]
        if data is None:
            raise Missing(f"the term index's {path}")
        return data

    @property
    def objects(self) -> int:
        return len(self.held)

    @property
    def bytes(self) -> int:
        return sum(len(data or b"") for data in self.held.values())


# ---- the read plan of one request ---------------------------------------------------------


@dataclass
class Found:
    """The records a search selects and what finding them cost."""
    records: Records
    index_objects: int
    index_bytes: int
    checked: int  # records whose documents were read to check them


@dataclass
class _Hits:
    """A term's records: matched in a field of the record's own, and per relation field."""
    own: Records
    related: list[tuple[str, Postings]]

    def records(self) -> Records:
        return functools.reduce(operator.or_, (postings.records for _, postings in self.related), self.own)


@dataclass
class _Term:
    """A request's term, and the keys whose sets give its records: per field whose alphabet
    holds its characters, the lookups (key, whether a prefix) all of which hold where the
    term matches; `exact`: the term
    holds no white space, so the keys give exactly its records."""
    text: str
    exact: bool
    clauses: list[tuple[int, list[tuple[bytes, bool]]]]
    pieces: dict[tuple[int, int], list[Piece]] = dataclass_field(default_factory=dict)  # (field, lookup)

    @classmethod
    def of(cls, text: str, fields: list[SearchField], alphabets: list[str]) -> "_Term":
        """A term's lookups in each field but those whose alphabet lacks one of its characters
        (no value there holds the term: its keys are not read)."""
        words = text.split()
        spaced = bool(text) and words != [text]
        clauses = []
        for number, field in enumerate(fields):
            if not set(alphabets[number]).issuperset(text):
                continue
            if field.lookup == "exact" or not spaced:
                looked = [_lookup(text, field)]
            elif field.lookup == "startswith":
                looked = [(ANY, False) if text[0].isspace() else (HEAD + words[0], False)]  # (its first token)
            else:
                looked = _phrase_lookups(text, field) or [(ANY, False)]
            clauses.append((number, [(key.encode(), prefix) for key, prefix in dict.fromkeys(looked)]))
        return cls(text, not spaced or _phrase_exact(text) and all(f.lookup != "startswith" for f in fields), clauses)

    def estimate(self) -> int:
        """At most how many records the keys give (a union's: the sum of its sets')."""
        return sum(min(sum(p.records for p in self.pieces[number, at]) for at in range(len(looked)))
                   for number, looked in self.clauses)

    def unread(self, reads: Reads) -> set[str]:
        """The postings files its sets lie in that the request has not read."""
        paths = (postings_file(piece.name) for pieces in self.pieces.values() for piece in pieces if piece.data is None)
        return {path for path in paths if path not in reads.held}

    def prior(self) -> tuple:
        """Before its leaf is read, how likely the term has few records: a word before a
        phrase, a longer before a shorter (a long word is a rare one)."""
        return not self.exact, -len(self.text)


def _phrase_lookups(text: str, field: SearchField) -> list[tuple[str, bool]]:
    """A phrase's lookups in a `contains` field: for each two neighbouring words, the `P` key
    of the pair with the white space between them (and every key starting with it where the
    second word ends the phrase: it may start a longer token); white space first, the keys
    starting with its last character, the first word and the white space after it; white
    space last, those starting with the last word and it; where none, its words' own lookups."""
    parts = WHITE.split(text)  # (words at even places, "" before or after white space at an end)
    looked = [(PAIR + "".join(parts[at:at + 3]), at + 3 == len(parts)) for at in range(0, len(parts) - 2, 2)
              if parts[at] and parts[at + 2]]
    if len(parts) >= 3 and not parts[0] and parts[2]:  # (white space first: a run ending as it does, a token)
        looked.append((PAIR + parts[1][-1] + "".join(parts[2:4]), True))
    if len(parts) >= 3 and not parts[-1] and parts[-3]:  # (white space last: a token, a run starting with it)
        looked.append((PAIR + parts[-3] + parts[-2], True))
    return looked or [_lookup(word, field) for word in text.split()]


def _phrase_exact(text: str) -> bool:
    """Whether a phrase's `P` keys give exactly its records: two words, or a word with white
    space after it, or one white space character and a word (and white space after it)."""
    parts = WHITE.split(text)
    if len(parts) == 5:
        return not parts[0] and bool(parts[2]) and not parts[4] and len(parts[1]) == 1
    return len(parts) == 3 and bool(parts[0] or parts[2]) and bool(parts[0] or len(parts[1]) == 1)


def _lookup(term: str, field: SearchField) -> tuple[str, bool]:
    """The key (and whether every key starting with it) of a term without white space."""
    if field.lookup == "exact":
        return EXACT + term, False
    if not term:
        return ANY, False  # ('' is in every value, but a null is no value: NULL LIKE '%%')
    if len(term) <= GRAM_MAX:
        return GRAM + term, False
    return (SUFFIX if field.lookup == "contains" else HEAD) + term, True


def search(read: Reader, terms: list[str], documents: Callable[[list[int]], dict[int, dict]],
           page_size: int = PAGE_SIZE, check_at: int | None = None) -> Found:
    """The records where every (folded) term matches some field, as DRF's SearchFilter
    selects them: a term matched in a related record counts, and where several terms are
    matched only in related records, one related record of each relation serves them all
    (DRF's single filter() joins them once).

    The plan (the module's docstring says it whole): the root; the branches and leaves of
    LEAF_BATCH terms at a time; the terms from the fewest records up, each from its sets (reading
    its postings files) or checked on the candidates' documents: `documents(positions)`
    gives each one's folded values by column (document_values), reading the pages of
    `page_size` records holding them (the caller counts those reads). A term is checked
    on documents where the candidates are `check_at` or fewer (default: a page's worth,
    whose pages the answer reads anyway), or lie on no more pages than the term has
    postings files to read: the fewer reads. A phrase the keys do not give exactly (other
    than two words) is checked on documents, its keys' sets narrowing the candidates first."""
    if not terms:
        raise ValueError("a search of no terms (DRF's SearchFilter leaves the collection as it is)")
    check_at = page_size if check_at is None else check_at
    reads = Reads(read)
    root = Root.decode(reads.get(ROOT))
    fields = root.fields
    pending = sorted((_Term.of(term, fields, root.alphabets) for term in dict.fromkeys(terms)), key=_Term.prior)
    texts = [term.text for term in pending]
    candidates: Records | None = None
    hits: list[_Hits] = []
    checked_terms = False
    while pending and (candidates is None or len(candidates) > check_at):
        batch, pending = pending[:LEAF_BATCH], pending[LEAF_BATCH:]
        _find_pieces(batch, root, reads)
        for term in sorted(batch, key=_Term.estimate):
            if candidates is not None and _check_instead(term.unread(reads), candidates, page_size, check_at):
                checked_terms = True
                continue
            found = _term_hits(term, fields, reads, root.count)
            if term.exact:
                hits.append(found)
            else:
                checked_terms = True
            records = found.records()
            candidates = records if candidates is None else candidates & records
    assert candidates is not None
    if pending:  # (the candidates are few: the terms left are checked on their documents)
        checked_terms = True
    if checked_terms and candidates:
        positions = list(candidates)
        values = documents(positions)
        kept = Records.of([p for p in positions if record_matches(values[p], fields, texts)], root.count)
        checked = len(positions)
    elif len(hits) < 2:  # (one term needs no join)
        kept, checked = candidates, 0
    else:
        kept, checked = Records.of([p for p in candidates if _joined_in_index(p, hits)], root.count), 0
    return Found(kept, reads.objects, reads.bytes, checked)


def _check_instead(unread: set[str], candidates: Records, page_size: int, check_at: int) -> bool:
    """Whether a term is better checked on the candidates' documents than read from its
    sets (files not yet read: `unread`): the fewer files."""
    if not unread:
        return False
    return len(candidates) <= check_at or len(numpy.unique(candidates.positions() // page_size)) <= len(unread)


def _find_pieces(terms: list[_Term], root: Root, reads: Reads) -> None:
    """The pieces of the terms' keys, from their leaves (read together, in key order, after
    their branches)."""
    lookups = root.leaves({lookup for term in terms for _, looked in term.clauses for lookup in looked}, reads)
    needed = sorted({leaf for leaves in lookups.values() for leaf in leaves})
    leaves = {name: Leaf(reads.get(leaf_file(name))) for _, name in needed}
    for term in terms:
        for number, looked in term.clauses:
            for at, (key, prefix) in enumerate(looked):
                term.pieces[number, at] = [piece for _, name in lookups[key, prefix]
                                           for pieces in leaves[name].find(key, prefix)
                                           for piece in pieces if piece.field == number]


def _term_hits(term: _Term, fields: list[SearchField], reads: Reads, count: int) -> _Hits:
    """A term's records from its keys' sets (of a phrase: those holding its words)."""
    own = Records.none(count)
    related: list[tuple[str, Postings]] = []
    for number, looked in term.clauses:
        field = fields[number]
        relation = field.relation is not None
        matched: Postings | None = None
        for at in range(len(looked)):
            postings = Postings.none(count)
            for piece in term.pieces[number, at]:
                if piece.data is None:
                    data = reads.get(postings_file(piece.name))
                    start = _set_start(data, piece.start)
                else:
                    data, start = piece.data, piece.start
                postings.add(data, start, relation)
            if matched is None:
                matched = postings
            else:  # (a phrase's words: candidates hold them all; documents say which element)
                matched.records = matched.records & postings.records
        assert matched is not None
        if relation:
            related.append((field.relation, matched))
        else:
            own = own | matched.records
    return _Hits(own, related)


def _set_start(data: bytes, ordinal: int) -> int:
    """Where the set at `ordinal` of a postings file starts."""
    count, at = get_varint(data, len(POSTINGS_MAGIC))
    lengths = []
    for _ in range(count):
        length, at = get_varint(data, at)
        lengths.append(length)
    return at + sum(lengths[:ordinal])


def _joined_in_index(record: int, hits: list[_Hits]) -> bool:
    left = [{(relation, element) for relation, postings in found.related if record in postings.records
             for element in postings.elements_of(record)} for found in hits if record not in found.own]
    return joined(left)


def joined(tags: list[set[tuple[str, int]]]) -> bool:
    """Whether one choice of a related record per relation serves every term (each term's
    (relation, element) matches), as DRF's one join does."""
    options: dict[str, set[int]] = {}
    for term in tags:
        for relation, element in term:
            options.setdefault(relation, set()).add(element)
    names = sorted(options)
    for choice in itertools.product(*(sorted(options[name]) for name in names)):
        chosen = set(zip(names, choice))
        if all(term & chosen for term in tags):
            return True
    return False


_MATCH = {"contains": lambda value, term: term in value,
          "startswith": lambda value, term: value.startswith(term),
          "exact": lambda value, term: value == term}


def record_matches(values: dict[str, list[str | None]], fields: list[SearchField], terms: list[str]) -> bool:
    """Whether a record (its folded values by column) is one the terms select: DRF's rule
    on one record, the reference every answer of the index equals."""
    left = []
    for term in terms:
        tags: set[tuple[str, int]] = set()
        own = False
        for field in fields:
            match = _MATCH[field.lookup]
            found = [element for element, value in enumerate(values[field.column])
                     if value is not None and match(value, term)]
            if found and field.relation is None:
                own = True
                break
            tags.update((field.relation, element) for element in found)
        if own:
            continue
        if not tags:
            return False
        left.append(tags)
    return joined(left)


# ---- an edit: the previous build's index, some records' keys moved ---------------------------


Read = Callable[[str], "bytes | None"]  # a file of the previous index (a path relative to its directory)
Values = dict[str, list["str | None"]]  # a record's folded values by column (search_index.document_values)
Tag = tuple[bytes, int]  # a key and a field's number


class _Stored(NamedTuple):
    """A key's set in one field as its leaf holds it: inline (`data`), or at `ordinal` in
    the postings file `name` (data None)."""
    field: int
    size_class: int
    data: bytes | None
    name: int = 0
    ordinal: int = 0


def edit(read: Read, specs: list[str], count: int, changes: list[tuple[int, Values, Values]],
         every_alphabet: Callable[[], list[str]]) -> dict[str, bytes | None] | None:
    """The files of the index that change (paths relative to its directory; None: the file
    goes) where the records `changes` names (position, values before, values now) changed,
    records added after the previous index's among them (their values before, none: a set's
    bytes do not depend on the count); every other file stays as it is. `every_alphabet()`
    gives the fields' alphabets of every record's values now (what a fresh build writes),
    asked only where a changed value lost a character (else the root's alphabets hold). None
    where the previous index cannot be edited into this one (none there, another format,
    more records or other fields, no key, a file of it missing or broken): it is made again."""
    data = read(ROOT)
    try:
        root = None if data is None else Root.decode(data)
    except ValueError:
        return None
    fields = index_fields(specs)
    if root is None or root.count > count or [f.spec for f in root.fields] != [f.spec for f in fields]:
        return None
    root = replace(root, count=count)  # (records added: the count the root says now)
    alphabets = _alphabets_after(root, fields, changes) or every_alphabet()
    moved = _moved(specs, changes)
    if not moved:  # (the keys as they were; a `^` field's alphabet holds more than its keys)
        same = _root_data(count, root.fields, alphabets, root.levels, data[root.keys:])
        return {} if same == data else {ROOT: same}
    try:
        leaves, branches = _all_leaves(read, root)
        if not leaves:
            return None  # (an index with no key: nothing to edit, and nothing to make again)
        firsts = [first for first, _ in leaves]
        by_leaf: dict[int, dict[Tag, tuple[set[int], set[int]]]] = {}
        for tag, change in moved.items():
            by_leaf.setdefault(max(bisect.bisect_right(firsts, tag[0]) - 1, 0), {})[tag] = change
        editor = _Editor(read, fields, count)
        cut = _cut_again(leaves, by_leaf, editor)
        return {**editor.postings(), **_leaves_and_root(read, root, alphabets, (leaves, branches), cut)}
    except ValueError:  # (a branch, leaf or postings file missing or broken: made again, whole)
        return None


def _alphabets_after(root: Root, fields: list[SearchField], changes: list[tuple[int, Values, Values]]) \
        -> list[str] | None:
    """The fields' alphabets once `changes` are made, where every character the changed values
    held is held by them still (a word added, a field other than the search's edited): the
    root's, with the characters of the new values. None where one may be gone (no other
    record may hold it: every record's values tell)."""
    found = []
    for field, alphabet in zip(fields, root.alphabets):
        then, now = set(), set()
        for _, before, after in changes:
            then.update(*(value for value in before[field.column] if value is not None))
            now.update(*(value for value in after[field.column] if value is not None))
        if not then <= now:
            return None
        found.append("".join(sorted(set(alphabet) | now)))
    return found


def _all_leaves(read: Read, root: Root) -> tuple[list[tuple[bytes, int]], dict[int, bytes]]:
    """Every leaf (first key, name) in key order, and the branches listing them (by name)."""
    listed = list(_key_list(root.data, root.keys, get_varint))
    if not root.levels:
        return listed, {}
    branches = {name: _checked(read(branch_file(name)) or b"", BRANCH_MAGIC, "branch") for _, name in listed}
    return [leaf for data in branches.values() for leaf in _key_list(data, len(BRANCH_MAGIC), get_varint)], branches


def _moved(specs: list[str], changes: list[tuple[int, Values, Values]]) -> dict[Tag, tuple[set[int], set[int]]]:
    """Per key and field, the codes (search_index's: positions, or record << ELEMENT_BITS |
    element) it loses and gains. (A record's codes are its own: the differences of all the
    records' keys together are those of each record's, united.)"""
    old = _keys(specs, [(position, before) for position, before, _ in changes])
    new = _keys(specs, [(position, now) for position, _, now in changes])
    moved: dict[Tag, tuple[set[int], set[int]]] = {}
    for tag in old.keys() | new.keys():
        lost, gained = old.get(tag, set()), new.get(tag, set())
        if lost != gained:
            moved[tag] = (lost - gained, gained - lost)
    return moved


def _keys(specs: list[str], records: list[tuple[int, Values]]) -> dict[Tag, set[int]]:
    """Some records' (position, values) keys and codes in each field: what a fresh build's
    writer makes of them, made at once (a writer of them one after another, its codes taken
    back to their positions)."""
    writer = TermIndexWriter(specs, 0)
    writer.add(0, {column: [values[column] for _, values in records] for column in writer.columns})
    positions = [position for position, _ in records]
    table = _KeyTable.of(writer.fields, writer.columns)
    keys: dict[Tag, set[int]] = {}
    for at, number in enumerate(table.numbers.tolist()):
        keys[(table.key(at), number)] = {
            positions[code >> ELEMENT_BITS] << ELEMENT_BITS | code & ELEMENT_MASK if writer.relations[number]
            else positions[code] for code in table.codes_of(at)}
    return keys


def _key_list(data: bytes, at: int, value: Callable[[bytes, int], tuple], block: int = 0) \
        -> Iterator[tuple[bytes, Any]]:
    """Every key of a key list with what is said of it (`value` reads that: it, and where
    it ends), from the restart `block` on."""
    restarts, at = get_varint(data, at)
    at += 4 * restarts + (int.from_bytes(data[at + 4 * block:at + 4 * block + 4], "little") if block else 0)
    key = b""
    while at < len(data):
        key, at = _get_key(data, at, key)
        said, at = value(data, at)
        yield key, said


def moved_codes(codes: numpy.ndarray, lost: set[int], gained: set[int]) -> numpy.ndarray:
    """A set's codes (sorted, each once) without those `lost`, with those `gained`, sorted:
    found by bisection, so that an edit's record or two cost a copy of the set, not the hash
    of each code (numpy's union1d and setdiff1d: 27 ms a set of the commonest keys of a
    million books, 2.3 s of a one-title edit)."""
    if lost:
        _, at, held = _bisected(codes, lost)
        codes = numpy.delete(codes, at[held])
    if gained:
        given, at, held = _bisected(codes, gained)
        codes = numpy.insert(codes, at[~held], given[~held])
    return codes


def _bisected(codes: numpy.ndarray, sought: set[int]) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The codes sought, sorted; where each stands or would stand among `codes`; whether it is there."""
    values = numpy.fromiter(sorted(sought), numpy.int64, len(sought))
    at = numpy.searchsorted(codes, values)
    held = at < len(codes)
    held[held] = codes[at[held]] == values[held]
    return values, at, held


class _Editor:
    """The sets of the leaves being cut again, moved; the postings files they change."""

    def __init__(self, read: Read, fields: list[SearchField], count: int) -> None:
        self.read, self.fields, self.count = read, fields, count
        self.files: dict[int, list[bytes]] = {}  # postings files read (and changed): their sets
        self.changed: set[int] = set()

    def leaf(self, data: bytes, moved: dict[Tag, tuple[set[int], set[int]]], block: int = 0) \
            -> list[tuple[bytes, Entry]]:
        """A leaf's entries (key, what is said of it) from its restart `block` on, in key
        order, with `moved` applied: an entry no key of `moved` names as its bytes were (a leaf
        cut again holds a thousand entries, a record's change a few), the others as their pieces."""
        entries: dict[bytes, Entry] = dict(_key_list(data, len(LEAF_MAGIC), _entry_bytes, block))
        for (key, number), (lost, gained) in moved.items():
            pieces = {piece.field: piece for piece in _pieces_of(entries.get(key, []))}
            piece = self.moved(key, number, pieces.get(number), lost, gained)
            if piece is None:
                pieces.pop(number, None)
            else:
                pieces[number] = piece
            entries[key] = [pieces[number] for number in sorted(pieces)]
        return [(key, entries[key]) for key in sorted(entries) if entries[key]]

    def moved(self, key: bytes, number: int, piece: _Stored | None, lost: set[int], gained: set[int]) -> _Stored | None:
        """A key's piece in a field once it lost and gained those codes (None: no set left)."""
        relation = self.fields[number].relation is not None
        codes = self.codes(piece, relation) if piece is not None else numpy.zeros(0, numpy.int64)
        codes = moved_codes(codes, lost, gained)
        if piece is not None and piece.data is None:
            self.put(piece.name, piece.ordinal, b"")  # (the set leaves its place, or takes it again below)
        if not len(codes):
            return None
        data, records = encode_postings(codes, relation)
        if len(data) <= INLINE_MAX:
            return _Stored(number, records.bit_length(), data)
        if piece is not None and piece.data is None:
            self.put(piece.name, piece.ordinal, data)
            return piece._replace(size_class=records.bit_length())
        return _Stored(number, records.bit_length(), None, self.alone(_set_tag(key, number), data), 0)

    def codes(self, piece: _Stored, relation: bool) -> numpy.ndarray:
        """A piece's set as codes, in order."""
        data = piece.data if piece.data is not None else self.file(piece.name)[piece.ordinal]
        if not relation:
            held = Records.none(self.count)
            add_set(held, data, 0)
            return held.positions().astype(numpy.int64)
        elements, at = get_varint(data, 0)
        found = []
        for element in range(elements):
            held = Records.none(self.count)
            at = add_set(held, data, at)
            found.append(held.positions().astype(numpy.int64) << ELEMENT_BITS | element)
        return numpy.sort(numpy.concatenate(found), kind="stable") if found else numpy.zeros(0, numpy.int64)

    def file(self, name: int) -> list[bytes]:
        if name not in self.files:
            data = self.read(postings_file(name))
            if data is None or data[:4] != POSTINGS_MAGIC:
                raise ValueError(f"the term index's {postings_file(name)} is missing or not a postings file")
            self.files[name] = _sets(data)
        return self.files[name]

    def put(self, name: int, ordinal: int, data: bytes) -> None:
        self.file(name)[ordinal] = data
        self.changed.add(name)

    def alone(self, tag: bytes, data: bytes) -> int:
        """A new postings file holding one set: its name (the CRC-32 of the set's tag, plus 1
        until no file has it)."""
        name = zlib.crc32(tag)
        while name in self.files or self.read(postings_file(name)) is not None:
            name = (name + 1) & 0xFFFFFFFF
        self.files[name] = [data]
        self.changed.add(name)
        return name

    def postings(self) -> dict[str, bytes | None]:
        """The postings files changed: their bytes (None: every place in it is empty)."""
        out: dict[str, bytes | None] = {}
        for name in self.changed:
            sets = self.files[name]
            if not any(sets):
                out[postings_file(name)] = None
                continue
            head = bytearray(POSTINGS_MAGIC)
            put_varint(head, len(sets))
            for data in sets:
                put_varint(head, len(data))
            out[postings_file(name)] = bytes(head + b"".join(sets))
        return out


def _sets(data: bytes) -> list[bytes]:
    """A postings file's sets."""
    size, at = get_varint(data, len(POSTINGS_MAGIC))
    lengths = []
    for _ in range(size):
        length, at = get_varint(data, at)
        lengths.append(length)
    sets = []
    for length in lengths:
        sets.append(data[at:at + length])
        at += length
    return sets


def _stored_pieces(data: bytes, at: int) -> tuple[list[_Stored], int]:
    """An entry's pieces as its leaf holds them, and where the next entry starts."""
    fields, at = get_varint(data, at)
    pieces = []
    for _ in range(fields):
        number, at = get_varint(data, at)
        size_class, at = get_varint(data, at)
        where, at = get_varint(data, at)
        if where == INLINE:
            size, at = get_varint(data, at)
            pieces.append(_Stored(number, size_class, data[at:at + size]))
            at += size
        else:
            name, at = get_varint(data, at)
            ordinal, at = get_varint(data, at)
            pieces.append(_Stored(number, size_class, None, name, ordinal))
    return pieces, at


Entry = bytes | list[_Stored]  # (an entry of a leaf being edited: its bytes as they were, or its pieces)


def _entry_bytes(data: bytes, at: int) -> tuple[bytes, int]:
    """An entry's bytes as its leaf holds them, and where the next entry starts."""
    start = at
    fields, at = get_varint(data, at)
    for _ in range(fields):
        for _ in range(3):  # (its field, size class and where)
            where, at = get_varint(data, at)
        if where == INLINE:
            size, at = get_varint(data, at)
            at += size
        else:  # (its postings file's name and its ordinal there)
            at = get_varint(data, get_varint(data, at)[1])[1]
    return data[start:at], at


def _pieces_of(entry: Entry) -> list[_Stored]:
    return _stored_pieces(entry, 0)[0] if entry.__class__ is bytes else entry


def _entry(out: bytearray, entry: Entry) -> None:
    if entry.__class__ is bytes:
        out += entry
        return
    pieces = entry
    put_varint(out, len(pieces))
    for piece in pieces:
        put_varint(out, piece.field)
        put_varint(out, piece.size_class)
        if piece.data is not None:
            put_varint(out, INLINE)
            put_varint(out, len(piece.data))
            out += piece.data
        else:
            put_varint(out, FILE)
            put_varint(out, piece.name)
            put_varint(out, piece.ordinal)


def _cut_again(leaves: list[tuple[bytes, int]], by_leaf: dict[int, dict], editor: _Editor) \
        -> dict[int, list[tuple[bytes, bytes]]]:
    """The leaves holding moved keys, cut again as a fresh build cuts them (after a key whose
    CRC-32 has its low LEAF_BITS bits zero, or at the last key): by the index of the first
    old leaf of each run of leaves cut again, the new leaves (first key, bytes) that take
    its place; a run takes in the leaf after it while its last key no longer ends a leaf."""
    cut: dict[int, list[tuple[bytes, bytes]]] = {}
    at = 0
    while at < len(leaves):
        if at not in by_leaf:
            at += 1
            continue
        data = _leaf_data(editor.read, leaves[at][1])
        head = _KeyList.kept(data, min(key for key, _ in by_leaf[at]))
        entries = editor.leaf(data, by_leaf[at], head.blocks)
        stop = at + 1
        while stop < len(leaves) and (stop in by_leaf or not entries or not _ends_leaf(entries[-1][0])):
            entries += editor.leaf(_leaf_data(editor.read, leaves[stop][1]), by_leaf.get(stop, {}))
            stop += 1
        cut[at] = [*_cut(entries, head)]
        for skipped in range(at + 1, stop):
            cut[skipped] = []
        at = stop
    return cut


def _leaves_and_root(read: Read, root: Root, alphabets: list[str], before: tuple[list[tuple[bytes, int]], dict[int, bytes]],
                     cut: dict[int, list[tuple[bytes, bytes]]]) -> dict[str, bytes | None]:
    """The leaves that change (cut again, or named again: a leaf's name is the CRC-32 of its
    first key plus 1 until no leaf before it has it), the branches whose lists change (of the
    leaves and branches `before`, _all_leaves') and the root."""
    leaves, branches = before
    listed: list[tuple[bytes, int | None, bytes | None]] = []  # (first key, its name before, its bytes if cut again)
    for at, (first, name) in enumerate(leaves):
        listed.extend([(key, None, data) for key, data in cut[at]] if at in cut else [(first, name, None)])
    out: dict[str, bytes | None] = {}
    taken: set[int] = set()
    named = []
    for first, was, data in listed:
        name = _name(taken, first)
        if data is None and name != was:
            data = _leaf_data(read, was)
        if data is not None:
            out[leaf_file(name)] = data
        named.append((first, name))
    out.update({leaf_file(name): None for _, name in leaves if name not in taken})
    levels, listing, now = _upper(named)
    out.update({branch_file(name): data for name, data in now.items() if branches.get(name) != data})
    out.update({branch_file(name): None for name in branches if name not in now})
    out[ROOT] = _root_data(root.count, root.fields, alphabets, levels, listing)
    return out


def _leaf_data(read: Read, name: int) -> bytes:
    return _checked(read(leaf_file(name)) or b"", LEAF_MAGIC, "leaf")


def _ends_leaf(key: bytes) -> bool:
    return zlib.crc32(key) & LEAF_MASK == 0


def _cut(entries: list[tuple[bytes, Entry]], out: "_KeyList") -> Iterator[tuple[bytes, bytes]]:
    """The leaves of `entries` (first key, bytes), the first put after `out`'s keys."""
    first = out.first
    for key, entry in entries:
        first = key if first is None else first
        _entry(out.put(key), entry)
        if _ends_leaf(key):
            yield first, LEAF_MAGIC + out.encoded()
            out, first = _KeyList(), None
    if out.keys:  # (the last key ends the last leaf)
        yield first, LEAF_MAGIC + out.encoded()


# ---- the search backend's side: the build's runs, a request's search -------------------------


def index_dir(name: str) -> str:
    """Where a collection's term index lies."""
    return f"{query_dir(name)}/search"


def readers(fields: Iterable[SearchField]) -> dict[str, SearchField]:
    """A field of each column, whose column_values read it (the lookups of a column share its values)."""
    return {field.column: field for field in fields}


class Indexer:
    """A run of records' folded values, read a page at a time in order from the record at
    `first` (in a process of the run's own); `close()` gives them (picklable) to `finish`,
    which cuts them into keys by columns."""

    def __init__(self, name: str, query: dict, first: int) -> None:
        self.fold = folding(query.get(NORMALISE))
        self.writer = TermIndexWriter(query[SEARCH][name], 0, first=first)

    def add(self, documents: list[dict]) -> None:
        self.writer.add_documents(self.writer.added, documents, self.fold)

    def close(self) -> tuple[int, int, dict[str, _Column]]:
        return self.writer.first, self.writer.added, self.writer.columns


def finish(name: str, query: dict, flush: Flush, parts: list[tuple[int, int, dict[str, _Column]]],
           processes: int = 1) -> None:
    """The collection's term index, from its runs' keys in order (`parts`, emptied as they are
    taken in: the runs' own dictionaries go before the processes that write are forked),
    made by `processes` processes."""
    writer = TermIndexWriter(query[SEARCH][name], parts[-1][1], INLINE_MAX)
    while parts:
        first, stop, columns = parts.pop(0)
        writer.merge(first, stop, columns)
    folder = index_dir(name)
    writer.finish(lambda path, data: flush(f"{folder}/{path}", data), processes)


def searched(request: Request, terms: list[str], within: Records | None) -> Records:
    """The records of `within` (None: all) a request's search terms select (DRF's
    SearchFilter, `search`): the index read through the request's `read`, the terms checked
    on documents read through its `documents` (the pages the answer reads). Within a page's
    worth of records (a filter's), every term is checked on their documents, no index read."""
    normalise = request.query.get(NORMALISE)
    fields = index_fields(request.settings(SEARCH))
    by_column = readers(fields)
    folder = index_dir(request.name)

    folded = folding(normalise)

    def values(positions: list[int]) -> dict[int, dict[str, list[str | None]]]:
        if request.documents is None:
            raise Missing(f"the documents of {request.name} (a search checks its candidates on them)")
        found = request.documents(positions)
        return {p: document_values(found[p], by_column, folded) for p in positions}

    texts = [folded(t) for t in dict.fromkeys(terms)]
    if within is not None and len(within) <= PAGE_SIZE:
        positions = list(within)
        found = values(positions)
        return Records.of([p for p in positions if record_matches(found[p], fields, texts)], request.count)
    return search(lambda path: request.read(f"{folder}/{path}"), texts, values).records


def constants() -> dict:
    """What the JavaScript twin is rendered with."""
    return {"dir": index_dir("{name}"), "root": ROOT, "branch": f"{BRANCH_DIR}/", "leaf": f"{LEAF_DIR}/",
            "postings": f"{POSTINGS_DIR}/",
            "magic": {"root": ROOT_MAGIC.decode(), "branch": BRANCH_MAGIC.decode(), "leaf": LEAF_MAGIC.decode(),
                      "postings": POSTINGS_MAGIC.decode()},
            "version": VERSION,
            "kinds": {"any": ANY, "exact": EXACT, "gram": GRAM, "head": HEAD, "pair": PAIR, "suffix": SUFFIX},
            "gramMax": GRAM_MAX, "leafBatch": LEAF_BATCH, "pageSize": PAGE_SIZE, "bitmap": BITMAP, "inline": INLINE}
