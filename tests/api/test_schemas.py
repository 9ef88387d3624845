"""The JSON Schemas: valid themselves, met by every built file, and enforced by the build."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import orjson
import pytest
from referencing import Registry, Resource

from generator.api import render
from generator.sitebuild import build
from generator.errors import GeneratorBug
from generator.api.schemas import MAX_REPORTED, SchemaChecker, load_schemas
from generator.api.urls import RESOURCES
from conftest import SAMPLE, site_state
from golden_files import served_files

SCHEMAS = load_schemas()


def python_validator(name: str) -> jsonschema.Draft202012Validator:
    """The reference implementation, independent of the build's jsonschema-rs."""
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values())
    return jsonschema.Draft202012Validator(
        SCHEMAS[name], registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_is_valid_draft_2020_12(name):
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[name])
    assert SCHEMAS[name]["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_built_file_meets_its_schema_by_the_reference_validator(tmp_path: Path):
    out = tmp_path / "site"
    build(SAMPLE, out)
    by_name = {r.name: r for r in RESOURCES}
    page, root = python_validator("page"), python_validator("root")
    items = {r.name: python_validator(r.schema) for r in RESOURCES}
    checked = 0
    for path in served_files(out):
        document = json.loads(path.read_bytes())
        parts = path.relative_to(out / "api/v1").parts
        if parts == ("index.json",):
            root.validate(document)
        elif parts[1] == "index.json" or parts[1] == "pages":
            page.validate(document)
            for item in document["results"]:
                items[parts[0]].validate(item)
        else:
            assert parts[0] in by_name
            items[parts[0]].validate(document)
        checked += 1
    assert checked == 138


def good_book() -> dict:
    author = {"url": "https://k.example/api/v1/author/0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c/", "slug": "نویسنده",
              "user": None, "fullName": "نویسنده ", "image_author": None, "bio": ""}
    return {
        "url": "https://k.example/api/v1/books/0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c/",
        "id": "0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c", "publishers": [], "authors": [author],
        "translators": [], "categories": [], "images": [], "title": "کتاب", "isbn": "9786000000000",
        "code": "", "code_qoq": None, "ddc": "", "price_currency": "IRR", "price": "120000", "pages": 0,
        "weight": 0, "about": "", "comment_for_develop": "", "enable": True,
        "created_time": "2021-06-14T09:12:44.512300+04:30"}


BROKEN = {
    "extra field": lambda b: b.update(rating=5),
    "missing field": lambda b: b.pop("isbn"),
    "price as a number": lambda b: b.update(price=120000),
    "price with a leading zero": lambda b: b.update(price="0120"),
    "created_time with a space": lambda b: b.update(created_time="2021-06-14 09:12:44+04:30"),
    "url of another resource": lambda b: b.update(url=b["url"].replace("/books/", "/author/")),
    "id in upper case": lambda b: b.update(id=b["id"].upper()),
    "disabled book": lambda b: b.update(enable=False),
    "embedded author with a user": lambda b: b["authors"][0].update(user={"id": 1}),
    "negative pages": lambda b: b.update(pages=-1),
}


def test_a_good_book_passes():
    checker = SchemaChecker()
    checker.check("book", render.encode(good_book()), "books/x.json")
    checker.raise_if_violated()


@pytest.mark.parametrize("breakage", sorted(BROKEN))
def test_a_broken_book_is_a_violation(breakage):
    book = good_book()
    BROKEN[breakage](book)
    checker = SchemaChecker()
    checker.check("book", render.encode(book), "api/v1/books/0b/x.json")
    with pytest.raises(GeneratorBug) as caught:
        checker.raise_if_violated()
    assert "api/v1/books/0b/x.json at /" in str(caught.value)
    with pytest.raises(jsonschema.ValidationError):  # and the reference validator agrees
        python_validator("book").validate(book)


def test_a_generator_bug_fails_the_build_and_publishes_nothing(tmp_path: Path, monkeypatch):
    out = tmp_path / "site"
    build(SAMPLE, out)
    before = site_state(out)
    original = render.Renderer._document_maker

    def buggy(self, resource):
        make = original(self, resource)

        def publisher(record):
            document = make(record)
            document["company"] = ""  # the schema requires a name
            return document
        return publisher if resource.name == "publisher" else make

    monkeypatch.setattr(render.Renderer, "_document_maker", buggy)
    with pytest.raises(GeneratorBug) as caught:
        build(SAMPLE, out, base_url="https://other.example")  # a change, so that it builds
    message = str(caught.value)
    # Each publisher is reported once, as its own document; the books embedding it do not
    # check it again.
    assert message.startswith("7 schema violations in generated documents (a bug in the generator")
    assert message.count("api/v1/publisher/") == 7 and "at /company:" in message
    assert site_state(out) == before


BROKEN_TITLE = "کتابی که سندش شکسته است"


def break_books_titled(monkeypatch, title: str) -> None:
    """A generator bug for one record: the document of a book of this title gets pages -1."""
    original = render.Renderer._document_maker

    def buggy(self, resource):
        make = original(self, resource)

        def book(record):
            document = make(record)
            if document is not None and document.get("title") == title:
                document["pages"] = -1  # the schema wants 0 or more
            return document
        return book if resource.name == "books" else make

    monkeypatch.setattr(render.Renderer, "_document_maker", buggy)


def test_an_incremental_build_checks_the_records_it_changed(tmp_path: Path, data_dir: Path, monkeypatch):
    """A record changed since the last build so that its document breaks its schema is refused
    by the next (incremental) build as a first build refuses it, and nothing is published."""
    out = tmp_path / "site"
    build(data_dir, out)
    before = site_state(out)
    break_books_titled(monkeypatch, BROKEN_TITLE)
    books = data_dir / "books.csv"
    text = books.read_text(encoding="utf-8")
    assert text.count(",بوف کور,") == 1
    books.write_text(text.replace(",بوف کور,", f",{BROKEN_TITLE},"), encoding="utf-8")
    with pytest.raises(GeneratorBug) as again:
        build(data_dir, out)
    assert site_state(out) == before
    with pytest.raises(GeneratorBug) as first:
        build(data_dir, tmp_path / "fresh")
    for caught in (again, first):
        assert str(caught.value).startswith("1 schema violation in generated documents"), str(caught.value)
        assert "api/v1/books/da/da99fab8-d6b7-4fad-80de-aec36a1b4137.json at /pages:" in str(caught.value)


def test_the_report_names_each_violation_and_counts_the_rest():
    checker = SchemaChecker()
    checker.check("book", render.encode({**good_book(), "pages": -1}), "one.json")
    with pytest.raises(GeneratorBug) as caught:
        checker.raise_if_violated()
    assert str(caught.value) == ("1 schema violation in generated documents (a bug in the generator, not in the "
                                 "data; please report it):\n  one.json at /pages: -1 is less than the minimum of 0")
    checker = SchemaChecker()
    for n in range(MAX_REPORTED + 3):
        checker.check_document("book", {**good_book(), "pages": -1, "weight": -1}, f"{n}.json")
    assert checker.total == 2 * (MAX_REPORTED + 3) and len(checker.violations) == MAX_REPORTED
    message = SchemaChecker.report(checker.violations, checker.total)
    assert message.startswith(f"{2 * (MAX_REPORTED + 3)} schema violations in generated documents")
    assert message.endswith(f"\n  9.json at /weight: -1 is less than the minimum of 0\n  ... and "
                            f"{MAX_REPORTED + 6} more")
    assert SchemaChecker.report(["a", "b"], 2).endswith(":\n  a\n  b")


def test_a_pointer_names_the_place_in_an_embedded_record():
    book = good_book()
    book["authors"][0]["bio"] = 5
    checker = SchemaChecker()
    checker.check_document("book", book, "b.json")
    assert checker.violations == ['b.json at /authors/0/bio: 5 is not of type "string"']


def test_a_record_is_checked_before_it_is_encoded_its_embedded_records_already_checked():
    """check_record: an embedded record (an encoded Fragment, or each of a list of them)
    stands as an object, whatever it holds; the record's own fields are checked."""
    book = good_book()
    book["authors"] = [orjson.Fragment(b'{"not": "an author"}')] * 2
    book["publishers"] = []
    checker = SchemaChecker()
    checker.check_record("book", book, "b.json")
    assert checker.violations == []
    shelf = {"url": "https://k.example/api/v1/bookshelf/0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c/",
             "user": orjson.Fragment(b'{"not": "a user"}'), "title": "t"}
    checker.check_record("bookshelf", shelf, "s.json")
    assert checker.violations == []
    checker.check_record("bookshelf", {**shelf, "title": 5}, "s.json")
    checker.check_record("bookshelf", {**shelf, "user": "a user"}, "s.json")  # (not a record at all)
    checker.check_record("book", {**book, "authors": "none"}, "b.json")
    assert checker.violations == ['s.json at /title: 5 is not of type "string"',
                                  's.json at /user: "a user" is not of type "object"',
                                  'b.json at /authors: "none" is not of type "array"']
    # Checked as a document, an embedded record is checked in full.
    checker = SchemaChecker()
    checker.check_document("bookshelf", {**shelf, "user": {"not": "a user"}}, "s.json")
    assert checker.violations and all(v.startswith("s.json at /user") for v in checker.violations)


def test_formats_are_checked():
    """A link that its pattern lets through (it starts with https://) but that is no URI."""
    image = {"id": "0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c", "image": "https://k.example/a.jpg",
             "type_image_book": None, "book": "0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c"}
    checker = SchemaChecker()
    checker.check_document("image", image, "i.json")
    checker.check_document("image", {**image, "image": "https://k.example/a b[1].jpg"}, "i.json")
    assert checker.violations == ['i.json at /image: "https://k.example/a b[1].jpg" is not a "uri"']


def test_a_validator_for_each_document_schema_and_none_for_the_shared_definitions():
    checker = SchemaChecker()
    assert set(checker.validators) == set(checker.record_validators) == set(SCHEMAS) - {"defs"}
