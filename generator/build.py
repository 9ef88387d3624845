"""The build, stage by stage: read the data, check it, render each record once,
check it against its schema, write it, cut the pages, and publish atomically.

The record stages run in parts (processes), each over its own range of every
collection; after each collection the parts exchange what later collections
need (encoded records to embed, ids to check references and duplicates).
"""
from __future__ import annotations

import bisect
import gc
import os
import shutil
from array import array
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import orjson

from . import load, meta, nginx, state, validate
from .errors import CatalogueError, DataError, GeneratorBug, Problem, Problems
from .paginate import Spool, Spools, page_count, pages, spool_files
from .parts import Progress, Team
from .render import EMBEDDED, Renderer
from .schemas import MAX_REPORTED, SchemaChecker
from .urls import (BY_COLLECTION, PAGE_NOT_BUILT, Resource, Urls, collection_of, default_pages_link,
                   detail_path, first_page_path, page_path, root_path, shard_of)
from .validate import Settings
from .write import Generation, Site

PROGRESS_EVERY = 5000
DEFAULT_LISTEN = "127.0.0.1:8000"  # of the nginx configuration the build writes
# After which collection the records of another are no longer needed.
LAST_NEEDED = {"categories": "books", "publishers": "books", "authors": "books", "users": "bookshelves"}
DEPENDS = {"books": ("categories", "publishers", "authors"), "bookshelves": ("users",)}


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
    dead: dict[str, set[str]] = field(default_factory=dict)  # ids published before, no longer


@dataclass(frozen=True)
class Incremental:
    """What the previous build leaves this one to take over."""
    previous: Path | None = None  # its generation (and state)
    reuse: bool = False  # same generator, base_url and time zone: its rows may be taken over
    unchanged: frozenset[str] = frozenset()  # collections taken over whole
    old_sizes: tuple[int, ...] = ()  # its page sizes, whose pages may be taken over
    old_default: int | None = None

    @classmethod
    def between(cls, previous: Path | None, before: state.Fingerprint | None,
                now: state.Fingerprint) -> "Incremental":
        if before is None or before.version != now.version or any(
                before.settings[k] != now.settings[k] for k in ("base_url", "time_zone")):
            return cls()
        same_pages = before.settings["page_sizes"] == now.settings["page_sizes"]
        unchanged: set[str] = set()
        for collection in load.COLLECTIONS:
            if (same_pages and before.inputs.get(collection) == now.inputs.get(collection)
                    and all(d in unchanged for d in DEPENDS.get(collection, ()))
                    and state.Previous.exists(previous, collection)):
                unchanged.add(collection)
        sizes = tuple(before.settings["page_sizes"])
        return cls(previous, True, frozenset(unchanged), sizes, sizes[0])


def default_processes() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def build(data_dir: Path, out_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          listen: str = DEFAULT_LISTEN, processes: int | None = None, background: bool = True,
          write_service: str = nginx.DEFAULT_WRITE_SERVICE) -> Summary:
    """Build and publish, taking over what the previous build made of unchanged input;
    with `background`, what is thrown away is deleted by a process of its own."""
    started = time.monotonic()
    processes = processes or default_processes()
    nginx.check_address(write_service)  # (before anything is published)
    settings, sources, problems = read_catalogue(Path(data_dir), base_url)
    site = Site(Path(out_dir))
    with site.locked():
        previous = site.published()
        before = state.Fingerprint.load(previous)
        now = state.fingerprint(settings, sources) if settings and not problems else None
        if now is not None and now.same_output(before):
            _write_configs(site, settings, listen, write_service)
            return Summary(_counts(previous), before.files, before.bytes, time.monotonic() - started, 0, processes)
        incremental = Incremental.between(previous, before, now) if now else Incremental()
        with site.new_generation() as generation, _scratch(site.state) as scratch:
            result = produce(settings, sources, problems, generation.writer, processes, progress, scratch,
                             incremental)
            _write_skeleton(site, generation, previous, settings)
            _link_shards(site, generation, previous, incremental, settings, result)
            _keep_state(site, generation, scratch, incremental, processes, before, now, result)
            previous = site.publish(generation)
        site.collect_garbage(keep=[generation.root, previous], background=background)
        _write_configs(site, settings, listen, write_service)
    written = result.files + generation.files
    return Summary(result.published, now.files, now.bytes, time.monotonic() - started, written, processes)


