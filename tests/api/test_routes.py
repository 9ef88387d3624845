"""The route table: paths routed as docs/spec/http.md says, and the plain spellings of a page's query
string mapped to the page DRF reads them as."""
from __future__ import annotations

import itertools
import json
import random

import pytest

from generator.api import querystring, routes
from generator.api.backends.paging import Paging, plain_page, plain_spellings
from generator.api.routes import Bodies, resolve
from generator.api.serving import SiteInfo
from generator.api.urls import DEFAULT_LIMIT, PAGE_BUCKET
from golden_files import GOLDEN, ROUTES, route_table

BODIES = Bodies()
PIECES = ["", "0", "1", "12", "024", "+", "%2B", "%2b", "-", "%20", "%09", "%0A", "_", "a", ".", "%31",
          "%DB%B2", "~", "99999999999999999999", "%"]


def queries(count: int, seed: int = 3):
    rng = random.Random(seed)
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 3)):
            name = rng.choice(["limit", "offset", "x", "%6Cimit", "LIMIT"])
            value = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))
            parts.append(f"{name}={value}")
        yield "&".join(parts)


def test_a_plain_spelling_names_the_page_drf_reads():
    """A query string a pattern maps to a file (nginx's map, the routers) names exactly the
    page DRF's reading of it names, with the same links: pagination parameters only, once."""
    site = SiteInfo("https://x.example", "no-cache", page_size=12)
    named = 0
    for query in itertools.chain(queries(4000), ["", "limit=24", "offset=10008&limit=24", "limit=12&offset=12"]):
        file = plain_page("books", query)
        if file is None:
            continue
        named += 1
        paging = Paging.read("books", query, site)
        limit, block, offset = file.removesuffix(".json").split("/")[-3:]
        assert (limit if limit != DEFAULT_LIMIT else "12", offset) == (str(paging.limit), str(paging.offset)), query
        assert int(block) == paging.offset // PAGE_BUCKET, query
        assert sorted(name for name, _ in querystring.parse(query)) in ([], ["limit"], ["offset"], ["limit", "offset"]), query
    assert named > 100


@pytest.mark.parametrize("method, path, query, expected", [
    ("GET", "/api/v1/", "", dict(file="api/v1/index.json")),
    ("GET", "/api/v1/books/", "", dict(file="api/v1/books/pages/default/0/0.json")),
    ("GET", "/api/v1/books/", "offset=24&limit=12", dict(file="api/v1/books/pages/12/0/24.json", page="books")),
    ("GET", "/api/v1/books/", "offset=24&limit=012", dict(file=None, page="books")),
    ("GET", "/api/v1/books/", "offset=1200000", dict(file="api/v1/books/pages/default/120/1200000.json")),
    ("GET", "/api/v1/author/", "limit=1_2", dict(file=None, page="author")),
    ("GET", "/api/v1/author/", "limit=12&utm_source=x", dict(file=None, page="author")),
    ("GET", "/api/v1/books/76f9d815-44dc-545f-890b-4419e8e5e6da/", "",
     dict(file="api/v1/books/76/76f9d815-44dc-545f-890b-4419e8e5e6da.json", missing_status=404,
          body=b'{"detail":"No Book matches the given query."}')),
    ("GET", "/api/v1/books/not-a-uuid/", "", dict(status=404, body=b'{"detail":"Not found."}')),
    ("GET", "/api/v1/books", "x=1", dict(status=301, location="/api/v1/books/?x=1")),
    # Django's escape_uri_path: what a path may hold as it is stays, the rest is escaped
    ("GET", "/api/v1/books/a:b@c&d+e$f,g!h~i*j'k(l)m-n_o", "",
     dict(status=301, location="/api/v1/books/a:b@c&d+e$f,g!h~i*j'k(l)m-n_o/")),
    ("GET", "/api/v1/books/کتاب ب", "", dict(status=301, location="/api/v1/books/%DA%A9%D8%AA%D8%A7%D8%A8%20%D8%A8/")),
    ("GET", "/api/v1/books/a.b", "", dict(status=404, body=b'{"detail":"Not found."}')),
    ("PUT", "/api/v1/user/", "", dict(status=405, body=b'{"detail":"Method \\"PUT\\" not allowed."}')),
    ("POST", "/api/v1/user/", "", dict(forward=True)),
    ("POST", "/api/v1/books/", "", dict(status=405, body=b'{"detail":"Method \\"POST\\" not allowed."}')),
    ("GET", "/elsewhere/api/v1/", "", dict(status=404, body=b'{"detail":"Not found."}')),
])
def test_resolve(method, path, query, expected):
    answer = resolve(method, path, query, "", BODIES)
    for field, value in expected.items():
        assert getattr(answer, field) == value, field


def test_allow_and_options_by_route():
    assert resolve("GET", "/api/v1/user/", "", "", BODIES).allow == "GET, POST, HEAD, OPTIONS"
    assert resolve("GET", "/api/v1/user/x/", "", "", BODIES).allow == "GET, HEAD, OPTIONS"
    assert resolve("GET", "/nowhere", "", "", BODIES).allow == ""
    assert b'"Bookshelf Instance"' in resolve("OPTIONS", "/api/v1/bookshelf/x/", "", "", BODIES).body


def test_a_path_prefix():
    answer = resolve("GET", "/catalogue/api/v1/books/", "", "/catalogue", BODIES)
    assert answer.file == "api/v1/books/pages/default/0/0.json"
    assert resolve("GET", "/api/v1/books/", "", "/catalogue", BODIES).status == 404
    assert resolve("GET", "/catalogue/api/v1", "", "/catalogue", BODIES).location == "/catalogue/api/v1/"


def test_every_pattern_is_python_and_pcre_alike():
    """No syntax that only one of them reads: (?P<name>) groups, no look-behind, no \\d."""
    patterns = [routes.REDIRECT, *(s.pattern for s in plain_spellings()), *(route.pattern for route in routes.ROUTES)]
    for pattern in patterns:
        assert "(?<" not in pattern.replace("(?P<", "") and "\\d" not in pattern and "\\w" not in pattern


def test_the_route_table_answers_as_the_golden_request_table():
    """Every router (Python here, JavaScript and every server elsewhere) is checked against
    this one table; it changes only on purpose (make golden)."""
    assert route_table() == json.loads((GOLDEN / ROUTES).read_text(encoding="utf-8"))


def test_the_table_holds_each_kind_of_route_in_the_order_tried():
    """The literal paths (the root, the schema, each list), then each collection's detail of
    UUID form before its other ids: nginx's locations and the routers are rendered by kind."""
    from generator.api.urls import RESOURCES

    assert [(route.kind, route.resource) for route in routes.ROUTES] == [
        ("root", None), ("schema", None), *[("list", r) for r in RESOURCES],
        *[(kind, r) for r in RESOURCES for kind in ("detail", "other")]]


def test_what_is_not_html_is_false_not_merely_falsy():
    assert routes.wants_html("image/png") is False and routes.wants_html("") is False
    assert routes.wants_html("text/html") is True and routes.wants_html("application/json, text/html") is False
