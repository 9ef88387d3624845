"""The site's OpenAPI 3.1 document, generated, never written by hand: the schemas of
schemas/ (JSON Schema 2020-12, which OpenAPI 3.1 takes as it is) under components, and
every path and method of the route table (routes.py), with the bodies of meta.py, the
headers of serving.py and the fields a POST takes (meta.WRITE_ACTIONS, checked as
writes/create.py checks them), all of it for each collection its declaration
(catalogue/resources.py) describes.

The document is per site: its server is the base_url and the page sizes it names are
site.yaml's. The build writes it into each generation (urls.OPENAPI_FILE), beside the
pages it describes, and every host serves it at urls.SCHEMA_PATH.

Parameters are described as DRF reads them (each by its backend, api/backends/): any limit
and offset are accepted (what is not a usable number means the default), and every page
is answered, pre-built or put together when asked for.
"""
from __future__ import annotations

import re
from typing import Any

import orjson

from ..catalogue.fields import USERNAME_MAX, USERNAME_RE, Field, text, username
from ..catalogue.settings import Settings
from . import meta
from .backends import BACKENDS
from .render import encode
from .routes import ROUTES, Route
from .schemas import load_schemas
from .serving import ALLOW_READ, ALLOW_WRITE, MAX_BODY, headers
from .urls import API, OPENAPI_FILE, RESOURCES, Resource

OPENAPI = "3.1.0"
JSON = "application/json"
SCHEMAS = "#/components/schemas/"
DEFS = "defs"  # schemas/defs.json: shared definitions, each lifted into a component of its own
BEARER = "bearerAuth"

# What str.strip() strips (DRF's CharField trims), spelled out so that every regex dialect
# (Python's, ECMAScript's) reads the same class. Written out rather than drawn from every code
# point at import (a twentieth of a second in every process that builds); tests/api/test_openapi.py
# draws it and compares.
WHITESPACE = ("\\u0009\\u000a\\u000b\\u000c\\u000d\\u001c\\u001d\\u001e\\u001f\\u0020\\u0085\\u00a0\\u1680"
              "\\u2000\\u2001\\u2002\\u2003\\u2004\\u2005\\u2006\\u2007\\u2008\\u2009\\u200a\\u2028\\u2029"
              "\\u202f\\u205f\\u3000")
# NUL, refused in any text (fields.REFUSED_CHARACTERS). So are lone surrogates, which JSON can
# carry escaped; the descriptions say so, since a pattern naming them is not one every validator
# compiles (jsonschema-rs does not).
REFUSED = "\\u0000"


# ---- components: the JSON Schemas ----------------------------------------------------------

def component_name(stem: str) -> str:
    """A record's schema by its file's stem, capitalised: schemas/book.json is Book."""
    return stem[:1].upper() + stem[1:]


def _rewrite(node: Any) -> Any:
    """A schema with its file references ("author.json", "defs.json#/$defs/uuid") pointing
    into components/schemas, and its $id and $schema left out (refs resolve in the document)."""
    if isinstance(node, list):
        return [_rewrite(item) for item in node]
    if not isinstance(node, dict):
        return node
    found = {}
    for key, value in node.items():
        if key in ("$id", "$schema"):
            continue
        if key == "$ref":
            file, _, pointer = value.partition("#")
            stem = file.removesuffix(".json")
            if stem == DEFS:
                value = SCHEMAS + pointer.removeprefix("/$defs/")
            elif not pointer:
                value = SCHEMAS + component_name(stem)
            else:
                raise ValueError(f"cannot place the reference {value!r} into the OpenAPI document")
        found[key] = _rewrite(value)
    return found


