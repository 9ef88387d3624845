"""A new user or bookshelf from a POST body, as the DRF service made them.

The body is checked field by field with the messages of DRF's serializers (and
Django's validators), then by the build's own rules for the data file, so that
nothing is accepted that the next build would refuse. The record gets its id, is
rendered exactly as the build will publish it, and is appended to its data file.

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
from ..api.urls import BY_COLLECTION, WRITABLE, Urls, detail_path
from ..catalogue import load, records
from ..catalogue.fields import ID_KEYS, NAME_MAX, REFUSED_CHARACTERS, USERNAME_MAX, USERNAME_RE, derived_id
from ..errors import CatalogueError, Problems
from .append import DataFile

# What a POST may give (in the serializer's order), and what it may not, per collection.
FIELDS = {r.collection: writable_fields(r) for r in BY_COLLECTION.values() if r.writable}
READ_ONLY = {r.collection: read_only_fields(r) for r in BY_COLLECTION.values() if r.writable}

REQUIRED = "This field is required."
NULL = "This field may not be null."
BLANK = "This field may not be blank."
NOT_TEXT = "Not a valid string."
NUL = "Null characters are not allowed."
SURROGATE = "Surrogate characters are not allowed: U+{:X}."
TOO_LONG = "Ensure this field has no more than {} characters."
BAD_USERNAME = ("Enter a valid username. This value may contain only letters, numbers, "
                "and @/./+/-/_ characters.")
USERNAME_TAKEN = "A user with that username already exists."
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

    def __init__(self, data_dir: Path, base_url: str | None, journal: Path) -> None:
        self.data_dir = Path(data_dir)
        self.base_url = base_url
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
        names = [load.SITE_FILE] + [f"{c}.{e}" for c in WRITABLE.values() for e in ("yaml", "yml", "csv")]
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
        settings, sources, problems = load.read_catalogue(self.data_dir, self.base_url)
        if settings is None or problems:
            raise Unavailable(_first(problems))
        self.urls = Urls(settings.base_url, settings.links)
        self.renderer = Renderer(settings, self.urls)
        self.files = {c: DataFile(sources[c]) for c in WRITABLE.values()}
        known = records.Known()
        self.usernames: set[str] = set()
        for _line, record in records.records(sources["users"], problems, known):
            if not problems:
                self.renderer.render("users", record)  # (kept, encoded, for the shelves to embed)
                self.usernames.add(record["username"])
        for _ in records.records(sources["bookshelves"], problems, known):
            pass  # (checked, and their ids known)
        if problems:
            raise Unavailable(_first(problems))
        self.known = known
        self._seen = signature

    @property
    def users(self) -> dict:
        """id -> encoded user, of every user."""
        return self.renderer.embedded["users"]

    def _remember(self, collection: str, record: dict) -> None:
        self.known.ids.setdefault(collection, {})[record["id"]] = 0
        if collection == "users":
            self.usernames.add(record["username"])

    # ---- checks ---------------------------------------------------------------------------

    def _check(self, collection: str, body: Any) -> tuple[dict, dict]:
        """The row to append and the record it is; Invalid with every problem of the body."""
        if not isinstance(body, dict):
            kind = type(body).__name__
            raise Invalid({"non_field_errors": [f"Invalid data. Expected a dictionary, but got {kind}."]})
        errors: dict[str, list[str]] = {}
        row: dict[str, Any] = {}
        for name in FIELDS[collection]:
            messages, value = getattr(self, f"_{collection}_{name}")(body)
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
        key = "/".join(row[k] for k in ID_KEYS[collection])
        id = derived_id(collection, key)
        if id in self.known.ids.get(collection, {}):
            if collection == "users":
                raise Invalid({"username": [USERNAME_TAKEN]})
            raise Invalid({"title": ["This user already has a bookshelf with this title."]})
        return id

    def _users_username(self, body: dict) -> tuple[list[str], str | None]:
        messages, value = _text(body, "username", required=True, blank=False)
        if value is None:
            return messages, None
        if not USERNAME_RE.fullmatch(value):
            messages.append(BAD_USERNAME)
        if value in self.usernames:
            messages.append(USERNAME_TAKEN)
        if len(value) > USERNAME_MAX:
            messages.append(TOO_LONG.format(USERNAME_MAX))
        return messages, value

    def _users_first_name(self, body: dict) -> tuple[list[str], str | None]:
        return _limited(body, "first_name", NAME_MAX)

    def _users_last_name(self, body: dict) -> tuple[list[str], str | None]:
        return _limited(body, "last_name", NAME_MAX)

    def _users_bio(self, body: dict) -> tuple[list[str], str | None]:
        return _text(body, "bio")

    def _bookshelves_title(self, body: dict) -> tuple[list[str], str | None]:
        return _text(body, "title", required=True, blank=False)

    def _bookshelves_user(self, body: dict) -> tuple[list[str], str | None]:
        """The owner, by id (a primary key) or by url (a hyperlink), as DRF's related fields."""
        if "user" not in body:
            return [REQUIRED], None
        value = body["user"]
        if value is None:
            return [NULL], None
        if not isinstance(value, str):
            return [f"Incorrect type. Expected pk value, received {type(value).__name__}."], None
        if "/" in value:
            path = urlsplit(value).path
            prefix = urlsplit(self.urls.detail(BY_COLLECTION["users"], "x")).path[:-2]
            if not path.startswith(prefix) or path.count("/", len(prefix)) != 1 or not path.endswith("/"):
                return ["Invalid hyperlink - No URL match."], None
            id = _canonical_uuid(path[len(prefix):-1])
            if id is None or id not in self.users:
                return ["Invalid hyperlink - Object does not exist."], None
            return [], id
        id = _canonical_uuid(value)
        if id is None:
            return [f"“{value}” is not a valid UUID."], None
        if id not in self.users:
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


def _limited(body: dict, name: str, limit: int) -> tuple[list[str], str | None]:
    messages, value = _text(body, name)
    if value is not None and len(value) > limit:
        messages.append(TOO_LONG.format(limit))
    return messages, value


def _canonical_uuid(text: str) -> str | None:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def _first(problems: Problems) -> str:
    return str(problems.items[0]) if problems.items else "the data directory has problems"

