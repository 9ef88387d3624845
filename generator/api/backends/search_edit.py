"""A term index edited (search_index.py's format), not made again: where only some records'
values changed since the previous build, the keys they left and gained are moved in the
previous build's index, and only the files holding those keys are written. Made again, a
million books' index takes minutes (every key merged, encoded and laid out); edited, a
one-title change reads and writes a few dozen files.

What comes out: the same keys holding the same sets as a fresh build's; the same leaves
(their bounds are content-defined, so the leaves around a changed key are cut again as a
fresh build cuts them) with the same names, and the same root. The postings files are
laid out by history instead: a changed set stays at its place in its file (the file
rewritten), a set that grew too long for its leaf gets a file of its own, a set that
left a file leaves an empty place there (a file of empty places goes). A full build lays
them out afresh. A reader cannot tell: it follows the leaves' references.
"""
from __future__ import annotations

import bisect
import zlib
from typing import Callable, Iterator, NamedTuple

import numpy

from .common import Records
from .search_index import (ELEMENT_BITS, FILE, INLINE, INLINE_MAX, LEAF_BITS, LEAF_MAGIC, POSTINGS_MAGIC, ROOT,
                           Root, SearchField, TermIndexWriter, _get_key, _KeyList, _name, _one_set, _varint, add_set,
                           encode_postings, get_varint, index_fields, leaf_file, postings_file, put_varint)

Read = Callable[[str], "bytes | None"]  # a file of the previous index (a path relative to its directory)
Values = dict[str, list["str | None"]]  # a record's folded values by column (search_index.document_values)
Tag = tuple[bytes, int]  # a key and a field's number
_BOUND = (1 << LEAF_BITS) - 1


class Piece(NamedTuple):
    """A key's set in one field as its leaf holds it: inline (`data`), or at `ordinal` in
    the postings file `name` (data None)."""
    field: int
    size_class: int
    data: bytes | None
    name: int = 0
    ordinal: int = 0


def edit(read: Read, specs: list[str], count: int,
         changes: list[tuple[int, Values, Values]]) -> dict[str, bytes | None] | None:
    """The files of the index that change (paths relative to its directory; None: the file
    goes) where the records `changes` names (position, values before, values now) changed;
    every other file stays as it is. None where the previous index cannot be edited into
    this one (none there, another format, count or fields, no key): it is made again."""
    data = read(ROOT)
    try:
        root = None if data is None else Root.decode(data)
    except ValueError:
        return None
    fields = index_fields(specs)
    if root is None or root.count != count or [f.spec for f in root.fields] != [f.spec for f in fields]:
        return None
    moved = _moved(specs, changes)
    if not moved:
        return {}
    leaves = [(first, get_varint(root.data, at)[0]) for first, at, _ in _key_list(root.data, root.keys, _after_varint)]
    if not leaves:
        return None  # (an index with no key: nothing to edit, and nothing to make again)
    firsts = [first for first, _ in leaves]
    by_leaf: dict[int, dict[Tag, tuple[set[int], set[int]]]] = {}
    for tag, change in moved.items():
        by_leaf.setdefault(max(bisect.bisect_right(firsts, tag[0]) - 1, 0), {})[tag] = change
    editor = _Editor(read, fields, count)
    cut = _cut_again(leaves, by_leaf, editor)
    return {**editor.postings(), **_leaves_and_root(read, root, leaves, cut)}


def _moved(specs: list[str], changes: list[tuple[int, Values, Values]]) -> dict[Tag, tuple[set[int], set[int]]]:
    """Per key and field, the codes (search_index's: positions, or record << ELEMENT_BITS |
    element) it loses and gains."""
    moved: dict[Tag, tuple[set[int], set[int]]] = {}
    for position, before, now in changes:
        old, new = _keys(specs, position, before), _keys(specs, position, now)
        for tag in old.keys() | new.keys():
            lost, gained = old.get(tag, set()), new.get(tag, set())
            if lost != gained:
                held = moved.setdefault(tag, (set(), set()))
                held[0].update(lost - gained)
                held[1].update(gained - lost)
    return moved


def _keys(specs: list[str], position: int, values: Values) -> dict[Tag, set[int]]:
    """One record's keys and codes in each field: what a fresh build's writer makes of it."""
    writer = TermIndexWriter(specs, 0, first=position)
    writer.add(position, {column: [held] for column, held in values.items()})
    keys: dict[Tag, set[int]] = {}
    for key, number, codes in writer.entries():
        held = keys.setdefault((key.encode(), number), set())
        for part in codes if codes.__class__ is list else [codes]:
            held.update([part] if part.__class__ is int else part)
    return keys


def _key_list(data: bytes, at: int, value: Callable[[bytes, int], int]) -> Iterator[tuple[bytes, int, int]]:
    """Every key of a key list, with where what is said of it starts and ends (`value`
    tells where that ends)."""
    restarts, at = get_varint(data, at)
    at += 4 * restarts
    key = b""
    while at < len(data):
        key, at = _get_key(data, at, key)
        end = value(data, at)
        yield key, at, end
        at = end


def _after_varint(data: bytes, at: int) -> int:
    return get_varint(data, at)[1]