def components_schemas() -> dict[str, Any]:
    """Every schema of schemas/ (the definitions of defs.json each a component of its own),
    each collection's page, and the bodies that are not records."""
    found: dict[str, Any] = {}
    for stem, schema in load_schemas().items():
        parts = schema["$defs"].items() if stem == DEFS else [(component_name(stem), schema)]
        for name, part in parts:
            if name in found:
                raise ValueError(f"two schemas would be the component {name!r}")
            found[name] = _rewrite(part)
    for r in RESOURCES:
        found[f"{component_name(r.schema)}Page"] = {
            "description": f"A page of the {r.name} collection.",
            "allOf": [ref("Page"), {"properties": {"results": {"items": ref(component_name(r.schema))}}}]}
    found["Error"] = {"description": "An error in DRF's shape.", "type": "object",
                      "properties": {"detail": {"type": "string"}}, "required": ["detail"],
                      "additionalProperties": False}
    found["FieldErrors"] = {
        "description": "A body that cannot be written, in DRF's shape: each field's messages "
                       "(non_field_errors: the body as a whole).",
        "type": "object", "minProperties": 1,
        "additionalProperties": {"type": "array", "items": {"type": "string"}, "minItems": 1}}
    found["Metadata"] = {
        "description": "DRF's SimpleMetadata: the answer to OPTIONS.", "type": "object",
        "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                       "renders": {"type": "array", "items": {"type": "string"}},
                       "parses": {"type": "array", "items": {"type": "string"}},
                       "actions": {"type": "object"}},
        "required": ["name", "description", "renders", "parses"], "additionalProperties": False}
    found["OpenAPI"] = {"description": "This document.", "type": "object",
                        "properties": {"openapi": {"const": OPENAPI}}, "required": ["openapi", "info", "paths"]}
    return found


def ref(name: str) -> dict[str, str]:
    return {"$ref": SCHEMAS + name}


# ---- what a POST takes ---------------------------------------------------------------------

def _trimmed(inner: str) -> str:
    """A text that, surrounding white space trimmed, is `inner` (a pattern)."""
    return f"^[{WHITESPACE}]*{inner}[{WHITESPACE}]*$"


def _text(most: int | None = None, blank: bool = True) -> str:
    """The pattern of a CharField's value: no NUL nor surrogate, at most `most` characters
    once trimmed, not blank unless `blank`."""
    edge = f"[^{WHITESPACE}{REFUSED}]"
    middle = f"[^{REFUSED}]" + ("*" if most is None else f"{{0,{most - 2}}}")
    inner = f"{edge}(?:{middle}{edge})?"
    return _trimmed(f"(?:{inner})?" if blank else inner)


def _username() -> str:
    letters = re.fullmatch(r"\^(\[.*\])\+\$", USERNAME_RE.pattern)
    if letters is None:
        raise ValueError(f"the username pattern {USERNAME_RE.pattern!r} is not one class of letters")
    return _trimmed(f"{letters[1]}{{1,{USERNAME_MAX}}}")


# A CharField takes numbers too (as their text); a related field takes a string only.
TEXT_TYPES = ["string", "number"]
TEXT_NOTE = ("Surrounding white space is trimmed; a number is taken as its text; NUL and lone surrogates "
             "are refused.")


def write_field(field: Field) -> dict[str, Any]:
    """The schema of a value a POST gives, as the write service checks it: a related
    record's id or url, a username, or a CharField's text."""
    if field.to is not None:
        return {"type": "string"}
    if field.coerce is username:
        return {"type": TEXT_TYPES, "pattern": _username()}
    return {"type": TEXT_TYPES, "pattern": _text(field.max_length, blank=field.coerce is text)}


WRITE_FIELDS = {r.name: {name: write_field(r.field(name)) for name in meta.writable_fields(r)}
                for r in RESOURCES if r.writable}


def request_schema(resource: Resource) -> dict[str, Any]:
    """The body of a POST: the writable fields of DRF's metadata (meta.WRITE_ACTIONS), each as
    the write service checks it; read-only and unknown fields are refused (400)."""
    actions = meta.WRITE_ACTIONS[resource.name]
    properties = {}
    for name in meta.writable_fields(resource):
        spec = actions[name]
        text = WRITE_FIELDS[resource.name][name]["type"] == TEXT_TYPES
        described = " ".join(filter(None, [spec["label"] + ".", spec.get("help_text"), TEXT_NOTE if text else None]))
        properties[name] = {"title": spec["label"], "description": described, **WRITE_FIELDS[resource.name][name]}
    return {"type": "object", "properties": properties,
            "required": [n for n in properties if actions[n]["required"]], "additionalProperties": False}


# ---- answers -----------------------------------------------------------------------------------

def _header(schema: dict, description: str, required: bool = True) -> dict[str, Any]:
    return {"description": description, "required": required, "schema": schema}


HEADERS = "#/components/headers/"


