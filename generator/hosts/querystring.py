"""PROVISIONAL (replaced by the query branch): the query-string reading as JavaScript."""
from __future__ import annotations

from .files import templates


def javascript() -> str:
    return templates.get_template("querystring.js.j2").render()
