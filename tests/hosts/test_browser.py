"""The HTML view as a person uses it, in a real headless Chromium (driven by Playwright):
right to left, page by page, a book's card, a search, an ordering and the filters, labelled
in Persian, and the user form posting with a token until the new user is served; no
console errors and no request to any other site.

Screenshots of the list, a detail, a filtered list and the form go to a temporary folder, or to
docs/screenshots/ for the README and the docs with CATALOGUE_SCREENSHOTS=docs
(`make screenshots`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import ROOT, SAMPLE
from generator.api import viewer
from query_probes import SETTINGS, with_settings
from servers import WriteStack, runnable

pytestmark = pytest.mark.skipif(not runnable("chromium"), reason="chromium is not installed")

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
# Chromium as the machine's closed network wants it: no background requests of its own.
PROVOKED = re.compile(r"Failed to load resource: the server responded with a status of 40[01] ")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("browser")
    data = with_settings(SAMPLE, work / "data")  # (search, ordering and filters on: query_probes.SETTINGS)
    running = WriteStack.start(data, work)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, stack):
    """A page that records console errors and every host it asked."""
    context = browser.new_context(locale="fa-IR", viewport={"width": 1100, "height": 900})
    opened = context.new_page()
    opened.errors, opened.hosts = [], set()
    opened.on("console", lambda message: message.type == "error" and opened.errors.append(message.text))
    opened.on("pageerror", lambda error: opened.errors.append(str(error)))
    opened.on("request", lambda request: opened.hosts.add(urlsplit(request.url).netloc))
    yield opened
    # (Chromium logs each 4xx answer a fetch gets; the form test provokes its 401 and 400)
    assert [e for e in opened.errors if not PROVOKED.match(e)] == []
    assert opened.hosts == {f"127.0.0.1:{stack.server.port}"}  # (fonts, scripts: nothing from elsewhere)
    context.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where the screenshots go: docs/screenshots/ for `make screenshots`, else the test's folder."""
    if os.environ.get("CATALOGUE_SCREENSHOTS") != "docs":
        return tmp_path
    where = ROOT / "docs" / "screenshots"
    where.mkdir(parents=True, exist_ok=True)
    return where


def test_the_list_is_right_to_left_and_goes_page_by_page_to_a_book(page, stack, shots):
    base = f"http://127.0.0.1:{stack.server.port}"
    first = json.loads(stack.server.get("/api/v1/books/").body)["results"][0]
    page.goto(f"{base}/api/v1/books/")
    assert page.evaluate("getComputedStyle(document.documentElement).direction") == "rtl"
    assert page.locator("html").get_attribute("lang") == "fa"
    page.get_by_role("link", name=first["title"], exact=True).first.wait_for()
    assert page.locator("#status").inner_text() == "HTTP 200 OK"
    page.screenshot(path=str(shots / "list.png"), full_page=False)

    page.locator("nav.pages a[rel=next]").click()
    page.wait_for_url("**/api/v1/books/?limit=12&offset=12")
    second = json.loads(stack.server.get("/api/v1/books/?limit=12&offset=12").body)["results"][0]
    page.get_by_role("link", name=second["title"], exact=True).first.click()
    page.wait_for_url(f"**/api/v1/books/{second['id']}/")
    card = page.locator("#card")
    card.wait_for()
    assert card.locator("h2").inner_text() == second["title"]
    assert "ریال" in card.inner_text()
    page.screenshot(path=str(shots / "detail.png"), full_page=False)


def test_a_search_an_ordering_and_the_books_of_an_author(page, stack, shots):
    base = f"http://127.0.0.1:{stack.server.port}"
    page.goto(f"{base}/api/v1/books/?limit=24")
    page.locator("form#query").wait_for()
    page.fill("#search", "هدایت")
    page.select_option("#ordering", "-title")
    page.locator("form#query button").click()
    page.wait_for_url("**/api/v1/books/?limit=24&search=*&ordering=-title")
    expected = json.loads(stack.server.get("/api/v1/books/?search=%D9%87%D8%AF%D8%A7%DB%8C%D8%AA&ordering=-title").body)
    first = expected["results"][0]
    page.get_by_role("link", name=first["title"], exact=True).first.wait_for()
    assert page.locator("#search").input_value() == "هدایت"
    titles = page.locator("ol.list-items li").all_inner_texts()
    assert titles == [book["title"] for book in expected["results"]]

    author = first["authors"][0]["url"].rstrip("/").rsplit("/", 1)[1]
    page.goto(f"{base}/api/v1/author/{author}/")
    page.locator("#related a").first.click()
    page.wait_for_url(f"**/api/v1/books/?authors={author}")
    by_author = json.loads(stack.server.get(f"/api/v1/books/?authors={author}").body)
    page.locator("ol.list-items li").first.wait_for()
    assert page.locator("ol.list-items li").all_inner_texts() == [b["title"] for b in by_author["results"]]


LATIN = re.compile(r"[A-Za-z_]")  # (a field's name where its title belongs)