def header_components(settings: Settings) -> dict[str, Any]:
    """Every header an answer may carry, once (answers name them by $ref)."""
    found = {f"Allow-{name}": _header({"const": value}, "The methods of this path.")
             for name, value in (("read", ALLOW_READ), ("write", ALLOW_WRITE))}
    for name, value in headers(settings.cache_control).items():
        found[name] = _header({"const": value}, f"Always {value}.")
    found["ETag"] = _header({"type": "string", "pattern": '^(?:W/)?"[^"]*"$'}, "The file's version.")
    found["Last-Modified"] = _header({"type": "string"}, "When the file was published (an HTTP date).")
    found["Location"] = _header({"type": "string", "format": "uri"}, "The new record's URL.")
    found["WWW-Authenticate"] = _header({"const": 'Bearer realm="api"'}, "The scheme to authenticate with.")
    return found


def answer_headers(route: Route, settings: Settings, *more: str, file: bool = False,
                   routed: bool = True) -> dict[str, Any]:
    """The headers of an answer on this route: those every answer carries (serving.headers),
    Allow (unless not `routed`: a path the route table does not know has none), for a file
    ETag and Last-Modified, and `more`."""
    names = [*headers(settings.cache_control), *(("ETag", "Last-Modified") if file else ()), *more]
    allow = {"$ref": f"{HEADERS}Allow-{'write' if route.allow == ALLOW_WRITE else 'read'}"}
    if not routed:
        allow = _header({"const": route.allow}, "The methods of this path, when the id is one path segment "
                                                "without a dot; otherwise the path is unknown, and has none.",
                        required=False)
    return {"Allow": allow, **{name: {"$ref": HEADERS + name} for name in names}}


def _json(schema: dict) -> dict[str, Any]:
    return {JSON: {"schema": schema}}


def _error(*messages: str) -> dict[str, Any]:
    """An Error whose detail is one of these messages."""
    detail = {"const": messages[0]} if len(messages) == 1 else {"enum": list(messages)}
    return {"allOf": [ref("Error"), {"properties": {"detail": detail}}]}


def _decode(body: bytes) -> Any:
    return orjson.loads(body)


NO_RECORD = "No record has this id (one of UUID form), or it is not an id (a path segment with a dot is no path)."


def _answers(route: Route, settings: Settings, method: str, body: dict) -> dict[str, Any]:
    """The answers of GET or HEAD on a file route: 200 with `body`, 304, and the route's errors."""
    head = method == "head"
    content = {} if head else {"content": _json(body)}
    found = {
        "200": {"description": "The document." + (" Headers only." if head else ""),
                "headers": answer_headers(route, settings, file=True), **content},
        "304": {"description": "Not modified since the version the request names (If-None-Match, "
                               "If-Modified-Since).", "headers": answer_headers(route, settings, file=True)},
    }
    if route.kind == "list" and rejects(route.resource, settings):
        found["400"] = {"description": "A search or filter value DRF refuses: a NUL character, an id that is "
                                       "not a UUID or names no record; the body is DRF's.",
                        "headers": answer_headers(route, settings, routed=False)}
        if not head:
            found["400"]["content"] = _json({"oneOf": [
                {"type": "array", "items": {"type": "string"}},
                {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}]})
    if route.kind in ("detail", "root", "schema"):
        kind = route.kind
        messages = ([_decode(meta.no_match(route.resource))["detail"]] if kind == "detail" else []) + [
            _decode(meta.NOT_FOUND)["detail"]]
        found["404"] = {
            "description": {"detail": NO_RECORD, "root": "A site not built yet.",
                            "schema": "A generation built without its OpenAPI document."}[kind],
            "headers": answer_headers(route, settings, routed=kind != "detail")}
        if not head:
            found["404"]["content"] = _json(_error(*messages))
    return found


PARAMETERS = "#/components/parameters/"
CONDITIONAL_HEADERS = [
    {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
     "description": "ETags of versions the client holds: 304 when the file is one of them (or `*`)."},
    {"name": "If-Modified-Since", "in": "header", "required": False, "schema": {"type": "string"},
     "description": "An HTTP date: 304 when the file has not changed since."},
]
CONDITIONAL = [{"$ref": PARAMETERS + p["name"]} for p in CONDITIONAL_HEADERS]


def shared_parameters(settings: Settings) -> list[dict[str, Any]]:
    """The query parameters every collection's list takes (components), as their backends
    (api/backends/) describe them."""
    return [p for backend in BACKENDS for p in backend.shared_openapi(settings)]


def query_parameters(resource: Resource, settings: Settings) -> list[dict[str, Any]]:
    """The query parameters of a collection's list: the shared ones by reference, then those
    its backends take as site.yaml configures them."""
    shared = [{"$ref": PARAMETERS + p["name"]} for p in shared_parameters(settings)]
    return shared + [p for backend in BACKENDS for p in backend.openapi(resource, settings)]


