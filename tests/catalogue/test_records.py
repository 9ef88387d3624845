"""Every rule of docs/spec/data.md: each bad input is reported with file, line, field and
what is wrong, all problems of a run together, and nothing published is touched."""
from __future__ import annotations

import csv
import io
import json
import uuid
from pathlib import Path

import pytest

from generator.sitebuild import build, check
from generator.catalogue import synth
from generator.catalogue.fields import FieldError, text
from generator.catalogue.resources import BY_COLLECTION
from generator.catalogue.load import find_sources
from generator.catalogue.records import _coerce, _plain_cells, quick
from generator.errors import DataError, Problems
from conftest import site_state

NEW_ID = "0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c"
MISSING_ID = "ffffffff-0000-4000-8000-000000000000"


def append_yaml(path: Path, text: str) -> int:
    """Append records to a YAML list; the line the first one starts on."""
    before = path.read_text(encoding="utf-8")
    path.write_text(before + text, encoding="utf-8")
    return before.count("\n") + 1


def append_csv(path: Path, **changes: str) -> int:
    """Append a copy of the first data row with some cells changed; its line."""
    text = path.read_text(encoding="utf-8")
    header, first = list(csv.reader(io.StringIO(text)))[:2]
    row = dict(zip(header, first), id=str(uuid.uuid4()))
    row.update(changes)
    unknown = set(row) - set(header)
    assert not unknown, unknown
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow([row[h] for h in header])
    path.write_text(text + out.getvalue(), encoding="utf-8")
    return text.count("\n") + 1


def first_id(path: Path) -> str:
    return next(csv.DictReader(path.open(encoding="utf-8")))["id"]


def problems_of(data_dir: Path) -> list:
    """The report of a check in one process and in two (CSV files cut in two ranges): the
    same, whichever process met the problem."""
    reports = []
    for processes in (1, 2):
        with pytest.raises(DataError) as caught:
            check(data_dir, processes=processes)
        reports.append(caught.value.problems.items)
    assert reports[0] == reports[1], "the report depends on the number of processes"
    return reports[0]


def assert_reported(data_dir: Path, file: str, line: int, field: str, *fragments: str) -> None:
    found = problems_of(data_dir)
    matching = [p for p in found if (p.file, p.line, p.field) == (f"data/{file}", line, field)]
    assert matching, f"no problem at {file}:{line} {field!r}; got:\n" + "\n".join(map(str, found))
    message = str(matching[0])
    where = f"data/{file}:{line}:" if line else f"data/{file}:"
    assert message.startswith(f"{where} field {field!r}:" if field else where), message
    for fragment in fragments:
        assert fragment in message, message


# ---- fields ------------------------------------------------------------------------

def test_unknown_field(data_dir):
    line = append_yaml(data_dir / "authors.yaml", "- slug: نویسنده-تازه\n  fullName: تازه\n  nickname: x\n")
    assert_reported(data_dir, "authors.yaml", line, "nickname", "not a field of authors", "fullName")


def test_derived_field_given(data_dir):
    line = append_yaml(data_dir / "users.yaml", "- username: newcomer\n  url: https://x.example/\n")
    assert_reported(data_dir, "users.yaml", line, "url", "computed by the build")


def test_unknown_csv_column(data_dir):
    path = data_dir / "bookshelves.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0] + ",colour"] + [l + "," for l in lines[1:]]) + "\n", encoding="utf-8")
    assert_reported(data_dir, "bookshelves.csv", 1, "colour", "not a field of bookshelves")  # once, on the header


def test_missing_required_field_yaml(data_dir):
    line = append_yaml(data_dir / "authors.yaml", "- slug: بی-نام\n  bio: x\n")
    assert_reported(data_dir, "authors.yaml", line, "fullName", "is missing")


def test_missing_required_field_csv(data_dir):
    line = append_csv(data_dir / "books.csv", title="")
    assert_reported(data_dir, "books.csv", line, "title", "is missing")


def test_wrong_type_list_for_text(data_dir):
    line = append_yaml(data_dir / "authors.yaml", "- slug: فهرست\n  fullName: x\n  bio: [a, b]\n")
    assert_reported(data_dir, "authors.yaml", line, "bio", "must be text, not a list")


def test_wrong_type_text_for_number(data_dir):
    line = append_yaml(data_dir / "users.yaml", "- username: counter\n  followers_count: many\n")
    assert_reported(data_dir, "users.yaml", line, "followers_count", "'many' is not a whole number")


