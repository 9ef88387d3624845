"""The build's query indexes: what each query backend (api/backends/) writes, made after the
pages from the pages of the default size the new generation holds (records encoded once,
read back here one page at a time), and written only where a file's bytes changed; an
unchanged one is linked from the previous generation. A collection of several blocks of
records is read by as many processes as the build uses, each a run of whole blocks, every
backend's indexer fed the same pages; each backend then finishes from its runs' parts.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

from ..api.backends import common, configured, indexing
from ..api.urls import PAGE_BUCKET, page_file
from ..catalogue.settings import Settings
from .publish import Generation, Site


@dataclass(frozen=True)
class Job:
    """The query indexes of one build: where they go, and what they are made from."""
    site: Site
    generation: Generation
    previous: Path | None
    settings: Settings
    counts: dict[str, int]

    def flush(self, path: str, data: bytes) -> None:
        """A file, written, or linked from the previous generation when it holds these bytes."""
        if self.previous is not None and _same(self.previous / path, data):
            self.site.carry(self.generation, self.previous, path)
        else:
            self.generation.write(path, data)

    def pages(self, name: str, start: int = 0, stop: int | None = None) -> Iterator[list[dict]]:
        """The documents of a collection's records start..stop, in order, a page's at a time,
        from its default pages."""
        size = self.settings.default_page_size
        stop = self.counts[name] if stop is None else min(stop, self.counts[name])
        root = f"{self.generation.root}/"
        for offset in range(start - start % size, stop, size):
            with open(root + page_file(name, str(size), str(offset // PAGE_BUCKET), str(offset)), "rb") as f:
                results = orjson.loads(f.read())["results"]
            yield results[max(start - offset, 0):stop - offset] if offset < start or offset + size > stop else results


def write_query_indexes(job: Job, processes: int) -> None:
    """Every index file of the collections site.yaml configures a query backend for."""
    query = job.settings.query
    ids: dict[str, list[str]] = {}

    def ids_of(target: str) -> list[str]:
        if target not in ids:
            ids[target] = [common.related_id(d) for page in job.pages(target) for d in page]
        return ids[target]

    for name in configured(query):
        runs = _runs(job.counts[name], processes)
        if len(runs) > 1:
            with ProcessPoolExecutor(len(runs), mp_context=multiprocessing.get_context("fork")) as pool:
                parts = list(pool.map(_collect, [job] * len(runs), [name] * len(runs), runs))
        else:
            parts = [_collect(job, name, runs[0])]
        for at, backend in enumerate(indexing(name, query)):
            backend.finish(name, query, job.flush, [part[at] for part in parts], ids_of)


def _runs(count: int, processes: int) -> list[tuple[int, int]]:
    """Runs of whole blocks of records, one a process."""
    numbers = list(common.blocks(count))
    share = -(-len(numbers) // max(1, min(processes, len(numbers))))
    size = common.BLOCK
    return [(numbers[i] * size, (numbers[min(i + share, len(numbers)) - 1] + 1) * size)
            for i in range(0, len(numbers), share)]


def _collect(job: Job, name: str, run: tuple[int, int]) -> list:
    """Each indexing backend's part of a run of records (in the order of indexing())."""
    query = job.settings.query
    indexers = [backend.indexer(name, query, job.flush, run[0]) for backend in indexing(name, query)]
    for page in job.pages(name, *run):
        for indexer in indexers:
            indexer.add(page)
    return [indexer.close() for indexer in indexers]


def _same(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False