def _write_skeleton(site: Site, generation: Generation, previous: Path | None, settings: Settings) -> None:
    """The files outside shards: the API root and _meta (linked from the previous build
    when unchanged), each collection's pages/default link, and the first pages no part
    wrote because they did not change."""
    checker = SchemaChecker()
    root = Renderer(settings, Urls(settings.base_url)).root()
    checker.check("root", root, root_path())
    checker.raise_if_violated()
    serving = nginx.Serving(settings.base_url, settings.cache_control)
    for path, data in ((root_path(), root), (PAGE_NOT_BUILT, meta.page_not_built(settings)),
                       (nginx.SITE_INFO, serving.encode())):
        if previous is not None and (previous / path).is_file() and (previous / path).read_bytes() == data:
            site.carry(generation, previous, path)
        else:
            generation.write(path, data)
    for resource in BY_COLLECTION.values():
        generation.link(default_pages_link(resource), str(settings.default_page_size))
        site.carry(generation, previous, first_page_path(resource))


def _link_shards(site: Site, generation: Generation, previous: Path | None, incremental: Incremental,
                 settings: Settings, result: PartResult) -> None:
    """Every shard into the new skeleton: those this build wrote into, completed with the
    files of the old ones that still belong, and the old ones it did not touch."""
    counts = {r.name: result.published[r.name] for r in BY_COLLECTION.values()}
    dead = {BY_COLLECTION[c].name: ids for c, ids in result.dead.items()}
    processed = {BY_COLLECTION[c].name for c in load.COLLECTIONS if c not in incremental.unchanged}
    old = site.shards(previous) if previous is not None else {}
    losing = {shard_of(detail_path(BY_COLLECTION[c], id)) for c, ids in result.dead.items() for id in ids}
    # Old shards that may have lost files: those of dead records, and the pages of every
    # collection made again (the count may have changed); all of them without reuse.
    check = {shard for shard in old if collection_of(shard) in processed
             and (not incremental.reuse or "/pages/" in shard or shard in losing)}

    def live(shard: str, name: str) -> bool:
        resource = collection_of(shard)
        if not incremental.reuse and resource in processed:
            return False  # everything was made again
        key = name.split(".", 1)[0]
        if "/pages/" in shard:
            limit = int(shard.split("/")[4])
            return limit in settings.page_sizes and (int(key) < counts[resource] or key == "0")
        return key not in dead.get(resource, ())

    site.finish(generation, previous, check, live)


def _keep_state(site: Site, generation: Generation, scratch: Path, incremental: Incremental, parts: int,
                before: state.Fingerprint | None, now: state.Fingerprint, result: PartResult) -> None:
    """What the next build takes over: the records and keys of every collection (this
    build's from its scratch files, those it took over linked from the previous state),
    the published counts, and the fingerprint with the size of every shard."""
    directory = state.state_dir(generation.root)
    directory.mkdir(exist_ok=True)
    for collection in load.COLLECTIONS:
        if collection in incremental.unchanged:
            for path in state.state_dir(incremental.previous).glob(f"*-{collection}.*"):
                os.link(path, directory / path.name)
            continue
        for part in range(parts):
            index = scratch / f"records-{collection}.{part}"
            if not index.exists():
                continue
            for name in (index.name, f"keys-{collection}.{part}", *spool_files(index)):
                if not (directory / name).exists():  # (a data file two parts refer to)
                    os.rename(scratch / name, directory / name)
    (directory / "records.json").write_bytes(orjson.dumps(result.published))
    mine = f"@{generation.number:06d}"
    now.shards = {shard: state.shard_sizes(site.store / name) if name.endswith(mine) else before.shards[shard]
                  for shard, name in site.shards(generation.root).items()}
    now.skeleton = _skeleton_size(generation.root)
    now.save(generation.root)


def _write_configs(site: Site, settings: Settings, listen: str, write_service: str) -> None:
    serving = nginx.Serving(settings.base_url, settings.cache_control)
    nginx.write_configs(site.out, serving, listen, site.out / nginx.CONFIG_DIR, write_service)


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
            scratch: Path, incremental: Incremental = Incremental()) -> PartResult:
    """Every record's documents and every page that changed, made by `processes` parts;
    raises the data problems of all parts together, or the schema violations."""
    plan = {collection: source.parts(processes) for collection, source in sources.items()
            if collection not in incremental.unchanged}
    producing = settings is not None and not problems
    team = Team(processes, scratch, progress)
    results = team.run(lambda part, team: _part(part, team, settings, plan, producing, make_output, incremental))
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
    return PartResult([], published, sum(r.files for r in results), sum(r.bytes for r in results),
                      dead=results[0].dead)


