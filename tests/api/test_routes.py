"""The route table: query strings read as DRF reads them, paths routed as http.md says."""
from __future__ import annotations

import itertools
import json
import random
import re
from urllib.parse import parse_qsl

import pytest

from generator.api import routes
from generator.api.routes import INVALID, LIMIT_SPELLING, OFFSET_SPELLING, Bodies, resolve
from generator.api.urls import BY_NAME, PAGE_NOT_BUILT
from golden_files import GOLDEN, ROUTES, route_table

BODIES = Bodies()
PIECES = ["", "0", "1", "12", "024", "+", "%2B", "%2b", "-", "%20", "%09", "%0A", "_", "a", ".", "%31",
          "%DB%B2", "~", "99999999999999999999", "%"]


def drf(query: str, name: str, positive: bool) -> int | None:
    """What DRF's LimitOffsetPagination makes of a parameter: its number, or None for the default."""
    values = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == name]
    if not values:
        return None
    try:
        number = int(values[-1])
    except ValueError:
        return None
    return number if (number > 0 if positive else number >= 0) else None


def queries(count: int, seed: int = 3):
    rng = random.Random(seed)
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 3)):
            name = rng.choice(["limit", "offset", "x", "%6Cimit", "LIMIT"])
            value = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))
            parts.append(f"{name}={value}")
        yield "&".join(parts)


@pytest.mark.parametrize("spelling, positive, default", [(LIMIT_SPELLING, True, "default"),
                                                          (OFFSET_SPELLING, False, "0")])
def test_a_value_is_what_int_reads_or_names_no_page(spelling, positive, default):
    """Never a wrong page: a number is the number int() reads, a default is DRF's default,
    and whatever the route cannot be sure of names no page (a 400)."""
    seen = set()
    for query in itertools.chain(queries(3000), ["", "limit=%2B+12", "offset=+%2B24", "limit=12&limit=024"]):
        got = spelling.read(query)
        expected = drf(query, spelling.name, positive)
        seen.add("number" if got.isdigit() and got != default else got)
        if got == INVALID:
            continue
        if got == default:
            assert expected is None or str(expected) == default, query
        else:
            assert int(got) == expected and got == str(expected), query
    assert {"number", default, INVALID} <= seen  # (the cases above all came up)


@pytest.mark.parametrize("method, path, query, expected", [
    ("GET", "/api/v1/", "", dict(file="api/v1/index.json")),
    ("GET", "/api/v1/books/", "", dict(file="api/v1/books/pages/default/0/0.json")),
    ("GET", "/api/v1/books/", "offset=24&limit=012", dict(file="api/v1/books/pages/12/0/24.json")),
    ("GET", "/api/v1/books/", "offset=1200000", dict(file="api/v1/books/pages/default/120/1200000.json")),
    ("GET", "/api/v1/author/", "limit=1_2", dict(file="api/v1/author/pages/invalid/0/0.json")),
    ("GET", "/api/v1/books/76f9d815-44dc-545f-890b-4419e8e5e6da/", "",
     dict(file="api/v1/books/76/76f9d815-44dc-545f-890b-4419e8e5e6da.json", missing_status=404,
          body=b'{"detail":"No Book matches the given query."}')),
    ("GET", "/api/v1/books/not-a-uuid/", "", dict(status=404, body=b'{"detail":"Not found."}')),
    ("GET", "/api/v1/books", "x=1", dict(status=301, location="/api/v1/books/?x=1")),
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
    if path.endswith("/api/v1/books/") and method == "GET":
        assert (answer.missing_status, answer.missing_file) == (400, PAGE_NOT_BUILT)


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
    patterns = [routes.LIMIT, routes.OFFSET, routes.PLAIN, routes.ESCAPED_NAME, routes.BUCKET, routes.REDIRECT,
                routes.last("limit"), *(route.pattern for route in routes.ROUTES)]
    for pattern in patterns:
        assert "(?<" not in pattern.replace("(?P<", "") and "\\d" not in pattern and "\\w" not in pattern


def test_the_route_table_answers_as_the_golden_request_table():
    """Every router (Python here, JavaScript and every server elsewhere) is checked against
    this one table; it changes only on purpose (make golden)."""
    assert route_table() == json.loads((GOLDEN / ROUTES).read_text(encoding="utf-8"))


@pytest.mark.parametrize("query", ["limit=12&offset=0", "limit=12&offset=120", "limit=24&offset=9999",
                                   "limit=5&offset=1", "limit=999999999999&offset=48"])
def test_the_canonical_spelling_reads_as_the_rules_read_it(query):
    """The one pattern hosts try first names the page DRF's rules name."""
    books = BY_NAME["books"]
    assert re.fullmatch(routes.CANONICAL, query)
    assert routes.page_of(books, query) == routes.spelled_page(books, query)


@pytest.mark.parametrize("query", ["limit=12&offset=10000", "limit=012&offset=0", "limit=12&offset=00",
                                   "offset=0&limit=12", "limit=12&offset=0&limit=24", "limit=0&offset=0"])
def test_other_spellings_are_left_to_the_rules(query):
    assert not re.fullmatch(routes.CANONICAL, query)


def test_random_canonical_queries_agree_with_the_rules():
    books, rng = BY_NAME["books"], random.Random(7)
    for _ in range(2000):
        query = f"limit={rng.randint(1, 10 ** rng.randint(1, 12))}&offset={rng.randint(0, 9999)}"
        assert routes.page_of(books, query) == routes.spelled_page(books, query), query
