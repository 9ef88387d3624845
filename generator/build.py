"""The build, stage by stage: read the data, check it, render each record once,
check it against its schema, write it, cut the pages, and publish atomically."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from . import load, meta, nginx, validate
from .errors import CatalogueError, DataError, Problems
from .paginate import Spool, pages
from .render import Renderer
from .schemas import SchemaChecker
from .urls import (BY_COLLECTION, PAGE_NOT_BUILT, Resource, Urls, default_pages_link, detail_path,
                   first_page_path, page_path, root_path)
from .validate import Settings
from .write import Site

# progress(resource name, records done so far, whether the collection is finished)
Progress = Callable[[str, int, bool], None]
PROGRESS_EVERY = 5000
DEFAULT_LISTEN = "127.0.0.1:8000"  # of the nginx configuration the build writes


@dataclass
class Summary:
    records: dict[str, int]  # published records per resource
    files: int
    bytes: int
    seconds: float


class Output(Protocol):
    files: int
    bytes: int

    def write(self, path: str, data: bytes) -> None: ...

    def link(self, path: str, target: str) -> None: ...


class Discard:
    """An output that keeps only the tally: `catalogue check` runs the whole build into it."""

    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0

    def write(self, path: str, data: bytes) -> None:
        self.files += 1
        self.bytes += len(data)

    def link(self, path: str, target: str) -> None:
        pass


def build(data_dir: Path, out_dir: Path, base_url: str | None = None,
          progress: Progress | None = None, listen: str = DEFAULT_LISTEN) -> Summary:
    started = time.monotonic()
    settings, sources, problems = read_catalogue(Path(data_dir), base_url)
    site = Site(Path(out_dir))
    with site.locked():
        with site.new_generation() as generation:
            records = produce(settings, sources, problems, generation, progress, scratch=site.gens.parent)
            serving = nginx.Serving(settings.base_url, settings.cache_control)
            generation.write(nginx.SITE_INFO, serving.encode())
            previous = site.publish(generation)
        site.collect_garbage(keep=[generation.root, previous])
        nginx.write_configs(site.out, serving, listen, site.out / nginx.CONFIG_DIR)
    return Summary(records, generation.files, generation.bytes, time.monotonic() - started)


def check(data_dir: Path, base_url: str | None = None, progress: Progress | None = None) -> Summary:
    """Everything a build does but writing: the same checks, the same report."""
    started = time.monotonic()
    settings, sources, problems = read_catalogue(Path(data_dir), base_url)
    output = Discard()
    records = produce(settings, sources, problems, output, progress)
    return Summary(records, output.files, output.bytes, time.monotonic() - started)


def read_catalogue(data_dir: Path, base_url: str | None):
    """Settings (None when site.yaml is unusable), each collection's source, problems so far."""
    if not data_dir.is_dir():
        raise CatalogueError(f"data directory {data_dir} does not exist")
    problems = Problems()
    site_name, raw = load.read_site(data_dir, problems)
    settings = validate.settings(site_name, raw, problems, base_url)
    sources = load.find_sources(data_dir, problems)
    return settings, sources, problems


def produce(settings: Settings | None, sources: dict[str, load.Source], problems: Problems,
            out: Output, progress: Progress | None = None, scratch: Path | None = None) -> dict[str, int]:
    """Render, check and write every document. Once any problem is known, the records
    are still checked, so that all data problems are raised together, but nothing more
    is produced."""
    urls = Urls(settings.base_url) if settings else None
    renderer = Renderer(settings, urls) if settings else None
    checker = SchemaChecker()
    known = validate.Known()
    published: dict[str, int] = {}
    for collection in load.COLLECTIONS:
        if collection not in sources:
            continue
        resource, source = BY_COLLECTION[collection], sources[collection]
        if collection == "categories":
            stream = validate.category_tree(source, problems, known)
        else:
            stream = validate.records(source, problems, known)
        with Spool(scratch) as spool:
            for _line, record in stream:
                if problems or renderer is None:
                    continue
                data = renderer.render(collection, record)
                if data is None:
                    continue
                path = detail_path(resource, record["id"])
                checker.check(resource.schema, data, path)
                out.write(path, data)
                spool.append(data)
                if progress and len(spool) % PROGRESS_EVERY == 0:
                    progress(resource.name, len(spool), False)
            if not problems and renderer is not None:
                write_pages(resource, spool, settings, urls, out, checker)
            published[resource.name] = len(spool)
        if progress:
            progress(resource.name, len(spool), True)
    if problems:
        raise DataError(problems)
    root = renderer.root()
    checker.check("root", root, root_path())
    out.write(root_path(), root)
    out.write(PAGE_NOT_BUILT, meta.page_not_built(settings))
    checker.raise_if_violated()
    return {r.name: published[r.name] for r in BY_COLLECTION.values()}


def write_pages(resource: Resource, spool: Spool, settings: Settings, urls: Urls,
                out: Output, checker: SchemaChecker) -> None:
    out.link(default_pages_link(resource), str(settings.default_page_size))
    for limit in settings.page_sizes:
        for page, results in pages(resource, limit, spool):
            data = page.encode(urls, results)
            path = page_path(resource, limit, page.offset)
            checker.check_document("page", page.envelope(urls), path)
            out.write(path, data)
            if limit == settings.default_page_size and page.offset == 0:
                out.write(first_page_path(resource), data)