def test_wrong_boolean(data_dir):
    line = append_csv(data_dir / "books.csv", enable="maybe")
    assert_reported(data_dir, "books.csv", line, "enable", "'maybe' is not a boolean")


# ---- ids ---------------------------------------------------------------------------

def test_id_not_a_uuid(data_dir):
    line = append_yaml(data_dir / "authors.yaml", "- id: 12345\n  slug: عدد\n  fullName: x\n")
    assert_reported(data_dir, "authors.yaml", line, "id", "'12345' is not a UUID")


def test_id_in_upper_case(data_dir):
    line = append_yaml(data_dir / "authors.yaml", f"- id: {NEW_ID.upper()}\n  slug: بزرگ\n  fullName: x\n")
    assert_reported(data_dir, "authors.yaml", line, "id", "lower case", NEW_ID)


def test_id_used_twice(data_dir):
    path = data_dir / "publishers.csv"
    line = append_csv(path, id=first_id(path), slug="دیگر")
    assert_reported(data_dir, "publishers.csv", line, "id", "used twice in publishers: first on line 2")


def test_derived_id_used_twice(data_dir):
    # Two users without ids and the same username derive the same id.
    line = append_yaml(data_dir / "users.yaml", "- username: hamed-s\n")
    assert_reported(data_dir, "users.yaml", line, "username", "'hamed-s' is already taken by the user on line")


# ---- references ----------------------------------------------------------------------

@pytest.mark.parametrize("field", ["authors", "translators", "publishers", "categories"])
def test_book_reference_to_missing_record(data_dir, field):
    line = append_csv(data_dir / "books.csv", isbn="9780000000001", **{field: MISSING_ID})
    assert_reported(data_dir, "books.csv", line, field, MISSING_ID, "does not exist")


def test_shelf_owner_missing(data_dir):
    line = append_csv(data_dir / "bookshelves.csv", user=MISSING_ID)
    assert_reported(data_dir, "bookshelves.csv", line, "user", f"user {MISSING_ID}, which does not exist")


def test_category_parent_missing(data_dir):
    line = append_yaml(data_dir / "categories.yaml", f"- slug: یتیم\n  name: یتیم\n  parent: {MISSING_ID}\n")
    assert_reported(data_dir, "categories.yaml", line, "parent", MISSING_ID, "does not exist")


def test_category_cycle(data_dir):
    a, b = NEW_ID, MISSING_ID
    line = append_yaml(data_dir / "categories.yaml",
                       f"- id: {a}\n  slug: الف\n  name: الف\n  parent: {b}\n"
                       f"- id: {b}\n  slug: ب\n  name: ب\n  parent: {a}\n")
    assert_reported(data_dir, "categories.yaml", line, "parent", "its own ancestor", "cycle of 2")
    assert_reported(data_dir, "categories.yaml", line + 4, "parent", "its own ancestor")


# ---- usernames -------------------------------------------------------------------------

def test_username_too_long(data_dir):
    line = append_yaml(data_dir / "users.yaml", f"- username: {'a' * 151}\n")
    assert_reported(data_dir, "users.yaml", line, "username", "151 characters long; at most 150")


def test_username_150_characters_is_fine(data_dir):
    append_yaml(data_dir / "users.yaml", f"- username: {'ب' * 150}\n")
    check(data_dir)


def test_username_bad_characters(data_dir):
    line = append_yaml(data_dir / "users.yaml", "- username: \"sara ahmadi!\"\n")
    assert_reported(data_dir, "users.yaml", line, "username", "only letters, digits and @ . + - _")


def test_username_used_twice(data_dir):
    line = append_yaml(data_dir / "users.yaml", f"- id: {NEW_ID}\n  username: reza_k\n")
    assert_reported(data_dir, "users.yaml", line, "username", "'reza_k' is already taken by the user on line 9")


# ---- values ------------------------------------------------------------------------------

def test_isbn_not_digits(data_dir):
    line = append_csv(data_dir / "books.csv", isbn="978-600-1234-56-7")
    assert_reported(data_dir, "books.csv", line, "isbn", "must be digits only")


@pytest.mark.parametrize("field", ["price", "pages", "weight"])
def test_negative_number(data_dir, field):
    line = append_csv(data_dir / "books.csv", **{field: "-5"})
    assert_reported(data_dir, "books.csv", line, field, "-5 is negative")


def test_price_with_decimals(data_dir):
    line = append_csv(data_dir / "books.csv", price="1250.50")
    assert_reported(data_dir, "books.csv", line, "price", "'1250.50' is not a whole number")


