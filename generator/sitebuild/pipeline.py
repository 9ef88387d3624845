"""The build, stage by stage: read the catalogue; produce, in parts, every document
that changed; lay out the new generation's skeleton and link its shards; keep what
the next build takes over; publish atomically and throw away what is no longer used.

The record stages run in parts (processes, part.py), each over its own range of
every collection; after each collection the parts exchange what later collections
need. `check` is the same production into a tally instead of a site.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..api import meta, openapi
from ..api.render import Renderer
from ..api.schemas import MAX_REPORTED, SchemaChecker
from ..api.serving import SiteInfo
from ..api.viewer import viewer
from ..api.urls import (BY_COLLECTION, NOT_FOUND_FILE, OPENAPI_FILE, PAGE_INDEX, PAGE_NOT_BUILT, SITE_INFO, STATE, VIEWER,
                        Shard, Urls,
                        default_pages_link, detail_path, first_page_path, key_of, root_path, shard_of)
from ..catalogue.resources import COLLECTIONS
from ..catalogue.load import Input, Source, read_catalogue
from ..catalogue.settings import Settings
from ..errors import DataError, GeneratorBug, disk_full_said
from . import state
from .queries import Job as QueryJob, write_query_indexes
from .part import Part, PartResult, Phases, Plan
from .publish import Discard, Generation, Output, Site, same_bytes, shard_of_store
from . import segments
from .segments import Segment, Table
from .team import Progress, Team


@dataclass
class Summary:
    records: dict[str, int]  # published records per resource
    files: int  # files of the published site
    bytes: int
    seconds: float
    written: int  # files this run wrote
    processes: int = 1
    phases: dict[str, float] = field(default_factory=dict)  # seconds of each step of build(), in order


@dataclass(frozen=True)
class Job:
    """What a build or a check works from: the catalogue as read, and how to run."""
    input: Input
    processes: int
    progress: Progress | None

    @classmethod
    def read(cls, data_dir: Path, base_url: str | None, processes: int | None, progress: Progress | None,
             links: str = "api") -> "Job":
        found = read_catalogue(Path(data_dir), base_url, links)
        return cls(found, processes or default_processes(found), progress)

    @property
    def settings(self) -> Settings | None:
        return self.input.settings

    def fingerprint(self, before: state.Fingerprint | None,
                    previous: Path | None) -> tuple[state.Fingerprint | None, dict[str, Table]]:
        """The input's fingerprint (taking over `before`'s hashes of files found as they
        were) and the segments of the files read by segment; None while it has problems."""
        if self.settings is None or self.input.problems:
            return None, {}
        return state.fingerprint(self.settings, self.input.sources, before, previous)


@dataclass(frozen=True)
class Workspace:
    """Where a build's parts write: their outputs, and a scratch directory for what they exchange."""
    make_output: Callable[[], Output]
    scratch: Path
    tag: str  # names the record files the build keeps: unique among the builds of a site
    index: bool = False  # the parts make the query indexes' parts of what they spool (a build's, not a check's)


@dataclass(frozen=True)
class Target:
    """The site being built: its directory, the generation being written, the one published."""
    site: Site
    generation: Generation
    previous: Path | None


# Below about a megabyte of input (some 1,000 books) one process builds faster than two: the
# second part's fork and the parts' exchange cost more than the half of the work they take
# (processor time, measured: the 60-book sample 0.03 s against 0.06 s; 1,000 books 0.18 against
# 0.32 s; at 2,000 books two processes are faster).
ONE_PROCESS_BELOW = 1_000_000


