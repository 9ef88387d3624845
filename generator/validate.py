"""Turn raw rows into typed, checked records, applying every rule of data.md.

Each collection is a list of field specs; a row's values go through the same
coercers whether they came from CSV (all text) or YAML (typed scalars). A record
with a bad field is still yielded when its id is sound, so references to it do
not cascade into more, misleading problems; the run fails anyway.
"""
from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

from .errors import Problems
from .load import Source

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


def _schema_pattern(schema: str, *keys: str) -> re.Pattern:
    """A pattern taken from the JSON Schemas, so data rules and schemas never disagree."""
    node = json.loads((SCHEMA_DIR / schema).read_text(encoding="utf-8"))
    for key in keys:
        node = node[key]
    return re.compile(node["pattern"])


UUID_RE = _schema_pattern("defs.json", "$defs", "uuid")
SLUG_RE = _schema_pattern("defs.json", "$defs", "slug")
USERNAME_RE = _schema_pattern("user.json", "properties", "username")
DIGITS_RE = re.compile(r"[0-9]+")
CURRENCY_RE = re.compile(r"[A-Z]{3}")
USERNAME_MAX = 150


class FieldError(ValueError):
    pass


def _describe(value: Any) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "a mapping"}
    return kinds.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "...'"


# ---- coercers: raw value (str from CSV, typed from YAML) -> typed value -----------

def text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # `title: 1984` in YAML is the book, not a number
    raise FieldError(f"must be text, not {_describe(value)}")


def nonempty_text(value: Any) -> str:
    value = text(value)
    if not value.strip():
        raise FieldError("must not be blank")
    return value


def uuid_id(value: Any) -> str:
    value = text(value).strip()
    if UUID_RE.fullmatch(value):
        return value
    if UUID_RE.fullmatch(value.lower()):
        raise FieldError(f"{_shown(value)} must be written in lower case: {value.lower()!r}")
    raise FieldError(f"{_shown(value)} is not a UUID (like 'a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b')")


def slug(value: Any) -> str:
    value = text(value)
    if not SLUG_RE.fullmatch(value):
        raise FieldError(f"{_shown(value)} may hold only letters, digits, '-' and '_'")
    return value


def username(value: Any) -> str:
    value = text(value)
    if len(value) > USERNAME_MAX:
        raise FieldError(f"is {len(value)} characters long; at most {USERNAME_MAX} are allowed")
    if not USERNAME_RE.fullmatch(value):
        raise FieldError(f"{_shown(value)} may hold only letters, digits and @ . + - _")
    return value


def whole(value: Any) -> int:
    if isinstance(value, bool):
        raise FieldError("must be a whole number, not a boolean")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
        number = int(value)
    else:
        raise FieldError(f"{_shown(value)} is not a whole number")
    if number < 0:
        raise FieldError(f"{number} is negative; it must be 0 or more")
    return number


def price(value: Any) -> str:
    return str(whole(value))


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "1", "yes"):
        return True
    if word in ("false", "0", "no"):
        return False
    raise FieldError(f"{_shown(value)} is not a boolean: write true or false")


def isbn(value: Any) -> str:
    value = text(value).strip()
    if not DIGITS_RE.fullmatch(value):
        raise FieldError(f"{_shown(value)} must be digits only")
    return value


def currency(value: Any) -> str:
    value = text(value).strip()
    if not CURRENCY_RE.fullmatch(value):
        raise FieldError(f"{_shown(value)} is not a three-letter currency code like 'IRR'")
    return value


def timestamp(value: Any) -> datetime:
    raw = text(value).strip()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise FieldError(f"{_shown(raw)} is not an ISO 8601 timestamp like '2021-03-04T10:20:30+03:30'")
    if moment.tzinfo is None:
        raise FieldError(f"{_shown(raw)} has no UTC offset: add one, like +03:30 or Z")
    return moment


def _items(value: Any) -> list:
    """A list cell: a YAML list, or text with items separated by '|'."""
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [item.strip() for item in value.split("|") if item.strip()]
    raise FieldError(f"must be a list, not {_describe(value)}")


