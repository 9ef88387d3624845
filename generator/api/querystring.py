"""How a request's query string is read, and how DRF writes its page links (docs/spec/query.md §1).

The reference is a Django service behind WSGI with DRF's LimitOffsetPagination; every
function here answers as that pair does, and `hosts/querystring.py` renders the same
rules for the JavaScript hosts (one golden table checks both).

A query string is taken as received: a str of its bytes, one character per byte
(latin-1), as WSGI and ASGI servers give it. Text holding a character above U+00FF is
taken as its UTF-8 bytes (a server that decoded the request already).

Django reads it twice, by two paths:

- `request.GET` (`parse`): the bytes decoded as UTF-8, or as latin-1 when they are not
  UTF-8, then `parse_qsl(keep_blank_values=True)`, at most 1000 fields.
- the links (`links_query`): DRF starts from `request.build_absolute_uri()`, which
  writes the latin-1 text through `iri_to_uri` (its characters as UTF-8 escapes: raw
  non-ASCII bytes come back as mojibake) and ends the query at a `#`; DRF's
  `replace_query_param` then reads that with `parse_qs` and writes it sorted with
  `urlencode(doseq=True)`.
"""
from __future__ import annotations

import functools

import unicodedata
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode

MAX_FIELDS = 1000  # Django's DATA_UPLOAD_MAX_NUMBER_FIELDS
MAX_DIGITS = 4300  # CPython's int_max_str_digits: int() refuses longer numbers
PAGING = frozenset({"limit", "offset"})
IRI_SAFE = "/#%[]=:;$&()+,!?*@'~"  # what Django's iri_to_uri leaves as it is
ASCII_SPACE = " \t\n\v\f\r"  # int() strips these in ASCII; U+001C..U+001F are isspace() but not stripped


class TooManyFields(ValueError):
    """More fields than Django reads: it answers 400 (TooManyFieldsSent)."""


@dataclass(frozen=True)
class Paging:
    """One request's page as DRF's LimitOffsetPagination gives it. `next` and `previous`
    are what follows the `?` of DRF's links (None: null); `only_paging`: the request names
    no parameter but limit and offset (as its links read the names), so its page is the
    pre-built one of `?limit=…&offset=…`, links included."""
    pairs: list[tuple[str, str]]
    limit: int
    offset: int
    next: str | None
    previous: str | None
    only_paging: bool


def raw_bytes(query: str) -> bytes:
    """The bytes a query string was received as."""
    try:
        return query.encode("latin-1")
    except UnicodeEncodeError:
        return query.encode("utf-8")


