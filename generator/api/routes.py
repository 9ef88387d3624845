"""The route table: how a request (method, path, query string) maps onto a file of the
published generation, or onto a status and a JSON body (docs/spec/http.md).

Every host derives its routing from here, never from a copy of these rules: the nginx
configuration is rendered from these patterns (its `map`s and `location`s), and the
built-in server calls `resolve()`, which applies the very same patterns. The patterns
are written in the common subset of Python's and PCRE's regular expressions.

Paths are matched after the base_url's path prefix. A collection's query string that
names a page file plainly names it here (api/backends/paging.py's plain_page, the same patterns nginx's
map holds); every other page is put together by the host from the query string, read as
Django reads it, each parameter as its backend reads it (api/backends/).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from . import meta
from .backends import PAGINATION
from .serving import ALLOW_READ, allow
from .urls import API, ID_SHARD, OPENAPI_FILE, RESOURCES, SCHEMA_PATH, VIEWER, Resource, detail_file, root_path

# ---- paths -----------------------------------------------------------------------------

UUID_REST = "[0-9a-f]{%d}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" % (8 - ID_SHARD)
SHARD_DIGITS = f"[0-9a-f]{{{ID_SHARD}}}"
SHARD = f"(?P<catalogue_shard>{SHARD_DIGITS})"
REST = f"(?P<catalogue_rest>{UUID_REST})"
OTHER_ID = "[^/.]+"  # DRF's lookup: one path segment without a dot
NAMES = "|".join(r.name for r in RESOURCES)
SCHEMA = "/" + SCHEMA_PATH[len(API) + 1:-1]  # "/schema": the OpenAPI document's segment
REDIRECT = rf"/{API}(?:/(?:{NAMES})(?:/{OTHER_ID})?|{SCHEMA})?"  # Django's APPEND_SLASH: add the slash
URI_SAFE = "/:@&+$,-_.!~*'()"  # what Django's escape_uri_path leaves as it is in a Location

# DRF's content negotiation between its renderers, JSON then the browsable API (HTML): the
# most specific media ranges of Accept first (q does not count), the first renderer one
# of them names wins. As patterns, tried in order, the first that matches decides: one
# list for every host (nginx's map, the Python and JavaScript routers).
ACCEPT_RANGES = [("application/json", False), ("text/html", True), ("application/*", False), ("text/*", True)]
ACCEPT_AROUND = r"(?:^|,)\s*{}\s*(?:[;,]|$)"  # a media range of Accept, with or without parameters


def accept_pattern(media_range: str) -> str:
    return ACCEPT_AROUND.format(re.escape(media_range))


ACCEPT = [(accept_pattern(media_range), html) for media_range, html in ACCEPT_RANGES]
_ACCEPT = [(re.compile(pattern, re.I), html) for pattern, html in ACCEPT]


def wants_html(accept: str) -> bool:
    """Whether an Accept header makes DRF answer with its HTML view (browsers' do; none,
    */* or application/json get JSON)."""
    return next((html for pattern, html in _ACCEPT if pattern.search(accept)), False)


@dataclass(frozen=True)
class Route:
    """A kind of path: the API root, the OpenAPI document, a collection, a detail of UUID
    form, another id."""
    kind: str  # "root", "schema", "list", "detail" or "other"
    pattern: str  # the whole path after the prefix (a literal for root and list)
    resource: Resource | None = None

    @property
    def allow(self) -> str:
        return allow(self.resource) if self.kind == "list" else ALLOW_READ


def routes() -> list[Route]:
    """In the order they are tried: the literal paths, then the patterns."""
    table = [Route("root", f"/{API}/"), Route("schema", f"/{SCHEMA_PATH}")]
    table += [Route("list", f"/{API}/{r.name}/", r) for r in RESOURCES]
    for r in RESOURCES:
        table.append(Route("detail", f"/{API}/{r.name}/{SHARD}{REST}/", r))
        table.append(Route("other", f"/{API}/{r.name}/{OTHER_ID}/", r))
    return table


ROUTES = routes()
LITERAL_KINDS = ("root", "schema", "list")  # routes whose pattern is a literal path
_LITERAL = {route.pattern: route for route in ROUTES if route.kind in LITERAL_KINDS}
_PATTERNS = [(re.compile(route.pattern), route) for route in ROUTES if route.kind not in LITERAL_KINDS]


# ---- answers ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    """What a host answers. Either a file of the generation (`file`), served with 200 when
    it exists and otherwise with `missing_status` and the body of `missing_file` or
    `body`; or, for a collection (`page`: its URL segment), its pre-built page `file` when
    the query string names one plainly and the build wrote it, else the page the host puts
    together from the query string (api/backends/paging.py, api/assemble.py); or `status` with
    `body`; or a redirect to `location`; or, for a write, the write service's own answer
    (`forward`). `allow` is the Allow header ("": none)."""
    status: int = 200
    body: bytes | None = None
    file: str | None = None
    missing_status: int = 404
    missing_file: str | None = None
    location: str | None = None
    forward: bool = False
    allow: str = ""
    page: str | None = None


class Bodies:
    """The JSON bodies the routes answer with (api/meta.py), encoded once."""

    def __init__(self) -> None:
        self.not_found = meta.NOT_FOUND
        self._options = {"root": meta.options_root(), "schema": meta.options_schema()}
        for r in RESOURCES:
            self._options[("list", r.name)] = meta.options_list(r)
            self._options[("detail", r.name)] = meta.options_detail(r)
        self._no_match = {r.name: meta.no_match(r) for r in RESOURCES}

    def options(self, route: Route) -> bytes:
        if route.kind in ("root", "schema"):
            return self._options[route.kind]
        return self._options[("list" if route.kind == "list" else "detail", route.resource.name)]

    def no_match(self, resource: Resource) -> bytes:
        return self._no_match[resource.name]

    def method_not_allowed(self, method: str) -> bytes:
        return meta.detail(f'Method "{method}" not allowed.')


def resolve(method: str, path: str, query: str, prefix: str, bodies: Bodies, accept: str = "") -> Answer:
    """The answer to a request; `path` is normalised and percent-decoded, `query` is raw
    (as received, read as latin-1), `accept` the Accept header."""
    if not path.startswith(prefix + "/"):
        return Answer(404, bodies.not_found)
    path = path[len(prefix):]
    route = _LITERAL.get(path)
    found = None
    if route is None:
        for pattern, candidate in _PATTERNS:
            if found := pattern.fullmatch(path):
                route = candidate
                break
    if route is None:
        if re.fullmatch(REDIRECT, path):
            return Answer(301, location=prefix + quote(path, safe=URI_SAFE) + "/" + (f"?{query}" if query else ""))
        return Answer(404, bodies.not_found)
    if method == "OPTIONS":
        return Answer(200, bodies.options(route), allow=route.allow)
    if method == "POST" and route.kind == "list" and route.resource.writable:
        return Answer(forward=True, allow=route.allow)
    if method not in ("GET", "HEAD"):
        return Answer(405, bodies.method_not_allowed(method), allow=route.allow)
    if accept and wants_html(accept):  # (it asks this URL for the JSON itself)
        return Answer(file=VIEWER, allow=route.allow)
    if route.kind in ("root", "schema"):  # (missing: a generation built before there was a schema)
        return Answer(file=root_path() if route.kind == "root" else OPENAPI_FILE, body=missing_body(route, bodies),
                      allow=route.allow)
    if route.kind == "list":
        return Answer(file=PAGINATION.plain_page(route.resource.name, query), page=route.resource.name, allow=route.allow)
    if route.kind == "detail":
        shard, rest = found["catalogue_shard"], found["catalogue_rest"]
        return Answer(file=detail_file(route.resource.name, shard, shard + rest),
                      body=missing_body(route, bodies), allow=route.allow)
    return Answer(404, bodies.not_found, allow=route.allow)


# ---- a missing file ---------------------------------------------------------------------

FILE_KINDS = ("root", "schema", "detail")  # routes that name one file, answered 404 when it is missing


def missing_body(route: Route, bodies: Bodies) -> bytes:
    """The body of the 404 when the file a route of FILE_KINDS names is missing: DRF's
    message naming the collection's record for a detail, else the generic one."""
    return bodies.no_match(route.resource) if route.kind == "detail" else bodies.not_found


def missing_files(bodies: Bodies) -> list[tuple[str, bytes]]:
    """What a host that learns only which file is missing answers (CloudFront's S3 origin
    gives a 403 for it): each file a route of FILE_KINDS names, as a pattern of its path in
    the generation, and the body of its 404."""
    made = []
    for route in ROUTES:
        if route.kind not in FILE_KINDS:
            continue
        if route.kind == "detail":
            named = re.escape(detail_file(route.resource.name, "SHARDPART", "IDPART"))
            pattern = named.replace("SHARDPART", SHARD_DIGITS).replace("IDPART", SHARD_DIGITS + UUID_REST)
        else:
            pattern = re.escape(root_path() if route.kind == "root" else OPENAPI_FILE)
        made.append((pattern, missing_body(route, bodies)))
    return made
