"""Search, ordering and filters at request time (docs/spec/query.md §3–5): which records of a
collection a request selects, in which order, from the query indexes the build wrote
(api/queryindex.py), as DRF's backends run in the reference service: django-filter's
first, then SearchFilter, then OrderingFilter.

`select()` gives None when a request asks for none of them (the collection as it is:
pages are slices of the pre-built ones), or the `Selection` whose records the page
shows, or raises filters.Rejected with DRF's 400 body. This is the Python hosts' one
implementation; hosts/templates/query.js.j2 is the JavaScript hosts': both read values
as tests/golden/filters.json says, and answer alike on random probes
(tests/hosts/test_query_js.py); this one answers as DRF does (tests/test_drf_query.py).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import orjson

from ..catalogue.querying import FILTERS, NORMALISE, ORDERING, SEARCH, SearchField, is_to_many, search_field
from ..catalogue.resources import BY_NAME
from . import queryindex as qi
from .filters import Ordering, Rejected, RelationFilter, Search, fold
from .pageindex import read_u32
from .querystring import last

Reader = Callable[[str], "bytes | None"]
SEARCH_PARAM, ORDERING_PARAM = Search(), Ordering()
SCALAR = ""  # a term's hit in a field of the record itself (else "relation element")


@dataclass(frozen=True)
class Selection:
    """The records a request selects, by position, in the order its page lists them."""
    positions: Sequence[int]

    @property
    def count(self) -> int:
        return len(self.positions)

    def take(self, start: int, stop: int) -> Sequence[int]:
        return self.positions[start:stop]


class Missing(FileNotFoundError):
    """A query index file the generation should hold and does not."""


def select(read: Reader, name: str, pairs: list[tuple[str, str]], query: dict, count: int) -> Selection | None:
    """What the request's filters, search and ordering select of the collection `name`
    of `count` records; None when it asks for none of them."""
    matched: set[int] | None = None
    relations = query.get(FILTERS, {}).get(name, [])
    if relations:
        matched = _filtered(read, name, pairs, relations)
    fields = query.get(SEARCH, {}).get(name, [])
    if fields:
        terms = SEARCH_PARAM.terms(last(pairs, SEARCH_PARAM.name))
        if terms:
            found = _searched(read, name, fields, terms, query.get(NORMALISE), count)
            matched = found if matched is None else matched & found
    orderable = query.get(ORDERING, {}).get(name, [])
    ordering = ORDERING_PARAM.fields(last(pairs, ORDERING_PARAM.name), orderable) if orderable else []
    if matched is None and not ordering:
        return None
    if matched is None:
        return Selection(_Whole(read, name, ordering, count))
    positions = sorted(matched)
    return Selection(_ordered(read, name, ordering, positions) if ordering else positions)


# ---- filters ----------------------------------------------------------------------------


def _filtered(read: Reader, name: str, pairs: list[tuple[str, str]], relations: list[str]) -> set[int] | None:
    """The records every filter given keeps (None: no filter given); all mistakes together,
    as django-filter's form reports them."""
    resource = BY_NAME[name]
    errors: dict[str, list[str]] = {}
    kept: set[int] | None = None
    for relation in relations:
        param = RelationFilter(relation, is_to_many(resource, relation))
        values = [value for key, value in pairs if key == relation]
        try:
            ids = param.ids(values)
            if not ids:
                continue
            found: set[int] = set()
            for id, value in zip(ids, values[-len(ids):]):
                referring = _referring(read, name, relation, id)
                # (a to-many filter compares the value as given with str() of the ids it
                # found: only the canonical spelling of an id is one of its choices)
                if referring is None or (param.many and value != id):
                    raise param.unknown(value)
                found.update(referring)
        except Rejected as rejected:
            errors.update(rejected.body)
            continue
        kept = found if kept is None else kept & found
    if errors:
        raise Rejected(errors)
    return kept


def _referring(read: Reader, name: str, relation: str, id: str) -> list[int] | None:
    """The records referring to the record `id` (None: no such record)."""
    data = read(qi.filter_file(name, relation, id[:qi.ID_PREFIX]))
    if data is None:
        return None
    return orjson.loads(data).get(id)


# ---- search -----------------------------------------------------------------------------