def default_processes(found: Input) -> int:
    """As many processes as cores (at most 8), or one for a small catalogue."""
    if sum(source.size or 0 for source in found.sources.values()) < ONE_PROCESS_BELOW:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def build(data_dir: Path, out_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          processes: int | None = None, background: bool = True, links: str = "api",
          announce: Callable[[str, str], None] | None = None) -> Summary:
    """Build and publish, taking over what the previous build made of unchanged input;
    with `background`, what is thrown away is deleted by a process of its own; `announce`
    is told of the few detail documents written as soon as they are (Plan.announce), when
    the settings are as the published generation's (its objects' headers hold)."""
    started, phases = time.monotonic(), Phases()
    job = Job.read(data_dir, base_url, processes, progress, links)
    site = Site(Path(out_dir))
    with site.locked():
        previous = site.published()
        before = state.Fingerprint.load(previous)
        now, tables = job.fingerprint(before, previous)
        phases.done("read the input")
        if now is not None and now.same_output(before):
            return Summary(state.counts(previous), before.files, before.bytes, time.monotonic() - started, 0,
                           job.processes, phases.seconds)  # (not a file touched: nor the report)
        incremental = state.Incremental.between(previous, before, now)
        with (site.new_generation() as generation,
              tempfile.TemporaryDirectory(prefix="scratch-", dir=site.state, ignore_cleanup_errors=True) as scratch):
            with disk_full_said():  # (the generation, unpublished, is thrown away: its space freed)
                target = Target(site, generation, previous)
                workspace = Workspace(generation.writer, Path(scratch), state.data_tag(generation.number), index=True)
                same_settings = before is not None and now is not None and before.settings == now.settings
                result = produce(job, workspace, incremental, tables, announce if same_settings else None)
                phases.done("records and pages (parts)")
                phases.seconds.update({f"parts: {step}": seconds for step, seconds in result.phases.items()})
                write_skeleton(target, job.settings)
                linked = link_shards(target, incremental, job.settings, result, before)
                phases.done("skeleton and shards")
                state.keep(generation.root, workspace.scratch, incremental, result.published, tables)
                phases.done("state for the next build")  # (first: the query indexes read the ids kept)
                write_query_indexes(QueryJob(site, generation, previous, job.settings, result.published,
                                             workspace.scratch), job.processes)
                phases.done("query indexes")
                record_sizes(target, now, before, sum_sizes([result.sizes, linked]))
                phases.done("state for the next build")
            replaced = site.publish(generation)
            phases.done("publish (flush, swap)")
        site.collect_garbage(keep=[generation.root, replaced], background=background)
        phases.done("garbage")
        summary = Summary(result.published, now.files, now.bytes, time.monotonic() - started,
                          result.files + generation.files, job.processes, phases.seconds)
        site.report(summary)
    return summary


def check(data_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          processes: int | None = None) -> Summary:
    """Everything a build does but writing: the same checks, the same report."""
    started = time.monotonic()
    job = Job.read(data_dir, base_url, processes, progress)
    with tempfile.TemporaryDirectory(prefix="catalogue-check-") as scratch:
        result = produce(job, Workspace(Discard, Path(scratch), "check"))
    return Summary(result.published, result.files, result.bytes, time.monotonic() - started, 0, job.processes)


def produce(job: Job, workspace: Workspace, incremental: state.Incremental = state.Incremental(),
            tables: dict[str, Table] | None = None, announce: Callable[[str, str], None] | None = None) -> PartResult:
    """Every record's documents and every page that changed, made by the job's parts;
    raises the data problems of all parts together, or the schema violations."""
    settings, sources, problems = job.input
    ranges, shares = share_out(job, incremental, tables or {})
    plan = Plan(settings, ranges, settings is not None and not problems, workspace.make_output, incremental, shares,
                announce, workspace.index)
    team = Team(job.processes, workspace.scratch, job.progress, workspace.tag)
    results = team.run(lambda number, team: Part(number, team, plan).run())
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
    slowest = {step: max(r.phases.get(step, 0.0) for r in results) for step in results[0].phases}
    return PartResult([], published, sum(r.files for r in results), sum(r.bytes for r in results),
                      dead=results[0].dead, phases=slowest, sizes=sum_sizes([r.sizes for r in results]))


def share_out(job: Job, incremental: state.Incremental,
              tables: dict[str, Table]) -> tuple[dict[str, list[Source]], dict[str, list[tuple[Segment, ...]]]]:
    """Each collection to make, cut into one range per part: by its segments where it has
    them (and its header can be read), else by bytes; and each part's segments."""
    ranges, shares = {}, {}
    for collection, source in job.input.sources.items():
        if collection in incremental.unchanged:
            continue
        if collection in tables:
            share = segments.shares(tables[collection].segments, job.processes)
            ranges[collection] = segments.sources(source, share)
            if ranges[collection] is not None:
                shares[collection] = share
                continue
        ranges[collection] = source.parts(job.processes)
    return ranges, shares


