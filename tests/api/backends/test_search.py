"""The search backend (api/backends/search.py, its index format search_index.py): terms and
case folding as DRF and Django read them, on hostile text, against DRF's own functions; and
the records a search selects equal to a naive scan of the records, DRF's SearchFilter on a
database, whatever the blocks and buckets of the index. Its JavaScript twin answers alike
(tests/hosts/test_query_js.py).
"""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from backend_cases import EVERY_LOOKUP, QUERY, TERM, WORDS, blocks_of, catalogues, documents_of, files_of
from generator.api.backends import Rejected, search_index, select
from generator.api.backends.common import fold
from generator.api.backends.search import Search, smart_terms
from generator.catalogue.querying import search_field

pytest.importorskip("rest_framework")  # (DRF: the test extras)
from querystring_reference import _django  # noqa: E402

_django()
from rest_framework import filters as drf_filters  # noqa: E402

TEXT = st.text(st.sampled_from(" \t\u3000\x1c\u200c،,\"'\\abcکتابيك ۱٢"), max_size=24)


@given(TEXT)
def test_terms_are_drf_s(text):
    assert smart_terms(text) == drf_filters.search_smart_split(text)


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


def test_persian_folds_the_ten_digits_of_each_script_and_nothing_beside_them():
    for zero in (0x06F0, 0x0660):  # (Persian digits, Arabic-Indic digits)
        assert fold("".join(chr(zero + d) for d in range(10)), "persian") == "0123456789"
    beside = "\u06ef\u06fa\u066a"  # (the letters before and after the Persian digits, the sign after the others)
    assert fold(beside, "persian") == beside


# ---- the records selected, against a naive scan ---------------------------------------


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


@settings(max_examples=300)
@given(catalogues(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), st.sampled_from([None, "persian"]))
def test_a_search_selects_what_a_naive_scan_does(books, terms, normalise):
    query_settings = {**QUERY, "search_normalise": normalise} if normalise else QUERY
    files = files_of(books, query_settings)
    value = " ".join(f'"{t}"' for t in terms)
    selection = select(files.get, "books", [("search", value)], query_settings, len(books), documents_of(books))
    expected = naive(books, smart_terms(value), normalise)
    if selection is None:
        assert expected == list(range(len(books)))
    else:
        assert list(selection.positions) == expected


@settings(max_examples=300)
@given(catalogues(), st.lists(st.one_of(TERM, st.sampled_from(WORDS)), min_size=1, max_size=3),
       st.sampled_from([None, "persian"]), st.sampled_from([65536, 2, 1]), st.sampled_from([(32, 10, 16), (32, 10, 2), (0, 0, 1), (0, 1, 1)]))
def test_the_term_index_selects_what_a_naive_scan_does_with_every_lookup(books, terms, normalise, block, shape):
    """Terms of any white space, in any script, against every lookup (values with white space
    around and inside, empty and null ones, ZWNJ folded to a space), in one block or many,
    with sets in leaves or in postings files, in one leaf or a leaf a key or two, a key list's
    restarts every key, every other or every 16th."""
    query_settings = {**EVERY_LOOKUP, "search_normalise": normalise} if normalise else EVERY_LOOKUP
    with blocks_of(block, *shape):
        files = files_of(books, query_settings)
        value = " ".join(f'"{t}"' for t in terms)
        selection = select(files.get, "books", [("search", value)], query_settings, len(books), documents_of(books))
    expected = naive(books, smart_terms(value), normalise, EVERY_LOOKUP)
    assert (list(range(len(books))) if selection is None else list(selection.positions)) == expected


def test_a_word_reads_the_root_and_its_leaf_and_a_phrase_its_candidates_documents():
    books = [{"title": title, "isbn": None if title is None else "1", "authors": [], "publishers": []}
             for title in ["کتاب دریا", "دریا", "شب  دریا", " دریا کتاب", None, ""] * 2 + ["x"] * 6]
    files = files_of(books, EVERY_LOOKUP)
    read: list[str] = []
    checked: list[int] = []

    def reading(path):
        read.append(path)
        return files.get(path)

    def documents(positions):
        checked.extend(positions)
        return documents_of(books)(positions)

    def searched(term):
        read.clear()
        checked.clear()
        selection = select(reading, "books", [("search", term)], EVERY_LOOKUP, len(books), documents)
        return list(selection.positions)

    folder = search_index.index_dir("books")
    assert searched("ریا") == [p for p in range(12) if p % 6 < 4]
    assert read[0] == f"{folder}/{search_index.ROOT}" and len(read) == 2 and checked == []
    assert searched('"ب د"') == [0, 6]
    # (the records where one token ends with the first letter and the next, one space on, starts with the
    # second: the pair's keys; checked on their documents, since a `^` field's keys cannot say it exactly)
    assert sorted(checked) == [0, 6]
    assert searched('" دریا"') == [p for p in range(12) if p % 6 in (0, 2, 3)]
    assert searched('""') == [p for p in range(18) if p % 6 != 4 or p >= 12]


CONTAINS = {"search": {"books": ["title", "=isbn", "authors__fullName"]}}


@pytest.mark.parametrize("term", ["ب د", "کتاب\tدریا", "ب  د", "کتاب ", "ریا ", " دریا", " دریا ", "\tکتاب", "ب\u3000د"])
def test_a_phrase_the_pair_keys_hold_is_answered_without_its_documents(term):
    """Two words (whatever white space lies between), a word with white space after it, one
    white space character and a word (and white space after it): their records are a pair
    key range's, exactly, where every field is `contains` or `=`; no document is read."""
    titles = ["کتاب دریا", "کتاب\tدریا", "کتاب  دریا", "دریا", "شب  دریا", " دریا کتاب", "کتاب دریا ", "ب\u3000دریا",
              None, "", "کتابدریا", "x\tکتاب"]
    books = [{"title": title, "isbn": "1", "authors": [{"fullName": "سمیرا کتاب"}], "publishers": []}
             for title in titles]
    files = files_of(books, CONTAINS)
    checked: list[int] = []

    def documents(positions):
        checked.extend(positions)
        return documents_of(books)(positions)

    selection = select(files.get, "books", [("search", f'"{term}"')], CONTAINS, len(books), documents)
    found = list(range(len(books))) if selection is None else list(selection.positions)
    assert found == naive(books, [term], None, CONTAINS) and found and checked == [], (term, found, checked)