def rejects(resource: Resource, settings: Settings) -> bool:
    """Whether a request to the collection's list may be refused (a search or filter value)."""
    return any(backend.rejects(resource.name, settings.query) for backend in BACKENDS)


ID = {"name": "id", "in": "path", "required": True,
      "description": "The record's id, a UUID. DRF's lookup takes any path segment without a dot, and "
                     "answers 404 for one that names no record.",
      "schema": {"type": "string", "pattern": "^[^/.]+$"}}


def _operation(route: Route, method: str, summary: str, responses: dict, **more: Any) -> dict[str, Any]:
    name = route.resource.name if route.resource else route.kind
    kind = "" if route.resource is None else f"_{route.kind if route.kind == 'list' else 'detail'}"
    tags = [route.resource.name if route.resource else "api"]
    return {"operationId": f"{method}_{name}{kind}", "summary": summary, "tags": tags, **more,
            "responses": responses}


def _options(route: Route, settings: Settings, body: bytes) -> dict[str, Any]:
    answers = {"200": {"description": "The metadata.", "headers": answer_headers(route, settings),
                       "content": _json({"allOf": [ref("Metadata"), {"const": _decode(body)}]})}}
    if route.kind == "detail":  # (an id with a dot: no path of the API)
        answers["404"] = {"description": NO_RECORD, "headers": answer_headers(route, settings, routed=False),
                          "content": _json(_error(_decode(meta.NOT_FOUND)["detail"]))}
    return _operation(route, "options", "DRF's metadata of this path.", answers)


def _reads(route: Route, settings: Settings, summary: str, body: dict, parameters: list) -> dict[str, Any]:
    """GET and HEAD of a path that is a file."""
    found = {}
    for method in ("get", "head"):
        found[method] = _operation(route, method, summary + (" Headers only." if method == "head" else ""),
                                   _answers(route, settings, method, body), parameters=parameters + CONDITIONAL)
    return found


def _owned(resource: Resource) -> list[tuple[Resource, Field]]:
    """The writable collections whose POST names one record of this resource as its owner
    (a bookshelf's user), each with the field that names it."""
    return [(other, f) for other in RESOURCES if other.writable for f in other.relations
            if f.to == resource.collection and not f.many and f.name in other.post]


def _links(resource: Resource) -> dict[str, Any]:
    """What a client can do next with a new record: give it the records it may own (a new
    user's bookshelf)."""
    found = {}
    for other, owner in _owned(resource):
        examples = {n: other.field(n).example for n in other.post if other.field(n).example is not None}
        found[f"Create{other.label}"] = {
            "operationId": f"post_{other.name}_list",
            "description": f"A {other.label.lower()} owned by the new {resource.label.lower()}.",
            "requestBody": {owner.name: "$response.body#/id", **examples}}
    return {"links": found} if found else {}


def _post(route: Route, settings: Settings) -> dict[str, Any]:
    r = route.resource
    hdrs = answer_headers(route, settings)
    return _operation(
        route, "post", f"Create a {r.label.lower()}.",
        {
            "201": {"description": "Created: the record as it will be published, once the rebuild the write "
                                   "asked for has published it (within seconds; until then its URL answers 404).",
                    "headers": answer_headers(route, settings, "Location"),
                    "content": _json(ref(component_name(r.schema))), **_links(r)},
            "400": {"description": "The body cannot be written: each field's messages, or a body that is not "
                                   "JSON.", "headers": hdrs,
                    "content": _json({"anyOf": [ref("FieldErrors"), ref("Error")]})},
            "401": {"description": "No token, or not a valid one: nothing is written.",
                    "headers": answer_headers(route, settings, "WWW-Authenticate"),
                    "content": _json(ref("Error"))},
            "413": {"description": f"A body over {MAX_BODY:,} bytes.", "headers": hdrs,
                    "content": _json(_error(_decode(meta.TOO_LARGE)["detail"]))},
            "415": {"description": "A body that is not application/json.", "headers": hdrs,
                    "content": _json(ref("Error"))},
            "503": {"description": "No write service runs (or the data directory has problems someone must fix).",
                    "headers": hdrs, "content": _json(_error(_decode(meta.WRITE_UNAVAILABLE)["detail"],
                                                             _decode(meta.DATA_UNAVAILABLE)["detail"]))},
        },
        description="Checked as DRF's serializer checks it, appended to the catalogue's data and published "
                    "by a rebuild. Needs a write token (`catalogue token add NAME`).",
        security=[{BEARER: []}],
        requestBody={"required": True, "content": _json(request_schema(r))})


