"""Hostile strings where people read them (issue: security tests where people read):
script and HTML, an RTL override, a 5,000-character word, quotes and backslashes in every
field the HTML view shows (tests/hostile_text.py writes them into a catalogue). In a real
Chromium, the text the view shows is the text stored and no script runs (a payload would
set window.__pwned and open a dialog); the JSON answers parse back to the same strings; the
OpenAPI document stays valid and carries none of them; the HTML answer never holds them.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from urllib.parse import quote

import pytest
from openapi_spec_validator import validate

from conftest import SAMPLE
from generator import compose
from generator.catalogue.resources import RESOURCES
from hostile_text import PAYLOADS, hostile_catalogue
from query_probes import with_settings
from servers import Server, runnable
from test_browser import browser  # noqa: F401 (the fixture: one Chromium for the module)

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
ALL = "?limit=100"  # (every record of the catalogue on one page: max_limit is 100)
# What a list item of the view shows for a record: its collection's shown_by (catalogue/resources.py).
SHOWN_BY = {r.name: r.shown_by for r in RESOURCES}
# Elements a payload would make if it were read as HTML.
MADE = "#card img, #card svg, #card script, #navigation img, #navigation svg, #navigation script, #body *:not(a)"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The served site of the hostile catalogue (search, ordering and filters on), and what
    was written into each field."""
    work = tmp_path_factory.mktemp("hostile")
    written = hostile_catalogue(SAMPLE, work / "plain")
    data = with_settings(work / "plain", work / "data")
    compose.build(data, work / "site")
    server = Server(work / "site")
    yield server, written
    server.stop()


def answer(server, path: str):
    got = server.get(path, Accept="application/json")
    assert got.status == 200, (path, got.status)
    assert got.header("Content-Type").startswith("application/json")
    return json.loads(got.body)


def records(server, name: str) -> list[dict]:
    page = answer(server, f"/api/v1/{name}/{ALL}")
    assert page["count"] == len(page["results"])
    return page["results"]


# ---- the JSON answers -------------------------------------------------------------------

def test_the_json_answers_parse_back_to_the_strings_written(hostile):
    server, written = hostile
    seen = set()
    for (name, field), values in written.items():
        listed = records(server, name)
        served = [record[field] for record in listed]
        assert not Counter(served) - Counter(values), (name, field)  # (each one as written, byte for byte)
        for record in listed[:3]:
            detail = answer(server, "/" + record["url"].split("/", 3)[3])
            assert detail[field] == record[field]
        seen.update(served)
    assert set(PAYLOADS) <= seen  # (every payload went through whole somewhere)


def test_the_html_answer_never_holds_the_data(hostile):
    server, written = hostile
    books = records(server, "books")
    for path in ("/api/v1/books/", "/api/v1/books/" + books[0]["id"] + "/", "/api/v1/user/"):
        got = server.get(path, Accept=BROWSER)
        assert got.status == 200 and got.header("Content-Type").startswith("text/html")
        assert b"__pwned" not in got.body and books[0]["title"].encode() not in got.body


def test_the_openapi_document_is_valid_and_carries_none_of_them(hostile):
    server, _ = hostile
    got = server.get("/api/v1/schema/", Accept="application/json")
    document = json.loads(got.body)
    validate(document)
    text = got.body.decode("utf-8")
    for payload in PAYLOADS:
        assert payload not in text and json.dumps(payload)[1:-1] not in text
    assert "__pwned" not in text and "<script" not in text.lower() and "onerror" not in text.lower()


def drf_bytes(document) -> bytes:
    """The document as DRF's JSONRenderer writes it (compact, UTF-8 unescaped, U+2028 and
    U+2029 escaped), run in this process."""
    from querystring_reference import _django

    _django()
    from rest_framework.renderers import JSONRenderer

    return JSONRenderer().render(document)


def answers(server) -> list[tuple[str, bytes]]:
    """Every collection's one page of all its records and a detail of each payload's worth of
    its records: (path, the body served)."""
    found = []
    for r in RESOURCES:
        path = f"/api/v1/{r.name}/{ALL}"
        found.append((path, server.get(path, Accept="application/json").body))
        for record in json.loads(found[-1][1])["results"][:len(PAYLOADS)]:
            detail = "/" + record["url"].split("/", 3)[3]
            found.append((detail, server.get(detail, Accept="application/json").body))
    return found


def test_the_json_answers_are_drf_s_bytes(hostile):
    """Byte for byte what DRF's renderer writes of the same document: no HTML escaping
    (`<` stays `<`: JSON is not HTML), U+2028 and U+2029 escaped, control characters as
    `\\u00XX`, nothing else escaped."""
    server, _ = hostile
    found = answers(server)
    for path, body in found:
        assert body == drf_bytes(json.loads(body)), path
    everything = b"".join(body for _, body in found)
    assert b"<script>" in everything and b"\\u2028" in everything and b"\\u0001" in everything
    assert "\u2028".encode() not in everything  # (raw, it would end a line of JavaScript)
    assert not re.search(rb"(?<!\\)(?:\\\\)*\\u003[cCeE]", everything)  # (`<` and `>` are never escaped)


