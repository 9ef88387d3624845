"""The registry of query backends (api/backends/__init__.py): every backend's readings of
hostile values are those the golden table tests/golden/filters.json holds for their
JavaScript twins (tests/hosts/test_query_js.py checks the twins against it), and the
queries each draws for `catalogue import --query`'s check of the settings."""
from __future__ import annotations

import json

from generator.catalogue.resources import RESOURCES
from generator.importer.probe import probes
from golden_files import FILTERS, filters_table


def test_the_golden_table():
    assert json.loads(FILTERS.read_text(encoding="utf-8")) == filters_table()


def test_each_backend_draws_its_probes_from_the_records():
    """A filter by the first related record, the first word of each text value of the middle
    record (its own, its related record's; each word once), each field ordered descending."""
    shelf = next(resource for resource in RESOURCES if resource.name == "bookshelf")
    user = "https://x.example/api/v1/user/0f8fad5b-d9cb-469f-a165-70867728950e/"
    documents = [{"url": "https://x.example/api/v1/bookshelf/1/", "title": "Old shelf", "user": None},
                 {"url": "https://x.example/api/v1/bookshelf/2/", "title": "Poems of Hafez",
                  "user": {"url": user, "username": "sara", "first_name": "Sara Ahmadi", "last_name": "Poems",
                           "bio": None}},
                 {"url": "https://x.example/api/v1/bookshelf/3/", "title": "Last", "user": None}]
    assert probes(shelf, documents) == ["user=0f8fad5b-d9cb-469f-a165-70867728950e", "search=Poems", "search=sara",
                                        "search=Sara", "ordering=-title"]
    assert probes(shelf, []) == []