def test_created_time_not_iso(data_dir):
    line = append_csv(data_dir / "books.csv", created_time="1400/01/01 10:00")
    assert_reported(data_dir, "books.csv", line, "created_time", "not an ISO 8601 timestamp")


def test_created_time_without_offset(data_dir):
    line = append_csv(data_dir / "books.csv", created_time="2021-03-04T10:20:30")
    assert_reported(data_dir, "books.csv", line, "created_time", "has no UTC offset")


@pytest.mark.parametrize("bad", ["رمان ایرانی", "a/b", "کتاب!", "..", "x\u200cy"])
def test_slug_bad_characters(data_dir, bad):
    line = append_yaml(data_dir / "authors.yaml", f"- slug: \"{bad}\"\n  fullName: x\n")
    assert_reported(data_dir, "authors.yaml", line, "slug", "only letters, digits, '-' and '_'")


def test_image_that_is_not_a_url(data_dir):
    line = append_csv(data_dir / "books.csv", images="cover.jpg")
    assert_reported(data_dir, "books.csv", line, "images", "neither an http(s) URL nor a path")


@pytest.mark.parametrize("image", ['https://"static.example/a.jpg', "https://static.example/جلد.jpg",
                                   "/media/a b.jpg", "https://static.example/a%zz.jpg"])
def test_image_that_the_schemas_would_refuse(data_dir, image):
    """What the input allows never fails the build's own check of the output (format: uri)."""
    line = append_csv(data_dir / "books.csv", images=image)
    assert_reported(data_dir, "books.csv", line, "images", "is not a valid URL: write spaces, quotes")


# ---- site.yaml and files ------------------------------------------------------------------

@pytest.mark.parametrize("url, fragment", [
    ("ftp://ketab.example.ir", "not an absolute http(s) URL"),
    ("ketab.example.ir", "not an absolute http(s) URL"),
    ("https://ketab.example.ir/", "must not end with '/'"),
    ("https://کتاب.example.ir", "is not a valid URL"),
])
def test_base_url_not_absolute_http(data_dir, url, fragment):
    site = data_dir / "site.yaml"
    site.write_text(site.read_text(encoding="utf-8").replace("https://ketab.example.ir", url), encoding="utf-8")
    assert_reported(data_dir, "site.yaml", 2, "base_url", fragment)


def test_bad_page_sizes_and_zone(data_dir):
    (data_dir / "site.yaml").write_text(
        "base_url: https://k.example\npage_sizes: [12, 0]\ntime_zone: Mars/Olympus\n", encoding="utf-8")
    assert_reported(data_dir, "site.yaml", 2, "page_sizes", "positive whole numbers")
    assert_reported(data_dir, "site.yaml", 3, "time_zone", "not an IANA time zone")


def test_both_formats_present(data_dir):
    (data_dir / "authors.csv").write_text("slug,fullName\nx,y\n", encoding="utf-8")
    found = problems_of(data_dir)
    assert any("collection 'authors' comes from authors.yaml and authors.csv" in str(p) for p in found)


def test_no_file_for_a_collection(data_dir):
    (data_dir / "users.yaml").unlink()
    found = problems_of(data_dir)
    assert [str(p) for p in found] == [
        "data/: collection 'users' has no data file: add users.yaml or users.csv"]


def test_csv_row_with_too_many_cells(data_dir):
    path = data_dir / "publishers.csv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + f"{NEW_ID},x,نشر ایکس,تهران, ایران\n", encoding="utf-8")
    assert_reported(data_dir, "publishers.csv", text.count("\n") + 1, "", "has 5 cells but the header has 4")


def test_yaml_syntax_error(data_dir):
    line = append_yaml(data_dir / "users.yaml", "- username: [unclosed\n")
    found = problems_of(data_dir)
    assert any(p.file == "data/users.yaml" and p.line >= line and "not valid YAML" in p.message for p in found)


def test_not_utf8(data_dir):
    (data_dir / "publishers.csv").write_bytes("id,slug,company,info\n,a,نشر,\n".encode("cp1256"))
    assert_reported(data_dir, "publishers.csv", 0, "", "is not UTF-8")


def test_bom_is_allowed(data_dir):
    path = data_dir / "publishers.csv"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    check(data_dir)


# ---- the run as a whole --------------------------------------------------------------------

