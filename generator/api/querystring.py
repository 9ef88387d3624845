"""PROVISIONAL (replaced by the query branch): Django's reading of a query string."""
from __future__ import annotations
from urllib.parse import parse_qsl, urlencode


class TooManyFields(ValueError):
    pass


def parse(query: str) -> list[tuple[str, str]]:
    raw = query.encode("latin-1")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("iso-8859-1")
    try:
        return parse_qsl(text, keep_blank_values=True, encoding="utf-8", max_num_fields=1000)
    except ValueError as exc:
        raise TooManyFields(str(exc)) from exc


def last(pairs, name):
    found = None
    for key, value in pairs:
        if key == name:
            found = value
    return found


def read_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def links_query(pairs, limit, offset):
    d = {}
    for k, v in pairs:
        d.setdefault(k, []).append(v)
    d["limit"] = [str(limit)]
    if offset is None:
        d.pop("offset", None)
    else:
        d["offset"] = [str(offset)]
    return urlencode(sorted(d.items()), doseq=True)
