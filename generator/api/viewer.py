"""The HTML view of the API: one page, the same for every URL, that a host answers in
place of the JSON to a client whose Accept prefers text/html (DRF's browsable API).

The page asks its own URL for the JSON and shows it (api/viewer.html). One file per
generation instead of an HTML twin of every document: the twins would double the files
a build writes (at ~20,000 files/s, some 50 s more for a million books, a third of the
build), the viewer costs one file.

What the page says of each collection (its heading, the field that names a record in a
list) comes from the collections' declarations (catalogue/resources.py), and what it calls
each field (in the search box's label, the ordering menu, the filters, the card and the
form) from the records' JSON Schemas: each property's `title` (schemas/); the page itself
names only the collection whose records get a card (BOOKS) and the OpenAPI document's path.
"""
from __future__ import annotations

import json
from importlib import resources

import jinja2

from ..catalogue.settings import Settings
from ..catalogue.querying import relations
from ..catalogue.resources import BOOKS
from .schemas import load_schemas
from .urls import API, RESOURCES, SCHEMA_PATH

SCHEMA_HEADING = "مستندات API (OpenAPI)"  # the OpenAPI document's heading, at SCHEMA_PATH

_TEMPLATE = jinja2.Template(resources.files(__package__).joinpath("viewer.html").read_text(encoding="utf-8"),
                            undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def viewer(settings: Settings) -> bytes:
    """The page for a site with these settings (its page sizes, its search, ordering and filters)."""
    targets = {r.name: {relation: target.name for relation, target in relations(r).items()} for r in RESOURCES}
    schema = SCHEMA_PATH.removeprefix(f"{API}/").strip("/")
    labels = {**{r.name: r.heading for r in RESOURCES}, schema: SCHEMA_HEADING}
    return _TEMPLATE.render(page_sizes=json.dumps(list(settings.page_sizes)), api=json.dumps(f"/{API}/"),
                            query=_script_json(settings.query),
                            filter_targets=_script_json(targets), labels=_script_json(labels),
                            shown_by=_script_json({r.name: r.shown_by for r in RESOURCES}), titles=_script_json(titles()),
                            card=_script_json(BOOKS.name), schema=_script_json(schema)).encode("utf-8")


def titles() -> dict[str, dict[str, str]]:
    """Each collection's fields, by URL segment, as the page calls them: the title of each
    property of its record's schema."""
    schemas = load_schemas()
    return {r.name: {name: spec["title"] for name, spec in schemas[r.schema]["properties"].items()} for r in RESOURCES}


def _script_json(value) -> str:
    """JSON to write inside a <script>: no `</` can end it early."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")
