"""The build, stage by stage: read the data, check it, render each record once,
check it against its schema, write it, cut the pages, and publish atomically.

The record stages run in parts (processes), each over its own range of every
collection; after each collection the parts exchange what later collections
need (encoded records to embed, ids to check references and duplicates).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import orjson

from . import load, meta, nginx, state, validate
from .errors import CatalogueError, DataError, GeneratorBug, Problem, Problems
from .paginate import Spool, Spools, pages
from .parts import Progress, Team
from .render import EMBEDDED, Renderer
from .schemas import MAX_REPORTED, SchemaChecker
from .urls import (BY_COLLECTION, PAGE_NOT_BUILT, Resource, Urls, default_pages_link, detail_path,
                   first_page_path, page_path, root_path)
from .validate import Settings
from .write import Generation, Site

PROGRESS_EVERY = 5000
DEFAULT_LISTEN = "127.0.0.1:8000"  # of the nginx configuration the build writes
# After which collection the records of another are no longer needed.
LAST_NEEDED = {"categories": "books", "publishers": "books", "authors": "books", "users": "bookshelves"}


@dataclass
class Summary:
    records: dict[str, int]  # published records per resource
    files: int  # files of the published site
    bytes: int
    seconds: float
    written: int  # files this run wrote
    processes: int = 1


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


@dataclass
class PartResult:
    problems: list[Problem]
    published: dict[str, int]
    files: int
    bytes: int
    violations: list[str] = field(default_factory=list)
    violation_count: int = 0


def default_processes() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def build(data_dir: Path, out_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          listen: str = DEFAULT_LISTEN, processes: int | None = None, background: bool = True) -> Summary:
    """Build and publish; with `background`, old files are deleted by a process of their own."""
    started = time.monotonic()
    processes = processes or default_processes()
    settings, sources, problems = read_catalogue(Path(data_dir), base_url)
    site = Site(Path(out_dir))
    with site.locked():
        previous = site.published()
        before = state.Fingerprint.load(previous)
        now = state.fingerprint(settings, sources) if settings and not problems else None
        if now is not None and now.same_output(before):
            _write_configs(site, settings, listen)
            return Summary(_counts(previous), before.files, before.bytes, time.monotonic() - started, 0, processes)
        with site.new_generation() as generation, _scratch(site.state) as scratch:
            make_output = lambda: Generation(generation.root, generation.store, generation.number)
            result = produce(settings, sources, problems, make_output, processes, progress, scratch)
            serving = nginx.Serving(settings.base_url, settings.cache_control)
            for path, data in ((root_path(), Renderer(settings, Urls(settings.base_url)).root()),
                               (PAGE_NOT_BUILT, meta.page_not_built(settings)),
                               (nginx.SITE_INFO, serving.encode())):
                generation.write(path, data)
            old_shards = set(site.shards(previous)) if previous else set()
            site.finish(generation, previous, check=old_shards, live=lambda shard, name: False)
            now.shards = {shard: state.shard_sizes(site.store / name)
                          for shard, name in site.shards(generation.root).items()}
            now.skeleton = _skeleton_size(generation.root)
            _save_counts(generation.root, result.published)
            now.save(generation.root)
            previous = site.publish(generation)
        site.collect_garbage(keep=[generation.root, previous], background=background)
        _write_configs(site, settings, listen)
    written = result.files + generation.files
    return Summary(result.published, now.files, now.bytes, time.monotonic() - started, written, processes)


def _write_configs(site: Site, settings: Settings, listen: str) -> None:
    serving = nginx.Serving(settings.base_url, settings.cache_control)
    nginx.write_configs(site.out, serving, listen, site.out / nginx.CONFIG_DIR)


def _skeleton_size(root: Path) -> list[int]:
    files = size = 0
    for directory, _dirs, names in os.walk(root):  # links to shards are not followed
        if state.STATE_DIR in Path(directory).parts:
            continue
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                files += 1
                size += os.stat(path).st_size
    return [files, size]


def _save_counts(root: Path, published: dict[str, int]) -> None:
    directory = state.state_dir(root)
    directory.mkdir(exist_ok=True)
    (directory / "records.json").write_text(orjson.dumps(published).decode(), encoding="utf-8")


def _counts(root: Path) -> dict[str, int]:
    return orjson.loads((state.state_dir(root) / "records.json").read_bytes())


def check(data_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          processes: int | None = None) -> Summary:
    """Everything a build does but writing: the same checks, the same report."""
    started = time.monotonic()
    processes = processes or default_processes()
    settings, sources, problems = read_catalogue(Path(data_dir), base_url)
    with tempfile.TemporaryDirectory(prefix="catalogue-check-") as scratch:
        result = produce(settings, sources, problems, Discard, processes, progress, Path(scratch))
    return Summary(result.published, result.files, result.bytes, time.monotonic() - started, 0, processes)


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
            make_output: Callable[[], Output], processes: int, progress: Progress | None,
            scratch: Path) -> PartResult:
    """Every record's documents and every page, made by `processes` parts; raises the
    data problems of all parts together, or the schema violations."""
    plan = {collection: source.parts(processes) for collection, source in sources.items()}
    producing = settings is not None and not problems
    team = Team(processes, scratch, progress)
    results = team.run(lambda part, team: _part(part, team, settings, plan, producing, make_output))
    for result in results:
        problems.items.extend(result.problems)
    if problems:
        problems.sort([source.name for source in sources.values()])  # build order
        raise DataError(problems)
    violations = [v for r in results for v in r.violations][:MAX_REPORTED]
    if violations:
        total = sum(r.violation_count for r in results)
        raise GeneratorBug(SchemaChecker.report(violations, total))
    published = {r.name: sum(result.published.get(r.name, 0) for result in results)
                 for r in BY_COLLECTION.values()}
    return PartResult([], published, sum(r.files for r in results), sum(r.bytes for r in results))


def _part(part: int, team: Team, settings: Settings | None, plan: dict[str, list[load.Source]],
          producing: bool, make_output: Callable[[], Output]) -> PartResult:
    """One part's share: its range of every collection, then its range of every page."""
    out = make_output()
    problems = Problems()
    urls = Urls(settings.base_url) if settings else None
    renderer = Renderer(settings, urls) if settings else None
    checker = SchemaChecker()
    known = validate.Known()
    published: dict[str, int] = {}
    for collection in load.COLLECTIONS:
        if collection not in plan:
            continue
        resource, source = BY_COLLECTION[collection], plan[collection][part]
        if collection == "categories":
            stream = validate.category_tree(source, problems, known)
        else:
            stream = validate.records(source, problems, known)
        keys = []  # (id, line, published, username) of every record, for the other parts
        with Spool(team.file(f"records-{collection}", part)) as spool:
            for line, record in stream:
                data = None
                if producing and not problems and not team.failed:
                    data = renderer.render(collection, record)
                    if data is not None:
                        path = detail_path(resource, record["id"])
                        checker.check(resource.schema, data, path)
                        out.write(path, data)
                        spool.append(data)
                        if len(spool) % PROGRESS_EVERY == 0:
                            team.report(part, resource.name, len(spool))
                keys.append((record["id"], line, data is not None, record.get("username")))
            published[resource.name] = len(spool)
        team.report(part, resource.name, len(spool), finished=True)
        if problems:
            team.fail()
        team.save(f"keys-{collection}", part, keys)
        team.wait()
        _exchange(part, team, collection, source, keys, known, renderer, problems)
        for done in [c for c, last in LAST_NEEDED.items() if last == collection]:
            known.ids.pop(done, None)
            if renderer:
                renderer.embedded[done].clear()
    team.wait()
    if producing and not team.failed:
        for collection in plan:
            resource = BY_COLLECTION[collection]
            paths = [team.file(f"records-{collection}", k) for k in range(team.count)]
            with Spools(paths) as records:
                write_pages(resource, records, settings, urls, out, checker, part, team.count)
    return PartResult(problems.items, published, out.files, out.bytes, checker.violations, checker.total)


