"""The OpenAPI document: a valid OpenAPI 3.1 document, derived from the route table and
schemas/, whose POST bodies say what the write service takes; written into each build."""
from __future__ import annotations

import re
import sys
from dataclasses import replace

import orjson
import pytest
from openapi_spec_validator import validate

from conftest import SAMPLE
from golden_files import GOLDEN, OPENAPI, openapi_document
from generator.api import meta, openapi
from generator.api.routes import ROUTES
from generator.api.schemas import load_schemas
from generator.api.urls import API, BY_NAME, CURRENT, OPENAPI_FILE, RESOURCES, Resource
from generator.sitebuild import build
from generator.catalogue import load
from generator.catalogue.settings import Settings
from generator.writes import create

SETTINGS = Settings("https://ketab.example.ir/catalogue", (24, 12, 100), "Asia/Tehran", "public, max-age=60")


def test_the_document_is_valid_openapi_3_1():
    document = openapi.document(SETTINGS)
    validate(document)  # (raises on any violation of the OpenAPI 3.1 schema)
    assert document["openapi"] == "3.1.0"
    assert document["servers"] == [{"url": SETTINGS.base_url}]



def test_the_white_space_class_is_what_str_strip_strips():
    """openapi.WHITESPACE is written out; it is every code point that str.strip() strips, in order."""
    drawn = "".join(f"\\u{ord(c):04x}" for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert openapi.WHITESPACE == drawn

def test_every_route_and_method_is_described():
    paths = openapi.document(SETTINGS)["paths"]
    expected = {}
    for route in ROUTES:
        if route.kind == "other":
            continue
        path = route.pattern if route.kind != "detail" else f"/{API}/{route.resource.name}/{{id}}/"
        expected[path] = {m.strip().lower() for m in route.allow.split(",")}
    methods = {path: set(item) - {"description", "parameters"} for path, item in paths.items()}
    assert methods == expected
    for path, item in paths.items():
        for method in methods[path]:
            answer = item[method]["responses"]["201" if method == "post" else "200"]
            assert {"Allow", "Vary", "Cache-Control"} <= set(answer["headers"])


def test_the_schemas_are_components_with_their_references_rewritten():
    components = openapi.document(SETTINGS)["components"]["schemas"]
    text = orjson.dumps(components).decode()
    assert '"$id"' not in text and '"$schema"' not in text
    references = re.findall(r'"\$ref":"([^"]+)"', text)
    assert references and all(r.startswith("#/components/schemas/") for r in references)
    assert all(r.removeprefix("#/components/schemas/") in components for r in references)
    assert components["Book"]["properties"]["authors"]["items"] == {"$ref": "#/components/schemas/Author"}
    assert components["uuid"] == load_schemas()["defs"]["$defs"]["uuid"]


def test_pages_name_the_sites_page_sizes_and_answer_every_page():
    document = openapi.document(SETTINGS)
    limit = document["components"]["parameters"]["limit"]
    assert "24, 12, 100" in limit["description"] and "default, 24" in limit["description"]
    # Any value is a request DRF answers: not an error, the default page size.
    assert {"type": "string", "description": "Not an integer: the default page size."} in limit["schema"]["anyOf"]
    assert "400" not in document["paths"][f"/{API}/books/"]["get"]["responses"]  # (docs/spec/query.md §1: every page)
    assert "max_limit" not in limit["description"]
    clamped = openapi.document(replace(SETTINGS, max_limit=100))["components"]["parameters"]["limit"]
    assert "taken as 100 (max_limit)" in clamped["description"]
    # (the document's own description says so too; the golden document has no max_limit)
    assert ("is put together when asked for, with limit clamped to 100 (max_limit).\n\n"
            in openapi.description(replace(SETTINGS, max_limit=100)))


@pytest.mark.parametrize("names, sentence", [
    (["user"], "user"), (["user", "bookshelf"], "user and bookshelf"), (["a", "b", "c", "d"], "a, b, c and d"),
])
def test_the_writable_collections_are_named_in_a_sentence(names, sentence):
    """The description's "POST to user and bookshelf" (the sample has two; a site may have more)."""
    assert openapi._listed(names) == sentence


def test_writes_need_the_bearer_token():
    document = openapi.document(SETTINGS)
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        **document["components"]["securitySchemes"]["bearerAuth"], "type": "http", "scheme": "bearer"}
    for name in [r.name for r in RESOURCES if r.writable]:
        post = document["paths"][f"/{API}/{name}/"]["post"]
        assert post["security"] == [{"bearerAuth": []}]
        assert set(post["responses"]) == {"201", "400", "401", "413", "415", "503"}
        assert "WWW-Authenticate" in post["responses"]["401"]["headers"]
        assert "Location" in post["responses"]["201"]["headers"]
        body = post["requestBody"]["content"]["application/json"]["schema"]
        assert tuple(body["properties"]) == meta.writable_fields(BY_NAME[name])
        assert body["additionalProperties"] is False


