"""The rules of docs/spec/data.md for one value, and what a field of a collection is.

Each collection (resources.py) is a list of fields; a row's values go through the same
coercers whether they came from CSV (all text) or YAML (typed scalars). The
patterns of ids, slugs and usernames are read from the JSON Schemas, so that the
data rules and the schemas of the published documents never disagree.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Callable
from urllib.parse import SplitResult, urlsplit



def _schema_dir() -> Path:
    """The JSON Schemas: catalogue/schemas/ inside an installed package (the package's build
    copies them there from the project's schemas/, their one source), else a checkout's schemas/."""
    shipped = resources.files(__package__) / "schemas"
    if isinstance(shipped, Path) and shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "schemas"


SCHEMA_DIR = _schema_dir()


def _schema_pattern(schema: str, *keys: str) -> re.Pattern:
    """A pattern taken from the JSON Schemas, so data rules and schemas never disagree."""
    node = json.loads((SCHEMA_DIR / schema).read_text(encoding="utf-8"))
    for key in keys:
        node = node[key]
    return re.compile(node["pattern"])


UUID_RE = _schema_pattern("defs.json", "$defs", "uuid")
SLUG_RE = _schema_pattern("defs.json", "$defs", "slug")
USERNAME_RE = _schema_pattern("user.json", "properties", "username")
_UUID_BARE = UUID_RE.pattern.removeprefix("^").removesuffix("$")  # (fullmatch anchors it)
# UUID_RE for fullmatch, without the ^ and $ that cost Python's re a sixth more of its
# instructions (a test made for every id read and every file named).
_UUID_WHOLE = re.compile(_UUID_BARE)
is_uuid = _UUID_WHOLE.fullmatch  # whether a text is a canonical UUID
DIGITS_RE = re.compile(r"[0-9]+")
CURRENCY_RE = re.compile(r"[A-Z]{3}")
USERNAME_MAX = 150  # as Django's User
NAME_MAX = 150  # first_name and last_name, as Django's User


class FieldError(ValueError):
    pass


def _describe(value: Any) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "a mapping"}
    return kinds.get(type(value), type(value).__name__)


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "...'"


# ---- coercers: raw value (str from CSV, typed from YAML) -> typed value -----------

# What DRF's CharField refuses in any text: NUL (ProhibitNullCharactersValidator) and lone
# surrogates, which are not Unicode text (ProhibitSurrogateCharactersValidator).
REFUSED_CHARACTERS = re.compile("[\x00\ud800-\udfff]")


def text(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # `title: 1984` in YAML is the book, not a number
    if not isinstance(value, str):
        raise FieldError(f"must be text, not {_describe(value)}")
    refused = REFUSED_CHARACTERS.search(value)
    if refused:
        what = "a NUL character" if refused[0] == "\x00" else "a lone surrogate"
        raise FieldError(f"holds {what} (U+{ord(refused[0]):04X}) at character {refused.start() + 1}, "
                         "which text may not contain: remove it")
    return value


def nonempty_text(value: Any) -> str:
    value = text(value)
    if not value.strip():
        raise FieldError("must not be blank")
    return value


def uuid_id(value: Any) -> str:
    value = text(value).strip()
    if is_uuid(value):
        return value
    if is_uuid(value.lower()):
        raise FieldError(f"{shown(value)} must be written in lower case: {value.lower()!r}")
    raise FieldError(f"{shown(value)} is not a UUID (like 'a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b')")


def slug(value: Any) -> str:
    value = text(value)
    if not SLUG_RE.fullmatch(value):
        raise FieldError(f"{shown(value)} may hold only letters, digits, '-' and '_'")
    return value


def username(value: Any) -> str:
    value = text(value)
    if len(value) > USERNAME_MAX:
        raise FieldError(f"is {len(value)} characters long; at most {USERNAME_MAX} are allowed")
    if not USERNAME_RE.fullmatch(value):
        raise FieldError(f"{shown(value)} may hold only letters, digits and @ . + - _")
    return value


def whole(value: Any) -> int:
    """A count or a price: a YAML integer, or text as DRF's IntegerField reads it (int()'s
    rules: any script's decimal digits, ۶۸۰۰۰۰ or ٦٨٠٠٠٠ as well as 680000, an optional sign,
    whitespace around, `_` between digits); 0 or more."""
    if isinstance(value, bool):
        raise FieldError("must be a whole number, not a boolean")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        number = _integer(value)
    elif isinstance(value, float):
        raise FieldError(f"{value} is not a whole number{_DECIMAL_FIX}")
    else:
        raise FieldError(f"{shown(value)} is not a whole number{_NOT_WHOLE_FIX}")
    if number < 0:
        raise FieldError(f"{number} is negative; it must be 0 or more")
    return number


# What separates thousands or decimals in numbers as people write them: Latin, Persian and
# Arabic (U+066C, U+066B), and the apostrophe and spaces some locales use.
_SEPARATORS = re.compile(r"(?<=\d)[,.٬٫'’ \u00a0\u202f](?=\d)")
_NOT_WHOLE_FIX = ": write digits only, like 680000 or ۶۸۰۰۰۰"
_DECIMAL_FIX = ": write it without a decimal part"


def _integer(value: str) -> int:
    try:
        return int(value)  # (base 10: not 0x10, 1e3 nor 1.0)
    except ValueError:
        pass
    separators = dict.fromkeys(_SEPARATORS.findall(value))
    if separators.keys() & {".", "٫"}:
        fix = _DECIMAL_FIX
    elif separators:
        fix = (f": write it without {' and '.join(map(repr, separators))}, "
               f"like {_SEPARATORS.sub('', value).strip()}")
    else:
        fix = _NOT_WHOLE_FIX
    raise FieldError(f"{shown(value)} is not a whole number{fix}")


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
    raise FieldError(f"{shown(value)} is not a boolean: write true or false")


def isbn(value: Any) -> str:
    """Decimal digits of any script (۹۷۸۶۰۰...), written in ASCII as the schema asks."""
    value = text(value).strip()
    if DIGITS_RE.fullmatch(value):
        return value
    if value.isdecimal():  # (the digits int() reads: Unicode's Nd, each with its value)
        return "".join(str(unicodedata.decimal(c)) for c in value)
    others = [repr(c) for c in dict.fromkeys(value) if not c.isdecimal()]
    fix = f": remove {', '.join(others[:-1])}{' and ' if len(others) > 1 else ''}{others[-1]}" if others else ""
    raise FieldError(f"{shown(value)} must be digits only{fix}")


def currency(value: Any) -> str:
    value = text(value).strip()
    if not CURRENCY_RE.fullmatch(value):
        raise FieldError(f"{shown(value)} is not a three-letter currency code like 'IRR'")
    return value


def timestamp(value: Any) -> datetime:
    raw = text(value).strip()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise FieldError(f"{shown(raw)} is not an ISO 8601 timestamp like '2021-03-04T10:20:30+03:30'")
    if moment.tzinfo is None:
        raise FieldError(f"{shown(raw)} has no UTC offset: add one, like +03:30 or Z")
    return moment


def items(value: Any) -> list:
    """A list cell: a YAML list, or text with items separated by '|'."""
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [item.strip() for item in value.split("|") if item.strip()]
    raise FieldError(f"must be a list, not {_describe(value)}")


def id_list(value: Any) -> list[str]:
    ids, bad = [], []
    for item in items(value):
        try:
            ids.append(uuid_id(item))
        except FieldError:
            bad.append(shown(item))
    if bad:
        raise FieldError(f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not a UUID")
    return ids


def image_list(value: Any) -> list[dict]:
    """Images as given: [{id, image, type_image_book}]; in CSV only the URLs."""
    images = []
    for item in items(value):
        if isinstance(item, str):
            item = {"image": item}
        if not isinstance(item, dict):
            raise FieldError(f"each image must be a URL or a mapping, not {_describe(item)}")
        unknown = set(item) - {"id", "image", "type_image_book"}
        if unknown:
            raise FieldError(f"an image has unknown keys {sorted(unknown)}; allowed: id, image, type_image_book")
        url = text(item.get("image") or "").strip()
        if not is_http_url(url) and not url.startswith("/"):
            raise FieldError(f"image {shown(url)} is neither an http(s) URL nor a path starting with '/'")
        if not is_uri(_resolved(url)):
            raise FieldError(f"image {shown(url)} is not a valid URL: write spaces, quotes, brackets and "
                             "non-ASCII letters percent-escaped (%20, %22, %D8%AA...)")
        kind = item.get("type_image_book")
        images.append({
            "id": uuid_id(item["id"]) if item.get("id") is not None else None,
            "image": url,
            "type_image_book": None if kind is None else text(kind),
        })
    return images


def _resolved(url: str) -> str:
    """A path resolved against a host, to be checked as a URL."""
    return "https://example.org" + url if url.startswith("/") else url


# A host (its first character not a path, query or fragment) and no white space. (Not written
# [^\s/?#]+[^\s]*, the same URLs: \S costs Python's re a fourth fewer instructions than [^\s].)
_HTTP_URL = re.compile(r"https?://[^\s/?#]\S*")


def is_http_url(url: str) -> bool:
    return _HTTP_URL.fullmatch(url) is not None


def url_parts(url: str) -> SplitResult | None:
    """A URL's parts (urlsplit's); None where urlsplit refuses it: a host with a [ or ] unmatched,
    which it takes for a broken IPv6 address (an input's mistake, to be worded, not a crash)."""
    try:
        return urlsplit(url)
    except ValueError:
        return None


@functools.cache
def _uri_checker():
    """RFC 3986, as the schemas check a URL field of the output (format "uri"): the same checker,
    so that what the input allows never fails the build's own checks. Made when first needed:
    a server or write service that never reads a URL field does not load jsonschema-rs."""
    import jsonschema_rs

    return jsonschema_rs.validator_for({"type": "string", "format": "uri"}, validate_formats=True)


def is_uri(url: str) -> bool:
    return _uri_checker().is_valid(url)


# ---- quick coercers: a CSV cell (text without NUL) -> typed value ----------------
# A million-book build coerces twenty million cells, nearly all of them plainly valid.
# Each quick coercer takes the plain case in a step or two and raises (anything) on
# every other, which the coercer above then reads and, when it is wrong, words. On a
# cell it accepts, a quick coercer gives what its coercer gives (tests/catalogue/test_fields.py).


def _quick_nonempty_text(value: str) -> str:
    if value.strip():
        return value
    raise FieldError


def _quick_pattern(pattern: re.Pattern) -> Callable[[str], str]:
    match = pattern.fullmatch

    def quick(value: str) -> str:
        if match(value):
            return value
        raise FieldError
    return quick


def _quick_username(value: str) -> str:
    if len(value) <= USERNAME_MAX and USERNAME_RE.fullmatch(value):
        return value
    raise FieldError


def _quick_whole(value: str) -> int:
    if value.isdigit() and value.isascii():  # (str.isdigit alone takes ۱۲ and ¹)
        return int(value)
    raise FieldError


def _quick_price(value: str) -> str:
    return str(_quick_whole(value))


_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _quick_boolean(value: str) -> bool:
    return _BOOLEANS[value.lower()]


def _quick_timestamp(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise FieldError
    return moment


_ID_LIST = re.compile(f"{_UUID_BARE}(?:\\|{_UUID_BARE})*").fullmatch  # one match a list, not one an id


def _quick_id_list(value: str) -> list[str]:
    if _ID_LIST(value):
        return value.split("|")
    raise FieldError


def _quick_image_list(value: str) -> list[dict]:
    images = []
    uri = _uri_checker().is_valid
    for url in value.split("|"):
        if not (is_http_url(url) or url.startswith("/")) or not uri(_resolved(url)):
            raise FieldError
        images.append({"id": None, "image": url, "type_image_book": None})
    return images


QUICK: dict[Callable[[Any], Any], Callable[[str], Any] | None] = {
    text: None,  # (None: the cell as it is)
    nonempty_text: _quick_nonempty_text, uuid_id: _quick_pattern(_UUID_WHOLE), slug: _quick_pattern(SLUG_RE),
    username: _quick_username, isbn: _quick_pattern(DIGITS_RE), currency: _quick_pattern(CURRENCY_RE),
    whole: _quick_whole, price: _quick_price, boolean: _quick_boolean, timestamp: _quick_timestamp,
    id_list: _quick_id_list, image_list: _quick_image_list,
}


# ---- a field of a collection ------------------------------------------------------

@dataclass(frozen=True)
class Field:
    """One field of a collection's records, as the data files give it (resources.py
    declares each collection's), with what the API says of it where clients may POST it."""
    name: str
    coerce: Callable[[Any], Any]
    default: Any = None
    required: bool = False
    to: str | None = None  # the collection (data file stem) whose ids the field holds
    embedded: bool = False  # the document shows the records `to` names, not their URLs
    unique: bool = False  # no two records of the collection may share a value (besides the id)
    max_length: int | None = None  # the most characters a POST may give (DRF's max_length)
    help_text: str | None = None  # DRF's help_text, shown in the OPTIONS body
    example: str | None = None  # a value the OpenAPI document shows for a POST

    @property
    def quick(self) -> Callable[[str], Any] | None:
        """The coercer's quick twin for a CSV cell (None: the cell is the value)."""
        return QUICK[self.coerce]

    @property
    def many(self) -> bool:
        """Whether the field holds a list of ids (to-many) rather than one (to-one)."""
        return self.coerce is id_list


def F(name, coerce, default=None, **more) -> Field:
    """An optional field; an empty CSV cell or a YAML null gives the default."""
    return Field(name, coerce, default, **more)


def R(name, coerce, **more) -> Field:
    """A required field."""
    return Field(name, coerce, required=True, **more)


def derived_id(collection: str, key: str) -> str:
    """str(uuid.uuid5(uuid.NAMESPACE_URL, f"{collection}:{key}")), without its objects: the
    first 32 hex digits of the SHA-1, the 13th made the version (5) and the 17th the variant
    (10xx in binary), written in the hex digits at once rather than in the bytes."""
    h = hashlib.sha1(_NAMESPACE_URL + f"{collection}:{key}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


_NAMESPACE_URL = uuid.NAMESPACE_URL.bytes
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}  # (RFC 4122's variant bits)
