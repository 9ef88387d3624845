"""Values as DRF writes them: timestamps in the site's zone, escapes, documents as their
declarations say."""
from __future__ import annotations

import csv
import io
import json
from zoneinfo import ZoneInfo

import orjson
import pytest

from generator.api.render import Renderer, drf_time, encode
from generator.api.urls import Urls
from generator.sitebuild import build
from generator.catalogue.fields import F, R, nonempty_text, timestamp, uuid_id
from generator.catalogue.resources import URL, Resource
from generator.catalogue.settings import Settings

TEHRAN = ZoneInfo("Asia/Tehran")


@pytest.mark.parametrize("given, zone, written", [
    # Tehran kept daylight saving (+04:30) in summers until 2022
    ("2021-06-14T04:42:44.512300Z", TEHRAN, "2021-06-14T09:12:44.512300+04:30"),
    ("2021-12-14T04:42:44Z", TEHRAN, "2021-12-14T08:12:44+03:30"),
    ("2023-07-21T12:00:00+03:30", TEHRAN, "2023-07-21T12:00:00+03:30"),
    # microseconds only when not zero; +00:00 written as Z
    ("2020-01-01T10:00:00.000000+03:30", ZoneInfo("UTC"), "2020-01-01T06:30:00Z"),
    ("2020-01-01T10:00:00.000001+03:30", ZoneInfo("UTC"), "2020-01-01T06:30:00.000001Z"),
    ("2020-01-01 10:00:00+01:00", ZoneInfo("Europe/London"), "2020-01-01T09:00:00Z"),
])
def test_created_time(given, zone, written):
    assert drf_time(timestamp(given), zone) == written


def test_line_separators_escaped_other_text_unescaped():
    assert encode({"t": "الف\u2028ب\u2029پ\u200c/\"\n"}) == (
        '{"t":"الف\\u2028ب\\u2029پ\u200c/\\"\\n"}'.encode("utf-8"))


def test_a_root_relative_image_resolves_against_the_host_of_a_base_url_with_a_path(data_dir, tmp_path):
    """As a browser resolves `/media/...` on any page of the site: scheme and host only."""
    books = data_dir / "books.csv"
    header, first = list(csv.reader(io.StringIO(books.read_text(encoding="utf-8"))))[:2]
    row = dict(zip(header, first))
    row.update(id="0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c", isbn="9780000000002", images="/media/books/cover.jpg",
               enable="true")
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(row.values())
    books.write_text(books.read_text(encoding="utf-8") + out.getvalue(), encoding="utf-8")
    build(data_dir, tmp_path / "site", base_url="https://ketab.example.ir/catalogue")
    book = json.loads((tmp_path / "site/api/v1/books/0b/0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c.json").read_bytes())
    assert [image["image"] for image in book["images"]] == ["https://ketab.example.ir/media/books/cover.jpg"]
    assert book["url"] == "https://ketab.example.ir/catalogue/api/v1/books/0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c/"


def test_a_relation_is_shown_embedded_or_as_the_urls_of_its_records():
    """DRF's nested serializer or its hyperlinked related field, as the declaration says: a
    collection no sample has (a review, linking its book and embedding its writer)."""
    reviews = Resource(
        "review", "reviews", "Review",
        fields=(F("id", uuid_id), R("book", uuid_id, to="books"), R("user", uuid_id, to="users", embedded=True),
                R("text", nonempty_text)),
        id_key=("book", "user"), document=(URL, "id", "book", "user", "text"),
        heading="نقدها", shown_by="text")
    urls = Urls("https://k.example")
    renderer = Renderer(Settings("https://k.example", (12,), "Asia/Tehran", "public"), urls)
    writer = orjson.Fragment(b'{"username":"sara"}')
    renderer.embedded["users"]["u1"] = writer
    made = renderer._document_maker(reviews)({"id": "r1", "book": "b1", "user": "u1", "text": "خوب"})
    assert made == {"url": "https://k.example/api/v1/review/r1/", "id": "r1",
                    "book": "https://k.example/api/v1/books/b1/", "user": writer, "text": "خوب"}
