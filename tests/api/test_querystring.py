"""generator/api/querystring.py reads query strings and writes links as Django and DRF do:
the golden table (computed from Django's and DRF's own code, querystring_reference.py),
then random queries from a hostile alphabet, each against the reference itself."""
from __future__ import annotations

import json
import sys
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import querystring_reference as reference
from generator.api.querystring import (MAX_FIELDS, TooManyFields, is_space, last, links_query, paginate, parse,
                                       raw_bytes, read_int)
from golden_files import GOLDEN, QUERYSTRING, querystring_table
from querystring_cases import CASES, NUMBERISH, QUERIES, answered, long_numbers

TABLE = json.loads((GOLDEN / QUERYSTRING).read_text(encoding="utf-8"))


def case_id(case: dict) -> str:
    """The query's bytes percent-escaped: pytest cannot find a test again by an id holding a
    byte above 0x7F or a backslash (it writes them escaped), and mutmut runs each mutant's
    tests by their ids (it took the failure to find them for a timeout)."""
    return quote(case["query"][:40].encode("latin-1", "backslashreplace"), safe="=&;+") or "(empty)"


@pytest.mark.parametrize("case", TABLE, ids=case_id)
def test_the_golden_table(case):
    assert answered(case["query"], case["count"], case["default_limit"], case["max_limit"]) == case["answer"]


def test_the_golden_table_is_what_django_and_drf_answer():
    """(Else refresh it, `make golden`, and read the difference.)"""
    assert querystring_table() == TABLE


def test_the_spec_s_examples():
    page = paginate("limit=%DB%B1%DB%B2&offset=24&utm_source=x", 12, None, 100)
    assert (page.limit, page.offset, page.next, page.previous) == (
        12, 24, "limit=12&offset=36&utm_source=x", "limit=12&offset=12&utm_source=x")
    assert paginate("offset=10", 12, None, 100).previous == "limit=12"
    assert paginate(f"offset={10 ** 30}", 12, None, 5).offset == 10 ** 30
    assert paginate("limit=500", 12, 100, 1000).next == "limit=100&offset=100"


def test_the_previous_page_one_record_after_the_first():
    """DRF's previous link drops offset when offset - limit is 0 or less, and only then: one
    record more, and the link is to offset=1."""
    for offset in (4, 5, 6, 7):
        query = f"limit=5&offset={offset}&q=x"
        assert answered(query, 100, 12, None) == reference.answer(query, 100, 12, None)
    assert paginate("limit=5&offset=6", 12, None, 100).previous == "limit=5&offset=1"
    assert paginate("limit=5&offset=5", 12, None, 100).previous == "limit=5"


def test_the_last_value_counts():
    pairs = parse("limit=5&a=1&limit=7")
    assert pairs == [("limit", "5"), ("a", "1"), ("limit", "7")]
    assert (last(pairs, "limit"), last(pairs, "a"), last(pairs, "offset")) == ("7", "1", None)


def test_more_than_1000_fields_is_an_error():
    assert parse("&" * (MAX_FIELDS - 1)) == []
    with pytest.raises(TooManyFields):
        parse("&" * MAX_FIELDS)
    with pytest.raises(TooManyFields):
        paginate("a=1&" * MAX_FIELDS, 12, None, 10)


def test_text_a_server_decoded_counts_as_its_utf8_bytes():
    assert raw_bytes("x=کتاب") == "x=کتاب".encode()
    assert parse("x=کتاب") == parse("x=کتاب".encode().decode("latin-1")) == [("x", "کتاب")]
    assert links_query("x=کتاب", 5, None) == links_query("x=کتاب".encode().decode("latin-1"), 5, None)


# ---- int() ----

def python_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


@settings(max_examples=3000)
@given(st.one_of(NUMBERISH, st.text(max_size=8)))
@example(" +12 ")
@example("۱۲")
@example("1_2")
@example("\x1c12")
@example("-0")
@example("𑽑")
def test_read_int_is_int(text):
    assert sys.get_int_max_str_digits() == 4300  # (the limit of the reference; PYTHONINTMAXSTRDIGITS changes it)
    assert read_int(text) == python_int(text)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(long_numbers())
@example("9" * 4300)
@example("9" * 4301)
@example("1" + "_0" * 4299)
@example("1" + "_0" * 4300)
def test_read_int_is_int_up_to_4300_digits(text):
    assert read_int(text) == python_int(text)


def test_white_space_is_what_int_strips():
    """str.isspace() but for U+001C..U+001F, which int() does not strip."""
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert is_space(char) == (char.isspace() and python_int(f"{char}1{char}") == 1), hex(code)


# ---- random queries against Django and DRF ----


@settings(max_examples=1500)
@given(CASES)
def test_random_queries_answer_as_django_and_drf(case):
    query, count, default_limit, max_limit = case
    assert answered(query, count, default_limit, max_limit) == reference.answer(query, count, default_limit, max_limit)


@settings(max_examples=500)
@given(QUERIES, st.integers(1, 10 ** 40), st.one_of(st.none(), st.integers(0, 10 ** 40)))
def test_links_are_drf_s(query, limit, offset):
    assert links_query(query, limit, offset) == reference.link(query, limit, offset)
