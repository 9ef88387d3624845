"""Search terms, case folding, ids and orderings as DRF and Django read them (api/filters.py),
and the records a search, filter and ordering select (api/query.py) equal to a naive scan.

The readings are checked against DRF's and Django's own functions on hostile text; the
golden table tests/golden/filters.json holds Python's answers for the JavaScript hosts'
twin (tests/hosts/test_query_js.py checks it against them).
"""
from __future__ import annotations

import itertools
import json
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from generator.api import filters, query, queryindex
from generator.api.filters import Ordering, Rejected, RelationFilter, Search, fold, smart_terms, uuid_text
from generator.catalogue.querying import search_field
from golden_files import FILTERS, filters_table

pytest.importorskip("rest_framework")  # (DRF: the test extras)
from querystring_reference import _django  # noqa: E402

_django()
from rest_framework import filters as drf_filters  # noqa: E402

TEXT = st.text(st.sampled_from(" \t\u3000\x1c\u200c،,\"'\\abcکتابيك ۱٢"), max_size=24)
UUIDISH = st.text(st.sampled_from("0123456789abcdefABCDEF-{}urn:uid_ +٠۱\u3000x"), min_size=28, max_size=44)


@given(TEXT)
def test_terms_are_drf_s(text):
    assert smart_terms(text) == drf_filters.search_smart_split(text)


@given(st.one_of(UUIDISH, st.uuids().map(str), st.uuids().map(lambda u: "urn:uuid:{" + u.hex.upper() + "}")))
def test_ids_are_read_as_django_reads_a_uuid(text):
    try:
        expected = str(uuid.UUID(hex=text))
    except ValueError:
        expected = None
    assert uuid_text(text) == expected


def test_a_nul_in_a_search_is_refused():
    with pytest.raises(Rejected) as refused:
        Search().terms("a\x00b")
    assert refused.value.encoded() == b'["Null characters are not allowed."]'


def test_a_very_long_search_is_refused_with_its_cap():
    assert Search().terms("x" * 1000) == ["x" * 1000] and Search().terms(None) == []
    with pytest.raises(Rejected) as refused:
        Search().terms("x" * 1001)
    assert refused.value.body == {"search": ["Ensure this field has no more than 1000 characters."]}


def test_persian_folding_on_both_sides():
    assert fold("كتاب عربي", "persian") == fold("کتاب عربی", "persian")
    assert fold("كتاب", None) != fold("کتاب", None)
    assert fold("ﻛتـــاب ۱۲", "persian") != "کتاب 12"  # (presentation forms are not folded: docs/spec/query.md lists what is)
    assert fold("کتـــاب‌ها ۱۲٣ دَرس", "persian") == "کتاب ها 123 درس"


def test_orderings_drop_names_not_allowed():
    assert Ordering().fields(" -price , nope,title,-,--title", ["price", "title"]) == [("price", True), ("title", False)]
    assert Ordering().fields("", ["price"]) == []


def test_filters_messages():
    many, one = RelationFilter("authors", True), RelationFilter("user", False)
    with pytest.raises(Rejected) as refused:
        many.ids([""])
    assert refused.value.encoded() == '{"authors":["“” is not a valid UUID."]}'.encode()
    assert one.ids([""]) == [] and one.ids(["x", ""]) == []
    assert one.unknown("x").body == {"user": ["Select a valid choice. That choice is not one of the available choices."]}
    assert many.unknown("X").body == {"authors": ["Select a valid choice. X is not one of the available choices."]}
    assert many.ids(["0" * 32, "urn:uuid:" + "A" * 32]) == ["00000000-0000-0000-0000-000000000000", "a" * 8 + "-" + "a" * 4 + "-" + "a" * 4 + "-" + "a" * 4 + "-" + "a" * 12]


def test_the_golden_table():
    assert json.loads(FILTERS.read_text(encoding="utf-8")) == filters_table()


# ---- the records selected, against a naive scan ---------------------------------------