def _searched(read: Reader, name: str, specs: list[str], terms: list[str], normalise: str | None,
              count: int) -> set[int]:
    """The records where every term matches some search field; a term matched in a related
    record's value counts, and when several terms count on related records, one related
    record of each relation must serve them all, as DRF's single filter() joins them."""
    fields = [search_field(spec) for spec in specs]
    folded = [fold(term, normalise) for term in terms]
    scalar: list[set[int]] = []  # each term's records matched in a field of their own
    related: list[dict[int, set[int]]] = []  # each term's records matched in each relation field
    matched: set[int] | None = None
    for term in folded:
        own: set[int] = set()
        by_field: dict[int, set[int]] = {}
        for at, field in enumerate(fields):
            found = _field_hits(read, name, field, term, count)
            if field.relation is None:
                own |= found
            else:
                by_field[at] = found
        every = own.union(*by_field.values())
        matched = every if matched is None else matched & every
        scalar.append(own)
        related.append(by_field)
    assert matched is not None
    if len(terms) < 2 or all(field.relation is None for field in fields):
        return matched
    elements: dict[tuple[int, int, int], dict[int, set[int]]] = {}
    kept = set()
    for position in matched:
        left = [t for t in range(len(terms)) if position not in scalar[t]]
        if len(left) > 1:
            tags = [{f"{fields[at].relation} {element}" for at, found in related[t].items() if position in found
                     for element in _elements(read, name, fields[at], at, folded[t], t, position, elements)}
                    for t in left]
            if not _joined(tags):
                continue
        kept.add(position)
    return kept


def _field_hits(read: Reader, name: str, field: SearchField, term: str, count: int) -> set[int]:
    """The records whose values in a search field the (folded) term matches, from the
    column's token index; where a term holds white space, its candidates from the index,
    each confirmed in the text of its block. Where the keys a term matches lie in more
    postings files than the column has text blocks (a letter's keys), the text blocks
    are read instead: never more files than a scan."""
    column = field.column
    if field.lookup == "exact":
        return set(_postings(read, name, column, qi.WHOLE + term))
    if not term:  # ('' is in every value, but a null is no value: NULL LIKE '%%')
        return _with_value(read, name, column)
    words = term.split()
    if words == [term]:  # (no white space: a substring of a value iff of one of its tokens)
        if field.lookup == "contains":
            keys = key_matches(_need(read, qi.keys_file(name, column)), term, False, False)
        else:
            keys = [qi.HEAD + key for key in key_matches(_need(read, qi.keys_file(name, column, heads=True)),
                                                          term, True, False)]
        found = _keys_postings(read, name, column, [keys], count)
        return found[0] if found is not None else _scanned(read, name, field, term, qi.blocks(count))
    if field.lookup == "startswith":
        candidates = (_with_value(read, name, column) if term[0].isspace()
                      else set(_postings(read, name, column, qi.HEAD + words[0])))
    else:
        candidates = _phrase_candidates(read, name, column, term, words, count)
        if candidates is None:
            return _scanned(read, name, field, term, qi.blocks(count))
    return _confirmed(read, name, field, term, candidates)


def _phrase_candidates(read: Reader, name: str, column: str, term: str, words: list[str],
                       count: int) -> set[int] | None:
    """The records holding every word of a term with white space in it as it may lie in a
    value: a word with white space on both sides is a whole token; the first, unless the
    term starts with white space, ends one; the last, unless it ends with some, starts one.
    When some word is a whole token, those alone. None: the keys lie in more postings files
    than the column has text blocks."""
    if not words:
        return _with_value(read, name, column)
    lead, trail, last = term[0].isspace(), term[-1].isspace(), len(words) - 1
    bounded = [(word, at > 0 or lead, at < last or trail) for at, word in enumerate(words)]
    whole = [word for word, starts, ends in bounded if starts and ends]
    if whole:
        sets = [set(_postings(read, name, column, word)) for word in dict.fromkeys(whole)]
    else:
        blob = _need(read, qi.keys_file(name, column))
        found = _keys_postings(read, name, column,
                               [key_matches(blob, word, starts, ends) for word, starts, ends in bounded], count)
        if found is None:
            return None
        sets = found
    return sets[0].intersection(*sets[1:])


def _keys_postings(read: Reader, name: str, column: str, groups: list[list[str]], count: int) -> list[set[int]] | None:
    """Each group's records: those of any of its keys. None when the keys lie in more postings
    files than the column has text blocks (a scan reads fewer files)."""
    if len({qi.bucket_of(key) for keys in groups for key in keys}) > len(qi.blocks(count)):
        return None
    found = []
    for keys in groups:
        records: set[int] = set()
        for key in keys:
            records.update(_postings(read, name, column, key))
        found.append(records)
    return found


def _with_value(read: Reader, name: str, column: str) -> set[int]:
    """The records with a value in the column at all (what an empty term matches)."""
    return set(read_u32(_need(read, qi.any_file(name, column))))