def test_the_query_form_speaks_persian(page, stack):
    """The search box's label, the ordering menu and the filters' labels name fields by their
    schemas' titles, never by site.yaml's field names."""
    titles = viewer.titles()
    page.goto(f"http://127.0.0.1:{stack.server.port}/api/v1/books/")
    page.locator("form#query").wait_for()
    labels = page.locator("form#query label").all_inner_texts()
    options = page.locator("#ordering option").all_inner_texts()
    assert [text for text in labels + options if LATIN.search(text)] == []
    assert labels[0] == "جست‌وجو در " + "، ".join([titles["books"]["title"], titles["books"]["isbn"],
                                                   titles["author"]["fullName"] + " " + titles["books"]["authors"],
                                                   titles["publisher"]["company"] + " " + titles["books"]["publishers"]])
    assert options[1:3] == [titles["books"]["title"] + " (صعودی)", titles["books"]["title"] + " (نزولی)"]
    assert labels[2:] == [titles["books"][relation] for relation in SETTINGS["filters"]["books"]]


def test_a_filter_offers_the_records_its_collections_search_finds(page, stack, shots):
    """The authors' filter offers the authors the author collection's search finds for what is
    typed, by name; the one chosen is sent as its id. The publishers (not searchable here)
    are offered from their first page."""
    base = f"http://127.0.0.1:{stack.server.port}"
    author = json.loads(stack.server.get("/api/v1/author/?search=%D9%87%D8%AF%D8%A7%DB%8C%D8%AA").body)["results"][0]
    author_id = author["url"].rstrip("/").rsplit("/", 1)[1]
    page.goto(f"{base}/api/v1/books/")
    page.locator("#filter-authors").click()
    page.locator("#filter-authors").press_sequentially("هدایت")
    offered = page.locator("#filter-authors-choices option")
    offered.first.wait_for(state="attached")
    page.wait_for_function("document.querySelectorAll('#filter-authors-choices option').length === %d" % len(
        json.loads(stack.server.get("/api/v1/author/?search=%D9%87%D8%AF%D8%A7%DB%8C%D8%AA&limit=12").body)["results"]))
    assert offered.evaluate_all("(options) => options.map((o) => [o.value, o.textContent])")[0] == [author_id, author["fullName"]]
    page.fill("#filter-authors", author_id)  # (as choosing the offered name does)
    assert page.locator("#filter-authors-chosen").inner_text() == author["fullName"].strip()
    page.locator("form#query button").click()
    page.wait_for_url(f"**/api/v1/books/?authors={author_id}")
    by_author = json.loads(stack.server.get(f"/api/v1/books/?authors={author_id}").body)
    page.locator("ol.list-items li").first.wait_for()
    assert page.locator("ol.list-items li").all_inner_texts() == [b["title"] for b in by_author["results"]]
    page.locator("#filter-authors-chosen", has_text=author["fullName"].strip()).wait_for()  # (named on arrival too)
    page.screenshot(path=str(shots / "filter.png"), full_page=False)

    publishers = json.loads(stack.server.get("/api/v1/publisher/").body)["results"]
    page.locator("#filter-publishers").focus()
    page.wait_for_function("document.querySelectorAll('#filter-publishers-choices option').length === %d" % len(publishers))
    page.fill("#filter-publishers", publishers[-1]["company"])  # (a name typed whole is sent as its id)
    page.locator("form#query button").click()
    publisher_id = publishers[-1]["url"].rstrip("/").rsplit("/", 1)[1]
    page.wait_for_url(f"**/api/v1/books/?authors={author_id}&publishers={publisher_id}")


def test_the_user_form_posts_with_a_token_and_the_user_is_served_after_the_rebuild(page, stack, shots):
    base = f"http://127.0.0.1:{stack.server.port}"
    page.goto(f"{base}/api/v1/user/")
    form = page.locator("form#create")
    form.wait_for()
    page.fill("#field-username", "رها_browser")
    page.fill("#field-first_name", "رها")
    page.fill("#field-token", "not-the-token")
    page.locator("#form").screenshot(path=str(shots / "form.png"))
    form.locator("button").click()
    page.locator("#status", has_text="HTTP 401").wait_for()
    page.fill("#field-token", stack.token)
    page.fill("#field-username", "bad name")
    form.locator("button").click()
    page.locator("#status", has_text="HTTP 400").wait_for()
    assert page.locator("#error-username").inner_text()  # the field's error, beside the field
    page.fill("#field-username", "raha_browser")
    form.locator("button").click()
    page.locator("#status", has_text="HTTP 201").wait_for()
    created = json.loads(page.locator("#body").inner_text())
    deadline = time.monotonic() + 30
    while stack.server.get(urlsplit(created["url"]).path).status != 200:  # (the rebuild publishes it)
        assert time.monotonic() < deadline, "the new user was never published"
        time.sleep(0.2)
    page.goto(f"{base}{urlsplit(created['url']).path}")
    page.locator("#status", has_text="HTTP 200").wait_for()
    assert "raha_browser" in page.locator("#body").inner_text()


def test_the_schema_reads_as_documentation(page, stack):
    page.goto(f"http://127.0.0.1:{stack.server.port}/api/v1/schema/")
    operations = page.locator("#navigation .operation")
    operations.first.wait_for()
    paths = operations.locator("h3").all_inner_texts()
    assert "/api/v1/books/" in paths and "/api/v1/user/" in paths
    assert "POST" in operations.filter(has_text="/api/v1/user/").first.inner_text()