def test_all_problems_reported_together_in_file_order(data_dir):
    site = data_dir / "site.yaml"
    site.write_text(site.read_text(encoding="utf-8").replace("https://", "ftp://"), encoding="utf-8")
    append_yaml(data_dir / "authors.yaml", "- slug: \"a b\"\n  fullName: x\n")
    append_csv(data_dir / "books.csv", isbn="x1", price="-1")
    append_yaml(data_dir / "users.yaml", f"- username: {'u' * 200}\n")
    with pytest.raises(DataError) as caught:
        check(data_dir)
    report = str(caught.value).splitlines()
    assert report[0] == "5 problems in the catalogue data:"
    assert [line.split(": field ")[1].split("'")[1] for line in report[1:]] == [
        "base_url", "slug", "isbn", "price", "username"]  # by file in build order, then by line


def test_failed_build_leaves_published_site_untouched(data_dir, tmp_path):
    out = tmp_path / "site"
    build(data_dir, out)
    before = site_state(out)
    append_csv(data_dir / "books.csv", isbn="not-an-isbn")
    with pytest.raises(DataError) as caught:
        build(data_dir, out)
    assert "isbn" in str(caught.value)
    assert site_state(out) == before


def test_cache_control_that_cannot_be_a_header(data_dir):
    site = data_dir / "site.yaml"
    site.write_text(site.read_text(encoding="utf-8") + "cache_control: \"no-cache\\\"; evil\"\n", encoding="utf-8")
    assert_reported(data_dir, "site.yaml", 6, "cache_control", "is not a Cache-Control value")


# ---- every required field, in turn (docs/data.md: "Required fields") ------------------------------

REQUIRED = [("authors.yaml", "slug"), ("authors.yaml", "fullName"), ("publishers.csv", "slug"),
            ("publishers.csv", "company"), ("categories.yaml", "slug"), ("categories.yaml", "name"),
            ("books.csv", "title"), ("books.csv", "isbn"), ("books.csv", "price"), ("books.csv", "created_time"),
            ("users.yaml", "username"), ("bookshelves.csv", "user"), ("bookshelves.csv", "title")]
COMPLETE_YAML = {"authors.yaml": {"slug": "تازه", "fullName": "نویسنده‌ی تازه"},
                 "categories.yaml": {"slug": "تازه", "name": "دسته‌ی تازه"},
                 "users.yaml": {"username": "complete.user"}}


@pytest.mark.parametrize("file, field", REQUIRED)
def test_each_required_field_missing(data_dir, file, field):
    if file.endswith(".csv"):
        line = append_csv(data_dir / file, **{field: ""})
    else:
        record = {k: v for k, v in COMPLETE_YAML[file].items() if k != field}
        line = append_yaml(data_dir / file, "- " + "\n  ".join(f"{k}: {v}" for k, v in record.items()) + "\n"
                           if record else "- {}\n")
    assert_reported(data_dir, file, line, field, "is missing: it is required")


# ---- hostile input ------------------------------------------------------------------------

def test_text_of_any_length_builds(data_dir, tmp_path):
    about = "کتابی بلند. " * 30000  # 330 KB, over the 128 KiB a cell Python's csv module allows by default
    append_csv(data_dir / "books.csv", isbn="9780000000001", about=about, title="بلند")
    build(data_dir, tmp_path / "site")
    books = [json.loads(p.read_bytes()) for p in (tmp_path / "site/api/v1/books").glob("*/*.json")]
    assert [b["about"] for b in books if b["title"] == "بلند"] == [about]


@pytest.mark.parametrize("character, name", [("\x00", "a NUL character (U+0000)")])
def test_a_nul_in_csv_text_is_refused(data_dir, character, name):
    line = append_csv(data_dir / "books.csv", about=f"پیش{character}پس")
    assert_reported(data_dir, "books.csv", line, "about", f"holds {name} at character 4")


def test_a_lone_surrogate_in_yaml_text_is_refused(data_dir):
    line = append_yaml(data_dir / "users.yaml", '- username: surrogate\n  bio: "a\\ud800b"\n')
    assert_reported(data_dir, "users.yaml", line + 1, "", "is not valid YAML: found invalid Unicode character escape")


def test_a_lone_surrogate_in_text_is_refused():
    """(What the YAML reader lets through elsewhere, and JSON bodies of writes, meet this.)"""
    with pytest.raises(FieldError, match=r"^holds a lone surrogate \(U\+DC00\) at character 2, "):
        text("a\udc00b")


