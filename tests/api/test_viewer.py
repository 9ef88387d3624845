"""The HTML view's page (api/viewer.py, api/viewer.html) says what it says of each
collection from the collections' declarations: its heading and the field that names a
record in a list come from catalogue/resources.py, and the page's template names none of
them itself. (How the page behaves in a browser: tests/hosts/test_browser.py.)"""
from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from generator.api import viewer
from generator.api.urls import RESOURCES
from generator.catalogue.settings import Settings

TEMPLATE = resources.files("generator.api").joinpath("viewer.html").read_text(encoding="utf-8")


def page(query: dict | None = None) -> str:
    return viewer.viewer(Settings("https://k.example", (12, 24), "Asia/Tehran", query=query or {})).decode("utf-8")


def script_value(html: str, name: str):
    """The JSON a `var NAME = ...;` line of the page's script holds."""
    found = re.search(rf"^var {name} = (.*?);(?:  //.*)?$", html, re.M)
    assert found, name
    return json.loads(found[1].replace("<\\/", "</"))


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.name)
def test_each_collection_is_shown_by_a_key_of_its_document(resource):
    assert resource.heading.strip() == resource.heading and resource.heading
    assert resource.shown_by in resource.document and resource.shown_by in resource.names


def test_the_headings_are_one_per_collection():
    assert len({r.heading for r in RESOURCES}) == len(RESOURCES)


def test_the_page_takes_its_words_for_each_collection_from_the_declarations():
    html = page()
    labels = script_value(html, "LABELS")
    schema = script_value(html, "SCHEMA")
    assert labels == {**{r.name: r.heading for r in RESOURCES}, schema: viewer.SCHEMA_HEADING}
    assert script_value(html, "SHOWN_BY") == {r.name: r.shown_by for r in RESOURCES}
    assert script_value(html, "CARD") in {r.name for r in RESOURCES}


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.name)
def test_the_template_names_no_collection_of_its_own(resource):
    """No heading, and no URL segment or field as a quoted name, is written into the template:
    a new collection, or a heading changed, needs no edit of it."""
    assert resource.heading not in TEMPLATE
    assert not re.search(rf"""["']{re.escape(resource.name)}["']|\.{re.escape(resource.name)}\b""", TEMPLATE)
    assert not re.search(rf"\brecord\.{re.escape(resource.shown_by)}\b", TEMPLATE)


def test_nothing_in_the_script_ends_it_early():
    """Settings and headings go into the page's <script> as JSON in which no `</` can close
    it early."""
    written = viewer._script_json({"x": "</script><script>alert(1)</script>", "y": "</SCRIPT"})
    assert "</" not in written and json.loads(written.replace("<\\/", "</"))["x"].startswith("</script>")


def test_the_page_holds_the_sites_settings_as_its_script_reads_them():
    """What the page's script is handed, value by value: the site's page sizes in its order
    (the default first), the API's path, the site's search settings as written (a `</` in them
    escaped, not dropped), the collection each filter of a relation lists, the card's
    collection and the OpenAPI document's segment."""
    query = {"search": {"books": ["title", "</script>"]}, "ordering": {"author": ["-name"]}}
    html = page(query)
    assert "<\\/script>" in html and html.count("</script>") == TEMPLATE.count("</script>")
    assert script_value(html, "PAGE_SIZES") == [12, 24]
    assert script_value(html, "API") == "/api/v1/"
    assert script_value(html, "QUERY") == query
    assert script_value(html, "FILTER_TARGETS") == {
        "author": {}, "books": {"authors": "author", "translators": "author", "publishers": "publisher",
                                "categories": "category"},
        "publisher": {}, "category": {}, "user": {}, "bookshelf": {"user": "user"}}
    assert script_value(html, "CARD") == "books"
    assert script_value(html, "SCHEMA") == "schema"
    assert script_value(html, "LABELS")["schema"] == "مستندات API (OpenAPI)"
    assert viewer.viewer(Settings("https://k.example", (24, 12), "Asia/Tehran")).decode("utf-8").count(
        "var PAGE_SIZES = [24, 12];") == 1


def test_the_page_is_utf8_with_persian_as_written():
    """(Not escaped: the headings are read as the page's own text.)"""
    html = viewer.viewer(Settings("https://k.example", (12,), "Asia/Tehran"))
    assert "کتاب‌ها".encode("utf-8") in html


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.name)
def test_every_field_has_a_persian_title_of_its_own(resource):
    """The page calls each field by its title in the record's schema (the search box's label,
    the ordering menu, the filters, the card, the form): every field of the document has
    one, in Persian, and no two of a collection's are alike."""
    titles = viewer.titles()[resource.name]
    assert list(titles) == list(resource.document)
    assert all(re.fullmatch(r"[\u0600-\u06ff\u200c ]+", title) for title in titles.values()), titles
    assert len(set(titles.values())) == len(titles), titles


def test_the_page_holds_the_titles():
    assert script_value(page(), "TITLES") == viewer.titles()