def parse(query: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of request.GET, in order; TooManyFields past 1000 fields
    (counted as parse_qsl counts them: one more than the `&`, empty ones included)."""
    raw = raw_bytes(query)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # Django's fallback for misbehaving user agents
    try:
        return parse_qsl(text, keep_blank_values=True, encoding="utf-8", max_num_fields=MAX_FIELDS)
    except ValueError as error:  # (parse_qsl raises nothing else without strict_parsing)
        raise TooManyFields(f"more than {MAX_FIELDS} fields") from error


def last(pairs: list[tuple[str, str]], name: str) -> str | None:
    """The value that counts: the last one given (QueryDict's []), or None."""
    found = None
    for key, value in pairs:
        if key == name:
            found = value
    return found


# ---- int() ---------------------------------------------------------------------------------


def is_space(char: str) -> bool:
    """White space int() strips around a number."""
    return char in ASCII_SPACE if char < "\x80" else char.isspace()


def digit_value(char: str) -> int | None:
    """The value of a decimal digit of any script (Unicode category Nd), as int() reads it."""
    return unicodedata.decimal(char, None)


def read_int(text: str) -> int | None:
    """What int(text) returns, or None where it raises ValueError."""
    body = trimmed(text)
    sign = -1 if body[:1] == "-" else 1
    digits = _ascii_digits(body[1:] if body[:1] in ("+", "-") else body)
    if digits is None or len(digits) > MAX_DIGITS:
        return None
    return sign * int(digits)  # (ASCII digits only, checked above)


def trimmed(text: str) -> str:
    """The text without the white space int() strips around a number."""
    start, stop = 0, len(text)
    while start < stop and is_space(text[start]):
        start += 1
    while stop > start and is_space(text[stop - 1]):
        stop -= 1
    return text[start:stop]


def _ascii_digits(body: str) -> str | None:
    """The digits of body in ASCII; None unless it is digits with single underscores between them."""
    if "" in body.split("_"):  # empty, or an underscore first, last or doubled
        return None
    values = [digit_value(char) for char in body.replace("_", "")]
    return None if None in values else "".join(map(str, values))


# ---- DRF's links ---------------------------------------------------------------------------


def links_query(query: str, limit: int, offset: int | None) -> str:
    """What follows the `?` of DRF's link for this request with `limit` set and `offset` set
    (None: removed): every parameter kept, sorted by name, repeated ones with all their
    values; then `#` and the fragment, where the raw query held a `#` with text after it."""
    return _link(LinkBase.of(query), limit, offset)


@dataclass(frozen=True)
class LinkBase:
    """The request's URL as DRF's links start from it: the parameters as they read them
    back, and the fragment the URL ends with ("": none)."""
    pairs: tuple[tuple[str, str], ...]
    fragment: str

    @classmethod
    @functools.lru_cache(maxsize=256)  # (a page's next and previous start from one request)
    def of(cls, query: str) -> LinkBase:
        uri = quote(raw_bytes(query).decode("latin-1"), safe=IRI_SAFE)  # iri_to_uri(QUERY_STRING)
        part, _, fragment = uri.partition("#")  # urlsplit: `#` is safe in iri_to_uri
        return cls(tuple(parse_qsl(part, keep_blank_values=True)), fragment)


def _link(base: LinkBase, limit: int, offset: int | None) -> str:
    fields: dict[str, list[str]] = {}
    for name, value in base.pairs:  # parse_qs: names in order of first appearance
        fields.setdefault(name, []).append(value)
    fields["limit"] = [str(limit)]
    if offset is None:
        fields.pop("offset", None)
    else:
        fields["offset"] = [str(offset)]
    text = urlencode(sorted(fields.items()), doseq=True)
    return f"{text}#{base.fragment}" if base.fragment else text  # (urlunsplit drops an empty fragment)


# ---- LimitOffsetPagination -----------------------------------------------------------------


def paginate(query: str, default_limit: int, max_limit: int | None, count: int) -> Paging:
    """The page of `count` records this request gets; TooManyFields as parse()."""
    pairs = parse(query)
    limit = limit_of(last(pairs, "limit"), default_limit, max_limit)
    offset = offset_of(last(pairs, "offset"))
    base = LinkBase.of(query)
    following = None if offset + limit >= count else _link(base, limit, offset + limit)
    return Paging(pairs, limit, offset, following, _previous(base, limit, offset), _only_paging(base))


def limit_of(text: str | None, default_limit: int, max_limit: int | None) -> int:
    """get_limit: a positive number, at most max_limit; else the default, which is never clamped."""
    value = None if text is None else read_int(text)
    if value is None or value <= 0:
        return default_limit
    return min(value, max_limit) if max_limit else value  # (DRF: `if cutoff:`, so 0 clamps nothing)


def offset_of(text: str | None) -> int:
    value = None if text is None else read_int(text)
    return 0 if value is None or value < 0 else value


def _previous(base: LinkBase, limit: int, offset: int) -> str | None:
    if offset <= 0:
        return None
    if offset - limit <= 0:
        return _link(base, limit, None)
    return _link(base, limit, offset - limit)


def _only_paging(base: LinkBase) -> bool:
    """Whether the links, which carry every parameter, are those of `?limit=…&offset=…`: then
    so is the page. (request.GET differs from the links' fields at most in its last one, by
    the `#` that ends the query: a value that then reads as no number, or a name ending in
    `#`, which nothing reads.)"""
    return not base.fragment and {name for name, _ in base.pairs} <= PAGING