def _pattern(resource: Resource, field: str) -> re.Pattern:
    schema = openapi.request_schema(resource)["properties"][field]
    return re.compile(schema["pattern"])


CASES = ["ali", "  ali\t", "علی_رضا", "", "   ", "a b", "a\x00b", "x" * 150, " " + "x" * 150 + "\u3000",
         "x" * 151, "\u2003x\u2028", "a\x1fb", "\x1f" + "x" * 150 + "\x85", "ab" * 76, "a@b.c+d-e", "a/b",
         "x" * 149 + "é"]
# Every text a POST may give (a related record's id or url has no pattern).
TEXT_FIELDS = [(r, name) for r in RESOURCES if r.writable for name in r.post if r.field(name).to is None]


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    catalogue = create.Catalogue(SAMPLE, None, tmp_path_factory.mktemp("journal") / "journal")
    catalogue.refresh()
    return catalogue


@pytest.mark.parametrize("resource, name", TEXT_FIELDS, ids=lambda x: getattr(x, "name", x))
def test_the_text_patterns_are_the_write_services_checks(catalogue, resource, name):
    """A string matches a field's pattern exactly when the write service's own check of the
    field (writes/create.py) takes it: negative examples of a fuzzer are really refused."""
    pattern = _pattern(resource, name)
    for value in CASES:
        messages, _ = catalogue._field(resource, resource.field(name), {name: value})
        assert bool(pattern.fullmatch(value)) == (not messages), value


def test_the_build_writes_the_document_of_its_site(tmp_path):
    build(SAMPLE, tmp_path / "site")
    written = (tmp_path / "site" / CURRENT / OPENAPI_FILE).read_bytes()
    settings, _sources, _problems = load.read_catalogue(SAMPLE, None)
    assert written == openapi.encoded(settings)
    assert orjson.loads(written)["servers"] == [{"url": settings.base_url}]
    assert (tmp_path / "site" / CURRENT / f"{OPENAPI_FILE}.gz").is_file()  # (over 4 KB: a gzip twin)


def test_the_samples_document_is_the_golden_one():
    """Every word and schema a client reads, as the build writes them for the sample with
    search and filters (the other tests check its structure; this one its text too).
    Refresh: make golden."""
    assert openapi_document() == (GOLDEN / OPENAPI).read_text(encoding="utf-8")


def test_every_resource_has_its_page_schema():
    components = openapi.document(SETTINGS)["components"]["schemas"]
    for r in RESOURCES:
        page = components[f"{openapi.component_name(r.schema)}Page"]
        assert page["allOf"][0] == {"$ref": "#/components/schemas/Page"}


def test_search_ordering_and_filters_are_listed_with_their_choices():
    from query_probes import SETTINGS

    settings = replace(load.read_catalogue(SAMPLE).settings, query={**SETTINGS, "search_normalise": "persian"})
    document = openapi.document(settings)
    validate(document)
    books = document["paths"][f"/{API}/books/"]["get"]
    named = {p.get("name"): p for p in books["parameters"]}
    assert {"search", "ordering", "authors", "translators", "publishers", "categories"} <= set(named)
    assert "`title` (contains)" in named["search"]["description"] and "`isbn` (equals)" in named["search"]["description"]
    assert "persian" in named["search"]["description"]
    assert named["ordering"]["schema"]["examples"] == ["title", "-title", "price", "-price", "pages", "-pages",
                                                       "created_time", "-created_time"]
    assert named["authors"]["schema"]["type"] == "array" and "400" in books["responses"]
    assert [named[n]["required"] for n in ("search", "ordering", "authors")] == [False, False, False]
    assert named["authors"]["explode"] is True
    assert "answers 400" in named["search"]["description"] and "a cap DRF does not have" in named["search"]["description"]
    assert "not a UUID, or names no record, answers 400" in named["authors"]["description"]
    shelves = document["paths"][f"/{API}/bookshelf/"]["get"]
    assert {p.get("name"): p for p in shelves["parameters"]}["user"]["schema"] == {"type": "string", "format": "uuid"}
    publishers = document["paths"][f"/{API}/publisher/"]["get"]
    assert [p.get("name") for p in publishers["parameters"]] == [None, None, None, None] and "400" not in publishers["responses"]


def test_a_collection_with_filters_and_no_search_answers_400_too():
    settings = replace(load.read_catalogue(SAMPLE).settings, query={"filters": {"books": ["authors"]}})
    responses = openapi.document(settings)["paths"][f"/{API}/books/"]["get"]["responses"]
    assert "400" in responses