def write_skeleton(target: Target, settings: Settings) -> None:
    """The files outside shards: the API root and _meta, the OpenAPI document among them
    (linked from the previous build when unchanged), each collection's pages/default link, and the first pages no part
    wrote because they did not change."""
    site, generation, previous = target.site, target.generation, target.previous
    checker = SchemaChecker()
    root = Renderer(settings, Urls(settings.base_url, settings.links)).root()
    checker.check("root", root, root_path())
    checker.raise_if_violated()
    info = SiteInfo(settings.base_url, settings.cache_control, settings.default_page_size, settings.max_limit,
                    settings.query, settings.page_sizes)
    for path, data in ((root_path(), root), (PAGE_NOT_BUILT, meta.page_not_built(settings)),
                       (NOT_FOUND_FILE, meta.NOT_FOUND), (SITE_INFO, info.encode()),
                       (OPENAPI_FILE, openapi.encoded(settings)), (VIEWER, viewer(settings))):
        if previous is not None and same_bytes(previous / path, data):
            site.carry(generation, previous, path)
        else:
            generation.write(path, data)
    for resource in BY_COLLECTION.values():
        generation.link(default_pages_link(resource), str(settings.default_page_size))
        site.carry(generation, previous, first_page_path(resource))


def link_shards(target: Target, incremental: state.Incremental, settings: Settings,
                result: PartResult, before: state.Fingerprint | None) -> dict[str, list[int]]:
    """Every shard into the new skeleton: those this build wrote into, completed with the
    files of the old ones that still belong, and the old ones it did not touch. Returns
    the [files, bytes] of old files linked into each new shard."""
    site, previous = target.site, target.previous
    counts = {r.name: result.published[r.name] for r in BY_COLLECTION.values()}
    dead = {BY_COLLECTION[c].name: ids for c, ids in result.dead.items()}
    processed = {BY_COLLECTION[c].name for c in COLLECTIONS if c not in incremental.unchanged}
    old = site.shards(previous) if previous is not None else {}
    losing = {shard_of(detail_path(BY_COLLECTION[c], id)) for c, ids in result.dead.items() for id in ids}
    old_counts = state.counts(previous) if previous is not None and incremental.reuse else {}

    def may_lose_files(shard: Shard) -> bool:
        """Old shards that may have lost files: those of dead records, and the pages of a size no
        longer made or of a collection made again that shrank; all of them without reuse."""
        if not incremental.reuse:
            return True
        if shard.limit is None:
            return False
        return (shard.limit not in settings.page_sizes or counts[shard.resource] < old_counts[shard.resource]
                or shard.limit == incremental.old_default != settings.default_page_size)  # (its page indexes go)

    check = {shard for shard in old if Shard.parse(shard).resource in processed
             and (shard in losing or may_lose_files(Shard.parse(shard)))}

    def live(directory: str, name: str) -> bool:
        shard = Shard.parse(directory)
        if not incremental.reuse and shard.resource in processed:
            return False  # everything was made again
        key = key_of(name)
        if name.endswith(PAGE_INDEX) and shard.limit != settings.default_page_size:
            return False  # (the default page size's pages alone have indexes)
        if shard.limit is not None:
            return shard.limit in settings.page_sizes and (int(key) < counts[shard.resource] or key == "0")
        return key not in dead.get(shard.resource, ())

    return site.finish(target.generation, previous, check, live, before.shards if before else {})


def sum_sizes(tallies: list[dict[str, list[int]]]) -> dict[str, list[int]]:
    """[files, bytes] per shard, summed over several tallies."""
    total: dict[str, list[int]] = {}
    for tally in tallies:
        for shard, (files, size) in tally.items():
            kept = total.setdefault(shard, [0, 0])
            kept[0] += files
            kept[1] += size
    return total


def record_sizes(target: Target, now: state.Fingerprint, before: state.Fingerprint | None,
                 new: dict[str, list[int]]) -> None:
    """The fingerprint with the files and bytes of every shard and of the skeleton, saved
    with the new generation: the new shards as this build counted what it wrote and
    linked into them, the others as earlier builds did."""
    site, generation = target.site, target.generation
    now.shards = {shard: new[shard] if shard_of_store(name)[1] == generation.number else before.shards[shard]
                  for shard, name in site.shards(generation.root).items()}
    now.skeleton = _skeleton_size(generation.root)
    now.save(generation.root)


def _skeleton_size(directory: Path | str) -> list[int]:
    """[files, bytes] of a generation's own files: links to shards are not followed, and the
    build's state (STATE) is not counted."""
    files = size = 0
    for entry in os.scandir(directory):
        if entry.is_symlink() or entry.name == STATE:
            continue
        if entry.is_dir():
            inner = _skeleton_size(entry.path)
            files, size = files + inner[0], size + inner[1]
        else:
            files, size = files + 1, size + entry.stat().st_size
    return [files, size]
