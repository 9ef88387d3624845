"""generator/api/querystring.py reads query strings and writes links as Django and DRF do:
the golden table (computed from Django's and DRF's own code, querystring_reference.py),
then random queries from a hostile alphabet, each against the reference itself."""
from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import querystring_reference as reference
from generator.api.querystring import (MAX_FIELDS, TooManyFields, is_space, last, links_query, paginate, parse,
                                       raw_bytes, read_int)
from golden_files import GOLDEN, QUERYSTRING, querystring_table, raw

TABLE = json.loads((GOLDEN / QUERYSTRING).read_text(encoding="utf-8"))


def answered(query: str, count: int, default_limit: int, max_limit: int | None) -> dict:
    """paginate()'s answer in the golden table's shape."""
    try:
        page = paginate(query, default_limit, max_limit, count)
    except TooManyFields:
        return {"error": "TooManyFields"}
    return {"pairs": [list(pair) for pair in page.pairs], "limit": str(page.limit), "offset": str(page.offset),
            "next": page.next, "previous": page.previous, "only_paging": page.only_paging}


@pytest.mark.parametrize("case", TABLE, ids=lambda case: repr(case["query"][:40]))
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

DIGITS = "0123456789٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹०१२३४५६७८९０１２３４５６７８９𝟎𝟏𝟐𝟗𝟘𝟙𝟬𝟵𑽐𑽙"  # (Kawi: not digits to Python 3.11)
SPACES = " \t\n\v\f\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\u200b\u180e\ufeff"
OTHERS = "+-_²½ⅻx\x00."
NUMBERISH = st.text(st.sampled_from(DIGITS + SPACES + OTHERS), max_size=16)


@st.composite
def long_numbers(draw) -> str:
    """Digits of one script, about 4300 of them, maybe underscores, maybe a sign and spaces."""
    zero = ord(draw(st.sampled_from("0٠۰０𝟎")))
    count = draw(st.integers(4290, 4310))
    text = "".join(chr(zero + draw(st.integers(0, 9))) for _ in range(3)) + chr(zero) * (count - 3)
    if draw(st.booleans()):
        at = draw(st.integers(1, count - 1))
        text = text[:at] + draw(st.sampled_from(["_", "__", "x"])) + text[at:]
    return draw(st.sampled_from(["", " ", "\u3000"])) + draw(st.sampled_from(["", "+", "-"])) + text + \
        draw(st.sampled_from(["", " ", "\x85", "\x1c"]))


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

# Pieces a query is made of: separators, escapes of bytes that are (not) UTF-8, raw bytes,
# numbers of every script, the names that count.
PIECES = ["&", "=", "+", "%", "#", ";", "?", " ", "_", "-", "0", "1", "2", "9", "a", "F", "g", "x", "limit", "offset",
          "li%6Dit", "%6F%66fset", "LIMIT", "%2B", "%20", "%25", "%26", "%3D", "%23", "%C3", "%A9", "%ED", "%A0",
          "%80", "%BF", "%F0", "%9F", "%98", "%EF%BB%BF", "%E3%80%80", "%DB%B1", "%D9%A2", "%1C", "%0", "%%",
          "\x00", "\t", "\x7f", "\x85", "\xa0", "\xc3", "\xa9", "\xd9", "\xdb\xb1", "\xe9", "\xed\xa0\x80",
          "\xef\xbb\xbf", "\xf0\x9f\x98\x80", "!'()*", "~", "\\", "\"", "<", "|"]
QUERIES = st.lists(st.one_of(st.sampled_from(PIECES), st.characters(max_codepoint=0xFF)), max_size=24).map("".join)
PAGING_VALUES = st.one_of(st.integers(-30, 60).map(str), NUMBERISH.map(raw),  # (as raw UTF-8 bytes)
                          st.sampled_from(["", "%DB%B1%DB%B2", "+5", str(10 ** 30)]))


@st.composite
def paging_queries(draw) -> str:
    """limit and offset among other fields, their values mostly numbers."""
    fields = draw(st.lists(st.one_of(
        st.tuples(st.sampled_from(["limit", "offset", "li%6Dit", "q", "utm_source"]), PAGING_VALUES).map("=".join),
        QUERIES), max_size=6))
    return draw(st.sampled_from("&;")).join(fields) if draw(st.integers(0, 9)) == 0 else "&".join(fields)


CASES = st.tuples(st.one_of(QUERIES, paging_queries()), st.integers(0, 100), st.integers(1, 30),
                  st.one_of(st.none(), st.integers(0, 40)))


@settings(max_examples=1500, deadline=None)
@given(CASES)
def test_random_queries_answer_as_django_and_drf(case):
    query, count, default_limit, max_limit = case
    assert answered(query, count, default_limit, max_limit) == reference.answer(query, count, default_limit, max_limit)


@settings(max_examples=500, deadline=None)
@given(QUERIES, st.integers(1, 10 ** 40), st.one_of(st.none(), st.integers(0, 10 ** 40)))
def test_links_are_drf_s(query, limit, offset):
    assert links_query(query, limit, offset) == reference.link(query, limit, offset)