def test_the_json_answers_are_what_the_openapi_document_says(hostile):
    """Each answer is valid against the 200 answer the site's OpenAPI document gives its
    path: no length, pattern or format there refuses a stored string."""
    from jsonschema import Draft202012Validator

    server, _ = hostile
    document = json.loads(server.get("/api/v1/schema/", Accept="application/json").body)
    checked = 0
    for path, body in answers(server):
        route = path.split("?")[0]
        template = route if route in document["paths"] else route.rsplit("/", 2)[0] + "/{id}/"
        schema = document["paths"][template]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        validator = Draft202012Validator({**schema, "components": document["components"]},
                                         format_checker=Draft202012Validator.FORMAT_CHECKER)
        assert list(validator.iter_errors(json.loads(body))) == [], path
        checked += 1
    assert checked > len(RESOURCES) * 2


# ---- the HTML view, in Chromium ---------------------------------------------------------

needs_chromium = pytest.mark.skipif(not runnable("chromium"), reason="chromium is not installed")


@pytest.fixture
def page(browser, hostile):
    """A page that records dialogs (dismissed) and script errors; after the test, nothing
    ran: no dialog, window.__pwned unset."""
    context = browser.new_context(locale="fa-IR", viewport={"width": 1100, "height": 900})
    opened = context.new_page()
    opened.dialogs, opened.errors = [], []

    def dialog(d):
        opened.dialogs.append(d.message)
        d.dismiss()
    opened.on("dialog", dialog)
    opened.on("pageerror", lambda error: opened.errors.append(str(error)))
    yield opened
    assert opened.dialogs == [] and opened.errors == []
    context.close()


def visit(page, server, path: str) -> None:
    """Open a URL of the site in the view and wait for its answer to be shown."""
    page.goto(f"http://127.0.0.1:{server.port}{path}")
    page.wait_for_function("document.getElementById('status').textContent.indexOf('HTTP') === 0")
    page.wait_for_timeout(50)  # (an image's onerror, a script's own run: given their chance)
    assert page.evaluate("window.__pwned") is None, path
    assert page.locator(MADE).count() == 0, path


def shown_body(page):
    """The JSON the view shows, read back from the text on the page."""
    return json.loads(page.locator("#body").text_content())


@needs_chromium
@pytest.mark.parametrize("name", [r.name for r in RESOURCES])
def test_every_list_shows_the_text_stored_and_runs_nothing(page, hostile, name):
    server, _ = hostile
    visit(page, server, f"/api/v1/{name}/{ALL}")
    expected = answer(server, f"/api/v1/{name}/{ALL}")
    page.locator("ol.list-items li").first.wait_for()
    shown = page.locator("ol.list-items li").all_text_contents()
    assert shown == [r[SHOWN_BY[name]] or r["url"] for r in expected["results"]]
    assert shown_body(page) == expected


def card_text(book: dict) -> set[tuple[str, str]]:
    """What a book's card shows, as (field, text) pairs."""
    return {("title", book["title"]), ("about", book["about"]), *(("author", a["fullName"]) for a in book["authors"]),
            *(("publisher", p["company"]) for p in book["publishers"]),
            *(("category", c["name"]) for c in book["categories"])}


def covering(books: list[dict]) -> list[dict]:
    """The books, in order, that show some text in some field of the card that none before
    them did: together they show every text every book's card shows, in each field."""
    shown: set[tuple[str, str]] = set()
    chosen = []
    for book in books:
        if not card_text(book) <= shown:
            chosen.append(book)
            shown |= card_text(book)
    return chosen


@needs_chromium
def test_every_book_card_shows_the_text_stored_and_runs_nothing(page, hostile):
    server, _ = hostile
    books = records(server, "books")
    assert set(PAYLOADS) <= {text for _, text in set().union(*map(card_text, books))}
    for book in covering(books):
        visit(page, server, f"/api/v1/books/{book['id']}/")
        card = page.locator("#card")
        card.locator("h2").wait_for()
        assert card.locator("h2").text_content() == book["title"]
        rows = dict(zip(card.locator("dt").all_text_contents(), card.locator("dd").all(), strict=True))
        assert rows["نویسندگان"].locator("a").all_text_contents() == [a["fullName"] for a in book["authors"]]
        assert rows["ناشران"].locator("a").all_text_contents() == [p["company"] for p in book["publishers"]]
        if book["categories"]:
            assert set(rows["دسته‌ها"].locator("a").all_text_contents()) <= {c["name"] for c in book["categories"]}
        if book["about"].strip():
            assert rows["درباره"].text_content() == book["about"]
        assert shown_body(page) == book


@needs_chromium
@pytest.mark.parametrize("name", [r.name for r in RESOURCES if r.name != "books"])
def test_every_record_shows_the_text_stored_and_runs_nothing(page, hostile, name):
    server, _ = hostile
    for record in records(server, name)[:len(PAYLOADS)]:
        path = "/" + record["url"].split("/", 3)[3]
        visit(page, server, path)
        assert shown_body(page) == record


@needs_chromium
@pytest.mark.parametrize("payload", PAYLOADS[:4] + PAYLOADS[6:])
def test_a_hostile_search_is_shown_as_typed_and_runs_nothing(page, hostile, payload):
    server, _ = hostile
    visit(page, server, f"/api/v1/books/?search={quote(payload)}")
    page.locator("form#query").wait_for()
    assert page.locator("#search").input_value() == payload


@needs_chromium
def test_the_openapi_view_runs_nothing(page, hostile):
    server, _ = hostile
    visit(page, server, "/api/v1/schema/")