def test_a_key_given_twice_is_refused(data_dir):
    line = append_yaml(data_dir / "users.yaml", "- username: first\n  bio: a\n  username: second\n")
    assert_reported(data_dir, "users.yaml", line + 2, "", "is not valid YAML",
                    f"the key 'username' is given twice (first on line {line}): keep one")


def test_a_key_given_twice_in_a_nested_mapping(data_dir):
    path = data_dir / "books.yaml"
    (data_dir / "books.csv").unlink()
    path.write_text("- title: t\n  isbn: '1'\n  price: 1\n  created_time: 2020-01-01T00:00:00Z\n"
                    "  images:\n    - image: /a.jpg\n      image: /b.jpg\n", encoding="utf-8")
    assert_reported(data_dir, "books.yaml", 7, "", "the key 'image' is given twice (first on line 6)")


def test_a_key_given_twice_in_site_yaml(data_dir):
    site = data_dir / "site.yaml"
    site.write_text(site.read_text(encoding="utf-8") + "page_sizes: [5]\n", encoding="utf-8")
    found = problems_of(data_dir)
    assert [(p.file, p.field) for p in found] == [("data/site.yaml", "")]
    assert "the key 'page_sizes' is given twice" in found[0].message and found[0].line > 1


@pytest.mark.parametrize("tag", ["!!python/object/apply:os.system ['echo pwned']", "!!python/name:os.system",
                                 "!custom 1"])
def test_a_tag_the_safe_loader_refuses_is_a_problem(data_dir, tag):
    line = append_yaml(data_dir / "users.yaml", f"- username: tagged\n  bio: {tag}\n")
    found = [p for p in problems_of(data_dir) if p.file == "data/users.yaml"]
    assert found and found[0].line == line + 1, found
    assert "is not valid YAML: could not determine a constructor for the tag" in found[0].message


def test_site_yaml_missing(data_dir):
    (data_dir / "site.yaml").unlink()
    assert_reported(data_dir, "site.yaml", 0, "", "is missing: it must at least set base_url")


def test_site_yaml_unknown_key_and_repeated_page_size(data_dir):
    (data_dir / "site.yaml").write_text("base_url: https://a.example\npage_sizes: [12, 24, 12]\ntheme: dark\n",
                                        encoding="utf-8")
    found = {(p.line, p.field, p.message) for p in problems_of(data_dir)}
    assert found == {(3, "theme", "is not a setting; known settings: base_url, cache_control, filters, max_limit, "
                                  "ordering, page_sizes, search, search_normalise, time_zone"),
                     (2, "page_sizes", "[12, 24, 12] lists a page size twice")}


# ---- the quick path of a CSV row --------------------------------------------------------

def test_a_plain_csv_row_is_made_quickly_into_the_record_the_full_check_makes(tmp_path):
    synth.write(tmp_path, 200)
    problems = Problems()
    for collection, source in find_sources(tmp_path, problems).items():
        for line, row in source.rows(problems):
            made = quick(row, collection)
            assert made is not None, (collection, line)
            assert made == _coerce(row, BY_COLLECTION[collection].fields, source, line, problems), (collection, line)
    assert not problems


@pytest.mark.parametrize("change", [{"title": " "}, {"price": "۱۲"}, {"authors": f"{NEW_ID}|"},
                                    {"created_time": "2020-01-01T00:00:00"}])
def test_a_csv_row_needing_care_is_left_to_the_full_check(change):
    row = {"id": NEW_ID, "title": "t", "isbn": "1", "price": "12", "created_time": "2020-01-01T00:00:00Z"}
    assert quick(row, "books") is not None
    assert quick({**row, **change}, "books") is None


@pytest.mark.parametrize("mistake", ["nul", "column"])
def test_a_csv_file_with_a_nul_or_a_column_no_field_is_read_with_care_throughout(tmp_path, mistake):
    """(Asked once a file, as the quick coercion does not look for either in each row.)"""
    synth.write(tmp_path, 20)
    path = tmp_path / "books.csv"
    problems = Problems()
    assert _plain_cells(find_sources(tmp_path, problems)["books"])
    text = path.read_text(encoding="utf-8")
    if mistake == "nul":
        path.write_text(text[:-40] + "\x00" + text[-40:], encoding="utf-8")
    else:
        header, rest = text.split("\n", 1)
        path.write_text(f"{header},extra\n" + rest.replace("\n", ",x\n"), encoding="utf-8")
    source = find_sources(tmp_path, problems)["books"]
    assert not _plain_cells(source)
    assert not _plain_cells(source.parts(2)[1])  # (a part's range, its header given)
