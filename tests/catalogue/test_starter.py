"""`catalogue init`'s starter shows the product: a new catalogue, built as it is, answers a
search, an ordering and a filter (asked of the built-in server's application in this
process, as a client asks it)."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest

from generator.catalogue.starter import init
from generator.hosts import builtin
from generator.sitebuild import build

SIMIN = "2ccb1280-9e3b-4c9e-b7f0-487044bc15c8"  # سیمین دانشور, an author of the starter's
NAJAF = "6f1c2a9e-5b0d-4c4e-9a57-1d2f3e4a5b6c"  # نجف دریابندری, who translated one of its books


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> builtin.Server:
    work = tmp_path_factory.mktemp("starter")
    data = init(work / "ketab")
    build(data, work / "ketab" / "site")
    return builtin.Server(work / "ketab" / "site")


def get(server: builtin.Server, target: str) -> tuple[int, dict]:
    """The status and JSON body of a GET, sent to the application as uvicorn sends it."""
    path, _, query = target.partition("?")
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": query.encode("ascii"), "root_path": "", "client": ("127.0.0.1", 50000),
             "server": ("127.0.0.1", 8000), "headers": [(b"accept", b"application/json")]}
    got: dict = {"body": b""}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        if message["type"] == "http.response.start":
            got["status"] = message["status"]
        else:
            got["body"] += message.get("body", b"")

    anyio.run(server, scope, receive, send)
    return got["status"], json.loads(got["body"])


def titles(server: builtin.Server, query: str) -> list[str]:
    status, page = get(server, f"/api/v1/books/?{query}")
    assert status == 200, page
    assert page["count"] == len(page["results"])
    return [book["title"] for book in page["results"]]


def test_the_starter_lists_its_three_books_unasked(server):
    assert titles(server, "") == ["بوف کور", "سووشون", "وداع با اسلحه"]


@pytest.mark.parametrize("term, found", [
    ("هدایت", ["بوف کور"]),  # an author's name
    ("خوارزمی", ["سووشون", "وداع با اسلحه"]),  # a publisher's
    ("دریابندری", ["وداع با اسلحه"]),  # a translator's
    ("9786004381185", ["بوف کور"]),  # an ISBN, whole
    ("978600", []),  # (and only whole: "=isbn")
    ("نیست", []),
])
def test_a_new_catalogue_searches(server, term, found):
    assert titles(server, f"search={quote(term)}") == found


def test_a_new_catalogue_orders(server):
    status, page = get(server, "/api/v1/books/?ordering=-price")
    assert status == 200
    assert [book["price"] for book in page["results"]] == ["1250000", "950000", "680000"]
    assert titles(server, "ordering=pages") == ["بوف کور", "سووشون", "وداع با اسلحه"]


def test_a_new_catalogue_filters(server):
    assert titles(server, f"authors={SIMIN}") == ["سووشون"]
    assert titles(server, f"translators={NAJAF}") == ["وداع با اسلحه"]
    assert titles(server, f"authors={SIMIN}&ordering=-price&search={quote('سووشون')}") == ["سووشون"]
