"""Search, ordering and filters answer as DRF's backends do (docs/spec/query.md §2–5), byte for byte.

The DRF service (tests/drf) runs django-filter's backend, SearchFilter and OrderingFilter
with the same settings as the site; the built-in server answers from the build's query
indexes. Random probes drawn from the catalogue's own records (tests/query_probes.py)
go to both, and the first few pages of each are followed along `next`.
"""
from __future__ import annotations

import json

import pytest

from drf_service import compared
from query_probes import SETTINGS, Probes, query_catalogue

COLLECTIONS = sorted({name for key in ("search", "ordering", "filters") for name in SETTINGS[key]})


def documents(pair) -> dict[str, list[dict]]:
    found = {}
    for name in COLLECTIONS:
        found[name] = json.loads(pair.same(f"/api/v1/{name}/?limit=1000").body)["results"]
    return found


@pytest.fixture(scope="module", params=["sample", "synthetic", "persian"])
def pair(tmp_path_factory, request):
    work = tmp_path_factory.mktemp("drfq")
    with compared(query_catalogue(request.param, work, 300, seed=7), work) as pair:
        yield pair


@pytest.mark.parametrize("name", COLLECTIONS)
def test_random_searches_orderings_and_filters(pair, name):
    probes = Probes(documents(pair), seed=len(name))
    for _ in range(60):
        path = f"/api/v1/{name}/?{probes.query(name)}"
        for _ in range(3):  # and the next pages
            answer = pair.same(path)
            if answer.status != 200:
                break
            following = pair.local(json.loads(answer.body)["next"])
            if following is None:
                break
            path = following


def test_filters_together_with_search_ordering_and_a_page(pair):
    """Two and three filters, two values of one, with a search, an ordering and a page off the
    grid (Probes.combined): the records every filter keeps (django-filter's queryset is
    filtered by each in turn), then searched, ordered and cut; some of them not empty."""
    probes = Probes(documents(pair), seed=5)
    counts = []
    for _ in range(120):
        answer = pair.same(f"/api/v1/books/?{probes.combined()}")
        if answer.status == 200:
            counts.append(json.loads(answer.body)["count"])
    assert sum(1 for count in counts if count) >= 10, counts


@pytest.mark.parametrize("query", [
    "search=", "search=%22%22", "search=%27", "search=,", "search=%00", "search=a%00", "ordering=",
    "ordering=-", "ordering=title,-title", "ordering=%20-price%20,pages", "ordering=authors", "ordering=nope",
    "authors=", "authors=nope", "authors=00000000-0000-4000-8000-000000000000", "translators=&authors=x",
    "categories=%7B00000000-0000-4000-8000-000000000000%7D", "publishers=urn:uuid:nope",
    "authors=0000000000000000000000000000000%EF%BC%91", "authors=+0000000000000000000000000000000",
    "authors=%D9%A0000000000000000000000000000000", "search=x&authors=nope", "search=%E2%80%8C",
])
def test_odd_values(pair, query):
    pair.same(f"/api/v1/books/?{query}")


@pytest.mark.parametrize("query", ["user=", "user=nope", "user=00000000-0000-4000-8000-000000000000",
                                   "user=a&user=", "search=%00"])
def test_odd_values_of_a_to_one_filter(pair, query):
    pair.same(f"/api/v1/bookshelf/?{query}")


def test_a_collection_without_settings_ignores_them(pair):
    pair.same("/api/v1/publisher/?search=%00&ordering=-company&user=nope")
