"""`catalogue import URL`: the whole import, as a table of contents.

Nothing is written into the target until the whole catalogue has been read, converted
and checked; the pages read so far are kept in a state directory beside the target
(`.<name>.import-state/`) so that `--resume` goes on after an interruption.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..api.urls import API, RESOURCES
from ..catalogue.fields import url_parts
from ..errors import CatalogueError, DataError
from . import output, probe
from .convert import convert
from .crawl import Crawl, Progress, Settings


@dataclass(frozen=True)
class Options:
    out: Path
    format: str = "yaml"
    concurrency: int = 4
    token: str | None = None
    resume: bool = False
    time_zone: str | None = None
    replace: bool = False
    backoff: float = 0.5  # seconds before a request's second try
    query: dict | None = None  # the service's search, ordering and filters (importer/probe.py), if told


@dataclass
class Summary:
    records: dict[str, int]
    formats: dict[str, str]
    notes: list[str]
    seconds: float
    replaced: str | None = None

    @property
    def rate(self) -> float:
        return sum(self.records.values()) / self.seconds if self.seconds else 0.0


def freeze(url: str, options: Options, progress: Progress | None = None) -> Summary:
    """Read the catalogue API at url (its root, .../api/v1/) into options.out."""
    started = time.monotonic()
    settings = Settings(api_root(url), options.concurrency, options.token, backoff=options.backoff)
    output.check_target(options.out, options.replace)
    state = state_directory(options.out, settings.root, options.resume)
    crawl = Crawl(settings, state, progress or Progress())
    links = crawl.root()
    sizes = crawl.page_sizes(RESOURCES[0].name)
    collections = {r.name: crawl.collection(r.name, sizes) for r in RESOURCES}
    pages = {name: crawl.pages(collection) for name, collection in collections.items()}
    max_limit = crawl.max_limit(RESOURCES[0].name, collections[RESOURCES[0].name].count)
    frozen = convert(links, collections, pages, sizes, options.time_zone, max_limit)
    if frozen.problems:
        raise DataError(frozen.problems)
    if options.query:
        _check_query(options.query, pages, crawl, settings.root)
        frozen.site.update(options.query)
        frozen.notes.append("search, ordering and filters: as --query gives them; the service answers a few "
                            "such queries as they say")
    formats, replaced = output.write(frozen, options.out, options.format, options.replace)
    shutil.rmtree(state)
    return Summary({r.collection: len(frozen.rows[r.collection]) for r in RESOURCES}, formats, frozen.notes,
                   time.monotonic() - started, replaced)


def _check_query(query: dict, pages: dict[str, list[dict]], crawl: Crawl, root: str) -> None:
    """Ask the service a few queries; an error naming those it answers otherwise."""
    documents = {name: [record for page in found for record in page["results"]] for name, found in pages.items()}
    path = urlsplit(root).path
    differences = probe.probe(query, documents, lambda target: crawl.client.get_json(path + target))
    if differences:
        raise CatalogueError("the service answers these queries otherwise than --query's settings say (nothing "
                             "was written; fix the file and run again with --resume):\n  " + "\n  ".join(differences))


def api_root(url: str) -> str:
    """The API root's URL with its trailing slash; an error for what cannot be one."""
    parts = url_parts(url)
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise CatalogueError(f"{url!r} is not an http(s) URL: give the API root, like https://host/{API}/")
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return f"{parts.scheme}://{parts.netloc}{path}"


def state_directory(out: Path, root: str, resume: bool) -> Path:
    """Where the pages read are kept until the import is done: the last run's, with --resume."""
    state = out.parent / f".{out.name}.import-state"
    source = state / "source.json"
    if resume:
        if not source.is_file():
            raise CatalogueError(f"there is no interrupted import into {out} to resume: run without --resume")
        if json.loads(source.read_text(encoding="utf-8"))["url"] != root:
            raise CatalogueError(f"the interrupted import into {out} read another service: run without --resume")
        return state
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    source.write_text(json.dumps({"url": root}), encoding="utf-8")
    return state
