"""A new record of a writable collection (a user, a bookshelf) from a POST body, as the
DRF service made them.

The body is checked field by field with the messages of DRF's serializers (and
Django's validators), each field as its kind (catalogue/resources.py) asks, then by
the build's own rules for the data file, so that nothing is accepted that the next
build would refuse. The record gets its id, is rendered exactly as the build will
publish it, and is appended to its data file.

`Catalogue` holds what the checks need to know of the data (which users exist, their
usernames and published bytes, which shelves exist) and reads the files again when
anything but itself changed them.
"""
from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..api.meta import read_only_fields, writable_fields
from ..api.render import Renderer
from ..api.urls import BY_COLLECTION, WRITABLE, Resource, Urls, detail_path
from ..catalogue import load, records
from ..catalogue.fields import REFUSED_CHARACTERS, USERNAME_RE, Field, derived_id, text, url_parts, username
from ..catalogue.resources import COLLECTIONS, embeds
from ..errors import CatalogueError, Problems
from .append import DataFile

# What a POST may give (in the serializer's order), and what it may not, per collection.
FIELDS = {r.collection: writable_fields(r) for r in BY_COLLECTION.values() if r.writable}
READ_ONLY = {r.collection: read_only_fields(r) for r in BY_COLLECTION.values() if r.writable}
# What the checks read, in the build's order: the writable collections and those they refer to.
READ = tuple(c for c in COLLECTIONS if c in WRITABLE.values() or any(c in embeds(w) for w in WRITABLE.values()))
# Of those, the ones whose records a new record embeds: rendered as they are read.
RENDERED = tuple(c for c in READ if any(f.to == c and f.embedded for w in WRITABLE.values()
                                        for f in BY_COLLECTION[w].relations))

REQUIRED = "This field is required."
NULL = "This field may not be null."
BLANK = "This field may not be blank."
NOT_TEXT = "Not a valid string."
NUL = "Null characters are not allowed."
SURROGATE = "Surrogate characters are not allowed: U+{:X}."
TOO_LONG = "Ensure this field has no more than {} characters."
BAD_USERNAME = ("Enter a valid username. This value may contain only letters, numbers, "
                "and @/./+/-/_ characters.")
READ_ONLY_FIELD = "This field is read-only."
UNKNOWN_FIELD = "This field is not accepted."


