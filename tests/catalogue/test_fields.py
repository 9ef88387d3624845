"""Single values under the rules of docs/spec/data.md."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.catalogue.fields import QUICK, FieldError, derived_id, price


@pytest.mark.parametrize("given, written", [(0, "0"), ("0120", "120"), (" 1250000 ", "1250000"), (10**20, str(10**20)),
                                           ("۱۲۰", "120")])
def test_price_is_a_string_of_digits(given, written):
    assert price(given) == written


@pytest.mark.parametrize("given", [True, 12.5, "12.5", "-1", "¹²", ""])
def test_price_refuses(given):
    with pytest.raises(FieldError):
        price(given)


# ---- the quick coercers agree with the coercers on every cell they accept ----------------

_UUID = "4c84c2d3-6987-41eb-8ad3-3a136dc45013"
# Cells near the edge of each rule: spaces, case, signs, non-ASCII digits, empty list items...
_NEAR = [_UUID, _UUID.upper(), f" {_UUID}", f"{_UUID}|{_UUID}", f"{_UUID}|", f"|{_UUID}", f"{_UUID} | {_UUID}",
         "0", "007", "12", " 12", "+12", "-1", "۱۲", "¹", "1.5", "IRR", "irr", " IRR", "true", "True", " true",
         "YES", "0", "no", "maybe", "2020-10-16T01:32:35.955916+03:30", "2020-10-16T01:32:35", " 2020-10-16Z",
         "2020-10-16T01:32:35Z", "slug-1", "slug 1", "user@x.ir", "a" * 151, " ", "\t", "x", "9780000000002",
         "https://x.ir/a.jpg", "/media/a.jpg", "https://x.ir/a b.jpg", "http://x.ir/a.jpg|/b.jpg", "ftp://x.ir/a",
         "https://x.ir/a.jpg|", " /a.jpg", "/a\"b.jpg", "https://x.ir/کتاب.jpg"]

_CELLS = st.one_of(st.sampled_from(_NEAR), st.text(alphabet=st.characters(blacklist_characters="\x00",
                                                                          blacklist_categories=("Cs",))),
                   st.lists(st.sampled_from(_NEAR), min_size=1, max_size=3).map("|".join))


@pytest.mark.parametrize("coerce", [c for c, q in QUICK.items() if q is not None], ids=lambda c: c.__name__)
@given(cell=_CELLS)
@settings(max_examples=300)
def test_a_quick_coercer_agrees_with_its_coercer(coerce, cell):
    try:
        value = QUICK[coerce](cell)
    except (ValueError, KeyError):
        return  # left to the coercer
    assert coerce(cell) == value


def test_the_cells_near_the_edges_include_accepted_ones():
    # (so that the agreement above is tested on accepted cells, not only on refused ones)
    accepted = set()
    for coerce, quick in QUICK.items():
        if quick is None:
            continue  # (text takes every cell: it would make the assertion below hold trivially)
        for cell in _NEAR:
            try:
                quick(cell)
                accepted.add(cell)
            except (ValueError, KeyError):
                pass
    assert {_UUID, "007", "IRR", "true", "2020-10-16T01:32:35Z", "/media/a.jpg", "x"} <= accepted


@given(collection=st.sampled_from(["books", "images", "categories"]), key=st.text())
@settings(max_examples=500)
def test_a_derived_id_is_the_uuid5_of_its_collection_and_key(collection, key):
    assert derived_id(collection, key) == str(uuid.uuid5(uuid.NAMESPACE_URL, f"{collection}:{key}"))