def id_list(value: Any) -> list[str]:
    ids, bad = [], []
    for item in _items(value):
        try:
            ids.append(uuid_id(item))
        except FieldError:
            bad.append(_shown(item))
    if bad:
        raise FieldError(f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not a UUID")
    return ids


def image_list(value: Any) -> list[dict]:
    """Images as given: [{id, image, type_image_book}]; in CSV only the URLs."""
    images = []
    for item in _items(value):
        if isinstance(item, str):
            item = {"image": item}
        if not isinstance(item, dict):
            raise FieldError(f"each image must be a URL or a mapping, not {_describe(item)}")
        unknown = set(item) - {"id", "image", "type_image_book"}
        if unknown:
            raise FieldError(f"an image has unknown keys {sorted(unknown)}; allowed: id, image, type_image_book")
        url = text(item.get("image") or "").strip()
        if not _is_http_url(url) and not url.startswith("/"):
            raise FieldError(f"image {_shown(url)} is neither an http(s) URL nor a path starting with '/'")
        kind = item.get("type_image_book")
        images.append({
            "id": uuid_id(item["id"]) if item.get("id") is not None else None,
            "image": url,
            "type_image_book": None if kind is None else text(kind),
        })
    return images


_HTTP_URL = re.compile(r"https?://[^\s/?#]+[^\s]*")


def _is_http_url(url: str) -> bool:
    return _HTTP_URL.fullmatch(url) is not None


# ---- collections -----------------------------------------------------------------

@dataclass(frozen=True)
class Field:
    name: str
    coerce: Callable[[Any], Any]
    default: Any = None
    required: bool = False


def F(name, coerce, default=None) -> Field:
    """An optional field; an empty CSV cell or a YAML null gives the default."""
    return Field(name, coerce, default)


def R(name, coerce) -> Field:
    """A required field."""
    return Field(name, coerce, required=True)


SPECS: dict[str, list[Field]] = {
    "authors": [F("id", uuid_id), R("slug", slug), R("fullName", nonempty_text), F("bio", text, "")],
    "publishers": [F("id", uuid_id), R("slug", slug), R("company", nonempty_text), F("info", text, "")],
    "categories": [
        F("id", uuid_id), R("slug", slug), R("name", nonempty_text), F("code", text, ""),
        F("parent", uuid_id),
    ],
    "books": [
        F("id", uuid_id), R("title", nonempty_text), R("isbn", isbn), F("code", text, ""),
        F("code_qoq", text), F("ddc", text, ""), R("price", price),
        F("price_currency", currency, "IRR"), F("pages", whole, 0), F("weight", whole, 0),
        F("about", text, ""), F("comment_for_develop", text, ""), F("enable", boolean, True),
        R("created_time", timestamp), F("authors", id_list, ()), F("translators", id_list, ()),
        F("publishers", id_list, ()), F("categories", id_list, ()), F("images", image_list, ()),
    ],
    "users": [
        F("id", uuid_id), R("username", username), F("first_name", text, ""),
        F("last_name", text, ""), F("bio", text, ""), F("following_count", whole, 0),
        F("followers_count", whole, 0), F("followed", boolean, False),
    ],
    "bookshelves": [F("id", uuid_id), R("user", uuid_id), R("title", nonempty_text)],
}

DERIVED = {"url", "path", "depth", "numchild", "no_child"}
_NAMES = {collection: frozenset(f.name for f in spec) for collection, spec in SPECS.items()}

# What a missing id is derived from (data.md): uuid5(NAMESPACE_URL, "<collection>:<key>"),
# the key being these fields joined by "/".
ID_KEYS: dict[str, tuple[str, ...]] = {
    "authors": ("slug",), "publishers": ("slug",), "categories": ("slug",),
    "books": ("isbn",), "users": ("username",), "bookshelves": ("user", "title"),
}


# Which collection each reference field points into.
REFERENCES: dict[str, dict[str, str]] = {
    "books": {"authors": "authors", "translators": "authors", "publishers": "publishers",
              "categories": "categories"},
    "bookshelves": {"user": "users"},
    "categories": {"parent": "categories"},
}


def derived_id(collection: str, key: str) -> str:
    """str(uuid.uuid5(uuid.NAMESPACE_URL, f"{collection}:{key}")), without its objects."""
    digest = bytearray(hashlib.sha1(_NAMESPACE_URL + f"{collection}:{key}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_NAMESPACE_URL = uuid.NAMESPACE_URL.bytes


@dataclass
class Known:
    """Ids of the collections checked so far, for reference checks, and where each was defined."""
    ids: dict[str, dict[str, int]] = field(default_factory=dict)


ROW = "_row"  # a record's row hash, kept for the next build
REUSED = "_reused"  # a row taken over from the previous build, unchecked and unrendered


def row_hash(row: dict) -> bytes:
    """The identity of a row as written in the input, column names and YAML types
    included (its line number aside): the row as JSON, hashed."""
    try:
        text = orjson.dumps(row)
    except TypeError:  # a YAML integer too large for JSON's 64 bits
        text = repr(row).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def records(source: Source, problems: Problems, known: Known,
            reuse: Callable[[dict, bytes], Any] | None = None) -> Iterator[tuple[int, dict]]:
    """Checked records of one collection, streamed in file order as (line, record).
    reuse(row, hash) may return what the previous build made of an identical row (with
    .id and .username): the row is then taken over as it was, without checking it again."""
    collection = source.collection
    seen: dict[str, int] = {}
    usernames: dict[str, int] = {}
    rows = source.rows(problems)
    if collection == "categories":
        rows = _flatten_children(rows, source, problems)
    for line, row in rows:
        digest = row_hash(row)
        token = reuse(row, digest) if reuse is not None else None
        if token is not None:
            record = {"id": token.id, "username": token.username, REUSED: token, ROW: digest}
        else:
            record = _coerce(row, SPECS[collection], source, line, problems)
            record[ROW] = digest
            if collection == "books":
                for image in record["images"] or ():
                    if image["id"] is None:
                        key = f"{record['id']}/{image['image']}" if record["id"] else None
                        image["id"] = derived_id("images", key) if key else None
        if collection == "users" and record["username"] is not None:
            first = usernames.setdefault(record["username"], line)
            if first != line:
                problems.add(source.name, line, "username",
                             f"{record['username']!r} is already taken by the user on line {first}")
        if not record["id"]:
            continue  # its id could not be worked out; the cause is reported already
        first = seen.setdefault(record["id"], line)
        if first != line:
            problems.add(source.name, line, "id",
                         f"{record['id']} is used twice in {collection}: first on line {first}")
            continue
        if token is None:
            _check_references(record, collection, source, line, problems, known)
        yield line, record
    known.ids[collection] = seen


def check_row(collection: str, row: dict, source: Source, problems: Problems, known: Known,
              line: int = 0) -> dict:
    """One row as the build checks it, its references included (not whether its id or
    username is taken): the record it makes. For a record about to be added."""
    record = _coerce(row, SPECS[collection], source, line, problems)
    if record["id"]:
        _check_references(record, collection, source, line, problems, known)
    return record


def references(row: dict, collection: str) -> list[str]:
    """The ids a row refers to, read leniently (for deciding whether to take it over)."""
    found = []
    for name in REFERENCES.get(collection, {}):
        value = row.get(name)
        try:
            found.extend(_items(value) if name != "user" else [text(value).strip()])
        except FieldError:
            pass
    return [str(v).strip() for v in found]


def _coerce(row: dict, spec: list[Field], source: Source, line: int, problems: Problems):
    names = _NAMES[source.collection]
    if not names.issuperset(row):
        for key in row:
            if key in names or (key == "children" and source.collection == "categories"):
                continue
            if key in DERIVED:
                problems.add(source.name, line, key, "is computed by the build and cannot be given: remove it")
            else:
                problems.add(source.name, line, key,
                             f"is not a field of {source.collection}; known fields: {', '.join(sorted(names))}")
    empty = "" if source.format == "csv" else None  # an empty CSV cell is a missing value
    record: dict[str, Any] = {}
    for f in spec:
        raw = row.get(f.name)
        if raw is None or raw == empty:
            if f.required:
                problems.add(source.name, line, f.name, "is missing: it is required")
            record[f.name] = list(f.default) if isinstance(f.default, tuple) else f.default
            continue
        try:
            record[f.name] = f.coerce(raw)
        except FieldError as exc:
            problems.add(source.name, line, f.name, str(exc))
            record[f.name] = None
    if record["id"] is None and row.get("id") in (None, ""):
        parts = [record[name] for name in ID_KEYS[source.collection]]
        if None not in parts:
            record["id"] = derived_id(source.collection, "/".join(parts))
    return record


def _check_references(record, collection, source, line, problems, known: Known) -> None:
    for name, target in REFERENCES.get(collection, {}).items():
        if target == collection:
            continue  # parents are checked with the whole tree
        ids = known.ids.get(target)
        if ids is None:
            continue  # that collection's file is missing, which is reported once
        values = record[name] if isinstance(record[name], list) else [record[name]]
        for value in values:
            if value is not None and value not in ids:
                problems.add(source.name, line, name, f"refers to {target[:-1]} {value}, which does not exist")


def _flatten_children(rows, source: Source, problems: Problems):
    """Nested YAML categories in top-down order, each child naming its parent."""
    for line, row in rows:
        children = row.pop("children", None)
        yield line, row
        if children is None:
            continue
        if not isinstance(children, list):
            problems.add(source.name, line, "children", "must be a list of categories")
            continue
        parent_id = row.get("id")
        if parent_id in (None, ""):
            try:
                parent_id = derived_id("categories", slug(row.get("slug")))
            except FieldError:
                parent_id = None
        for child_line, child in children:
            given = child.get("parent")
            if given not in (None, "") and given != parent_id:
                problems.add(source.name, child_line, "parent",
                             f"{given} contradicts the enclosing category {parent_id}")
            child["parent"] = parent_id
        yield from _flatten_children(children, source, problems)


def category_tree(source: Source, problems: Problems, known: Known) -> list[tuple[int, dict]]:
    """Categories as (line, record) in file order, with path, depth and numchild
    worked out from the parents; the tree needs them all before the first is done."""
    cats = [(line, rec) for line, rec in records(source, problems, known)]
    by_id = {rec["id"]: (line, rec) for line, rec in cats}
    siblings: dict[str | None, list[str]] = {}
    for line, rec in cats:
        parent = rec["parent"]
        if parent is not None and parent not in by_id:
            problems.add(source.name, line, "parent", f"refers to category {parent}, which does not exist")
            parent = rec["parent"] = None
        siblings.setdefault(parent, []).append(rec["id"])
    for parent, children in siblings.items():
        if len(children) > 9999:
            line = by_id[children[9999]][0]
            problems.add(source.name, line, "parent",
                         "a category can have at most 9999 sub-categories (four digits of its path)")
    for parent, children in siblings.items():
        for position, child in enumerate(children, 1):
            by_id[child][1]["_position"] = position
    paths: dict[str, str | None] = {}  # None: under a cycle, no path
    for line, rec in cats:
        chain, node = [], rec["id"]
        while node is not None and node not in paths and node not in chain:
            chain.append(node)
            node = by_id[node][1]["parent"]
        if node is not None and node in chain:
            cycle = chain[chain.index(node):]
            for member in cycle:
                problems.add(source.name, by_id[member][0], "parent",
                             f"category {member} is its own ancestor (a cycle of {len(cycle)})")
                paths[member] = None
        for member in reversed(chain):
            if member in paths:
                continue
            parent = by_id[member][1]["parent"]
            base = "" if parent is None else paths[parent]
            paths[member] = None if base is None else base + f"{by_id[member][1]['_position']:04d}"
    result = []
    for line, rec in cats:
        del rec["_position"]
        if paths[rec["id"]] is None:
            continue
        rec["path"] = paths[rec["id"]]
        rec["depth"] = len(rec["path"]) // 4
        rec["numchild"] = len(siblings.get(rec["id"], ()))
        result.append((line, rec))
    return result


# ---- site.yaml ---------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    base_url: str
    page_sizes: tuple[int, ...]
    time_zone: str
    cache_control: str = "no-cache"

    @property
    def default_page_size(self) -> int:
        return self.page_sizes[0]

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


SITE_KEYS = {"base_url", "page_sizes", "time_zone", "cache_control"}


def settings(name: str, raw: dict, problems: Problems, base_url: str | None = None) -> Settings | None:
    before = len(problems)
    for key in set(raw) - SITE_KEYS:
        problems.add(name, 0, key, f"is not a setting; known settings: {', '.join(sorted(SITE_KEYS))}")
    url = base_url if base_url is not None else raw.get("base_url")
    if url is None:
        problems.add(name, 0, "base_url", "is missing: set it to the site's address, like https://ketab.example.ir")
    elif not isinstance(url, str) or not _is_http_url(url) or urlsplit(url).query or urlsplit(url).fragment:
        problems.add(name, 0, "base_url", f"{_shown(url)} is not an absolute http(s) URL")
    elif url.endswith("/"):
        problems.add(name, 0, "base_url", f"{url!r} must not end with '/': write {url.rstrip('/')!r}")
    sizes = raw.get("page_sizes", [12])
    if (not isinstance(sizes, list) or not sizes
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes)):
        problems.add(name, 0, "page_sizes", f"{_shown(sizes)} must be a list of positive whole numbers")
    elif len(set(sizes)) != len(sizes):
        problems.add(name, 0, "page_sizes", f"{sizes} lists a page size twice")
    zone = raw.get("time_zone", "Asia/Tehran")
    try:
        ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError):
        problems.add(name, 0, "time_zone", f"{_shown(zone)} is not an IANA time zone like 'Asia/Tehran'")
    cache = raw.get("cache_control", Settings.cache_control)
    if not isinstance(cache, str) or not re.fullmatch(r"[!#%&*+,\-./0-9=A-Z^_`a-z|~ ]+", cache):
        problems.add(name, 0, "cache_control", f"{_shown(cache)} is not a Cache-Control value like 'public, max-age=60'")
    if len(problems) > before:
        return None
    return Settings(url, tuple(sizes), str(zone), cache)
