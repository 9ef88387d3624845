"""Numbers written in any script's decimal digits (docs/data.md, "Numbers"): read in every
numeric field of YAML and CSV as DRF's IntegerField reads them (int()), written in the JSON in
ASCII digits, so that a catalogue typed in Persian digits publishes the very bytes of one typed
in ASCII."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from generator.catalogue.fields import FieldError, isbn, price, whole
from generator.catalogue.load import find_sources
from generator.catalogue.resources import BY_COLLECTION
from generator.errors import Problems
from generator.sitebuild import build
from conftest import SAMPLE, served

PERSIAN = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
NUMERIC = (whole, price, isbn)  # the coercers of the fields that hold digits


@pytest.mark.parametrize("given, read", [
    ("۶۸۰۰۰۰", 680000), ("٦٨٠٠٠٠", 680000), ("６８０", 680), ("۰۰۷", 7), (" ۱۲ ", 12), ("+۱۲", 12),
    ("۱_۰۰۰", 1000), ("1_000", 1000), ("۱2", 12), ("\u3000۴۲\u00a0", 42), ("-۰", 0)])
def test_a_whole_number_is_read_as_int_reads_it(given, read):
    assert whole(given) == read
    assert price(given) == str(read)


@pytest.mark.parametrize("given, fix", [
    ("۶۸۰٬۰۰۰", "write it without '٬', like ۶۸۰۰۰۰"), ("680,000", "write it without ',', like 680000"),
    ("1 250", "write it without ' ', like 1250"), ("۱۲٫۵", "write it without a decimal part"),
    ("1250.50", "write it without a decimal part"), (12.5, "write it without a decimal part"),
    ("¹²", "write digits only, like 680000 or ۶۸۰۰۰۰"), ("1__0", "write digits only"), ("_10", "write digits only"),
    ("0x10", "write digits only"), ("1e3", "write digits only"), ("دوازده", "write digits only")])
def test_what_is_not_a_whole_number_is_refused_with_its_fix(given, fix):
    with pytest.raises(FieldError, match="is not a whole number: " + fix):
        whole(given)


def test_a_negative_number_in_persian_digits_is_refused():
    with pytest.raises(FieldError, match="^-5 is negative; it must be 0 or more$"):
        whole("-۵")


@pytest.mark.parametrize("given, read", [("۹۷۸۶۰۰۴۳۸۱۱۸۵", "9786004381185"), ("٠٣٠٦٤٠٦١٥٢", "0306406152"),
                                         (" ۹۷۸6004381185 ", "9786004381185")])
def test_an_isbn_in_any_digits_is_written_in_ascii_with_its_leading_zeros(given, read):
    assert isbn(given) == read


def test_an_isbn_with_hyphens_names_what_to_remove():
    with pytest.raises(FieldError, match=r"'۹۷۸-۶۰۰ ۱' must be digits only: remove '-' and ' '$"):
        isbn("۹۷۸-۶۰۰ ۱")


# ---- a whole catalogue in Persian (or Arabic-Indic) digits publishes the same bytes ------------

def rows_of(data_dir: Path, collection: str) -> list[dict]:
    problems = Problems()
    rows = [row for _line, row in find_sources(data_dir, problems)[collection].rows(problems)]
    assert not problems
    return rows


def in_digits(rows: list[dict], collection: str, digits: dict) -> list[dict]:
    """The rows with every numeric field's value written as text in other digits."""
    numeric = {f.name for f in BY_COLLECTION[collection].fields if f.coerce in NUMERIC}
    return [{k: str(v).translate(digits) if k in numeric and v not in (None, "") else v for k, v in row.items()}
            for row in rows]


def write_rows(data_dir: Path, collection: str, rows: list[dict], format: str) -> None:
    """The collection's file, replaced by one of the format holding the rows (an empty CSV
    cell being a missing value, it is left out of a YAML record)."""
    for old in data_dir.glob(f"{collection}.*"):
        old.unlink()
    path = data_dir / f"{collection}.{format}"
    if format == "yaml":
        records = [{k: v for k, v in row.items() if v != ""} for row in rows]
        path.write_text(yaml.safe_dump(records, allow_unicode=True, sort_keys=False), encoding="utf-8")
        return
    names = [f.name for f in BY_COLLECTION[collection].fields]
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, names)
        writer.writeheader()
        writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)


def _cell(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


@pytest.fixture(scope="module")
def sample_published(tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("ascii") / "site"
    build(SAMPLE, out)
    return served(out)


@pytest.mark.parametrize("collection", ["books", "users"])  # (every collection with numeric fields)
@pytest.mark.parametrize("format", ["yaml", "csv"])
@pytest.mark.parametrize("digits", [PERSIAN, ARABIC_INDIC], ids=["persian", "arabic-indic"])
def test_a_collection_in_other_digits_publishes_the_same_bytes(data_dir, tmp_path, sample_published,
                                                               collection, format, digits):
    rows = in_digits(rows_of(data_dir, collection), collection, digits)
    assert any(any(not str(v).isascii() and str(v).isdecimal() for v in row.values()) for row in rows)
    write_rows(data_dir, collection, rows, format)
    out = tmp_path / "site"
    build(data_dir, out)
    assert served(out) == sample_published


def test_the_numeric_fields_are_those_of_books_and_users():
    # (so that the test above covers every collection with numbers: a new one joins its list)
    assert {r.collection for r in BY_COLLECTION.values() if any(f.coerce in NUMERIC for f in r.fields)} == {
        "books", "users"}
