"""The query parameters of DRF's filter backends, each an object that owns its name and how
a raw value is read (docs/spec/query.md §3–5), as params.py's objects own limit and offset:
`Search` (SearchFilter), `Ordering` (OrderingFilter) and `RelationFilter`
(django-filter's filter on a relation by id). What they read is matched against the
build's query indexes by api/query.py.

Everything here is plain text work, and the first part of hosts/templates/query.js.j2
is its twin for the JavaScript hosts: both are checked against tests/golden/filters.json.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .querystring import digit_value, trimmed
from .render import encode

SPACES = "".join(chr(c) for c in range(0x10000) if chr(c).isspace())  # what Python's \s and strip() take
# Django's smart_split: quoted phrases (with backslash escapes) stay one bit.
SMART_SPLIT = re.compile(r"""((?:[^\s'"]*(?:(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')[^\s'"]*)+)|\S+)""")
MAX_SEARCH = 1000  # characters of a search value: longer ones answer 400 (a cap DRF does not have)
NUL = "\x00"
# DRF's and Django's words, with {value} for the value as given.
NUL_MESSAGE = "Null characters are not allowed."
TOO_LONG = f"Ensure this field has no more than {MAX_SEARCH} characters."
INVALID_UUID = "“{value}” is not a valid UUID."
UNKNOWN_MANY = "Select a valid choice. {value} is not one of the available choices."
UNKNOWN_ONE = "Select a valid choice. That choice is not one of the available choices."

# search_normalise: persian (docs/spec/query.md §3): letters and digits folded, marks dropped, ZWNJ a space.
PERSIAN = {ord("ي"): "ی", ord("ك"): "ک", ord("ة"): "ه", ord("ۀ"): "ه", 0x0640: None, 0x0670: None, 0x200C: " ",
           **{c: None for c in range(0x064B, 0x0660)},
           **{0x06F0 + d: str(d) for d in range(10)}, **{0x0660 + d: str(d) for d in range(10)}}


def fold(text: str, normalise: str | None) -> str:
    """A value or a term as a search compares it: lower-cased as str.lower() does, then
    folded when search_normalise says so."""
    text = text.lower()
    return text.translate(PERSIAN) if normalise == "persian" else text


class Rejected(Exception):
    """A parameter's value DRF answers with 400: `body` is the JSON body."""

    def __init__(self, body: object) -> None:
        super().__init__(body)
        self.body = body

    def encoded(self) -> bytes:
        """The body as DRF's JSONRenderer writes it."""
        return encode(self.body)


_LOOKUP_WORDS = {"": "contains", "^": "starts with", "=": "equals"}


@dataclass(frozen=True)
class Search:
    """SearchFilter's `search`: the last value, split into terms as DRF does."""
    name: str = "search"

    def terms(self, value: str | None) -> list[str]:
        if value is None:
            return []
        if NUL in value:
            raise Rejected([NUL_MESSAGE])
        if len(value) > MAX_SEARCH:
            raise Rejected({self.name: [TOO_LONG]})
        return smart_terms(value)

    def openapi(self, fields: list[str], normalise: str | None) -> dict:
        looks = ", ".join(f"`{f.lstrip('^=')}` ({_LOOKUP_WORDS[f[0] if f[0] in '^=' else '']})" for f in fields)
        folded = (" Before comparing, both sides are folded as search_normalise: persian says (ي/ی, ك/ک, ة/ۀ/ه, "
                  "Persian and Arabic-Indic digits, tatweel and diacritics dropped, ZWNJ a space): a deviation "
                  "from DRF.") if normalise else ""
        return {"name": self.name, "in": "query", "required": False, "schema": {"type": "string"},
                "description": "DRF's SearchFilter: the value is split into terms at white space and commas "
                               "(a quoted phrase stays one term), and a record is listed when every term is "
                               f"found, case ignored, in one of: {looks}. A relation's field matches when one "
                               "related record's does. A NUL character answers 400; so does a value over "
                               f"{MAX_SEARCH} characters (a cap DRF does not have).{folded}"}


def smart_terms(value: str) -> list[str]:
    """DRF's search_smart_split."""
    terms = []
    for bit in SMART_SPLIT.finditer(value):
        term = bit[0].strip(",")
        if term.startswith(('"', "'")) and term[0] == term[-1]:
            quote = term[0]
            terms.append(term[1:-1].replace("\\" + quote, quote).replace("\\\\", "\\"))
        else:
            terms.extend(part.strip() for part in term.split(",") if part)
    return terms


@dataclass(frozen=True)
class Ordering:
    """OrderingFilter's `ordering`: the last value's comma-separated names, those not
    allowed dropped; each (field, descending)."""
    name: str = "ordering"

    def fields(self, value: str | None, allowed: list[str]) -> list[tuple[str, bool]]:
        if not value:
            return []
        found = []
        for term in (part.strip(SPACES) for part in value.split(",")):
            descending = term.startswith("-")
            if (term[1:] if descending else term) in allowed:
                found.append((term[1:] if descending else term, descending))
        return found

    def openapi(self, fields: list[str]) -> dict:
        choices = [name for field in fields for name in (field, f"-{field}")]
        return {"name": self.name, "in": "query", "required": False,
                "schema": {"type": "string", "examples": choices},
                "description": "DRF's OrderingFilter: comma-separated fields, `-` for descending, of "
                               f"{', '.join(f'`{c}`' for c in choices)}; other names are dropped, and none left "
                               "means the collection's own order. Ties keep the collection's own order."}


@dataclass(frozen=True)
class RelationFilter:
    """django-filter's filter on a relation by the related record's id: a to-many one
    takes every value given (any of them), a to-one the last; each must be the id of a
    record (UUIDs read as Django's UUIDField reads them)."""
    name: str
    many: bool

    def ids(self, values: list[str]) -> list[str]:
        """The canonical ids asked for ([]: no filter); Rejected as django-filter rejects."""
        if not self.many:
            values = values[-1:]
            if values in ([], [""]):
                return []
        found = []
        for value in values:
            if NUL in value:
                raise Rejected({self.name: [NUL_MESSAGE]})
            canonical = uuid_text(value)
            if canonical is None:
                raise Rejected({self.name: [INVALID_UUID.format(value=value)]})
            found.append(canonical)
        return found

    def openapi(self, target: str) -> dict:
        given = ("Given more than once, the records related to any of them are listed. Only an id's canonical "
                 "spelling (lower-case, with hyphens) is one of the choices.") if self.many else \
            "Given more than once, the last counts; empty, it filters nothing."
        return {"name": self.name, "in": "query", "required": False, "explode": True,
                "schema": {"type": "array", "items": {"type": "string", "format": "uuid"}} if self.many
                else {"type": "string", "format": "uuid"},
                "description": f"django-filter's filter by a related {target}'s id: the records whose "
                               f"`{self.name}` includes it. {given} An id that is not a UUID, or names no "
                               "record, answers 400 with django-filter's message."}

    def unknown(self, value: str) -> Rejected:
        """The answer when an id names no record."""
        if self.many:
            return Rejected({self.name: [UNKNOWN_MANY.format(value=value)]})
        return Rejected({self.name: [UNKNOWN_ONE]})


def uuid_text(value: str) -> str | None:
    """str(uuid.UUID(hex=value)), or None where that raises: Django's UUIDField.to_python.
    (Thirty-two hex digits, or a sign and thirty-one, are always below 2**128: uuid.UUID's
    range check never refuses what is left here.)"""
    hexed = value.replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "")
    if len(hexed) != 32:
        return None
    number = read_hex(hexed)
    if number is None:
        return None
    text = f"{number:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def read_hex(text: str) -> int | None:
    """What int(text, 16) returns for a text without `-` (uuid_text took them all out), or
    None where it raises: white space around, a `+`, underscores between digits, and the
    decimal digits of any script besides a-f."""
    body = trimmed(text)
    body = body[1:] if body[:1] == "+" else body
    if "" in body.split("_"):
        return None
    digits = ""
    for char in body.replace("_", ""):
        if char in "0123456789abcdefABCDEF":
            digits += char
        elif (value := digit_value(char)) is not None:
            digits += str(value)
        else:
            return None
    return int(digits, 16)
