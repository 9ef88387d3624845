"""The build's query indexes (api/queryindex.py): made after the pages, from the pages of
the default size the new generation holds (records encoded once, read back here one page
at a time), and written only where a file's bytes changed; an unchanged one is linked
from the previous generation.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import orjson

from ..api.queryindex import Collector, configured, filter_targets, related_id
from ..api.urls import PAGE_BUCKET, page_file
from ..catalogue.settings import Settings
from .publish import Generation, Site


def write_query_indexes(site: Site, generation: Generation, previous: Path | None, settings: Settings,
                        counts: dict[str, int]) -> int:
    """Every query index file of the collections site.yaml configures; the number written."""
    written = 0

    def flush(path: str, data: bytes) -> None:
        nonlocal written
        if previous is not None and _same(previous / path, data):
            site.carry(generation, previous, path)
        else:
            generation.write(path, data)
            written += 1

    pages = Pages(generation.root, settings.default_page_size, counts)
    for name in configured(settings.query):
        collector = Collector(name, settings.query, flush)
        for document in pages.documents(name):
            collector.add(document)
        targets = {relation: (related_id(d) for d in pages.documents(target))
                   for relation, target in filter_targets(name, settings.query).items()}
        collector.finish(targets)
    return written


class Pages:
    """The documents of a collection's records, in order, read from its default pages."""

    def __init__(self, root: Path, page_size: int, counts: dict[str, int]) -> None:
        self.root, self.page_size, self.counts = root, page_size, counts

    def documents(self, name: str) -> Iterator[dict]:
        for offset in range(0, self.counts[name], self.page_size):
            path = page_file(name, str(self.page_size), str(offset // PAGE_BUCKET), str(offset))
            yield from orjson.loads((self.root / path).read_bytes())["results"]


def _same(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False