WORDS = ["کتاب", "كتاب", "ab", "Ab", "b", "", "x y", "ی", " b", "x  y", "b\u200cکتاب", "\u3000", "ي ", "ab\x1cb"]
QUERY = {"search": {"books": ["title", "=isbn", "authors__fullName", "^publishers__company"]},
         "ordering": {"books": ["title", "pages"]}}
# Every lookup on a field of the record and on a related one.
EVERY_LOOKUP = {"search": {"books": ["title", "^title", "=title", "isbn", "authors__fullName", "=authors__fullName",
                                     "^publishers__company", "publishers__company"]}}
TERM = st.text(st.sampled_from("abx yکتابيی\u200c\u3000\t"), max_size=6)


@st.composite
def catalogues(draw) -> list[dict]:
    def person():
        return {"url": f"https://x/{uuid.UUID(int=draw(st.integers(0, 5)))}/", "fullName": draw(st.sampled_from(WORDS)),
                "company": draw(st.sampled_from(WORDS))}
    books = []
    for _ in range(draw(st.integers(0, 12))):
        books.append({"title": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=3))),
                      "isbn": draw(st.sampled_from(["1", "12", "ab"])), "pages": draw(st.integers(0, 3)),
                      "authors": draw(st.lists(st.builds(person), max_size=3)),
                      "publishers": draw(st.lists(st.builds(person), max_size=2))})
    return books


def naive(books: list[dict], terms: list[str], normalise, query: dict = QUERY) -> list[int]:
    """DRF's SearchFilter on a database: one row per combination of related records (a
    book without any: one row of nulls), and a book matches when a row has every term in
    some field."""
    fields = [search_field(spec) for spec in query["search"]["books"]]

    def hit(term: str, value) -> bool:
        if value is None:
            return False
        term, value = fold(term, normalise), fold(str(value), normalise)
        return {"contains": term in value, "startswith": value.startswith(term), "exact": term == value}[lookup]

    found = []
    for at, book in enumerate(books):
        rows = itertools.product(book["authors"] or [None], book["publishers"] or [None])
        for author, publisher in rows:
            related = {"authors": author, "publishers": publisher}
            ok = True
            for term in terms:
                any_field = False
                for field in fields:
                    lookup = field.lookup
                    value = book[field.field] if field.relation is None else (
                        related[field.relation] or {}).get(field.field)
                    any_field = any_field or hit(term, value)
                ok = ok and any_field
            if ok:
                found.append(at)
                break
    return found


@settings(max_examples=300, deadline=None)
@given(catalogues(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), st.sampled_from([None, "persian"]))
def test_a_search_selects_what_a_naive_scan_does(books, terms, normalise):
    query_settings = {**QUERY, "search_normalise": normalise} if normalise else QUERY
    files = queryindex.index_files("books", query_settings, books, {})
    value = " ".join(f'"{t}"' for t in terms)
    selection = query.select(files.get, "books", [("search", value)], query_settings, len(books))
    expected = naive(books, smart_terms(value), normalise)
    if selection is None:
        assert expected == list(range(len(books)))
    else:
        assert list(selection.positions) == expected


@settings(max_examples=300, deadline=None)
@given(catalogues(), st.lists(st.one_of(TERM, st.sampled_from(WORDS)), min_size=1, max_size=3),
       st.sampled_from([None, "persian"]), st.sampled_from([65536, 2, 1]), st.sampled_from([1024, 3, 1]))
def test_the_token_index_selects_what_a_naive_scan_does_with_every_lookup(books, terms, normalise, block, buckets):
    """Terms of any white space, in any script, against every lookup (values with white space
    around and inside, empty and null ones, ZWNJ folded to a space), in one block or many,
    with keys in postings files of their own or many a file."""
    query_settings = {**EVERY_LOOKUP, "search_normalise": normalise} if normalise else EVERY_LOOKUP
    before, queryindex.BLOCK = queryindex.BLOCK, block
    kept, queryindex.BUCKETS = queryindex.BUCKETS, buckets
    try:
        files = queryindex.index_files("books", query_settings, books, {})
        value = " ".join(f'"{t}"' for t in terms)
        selection = query.select(files.get, "books", [("search", value)], query_settings, len(books))
    finally:
        queryindex.BLOCK, queryindex.BUCKETS = before, kept
    expected = naive(books, smart_terms(value), normalise, EVERY_LOOKUP)
    assert (list(range(len(books))) if selection is None else list(selection.positions)) == expected


