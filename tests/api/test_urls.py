"""The one mapping between a resource or page, its URL and its file, as docs/api.md
("URLs and files") documents it."""
from __future__ import annotations

import pytest

from generator.api.routes import Bodies, resolve
from generator.api.urls import BY_COLLECTION, detail_path, page_path

BOOKS = BY_COLLECTION["books"]


@pytest.mark.parametrize("id", [
    "../../.build/lock", "A3F1C2E4-5B6D-4E7F-8A9B-0C1D2E3F4A5B", "a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b/",
    "a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5", "", "a3f1c2e45b6d4e7f8a9b0c1d2e3f4a5b", "a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b\n",
])
def test_only_a_canonical_uuid_names_a_file(id):
    with pytest.raises(ValueError):
        detail_path(BOOKS, id)


def test_a_detail_lives_in_the_shard_of_its_first_two_characters():
    assert detail_path(BOOKS, "a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b") == (
        "api/v1/books/a3/a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b.json")


@pytest.mark.parametrize("offset", [0, 12, 9996, 10000, 10008, 99996, 100008, 999996, 1000008, 123456792])
def test_every_server_finds_a_page_where_the_build_writes_it(offset):
    """pages/<limit>/<offset // 10000>/<offset>.json, in the build and in the route table
    every server routes by, far past the blocks a million books need."""
    documented = f"api/v1/books/pages/12/{offset // 10000}/{offset}.json"
    assert page_path(BOOKS, 12, offset) == documented
    assert resolve("GET", "/api/v1/books/", f"limit=12&offset={offset}", "", Bodies()).file == documented
