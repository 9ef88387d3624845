"""Bodies that are not records: DRF's OPTIONS metadata and the error details.

Encoded with the same renderer as the records. A host's configuration
embeds the fixed ones; the one that names the page sizes is written into each
generation, so it always matches the pages being served.
"""
from __future__ import annotations

import re

from ..catalogue.fields import boolean, price, timestamp, whole
from ..catalogue.resources import URL
from ..catalogue.settings import Settings
from .render import encode
from .urls import RESOURCES, Resource

RENDERS = ["application/json", "text/html"]
PARSES = ["application/json", "application/x-www-form-urlencoded", "multipart/form-data"]

# SimpleMetadata's description of the fields a POST takes, as DRF derives it from the
# serializers: type, required, read_only, label, and the limits where they apply. The
# write service takes exactly the fields that are not read-only, in this order.
_READ_ONLY_URL = {"type": "field", "required": False, "read_only": True, "label": "Url"}
# SimpleMetadata's type of a field of each kind (any other value is text: "string").
_TYPES = {whole: "integer", boolean: "boolean", price: "decimal", timestamp: "datetime"}


def _label(key: str) -> str:
    """DRF's label of a field: its name as words, capitalised; the primary key's is ID."""
    words = key.replace("_", " ")
    return "ID" if key == "id" else words[:1].upper() + words[1:]


def _action(resource: Resource, key: str) -> dict:
    """SimpleMetadata's description of one key of the resource's document."""
    if key == URL:
        return _READ_ONLY_URL
    field = resource.field(key)
    posted = key in resource.post
    action = {"type": "field" if field.to is not None else _TYPES.get(field.coerce, "string"),
              "required": posted and field.required, "read_only": not posted, "label": _label(key)}
    if field.help_text is not None:
        action["help_text"] = field.help_text
    if field.max_length is not None:
        action["max_length"] = field.max_length
    return action


WRITE_ACTIONS = {r.name: {key: _action(r, key) for key in r.document} for r in RESOURCES if r.writable}


def writable_fields(resource: Resource) -> tuple[str, ...]:
    """The fields a POST to the resource's list may give, in the serializer's order."""
    return tuple(name for name, spec in WRITE_ACTIONS[resource.name].items() if not spec["read_only"])


def read_only_fields(resource: Resource) -> tuple[str, ...]:
    return tuple(name for name, spec in WRITE_ACTIONS[resource.name].items() if spec["read_only"])


def _options(name: str, description: str = "", actions: dict | None = None) -> bytes:
    body = {"name": name, "description": description, "renders": RENDERS, "parses": PARSES}
    if actions:
        body["actions"] = {"POST": actions}
    return encode(body)


def options_root() -> bytes:
    return _options("Api Root", "The default basic root view for DefaultRouter")


def options_list(resource: Resource) -> bytes:
    return _options(f"{resource.label} List", actions=WRITE_ACTIONS.get(resource.name))


def options_detail(resource: Resource) -> bytes:
    return _options(f"{resource.label} Instance")


def options_schema() -> bytes:
    """The OpenAPI document's path, named as DRF names its SchemaView (what it renders said
    as on every other path of the site)."""
    return _options("Schema")


def detail(message: str) -> bytes:
    return encode({"detail": message})


NOT_FOUND = detail("Not found.")
WRITE_UNAVAILABLE = detail("Writing is not available right now: the write service is not running.")
DATA_UNAVAILABLE = detail("Writing is not available right now: the catalogue's data has problems.")
TOO_LARGE = detail("Request body is too large.")
SERVER_ERROR = detail("A server error occurred.")
# DRF's ServiceUnavailable: while nginx's page service is not answering.
SERVICE_UNAVAILABLE = detail("Service temporarily unavailable, try again later.")
# A host that cannot read or send so large a page (an edge runtime's caps: docs/spec/query.md §1).
PAGE_TOO_LARGE = "This host answers pages of at most {largest} records: ask for limit={largest} or less."
# Where an edge platform would fail a request itself (hosts/contract.py Limits: its files, the
# bytes it holds), the host answers this instead; the read plans keep every request DRF answers
# inside them (docs/spec/query.md §6), so it is a guard, not an answer a client should meet.
TOO_MANY_READS = ("This host reads at most {most} to answer one request, and this one needs more; "
                  "the built-in server and nginx answer it.")
# Django refuses a query string of more than DATA_UPLOAD_MAX_NUMBER_FIELDS (1,000) fields with
# its HTML 400 page; the same status here, in DRF's shape, with Django's message.
TOO_MANY_FIELDS = detail("The number of GET/POST parameters exceeded settings.DATA_UPLOAD_MAX_NUMBER_FIELDS.")


def no_match(resource: Resource) -> bytes:
    return detail(f"No {resource.label} matches the given query.")


_SIZES = re.compile(r"Page sizes \(limit\): ([0-9]+(?:, [0-9]+)*); without a limit the page size is ([0-9]+)\.")


def page_sizes_of(detail: str) -> list[int] | None:
    """The page sizes a page_not_built() message names, the default first; None for
    another message."""
    found = _SIZES.search(detail)
    if found is None:
        return None
    sizes = [int(n) for n in found[1].split(", ")]
    default = int(found[2])
    return [default, *(n for n in sizes if n != default)]


def page_not_built(settings: Settings) -> bytes:
    sizes = ", ".join(map(str, settings.page_sizes))
    return detail(
        f"This page is not pre-built. Page sizes (limit): {sizes}; without a limit the page size "
        f"is {settings.default_page_size}. The offset must be a multiple of the limit, from 0 up "
        "to the last item, written in ASCII digits.")