def _confirmed(read: Reader, name: str, field: SearchField, term: str, candidates: set[int]) -> set[int]:
    """The candidates whose values the term matches, read in the text of their blocks."""
    return _scanned(read, name, field, term, sorted({position // qi.BLOCK for position in candidates})) & candidates


def _scanned(read: Reader, name: str, field: SearchField, term: str, blocks: Iterable[int]) -> set[int]:
    """The records of those blocks whose values the term matches, read in their text."""
    return {position for block in blocks for position, _ in _block_matches(read, name, field, term, block)}


def _block_matches(read: Reader, name: str, field: SearchField, term: str, block: int) -> list[tuple[int, int]]:
    """(record's position, related record's element) of each match of the term in a block's text."""
    first = block * qi.BLOCK
    blob = _need(read, qi.text_file(name, field.column, block))
    return [(first + position, element)
            for position, element in matches(blob, term.encode(), field.lookup, field.relation is not None)]


def _elements(read: Reader, name: str, field: SearchField, at: int, term: str, t: int, position: int,
              held: dict[tuple[int, int, int], dict[int, set[int]]]) -> set[int]:
    """Which of a record's related records (in a relation field) the term matches, read in
    the text of its block (each block once a field and term)."""
    block = position // qi.BLOCK
    key = (at, t, block)
    if key not in held:
        found: dict[int, set[int]] = {}
        for record, element in _block_matches(read, name, field, term, block):
            found.setdefault(record, set()).add(element)
        held[key] = found
    return held[key].get(position, set())


def _postings(read: Reader, name: str, column: str, key: str):
    return qi.postings(read(qi.postings_file(name, column, qi.bucket_of(key))), key)


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


def _joined(tags: list[set[str]]) -> bool:
    """Whether one choice of a related record per relation serves every term a field of the
    record itself does not."""
    left = [t for t in tags if SCALAR not in t]
    if len(left) <= 1:
        return True
    options: dict[str, set[str]] = {}
    for term in left:
        for tag in term:
            relation, _, element = tag.partition(" ")
            options.setdefault(relation, set()).add(element)
    names = sorted(options)
    for choice in itertools.product(*(sorted(options[n]) for n in names)):
        chosen = {f"{n} {e}" for n, e in zip(names, choice)}
        if all(term & chosen for term in left):
            return True
    return False


def matches(blob: bytes, term: bytes, lookup: str, many: bool):
    """(record, element) of each value in a search column's block that the term matches:
    contains, startswith or exact, each value once (queryindex's layout)."""
    record_sep, element_sep = qi.RECORD.encode(), qi.ELEMENT.encode()
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


# ---- ordering ---------------------------------------------------------------------------


class _Whole:
    """A whole collection in an ordering, a slice at a time: the first field's sorted files;
    where more fields follow, the runs of records that tie on the first field around the
    slice are read whole and sorted by all of them (a run is the same records in any order
    of the first field: its place does not change)."""

    def __init__(self, read: Reader, name: str, ordering: list[tuple[str, bool]], count: int) -> None:
        self.read, self.name, self.ordering, self.count = read, name, ordering, count
        self.field, self.descending = ordering[0]

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, part: slice) -> list[int]:
        start, stop, _ = part.indices(self.count)
        if start >= stop or len(self.ordering) == 1:
            return self._sorted(start, stop)
        low, high = self._run_start(start), self._run_start(stop - 1, after=True)
        return _ordered(self.read, self.name, self.ordering, self._sorted(low, high))[start - low:stop - low]

    def _sorted(self, start: int, stop: int) -> list[int]:
        found: list[int] = []
        for block in range(start // qi.BLOCK, -(-stop // qi.BLOCK)):
            values = read_u32(_need(self.read, qi.sorted_file(self.name, self.field, self.descending, block)))
            first = block * qi.BLOCK
            found.extend(values[max(start - first, 0):stop - first])
        return found

    def _rank(self, at: int) -> int:
        """The first field's rank of the record at `at` in its order."""
        position = self._sorted(at, at + 1)[0]
        return read_u32(_need(self.read, qi.rank_file(self.name, self.field, position // qi.BLOCK)))[
            position % qi.BLOCK]

    def _run_start(self, at: int, after: bool = False) -> int:
        """Where the run of ties holding `at` starts (with `after`: where the next starts),
        galloping from `at`, then halving."""
        rank, step, inside, step_sign = self._rank(at), 1, at, (1 if after else -1)
        limit = self.count - 1 if after else 0
        while True:  # (the farthest tie known, and the first index known not to tie)
            probe = at + step_sign * step
            if (probe > limit) if after else (probe < limit):
                outside = limit + step_sign
                break
            if self._rank(probe) != rank:
                outside = probe
                break
            inside, step = probe, step * 2
        while abs(outside - inside) > 1:
            middle = (inside + outside) // 2
            if self._rank(middle) == rank:
                inside = middle
            else:
                outside = middle
        return inside + 1 if after else inside


def _need(read: Reader, path: str) -> bytes:
    data = read(path)
    if data is None:
        raise Missing(path)
    return data


def _ordered(read: Reader, name: str, ordering: list[tuple[str, bool]], positions: list[int]) -> list[int]:
    """The positions sorted by the fields (ties: the collection's order)."""
    needed = sorted({p // qi.BLOCK for p in positions})
    columns = []
    for field, descending in ordering:
        ranks = {block: read_u32(_need(read, qi.rank_file(name, field, block))) for block in needed}
        columns.append((ranks, -1 if descending else 1))

    def key(p: int) -> tuple:
        block, at = divmod(p, qi.BLOCK)
        return tuple(sign * ranks[block][at] for ranks, sign in columns) + (p,)

    return sorted(positions, key=key)
