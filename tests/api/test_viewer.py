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