def test_a_search_reads_no_text_for_a_word_and_only_its_candidates_blocks_for_a_phrase():
    books = [{"title": title, "isbn": None if title is None else "1", "authors": [], "publishers": []}
             for title in ["کتاب دریا", "دریا", "شب  دریا", " دریا کتاب", None, ""] * 2 + ["x"] * 6]
    before, queryindex.BLOCK = queryindex.BLOCK, 6
    try:
        files = queryindex.index_files("books", EVERY_LOOKUP, books, {})
        read: list[str] = []

        def reading(path):
            read.append(path)
            return files.get(path)

        def searched(term):
            read.clear()
            selection = query.select(reading, "books", [("search", term)], EVERY_LOOKUP, len(books))
            return list(selection.positions)

        assert searched("ریا") == [p for p in range(12) if p % 6 < 4]
        assert not any(path.endswith(".txt") and "/keys" not in path and "/heads" not in path for path in read)
        assert searched('"ب د"') == [0, 6]
        assert queryindex.text_file("books", "title", 2) not in read  # (no candidate in the third block)
        assert queryindex.text_file("books", "title", 0) in read
        assert searched('" دریا"') == [p for p in range(12) if p % 6 in (0, 2, 3)]
        assert searched('""') == [p for p in range(18) if p % 6 != 4 or p >= 12]
    finally:
        queryindex.BLOCK = before


@settings(max_examples=200, deadline=None)
@given(catalogues(), st.sampled_from(["title", "-title", "pages,-title", "-pages", "nope,-pages,title"]))
def test_an_ordering_sorts_as_python_does_ties_in_order(books, ordering):
    files = queryindex.index_files("books", QUERY, books, {})
    selection = query.select(files.get, "books", [("ordering", ordering)], QUERY, len(books))
    fields = Ordering().fields(ordering, QUERY["ordering"]["books"])

    expected = list(range(len(books)))
    for field, descending in reversed(fields):  # (stable sorts, last key first)
        expected.sort(key=lambda at: books[at][field], reverse=descending)
    assert list(selection.take(0, len(books))) == expected


@settings(max_examples=200, deadline=None)
@given(catalogues(), st.sampled_from(["pages,title", "-pages,-title", "title,-pages", "pages", "-pages,title,pages"]),
       st.integers(0, 14), st.integers(1, 14))
@pytest.mark.parametrize("block", [65536, 3])
def test_a_whole_collection_in_several_fields_order_a_slice_at_a_time(block, books, ordering, start, length):
    """The runs of ties around a slice sorted alone give what sorting everything does (in
    blocks of 3 records too: runs across the files)."""
    before, queryindex.BLOCK = queryindex.BLOCK, block
    try:
        files = queryindex.index_files("books", QUERY, books, {})
        selection = query.select(files.get, "books", [("ordering", ordering)], QUERY, len(books))
        everything = query._ordered(files.get, "books", Ordering().fields(ordering, ["title", "pages"]),
                                    list(range(len(books))))
        assert list(selection.take(start, start + length)) == everything[start:start + length]
    finally:
        queryindex.BLOCK = before


def test_a_postings_file_finds_each_key_among_keys_holding_its_bytes():
    from array import array

    data = queryindex.encode_bucket([("ab", 1), ("b", array("I", [2, 3])), ("abb", 4), ("\t", 5), ("کتاب", 6)])
    assert len(data) % 4 == 0
    found = {key: list(queryindex.postings(data, key)) for key in ("ab", "b", "abb", "bb", "\t", "کتاب", "تا", "")}
    assert found == {"ab": [1], "b": [2, 3], "abb": [4], "bb": [], "\t": [5], "کتاب": [6], "تا": [], "": []}
    assert list(queryindex.postings(None, "ab")) == []