def _part(part: int, team: Team, settings: Settings | None, plan: dict[str, list[load.Source]],
          producing: bool, make_output: Callable[[], Output], incremental: Incremental) -> PartResult:
    """One part's share: its range of every collection, then its range of every page.
    The records make no reference cycles, so the cyclic garbage collector, which walks
    every object held (hundreds of thousands of embedded records) again and again, is
    off while it works."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _part_work(part, team, settings, plan, producing, make_output, incremental)
    finally:
        if collecting:
            gc.enable()


def _part_work(part: int, team: Team, settings: Settings | None, plan: dict[str, list[load.Source]],
               producing: bool, make_output: Callable[[], Output], incremental: Incremental) -> PartResult:
    out = make_output()
    problems = Problems()
    urls = Urls(settings.base_url) if settings else None
    renderer = Renderer(settings, urls) if settings else None
    checker = SchemaChecker()
    known = validate.Known()
    published: dict[str, int] = {}
    changed: dict[str, set[str]] = {}  # ids whose published bytes changed (or went), per collection
    dead: dict[str, set[str]] = {}
    for collection in load.COLLECTIONS:
        resource = BY_COLLECTION[collection]
        if collection in incremental.unchanged:
            needed = LAST_NEEDED.get(collection) in plan  # a collection made again embeds it
            count = _take_over(collection, incremental.previous, known, renderer if needed else None, needed)
            published[resource.name] = count if part == 0 else 0
            changed[collection] = set()
        elif collection in plan:
            published[resource.name] = _collection(
                part, team, collection, plan[collection][part], incremental, producing, out, problems,
                known, renderer, checker, changed, dead)
        else:
            continue
        for done in [c for c, last in LAST_NEEDED.items() if last == collection]:
            known.ids.pop(done, None)
            if renderer:
                renderer.embedded[done].clear()
    team.wait()
    if producing and not team.failed:
        for collection in plan:
            write_pages(part, team, BY_COLLECTION[collection], settings, urls, out, checker, incremental)
    return PartResult(problems.items, published, out.files, out.bytes, checker.violations, checker.total, dead)


def _take_over(collection: str, previous: Path, known: validate.Known, renderer: Renderer | None,
               needed: bool) -> int:
    """A collection the previous build made from the same input: only what a later
    collection made again needs of it (ids to refer to, records to embed); its files stay."""
    if not needed:
        return _counts(previous)[BY_COLLECTION[collection].name]
    before = state.Previous(previous, collection, rows=False)
    known.ids[collection] = {id: 0 for id in before.by_id}
    if renderer is not None and collection in EMBEDDED:
        for id, data in zip(before.by_id, before.records.read(0, before.count)):
            renderer.embedded[collection][id] = orjson.Fragment(data)
    before.close()
    return before.count


def _collection(part: int, team: Team, collection: str, source: load.Source, incremental: Incremental,
                producing: bool, out: Output, problems: Problems, known: validate.Known,
                renderer: Renderer | None, checker: SchemaChecker, changed: dict[str, set[str]],
                dead: dict[str, set[str]]) -> int:
    """This part's range of one collection: rows taken over where the previous build had
    them and nothing they embed changed; the others checked, rendered and, when their
    bytes differ from before, written. Then the exchange with the other parts."""
    resource = BY_COLLECTION[collection]
    before = (state.Previous(incremental.previous, collection)
              if incremental.reuse and state.Previous.exists(incremental.previous, collection) else None)
    upstream = set().union(*(changed.get(d, set()) for d in DEPENDS.get(collection, ())))

    def reuse(row: dict, digest: bytes):
        hit = before.by_hash.get(digest)
        if hit is not None and upstream and any(r in upstream for r in validate.references(row, collection)):
            return None  # it embeds a record that changed
        return hit

    if collection == "categories":  # a node's path depends on the others: each is made again
        stream = validate.category_tree(source, problems, known)
    else:
        stream = validate.records(source, problems, known, reuse if before is not None else None)
    # (id, line, published, username, row hash) of every record, for the other parts and the next build
    keys = team.writer(f"keys-{collection}", part)
    usernames: dict[str, int] = {}
    # The first part learns every published id (its own here, the others' in the exchange)
    # to tell which of the previous build's records are gone.
    published_ids = set() if before is not None and part == 0 else None
    origin = array("q")  # each published record's place in the previous build, or -1 when it is new
    mine: set[str] = set()
    # The previous records are referred to where they lie (not copied) unless that would
    # keep too much that is no longer published.
    refer = before is not None and before.referable()
    if refer:
        before.link_data(team.scratch)
    with team.spool(f"records-{collection}", part) as spool, keys:
        for line, record in stream:
            published = False
            if producing and not problems and not team.failed:
                token = record.get(validate.REUSED)
                if token is not None:
                    if published := token.published:
                        origin.append(token.index)
                        _keep(spool, before, token.index, refer)
                        if collection in EMBEDDED:
                            renderer.embedded[collection][token.id] = orjson.Fragment(before.bytes(token.index))
                else:
                    rendered = renderer.render(collection, record)
                    if published := rendered is not None:
                        document, data = rendered
                        old = before.by_id.get(record["id"]) if before is not None else None
                        if old is not None and before.bytes(old) == data:
                            origin.append(old)
                            _keep(spool, before, old, refer)
                        else:
                            path = detail_path(resource, record["id"])
                            checker.check_record(resource.schema, document, path)
                            out.write(path, data)
                            origin.append(-1)
                            mine.add(record["id"])
                            spool.append(data)
                if published and len(spool) % PROGRESS_EVERY == 0:
                    team.report(part, resource.name, len(spool))
            username = record.get("username")
            keys.append((record["id"], line, published, username, record[validate.ROW]))
            if published_ids is not None and published:
                published_ids.add(record["id"])
            if username is not None:
                usernames.setdefault(username, line)
        count = len(spool)
    team.report(part, resource.name, count, finished=True)
    if problems:
        team.fail()
    team.save(f"origin-{collection}", part, origin)
    team.save(f"changed-{collection}", part, mine)
    team.wait()
    _exchange(part, team, collection, source, usernames, known, renderer, problems, published_ids)
    changed[collection] = set(mine)
    for k in range(team.count):
        if k != part and collection in LAST_NEEDED:
            changed[collection] |= team.load(f"changed-{collection}", k)
    if before is not None:
        if collection in LAST_NEEDED:  # every part knows every id of it now
            changed[collection] |= before.by_id.keys() - known.ids.get(collection, {}).keys()
        if published_ids is not None:
            dead[collection] = before.by_id.keys() - published_ids
        before.close()
    return count


def _keep(spool: Spool, before: state.Previous, index: int, refer: bool) -> None:
    """A record the previous build published, into this build's spool."""
    if refer:
        spool.refer(before.location(index))
    else:
        spool.append(before.bytes(index))


