"""The ordering backend (api/backends/ordering.py): the names it takes as DRF's OrderingFilter
does, and the orders it gives from its rank and sorted files equal to Python's stable
sorts, a whole collection a slice at a time across blocks too."""
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st

from backend_cases import QUERY, blocks_of, catalogues, documents_of, files_of
from generator.api.backends import select
from generator.api.backends.common import Request
from generator.api.backends.ordering import Ordering, _ranks, by_documents, edited_ranks, ordered, sort_key, write_order


def test_orderings_drop_names_not_allowed():
    assert Ordering().fields(" -price , nope,title,-,--title", ["price", "title"]) == [("price", True), ("title", False)]
    assert Ordering().fields("", ["price"]) == []


def test_numbers_sort_by_their_exact_values():
    """Fractions apart from the integer below them, an integer written as a float equal to it
    (a tie, in the collection's order), each as exact as its decimal spelling."""
    values = [2.5, 2, 2.25, 10, 0.1, 2.0]
    assert sorted(range(len(values)), key=lambda at: sort_key("number", values[at])) == [4, 1, 5, 2, 0, 3]
    assert sort_key("number", 0.1) == Decimal("0.1") and sort_key("number", 2.0) == 2


KEYS = st.one_of(st.lists(st.none() | st.text(max_size=3)),  # (astral, combining, surrogate-free: any code point)
                 st.lists(st.none() | st.integers(-2 ** 64, 2 ** 64)),  # (past int64's ends: Python's path)
                 st.lists(st.none() | st.integers(-9, 9) | st.decimals(allow_nan=False, allow_infinity=False, places=2)))


@given(KEYS)
def test_ranks_made_by_vectors_are_pythons(keys):
    """Whole numbers (numpy) and texts (polars) ranked as Python's sort of the distinct keys
    ranks them: 1 the least, None 0."""
    rank = {key: at for at, key in enumerate(sorted({key for key in keys if key is not None}), 1)}
    assert _ranks(keys).tolist() == [0 if key is None else rank[key] for key in keys]


EDITED = st.sampled_from([st.text("ab\U0001F600", max_size=2), st.integers(-3, 3),
                          st.integers(-3, 3) | st.decimals(-3, 3, places=1)]).flatmap(
    lambda key: st.tuples(st.lists(st.none() | key, min_size=1), st.lists(st.tuples(st.integers(0), st.none() | key),
                                                                          max_size=6)))


@given(EDITED)
def test_ranks_edited_from_the_previous_ones_are_those_made_again(case):
    """A few records' keys changed (to a key another has, one nobody has or had, None, one
    no other record keeps): the previous ranks edited are the new keys' ranked afresh."""
    keys, edits = case
    now = list(keys)
    for at, key in edits:
        now[at % len(keys)] = key
    changed = [at for at in range(len(keys)) if now[at] != keys[at]]
    assert edited_ranks(_ranks(keys), now, changed).tolist() == _ranks(now).tolist()


def test_records_added_edit_every_field_s_files_into_a_fresh_build_s():
    """Records added at the end: every field's files are written again as a fresh build
    writes them, a field in which the new records have no value too (its keys changed in
    none of them, its orders one place longer)."""
    from generator.api.backends.ordering import Keys

    query = {"ordering": {"books": ["pages", "title", "price"]}}
    made = [{"pages": 5, "title": "b", "price": 1}, {"pages": 3, "title": "a", "price": None},
            {"pages": None, "title": "c", "price": 7}]
    now = made + [{"pages": None, "title": "a", "price": None}, {"pages": 4, "title": None, "price": None}]

    def part(documents: list[dict]) -> dict:
        keys = Keys("books", query["ordering"]["books"])
        keys.add(documents)
        return keys.close()

    def built(documents: list[dict]) -> dict[str, bytes]:
        files: dict[str, bytes] = {}
        Ordering().finish("books", query, files.__setitem__, [part(documents)], None)
        return files
    before = built(made)
    edit = Ordering().edit("books", query, before.get, [(p, {}, d) for p, d in enumerate(now) if p >= len(made)],
                           len(now), lambda: [part(now)])
    assert edit.folders == [] and {**before, **edit.files} == built(now)


def test_records_without_a_value_come_before_the_least_value_not_among_it():
    """As SQLite orders NULL: first ascending, last descending; the least value's records
    apart from them, in the collection's order (a record without a value after one with it)."""
    files: dict[str, bytes] = {}
    write_order("books", files.__setitem__, "pages", [5, None, 3, None, 3])
    order = {path.split("/sorted/pages/")[1]: [int.from_bytes(data[at:at + 4], "little")
                                               for at in range(0, len(data), 4)]
             for path, data in files.items() if "/sorted/" in path}
    assert order == {"asc/0.u32": [1, 3, 2, 4, 0], "desc/0.u32": [0, 2, 4, 1, 3]}


@settings(max_examples=200)
@given(catalogues(), st.sampled_from(["title", "-title", "pages,-title", "-pages", "nope,-pages,title"]))
def test_an_ordering_sorts_as_python_does_ties_in_order(books, ordering):
    files = files_of(books, QUERY)
    selection = select(files.get, "books", [("ordering", ordering)], QUERY, len(books))
    fields = Ordering().fields(ordering, QUERY["ordering"]["books"])

    expected = list(range(len(books)))
    for field, descending in reversed(fields):  # (stable sorts, last key first)
        expected.sort(key=lambda at: books[at][field], reverse=descending)
    assert list(selection.take(0, len(books))) == expected


@settings(max_examples=200)
@given(catalogues(), st.sampled_from(["pages,title", "-pages,-title", "title,-pages", "pages", "-pages,title,pages"]),
       st.integers(0, 14), st.integers(1, 14))
@pytest.mark.parametrize("block", [65536, 3])
def test_a_whole_collection_in_several_fields_order_a_slice_at_a_time(block, books, ordering, start, length):
    """The runs of ties around a slice sorted alone give what sorting everything does (in
    blocks of 3 records too: runs across the files)."""
    with blocks_of(block):
        files = files_of(books, QUERY)
        selection = select(files.get, "books", [("ordering", ordering)], QUERY, len(books))
        everything = ordered(files.get, "books", Ordering().fields(ordering, ["title", "pages"]), list(range(len(books))))
        assert list(selection.take(start, start + length)) == everything[start:start + length]




@settings(max_examples=200)
@given(catalogues(), st.sampled_from(["pages,title", "-pages,-title", "title,-pages", "-title", "-pages,title,pages"]),
       st.data())
def test_a_few_records_sort_by_their_documents_as_by_their_ranks(books, ordering, data):
    """ordering.by_documents (a few records: their pages, not rank files) gives ordered()'s order."""
    files = files_of(books, QUERY)
    positions = sorted(data.draw(st.sets(st.integers(0, max(len(books) - 1, 0)), max_size=len(books))))
    fields = Ordering().fields(ordering, ["title", "pages"])
    request = Request(files.get, "books", [], QUERY, len(books), documents_of(books))
    assert by_documents(request, fields, positions) == ordered(files.get, "books", fields, positions)