def _exchange(part: int, team: Team, collection: str, source: load.Source, own: list,
              known: validate.Known, renderer: Renderer | None, problems: Problems) -> None:
    """Learn the other parts' records of a collection: their ids (for references, and the
    first part checks them for duplicates) and, when others embed them, their bytes."""
    others = [k for k in range(team.count) if k != part]
    if not others:
        return
    referenced = collection in LAST_NEEDED
    if part != 0 and not referenced:
        return
    ids = known.ids.setdefault(collection, {})
    usernames = {key[3]: key[1] for key in own if key[3] is not None}
    for k in others:
        keys = team.load(f"keys-{collection}", k)
        if part == 0 and k > 0:  # each later record against everything before it, once
            for id, line, _, username in keys:
                first = ids.get(id)
                if first is not None and first != line:
                    problems.add(source.name, line, "id", f"{id} is used twice in {collection}: first on line {first}")
                if username is not None:
                    taken = usernames.setdefault(username, line)
                    if taken != line:
                        problems.add(source.name, line, "username",
                                     f"{username!r} is already taken by the user on line {taken}")
        for id, line, _, _ in keys:
            ids.setdefault(id, line)
        if renderer is not None and collection in EMBEDDED and not team.failed:
            with Spools([team.file(f"records-{collection}", k)]) as spool:
                embedded = [id for id, _, published, _ in keys if published]
                for id, data in zip(embedded, spool.read(0, len(spool))):
                    renderer.embedded[collection][id] = orjson.Fragment(data)
    if not referenced:
        known.ids.pop(collection, None)  # only needed for the duplicate check


def write_pages(resource: Resource, records: Spools, settings: Settings, urls: Urls, out: Output,
                checker: SchemaChecker, part: int = 0, parts: int = 1) -> None:
    """This part's share of the pages of every page size."""
    if part == 0:
        out.link(default_pages_link(resource), str(settings.default_page_size))
    for limit in settings.page_sizes:
        total = max(-(-len(records) // limit), 1)
        first, last = total * part // parts, total * (part + 1) // parts
        for page, results in pages(resource, limit, records, first, last):
            data = page.encode(urls, results)
            path = page_path(resource, limit, page.offset)
            checker.check_document("page", page.envelope(urls), path)
            out.write(path, data)
            if limit == settings.default_page_size and page.offset == 0:
                out.write(first_page_path(resource), data)


class _scratch:
    """A scratch directory in the site's build state, removed afterwards."""

    def __init__(self, state: Path) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="scratch-", dir=state))

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