def _exchange(part: int, team: Team, collection: str, source: load.Source, usernames: dict[str, int],
              known: validate.Known, renderer: Renderer | None, problems: Problems,
              published: set[str] | None = None) -> None:
    """Learn the other parts' records of a collection: their ids (for references, and the
    first part checks them for duplicates, and adds those published to `published`) and,
    when others embed them, their bytes."""
    others = [k for k in range(team.count) if k != part]
    if not others:
        return
    referenced = collection in LAST_NEEDED
    if part != 0 and not referenced:
        return
    ids = known.ids.setdefault(collection, {})
    for k in others:
        if part == 0 and k > 0:  # each later record against everything before it, once
            for id, line, is_published, username, _ in team.items(f"keys-{collection}", k):
                if published is not None and is_published:
                    published.add(id)
                first = ids.setdefault(id, line)
                if first != line:
                    problems.add(source.name, line, "id", f"{id} is used twice in {collection}: first on line {first}")
                if username is not None:
                    taken = usernames.setdefault(username, line)
                    if taken != line:
                        problems.add(source.name, line, "username",
                                     f"{username!r} is already taken by the user on line {taken}")
        if not referenced:
            continue  # (the first part, done with its duplicate check)
        embed = renderer is not None and collection in EMBEDDED and not team.failed
        with Spools([team.file(f"records-{collection}", k)]) as spool:
            records = spool.read(0, len(spool))
            for id, line, is_published, _, _ in team.items(f"keys-{collection}", k):
                ids.setdefault(id, line)
                if embed and is_published:
                    renderer.embedded[collection][id] = orjson.Fragment(next(records))
    if not referenced:
        known.ids.pop(collection, None)  # only needed for the duplicate check


def write_pages(part: int, team: Team, resource: Resource, settings: Settings, urls: Urls, out: Output,
                checker: SchemaChecker, incremental: Incremental) -> None:
    """This part's share of the pages of every page size that changed: a page is the
    previous build's when the count is the same and each of its records is too."""
    collection = resource.collection
    origin = array("q")
    for k in range(team.count):
        origin.extend(team.load(f"origin-{collection}", k))
    old_count = _counts(incremental.previous)[resource.name] if incremental.reuse else None
    paths = [team.file(f"records-{collection}", k) for k in range(team.count)]
    moved = [i for i, old in enumerate(origin) if old != i]  # new, changed or shifted records
    with Spools(paths) as records:
        count = len(records)
        for limit in settings.page_sizes:
            same = limit in incremental.old_sizes and count == old_count
            first_page = limit == settings.default_page_size
            total = page_count(count, limit)
            for number in range(total * part // team.count, total * (part + 1) // team.count):
                offset = number * limit
                clean = same and bisect.bisect_left(moved, offset) == bisect.bisect_left(moved, offset + limit)
                index = first_page and offset == 0 and (not clean or incremental.old_default != limit)
                if clean and not index:
                    continue
                page, results = next(pages(resource, limit, records, number, number + 1))
                data = page.encode(urls, results)
                if not clean:
                    path = page_path(resource, limit, offset)
                    checker.check_document("page", page.envelope(urls), path)
                    out.write(path, data)
                if index:
                    out.write(first_page_path(resource), data)


class _scratch:
    """A scratch directory in the site's build state, removed afterwards."""

    def __init__(self, state: Path) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="scratch-", dir=state))

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