class Invalid(Exception):
    """A body that cannot be written: DRF's 400 body, one list of messages per field."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


class Unavailable(CatalogueError):
    """The data directory cannot take writes until someone fixes it."""


@dataclass(frozen=True)
class Created:
    url: str
    body: bytes  # the detail document the build will publish
    file: str  # where in a generation it will be published


class Catalogue:
    """The data directory as the write path sees it."""

    def __init__(self, data_dir: Path, base_url: str | None, journal: Path, links: str = "api") -> None:
        self.data_dir = Path(data_dir)
        self.base_url = base_url
        self.links = links  # the site's (catalogue build --links): the links of the records it answers
        self.journal = journal
        self._lock = threading.Lock()
        self._seen: tuple | None = None

    def create(self, resource: str, body: Any) -> Created:
        """Check, append durably and return the new record; one at a time."""
        collection = WRITABLE[resource]
        with self._lock:
            self.refresh()
            row, record = self._check(collection, body)
            data = self._render(collection, record)
            file = self.files[collection]
            file.append(file.encode(row), self.journal)
            self._remember(collection, record)
            self._seen = self._signature()  # our own change: nothing to read again
        resource = BY_COLLECTION[collection]
        return Created(self.urls.detail(resource, record["id"]), data, detail_path(resource, record["id"]))

    # ---- what is known of the data ----------------------------------------------------

    def _signature(self) -> tuple:
        names = [load.SITE_FILE] + [f"{c}.{e}" for c in READ for e in ("yaml", "yml", "csv")]
        stats = []
        for name in names:
            try:
                s = os.stat(self.data_dir / name)
                stats.append((name, s.st_ino, s.st_size, s.st_mtime_ns))
            except FileNotFoundError:
                pass
        return tuple(stats)

    def refresh(self) -> None:
        signature = self._signature()
        if signature == self._seen:
            return
        settings, sources, problems = load.read_catalogue(self.data_dir, self.base_url, self.links)
        if settings is None or problems:
            raise Unavailable(_first(problems))
        self.urls = Urls(settings.base_url, settings.links)
        self.renderer = Renderer(settings, self.urls)
        self.files = {c: DataFile(sources[c]) for c in WRITABLE.values()}
        known = records.Known()
        self.taken: dict[str, set[str]] = {c: set() for c in READ}  # the values of each unique field
        for collection in READ:
            unique = BY_COLLECTION[collection].unique
            for _line, record in records.collection_records(sources[collection], problems, known):
                if not problems and collection in RENDERED:
                    self.renderer.render(collection, record)  # (kept, encoded, for new records to embed)
                if not problems and unique is not None:
                    self.taken[collection].add(record[unique])
        if problems:
            raise Unavailable(_first(problems))
        self.known = known
        self._seen = signature

    def _remember(self, collection: str, record: dict) -> None:
        self.known.ids.setdefault(collection, {})[record["id"]] = 0
        unique = BY_COLLECTION[collection].unique
        if unique is not None:
            self.taken[collection].add(record[unique])

    # ---- checks ---------------------------------------------------------------------------

    def _check(self, collection: str, body: Any) -> tuple[dict, dict]:
        """The row to append and the record it is; Invalid with every problem of the body."""
        if not isinstance(body, dict):
            kind = type(body).__name__
            raise Invalid({"non_field_errors": [f"Invalid data. Expected a dictionary, but got {kind}."]})
        errors: dict[str, list[str]] = {}
        row: dict[str, Any] = {}
        resource = BY_COLLECTION[collection]
        for name in FIELDS[collection]:
            messages, value = self._field(resource, resource.field(name), body)
            if messages:
                errors[name] = messages
            elif value is not None:
                row[name] = value
        for name in body:
            if name not in FIELDS[collection]:
                errors[name] = [READ_ONLY_FIELD if name in READ_ONLY[collection] else UNKNOWN_FIELD]
        if errors:
            raise Invalid(errors)
        id = self._new_id(collection, row)
        if self.files[collection].holds_ids:
            row = {"id": id, **row}  # (else the build derives the same id from the row)
        # The build's own rules, last: what it would refuse is refused now.
        problems = Problems()
        record = records.check_row(collection, row, self.files[collection].source, problems, self.known)
        if problems:
            raise Invalid({p.field or "non_field_errors": [p.message] for p in problems.items})
        if record["id"] != id:
            raise CatalogueError(f"the build would give the new {collection} record id {record['id']}, not {id}")
        return row, record

    def _new_id(self, collection: str, row: dict) -> str:
        if self.files[collection].holds_ids:
            return str(uuid.uuid4())
        resource = BY_COLLECTION[collection]
        id = derived_id(collection, "/".join(row[k] for k in resource.id_key))
        if id in self.known.ids.get(collection, {}):
            raise Invalid({resource.id_key[-1]: [resource.taken]})
        return id

    def _field(self, resource: Resource, field: Field, body: dict) -> tuple[list[str], str | None]:
        """One field of the body: its messages, and its value when it has one."""
        if field.to is not None:
            return self._related(field, body)
        return self._text_field(resource, field, body)

    def _text_field(self, resource: Resource, field: Field, body: dict) -> tuple[list[str], str | None]:
        """A CharField, with the checks of the model field it writes (a username's letters,
        its being free, the length)."""
        messages, value = _text(body, field.name, required=field.required, blank=field.coerce is text)
        if value is None:
            return messages, None
        if field.coerce is username and not USERNAME_RE.fullmatch(value):
            messages.append(BAD_USERNAME)
        if field.unique and value in self.taken[resource.collection]:
            messages.append(resource.taken)
        if field.max_length is not None and len(value) > field.max_length:
            messages.append(TOO_LONG.format(field.max_length))
        return messages, value

    def _related(self, field: Field, body: dict) -> tuple[list[str], str | None]:
        """A related record (a shelf's owner), by id (a primary key) or by url (a hyperlink),
        as DRF's related fields."""
        if field.name not in body:
            return ([REQUIRED] if field.required else []), None
        value = body[field.name]
        if value is None:
            return [NULL], None
        if not isinstance(value, str):
            return [f"Incorrect type. Expected pk value, received {type(value).__name__}."], None
        existing = self.known.ids.get(field.to, {})
        if "/" in value:
            parts = url_parts(value)
            path = parts.path if parts is not None else ""  # (a URL urlsplit refuses matches no route)
            prefix = urlsplit(self.urls.detail(BY_COLLECTION[field.to], "x")).path[:-2]
            if not path.startswith(prefix) or path.count("/", len(prefix)) != 1 or not path.endswith("/"):
                return ["Invalid hyperlink - No URL match."], None
            id = _canonical_uuid(path[len(prefix):-1])
            if id is None or id not in existing:
                return ["Invalid hyperlink - Object does not exist."], None
            return [], id
        id = _canonical_uuid(value)
        if id is None:
            return [f"“{value}” is not a valid UUID."], None
        if id not in existing:
            return [f'Invalid pk "{value}" - object does not exist.'], None
        return [], id

    # ---- rendering ------------------------------------------------------------------------

    def _render(self, collection: str, record: dict) -> bytes:
        rendered = self.renderer.render(collection, record)
        if rendered is None:
            raise CatalogueError(f"a checked {collection} record could not be rendered")
        return rendered[1]


def _text(body: dict, name: str, required: bool = False, blank: bool = True) -> tuple[list[str], str | None]:
    """A CharField: numbers become text, surrounding whitespace is trimmed."""
    if name not in body:
        return ([REQUIRED] if required else []), None
    value = body[name]
    if value is None:
        return [NULL], None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return [NOT_TEXT], None
    value = str(value).strip()
    if not value and not blank:
        return [BLANK], None
    refused = REFUSED_CHARACTERS.search(value)
    if refused:
        return [NUL if refused[0] == "\x00" else SURROGATE.format(ord(refused[0]))], None
    return [], value


def _canonical_uuid(text: str) -> str | None:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def _first(problems: Problems) -> str:
    return str(problems.items[0]) if problems.items else "the data directory has problems"

