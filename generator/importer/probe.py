"""What `catalogue import --query FILE` does with the live service's search, ordering and
filter settings, which DRF does not publish: checks them (as site.yaml's), and asks the
service a few such queries to see that the settings describe it.

The queries are drawn from the records just read: a word of each text field, each field
descending, a filter by each relation. Each is answered twice,
by the service and by the site's own request-time code (api/backends/) over query
indexes made in memory from the same records, and the counts and the records of the
first page must agree.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

from ..api.backends import BACKENDS, common, index_files, select
from ..api.querystring import parse
from ..catalogue.load import read_settings
from ..catalogue.querying import FILTERS, NORMALISE, ORDERING, SEARCH, query_settings
from ..catalogue.resources import RESOURCES, Resource
from ..errors import CatalogueError, Problems, meant

KEYS = (SEARCH, ORDERING, FILTERS, NORMALISE)
LIMIT = 10  # records of each probe's first page compared


def read_query_file(path: Path) -> dict:
    """The search, ordering, filters and search_normalise a YAML file gives, checked as
    site.yaml's are: each problem at its line."""
    problems = Problems()
    try:
        given = read_settings(path, path.name, problems)
    except OSError as error:
        raise CatalogueError(f"{path}: cannot be read: {error.strerror}") from error
    if given is not None:
        for key in sorted(set(given.raw) - set(KEYS), key=str):
            problems.add(path.name, 0, str(key), f"is not a query setting{meant(str(key), KEYS, 'the keys')}")
        found = query_settings(path.name, given.raw, problems)
        given.locate(problems, 0)
    if problems:
        problems.sort([path.name])
        raise CatalogueError("\n".join(str(p) for p in problems.items))
    return found


Ask = Callable[[str], dict]  # a path and query of the service -> its JSON page


def probe(query: dict, documents: dict[str, list[dict]], ask: Ask) -> list[str]:
    """The probes whose answers differ, each said in a line (none: the settings hold)."""
    differences = []
    for resource in RESOURCES:
        name = resource.name
        files = index_files(name, query, documents[name],
                            lambda target: [common.related_id(d) for d in documents[target]])
        for asked in probes(resource, documents[name]):
            live = ask(f"{name}/?{asked}&limit={LIMIT}")
            ours = select(files.get, name, parse(asked), query, len(documents[name]),
                          lambda positions: {p: documents[name][p] for p in positions})
            count = len(documents[name]) if ours is None else ours.count
            urls = [documents[name][p]["url"] for p in (range(min(LIMIT, count)) if ours is None else ours.take(0, LIMIT))]
            if (live.get("count"), [r["url"] for r in live.get("results", [])]) != (count, urls):
                differences.append(f"{name}/?{asked}: the service lists {live.get('count')} records, these settings "
                                   f"{count}{'' if live.get('count') != count else ', in another order'}")
    return differences


def probes(resource: Resource, documents: list[dict]) -> list[str]:
    """Queries a client might send, each backend's (its `probes`), drawn from the records.
    Every field, not only those the settings name: a service that searches, orders or
    filters by one the settings leave out answers otherwise."""
    if not documents:
        return []
    return [urlencode(pairs) for backend in BACKENDS for pairs in backend.probes(resource, documents)]
