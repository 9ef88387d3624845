"""The registry of query backends (api/backends/__init__.py): every backend's readings of
hostile values are those the golden table tests/golden/filters.json holds for their
JavaScript twins (tests/hosts/test_query_js.py checks the twins against it)."""
from __future__ import annotations

import json

from golden_files import FILTERS, filters_table


def test_the_golden_table():
    assert json.loads(FILTERS.read_text(encoding="utf-8")) == filters_table()