def _path_description(route: Route) -> str:
    return (f"Methods: {route.allow}. Any other method answers 405 with "
            '{"detail":"Method \\"PUT\\" not allowed."} (the method\'s name) and the same Allow header. '
            "The path without its trailing slash is redirected (301) to it.")


def paths(settings: Settings) -> dict[str, Any]:
    """Every path of the route table with each of its methods."""
    found: dict[str, Any] = {}
    bodies = {"root": (ref("Root"), meta.options_root(), "The API root: each collection's URL."),
              "schema": (ref("OpenAPI"), meta.options_schema(), "This document.")}
    for route in ROUTES:
        if route.kind == "other":
            continue  # (the detail path's id takes both; routes.py tells them apart)
        if route.kind in bodies:
            schema, options, summary = bodies[route.kind]
            path, parameters, shared = route.pattern, [], []
        elif route.kind == "list":
            r = route.resource
            schema, options = ref(f"{component_name(r.schema)}Page"), meta.options_list(r)
            summary = f"A page of the {r.name} collection."
            path, parameters, shared = route.pattern, query_parameters(r, settings), []
        else:
            r = route.resource
            schema, options = ref(component_name(r.schema)), meta.options_detail(r)
            summary = f"One {r.label.lower()}."
            path, parameters, shared = f"/{API}/{r.name}/{{id}}/", [], [{"$ref": PARAMETERS + "id"}]
        item = {"description": _path_description(route), **_reads(route, settings, summary, schema, parameters),
                "options": _options(route, settings, options)}
        if shared:
            item["parameters"] = shared
        if route.kind == "list" and route.resource.writable:
            item["post"] = _post(route, settings)
        found[path] = item
    return found


def description(settings: Settings) -> str:
    sizes = ", ".join(map(str, settings.page_sizes))
    written = _listed([r.name for r in RESOURCES if r.writable])
    return (
        "The Persian book catalogue, served as static files exactly as its Django REST Framework service "
        f"answered. Generated by `catalogue build` from schemas/ and the route table (for {settings.base_url}); "
        f"served at /{API}/schema/ (`{OPENAPI_FILE}` in each published generation).\n\n"
        f"Pages are pre-built for the page sizes {sizes} (default {settings.default_page_size}) at every "
        "offset that is a multiple of the page size, up to the last item; any other page DRF answers (any "
        "limit and offset, parameters it does not know kept in the links) is put together when asked for"
        + (f", with limit clamped to {settings.max_limit} (max_limit)" if settings.max_limit else "") + ".\n\n"
        "Every answer is JSON with Vary, Access-Control-Allow-Origin and Cache-Control; files carry ETag and "
        f"Last-Modified and answer conditional requests with 304. Writes (POST to {written}) need "
        "a bearer token; a new record is published by a rebuild within seconds of its 201.")



def _listed(names: list[str]) -> str:
    """Names in a sentence: "a", "a and b", "a, b and c"."""
    return " and ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


def document(settings: Settings) -> dict[str, Any]:
    return {
        "openapi": OPENAPI,
        "info": {"title": "Persian book catalogue API", "version": API.rpartition("/")[2],
                 "description": description(settings)},
        "servers": [{"url": settings.base_url}],
        "tags": [{"name": "api", "description": "The API root and this document."}]
                + [{"name": r.name, "description": f"The {r.name} collection."} for r in RESOURCES],
        "paths": paths(settings),
        "components": {
            "schemas": components_schemas(),
            "headers": header_components(settings),
            "parameters": {p["name"]: p for p in [*shared_parameters(settings), ID, *CONDITIONAL_HEADERS]},
            "responses": {"MethodNotAllowed": {
                "description": "A method the path does not allow (the Allow header names those it does).",
                "content": _json(ref("Error"))}},
            "securitySchemes": {BEARER: {
                "type": "http", "scheme": "bearer",
                "description": "A write token made with `catalogue token add NAME`, sent as "
                               "`Authorization: Bearer <token>`."}},
        },
    }


def encoded(settings: Settings) -> bytes:
    """The document as the build writes it."""
    return encode(document(settings))
