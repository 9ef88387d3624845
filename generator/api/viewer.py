"""The HTML view of the API: one page, the same for every URL, that a host answers in
place of the JSON to a client whose Accept prefers text/html (DRF's browsable API).

The page asks its own URL for the JSON and shows it (api/viewer.html). One file per
generation instead of an HTML twin of every document: the twins would double the files
a build writes (at ~20,000 files/s, some 50 s more for a million books, a third of the
build), the viewer costs one file.
"""
from __future__ import annotations

import json
from importlib import resources

import jinja2

from ..catalogue.settings import Settings
from .urls import API

_TEMPLATE = jinja2.Template(resources.files(__package__).joinpath("viewer.html").read_text(encoding="utf-8"),
                            undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def viewer(settings: Settings) -> bytes:
    """The page for a site with these settings (its page sizes)."""
    return _TEMPLATE.render(page_sizes=json.dumps(list(settings.page_sizes)),
                            api=json.dumps(f"/{API}/")).encode("utf-8")
