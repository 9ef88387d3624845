"""What the tests of api/querystring.py (against Django and DRF) and of its JavaScript
(against the Python) share: hypothesis strategies for hostile query strings and numbers
(separators, escapes of bytes that are and are not UTF-8, raw bytes, numbers in every
script with every kind of space, the names that count), and paginate()'s answer in the
golden table's shape."""
from __future__ import annotations

from hypothesis import strategies as st

from generator.api.querystring import TooManyFields, paginate
from golden_files import raw


def answered(query: str, count: int, default_limit: int, max_limit: int | None) -> dict:
    """paginate()'s answer in the golden table's shape."""
    try:
        page = paginate(query, default_limit, max_limit, count)
    except TooManyFields:
        return {"error": "TooManyFields"}
    return {"pairs": [list(pair) for pair in page.pairs], "limit": str(page.limit), "offset": str(page.offset),
            "next": page.next, "previous": page.previous, "only_paging": page.only_paging}


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