class _Editor:
    """The sets of the leaves being cut again, moved; the postings files they change."""

    def __init__(self, read: Read, fields: list[SearchField], count: int) -> None:
        self.read, self.fields, self.count = read, fields, count
        self.files: dict[int, list[bytes]] = {}  # postings files read (and changed): their sets
        self.changed: set[int] = set()

    def leaf(self, data: bytes, moved: dict[Tag, tuple[set[int], set[int]]]) -> list[tuple[bytes, list[Piece]]]:
        """A leaf's entries (key, pieces), in key order, with `moved` applied."""
        entries = {key: _pieces(data, at) for key, at, _ in _key_list(data, len(LEAF_MAGIC), _after_pieces)}
        for (key, number), (lost, gained) in moved.items():
            pieces = {piece.field: piece for piece in entries.get(key, [])}
            piece = self.moved(key, number, pieces.get(number), lost, gained)
            if piece is None:
                pieces.pop(number, None)
            else:
                pieces[number] = piece
            entries[key] = [pieces[number] for number in sorted(pieces)]
        return [(key, entries[key]) for key in sorted(entries) if entries[key]]

    def moved(self, key: bytes, number: int, piece: Piece | None, lost: set[int], gained: set[int]) -> Piece | None:
        """A key's piece in a field once it lost and gained those codes (None: no set left)."""
        relation = self.fields[number].relation is not None
        codes = self.codes(piece, relation) if piece is not None else numpy.zeros(0, numpy.int64)
        codes = numpy.union1d(numpy.setdiff1d(codes, list(lost)), numpy.fromiter(gained, numpy.int64, len(gained)))
        if piece is not None and piece.data is None:
            self.put(piece.name, piece.ordinal, b"")  # (the set leaves its place, or takes it again below)
        if not len(codes):
            return None
        data, records = self.encoded(codes.tolist(), relation)
        if len(data) <= INLINE_MAX:
            return Piece(number, records.bit_length(), data)
        if piece is not None and piece.data is None:
            self.put(piece.name, piece.ordinal, data)
            return piece._replace(size_class=records.bit_length())
        return Piece(number, records.bit_length(), None, self.alone(key + b"\x00" + _varint(number), data), 0)

    def codes(self, piece: Piece, relation: bool) -> numpy.ndarray:
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
        return numpy.sort(numpy.concatenate(found)) if found else numpy.zeros(0, numpy.int64)

    def encoded(self, codes: list[int], relation: bool) -> tuple[bytes, int]:
        """A set's bytes as a fresh build encodes it (one code: _one_set, as its writer does)."""
        if len(codes) == 1:
            one = _one_set(codes[0], relation)
            if len(one) <= INLINE_MAX:
                return one, 1
        return encode_postings(codes, relation, self.count)

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


def _pieces(data: bytes, at: int) -> list[Piece]:
    """An entry's pieces (search_index's leaf format)."""
    fields, at = get_varint(data, at)
    pieces = []
    for _ in range(fields):
        number, at = get_varint(data, at)
        size_class, at = get_varint(data, at)
        where, at = get_varint(data, at)
        if where == INLINE:
            size, at = get_varint(data, at)
            pieces.append(Piece(number, size_class, data[at:at + size]))
            at += size
        else:
            name, at = get_varint(data, at)
            ordinal, at = get_varint(data, at)
            pieces.append(Piece(number, size_class, None, name, ordinal))
    return pieces


def _after_pieces(data: bytes, at: int) -> int:
    fields, at = get_varint(data, at)
    for _ in range(fields):
        at = get_varint(data, get_varint(data, at)[1])[1]  # (its field, its size class)
        where, at = get_varint(data, at)
        if where == INLINE:
            size, at = get_varint(data, at)
            at += size
        else:
            at = get_varint(data, get_varint(data, at)[1])[1]  # (its file's name, its place there)
    return at


def _entry(out: bytearray, pieces: list[Piece]) -> None:
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
        entries: list[tuple[bytes, list[Piece]]] = []
        stop = at
        while True:
            entries += editor.leaf(_leaf_data(editor.read, leaves[stop][1]), by_leaf.get(stop, {}))
            stop += 1
            if stop == len(leaves) or stop not in by_leaf and entries and _ends_leaf(entries[-1][0]):
                break
        cut[at] = [*_cut(entries)]
        for skipped in range(at + 1, stop):
            cut[skipped] = []
        at = stop
    return cut


def _leaves_and_root(read: Read, root: Root, leaves: list[tuple[bytes, int]],
                     cut: dict[int, list[tuple[bytes, bytes]]]) -> dict[str, bytes | None]:
    """The leaves that change (cut again, or named again: a leaf's name is the CRC-32 of its
    first key plus 1 until no leaf before it has it) and the root listing them."""
    listed: list[tuple[bytes, int | None, bytes | None]] = []  # (first key, its name before, its bytes if cut again)
    for at, (first, name) in enumerate(leaves):
        listed.extend([(key, None, data) for key, data in cut[at]] if at in cut else [(first, name, None)])
    out: dict[str, bytes | None] = {}
    taken: set[int] = set()
    keys = _KeyList()
    for first, before, data in listed:
        name = _name(taken, first)
        if data is None and name != before:
            data = _leaf_data(read, before)
        if data is not None:
            out[leaf_file(name)] = data
        put_varint(keys.put(first), name)
    out.update({leaf_file(name): None for _, name in leaves if name not in taken})
    out[ROOT] = root.data[:root.keys] + keys.encoded()
    return out


def _leaf_data(read: Read, name: int) -> bytes:
    data = read(leaf_file(name))
    if data is None or data[:4] != LEAF_MAGIC:
        raise ValueError(f"the term index's {leaf_file(name)} is missing or not a leaf")
    return data


def _ends_leaf(key: bytes) -> bool:
    return zlib.crc32(key) & _BOUND == 0


def _cut(entries: list[tuple[bytes, list[Piece]]]) -> Iterator[tuple[bytes, bytes]]:
    out, first = _KeyList(), None
    for at, (key, pieces) in enumerate(entries):
        first = key if first is None else first
        _entry(out.put(key), pieces)
        if _ends_leaf(key) or at == len(entries) - 1:
            yield first, LEAF_MAGIC + out.encoded()
            out, first = _KeyList(), None
