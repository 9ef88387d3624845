"""One part's share of a build: its range of every collection, then its range of every page.

A part is one process of the build (team.py runs them). For each collection, in
order, it checks and renders the rows of its range, taking over from the previous
build the rows that did not change; writes the detail documents whose bytes
changed; spools every published record; and then meets the other parts to learn
their ids (for references and duplicates) and the records later collections embed.
Last, it cuts its share of the pages from the spools of all parts.
"""
from __future__ import annotations

import bisect
import pickle
import time
from array import array
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import accumulate, compress
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy
import orjson

from ..api import pageindex
from ..api.backends import configured
from ..api.pages import Page
from ..api.render import Renderer
from ..api.schemas import SchemaChecker
from ..api.urls import BY_COLLECTION, Resource, Urls, detail_path, first_page_path, page_index_path, page_path
from ..catalogue.resources import COLLECTIONS, EMBEDDED, LAST_NEEDED, embeds
from ..catalogue.load import Source
from ..catalogue.records import REUSED, ROW, Known, Unique, category_tree, records, references
from ..catalogue.settings import Settings
from ..errors import Problem, Problems
from ..system import no_cycle_collector
from . import paging, state, stretches
from .keys import Keys
from .publish import Output, same_bytes
from .segments import Segment
from .spool import Spool, Spools
from .team import Team, part_files

PROGRESS_EVERY = 5000
ANNOUNCED_MAX = 256  # detail documents a part tells of, per collection: beyond, none (a large change; a
# burst of writes makes rebuilds of a hundred or two new records, which go up while they build)
EXCHANGE_CHUNK = 1 << 16  # ids of another part checked at once (_chunks)
INDEX_PARTS = "query indexes' parts (within the pages)"  # (the step's name among a part's phases)


@dataclass
class Plan:
    """What every part of one build works from."""
    settings: Settings | None
    sources: dict[str, list[Source]]  # each collection to make, cut into one range per part
    producing: bool  # the input is sound so far: render and write (else only check)
    make_output: Callable[[], Output]
    incremental: state.Incremental
    segments: dict[str, list[tuple[Segment, ...]]] = field(default_factory=dict)  # each part's, by collection
    # told of each detail document written, as (path, where it lies), once its collection is made
    # (a few: ANNOUNCED_MAX), for a publisher to upload at once: the new records of a write
    announce: Callable[[str, str], None] | None = None
    index: bool = False  # make the query indexes' parts of the stretches whose records are new or moved


@dataclass
class PartResult:
    problems: list[Problem]
    published: dict[str, int]  # records per resource
    files: int
    bytes: int
    violations: list[str] = field(default_factory=list)
    violation_count: int = 0
    dead: dict[str, set[str]] = field(default_factory=dict)  # ids published before, no longer
    phases: dict[str, float] = field(default_factory=dict)  # seconds of each step of the part
    sizes: dict[str, list[int]] = field(default_factory=dict)  # shard -> [files, bytes] written


class Phases:
    """The seconds each step of a build took, for `make bench` to show where the time goes."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._since = time.monotonic()

    def done(self, step: str) -> None:
        now = time.monotonic()
        self.seconds[step] = self.seconds.get(step, 0.0) + now - self._since
        self._since = now

    @contextmanager
    def within(self, part: str) -> Iterator[None]:
        """Time a part of the step under way, adding up its seconds across steps."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[part] = self.seconds.get(part, 0.0) + time.monotonic() - started


class Made:
    """What a part makes of its range of one collection: the spool of its published
    records, the place each had among the previous build's (-1: new or changed) and, of a
    collection others embed, the ids whose bytes are new (which are theirs to make again)."""

    def __init__(self, spool: Spool, before: state.Previous | None, refer: bool, embedded: bool) -> None:
        self.spool = spool
        self.before = before
        self.refer = refer  # refer to the previous records where they lie, rather than copy them
        self.origin = array("q")
        self.new: set[str] = set()
        self._embedded = embedded

    def keep(self, index: int) -> None:
        """A record the previous build published, unchanged."""
        self.origin.append(index)
        if self.refer:
            self.spool.refer(self.before.location(index))
        else:
            self.spool.append(self.before.bytes(index))

    def keep_range(self, start: int, stop: int) -> None:
        """Records start to stop of the previous build's, unchanged."""
        self.origin.extend(range(start, stop))
        if self.refer:
            self.spool.refer_range(self.before.records, start, stop)
        else:
            for data in self.before.records.read(start, stop):
                self.spool.append(data)

    def add(self, id: str, data: bytes) -> None:
        self.origin.append(-1)
        if self._embedded:
            self.new.add(id)
        self.spool.append(data)


class Batch:
    """Detail documents written a batch at a time, in path order. Ids are random, so in input
    order each document goes to another of a collection's 256 directories; grouped, the file
    system finds the directory and its inode tables where the last file left them. (The
    books phase of a 100K build took 15-30% less in three alternating pairs of runs.)"""

    LIMIT = 8 << 20  # bytes held

    def __init__(self, out: Output, clash: Callable[[], None], announce: Callable[[str, str], None] | None) -> None:
        self.out = out
        self.clash = clash  # a file was there already: another part's record has the same id
        self._pending: list[tuple[str, bytes]] = []
        self._size = 0
        self._announce = announce
        self._written: list[str] | None = [] if announce else None  # since announced (None: too many)

    def write(self, path: str, data: bytes) -> None:
        self._pending.append((path, data))
        self._size += len(data)
        if self._size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        self._pending.sort()
        for path, data in self._pending:
            try:
                self.out.write(path, data)
            except FileExistsError:  # (the exchange reports the id)
                self.clash()
            if self._written is not None:
                self._written.append(path)
                if len(self._written) > ANNOUNCED_MAX:
                    self._written = None
        self._pending.clear()
        self._size = 0

    def announce(self, sound: bool) -> None:
        """Tell of the documents written since the last time, when the build is still `sound`
        and they are few."""
        if sound and self._written:
            for path in self._written:
                for each in self.out.lying(path):
                    self._announce(*each)
        self._written = [] if self._announce else None


class Part:
    def __init__(self, number: int, team: Team, plan: Plan) -> None:
        self.number = number
        self.team = team
        self.plan = plan
        self.out = plan.make_output()
        self.details = Batch(self.out, team.fail, plan.announce)
        self.problems = Problems()
        self.urls = Urls(plan.settings.base_url, plan.settings.links) if plan.settings else None
        # (records others embed are read from the record store: the renderer keeps none)
        self.renderer = Renderer(plan.settings, self.urls, remember=False) if plan.settings else None
        self.checker = SchemaChecker()
        self.known = Known()
        self.published: dict[str, int] = {}
        self.changed: dict[str, set[str]] = {}  # ids whose published bytes changed (or went), per collection
        self.dead: dict[str, set[str]] = {}
        self.phases = Phases()

    def run(self) -> PartResult:
        """The records make no reference cycles: the cyclic garbage collector is off while
        a part works."""
        with no_cycle_collector():
            return self._run()

    def _run(self) -> PartResult:
        for collection in COLLECTIONS:
            if collection in self.plan.incremental.unchanged:
                count = self.take_over(collection)
                self.published[BY_COLLECTION[collection].name] = count if self.number == 0 else 0
                self.changed[collection] = set()
            elif collection in self.plan.sources:
                self.published[BY_COLLECTION[collection].name] = self.make(collection)
            else:
                continue
            self._let_go(collection)
            self.phases.done(collection)
        waited = self.team.waited  # (at the barriers within the collections)
        self.team.wait()
        self.phases.done("waiting for the other parts")
        if self.plan.producing and not self.team.failed:
            for collection in self.plan.sources:
                self.write_pages(BY_COLLECTION[collection])
        self.phases.done("pages")
        self.phases.seconds["waiting for the other parts (within the collections)"] = waited
        return PartResult(self.problems.items, self.published, self.out.files, self.out.bytes,
                          self.checker.violations, self.checker.total, self.dead, self.phases.seconds,
                          self.out.sizes)

    def _let_go(self, collection: str) -> None:
        """Forget the records no collection after this one needs."""
        for done in [c for c, last in LAST_NEEDED.items() if last == collection]:
            self.known.ids.pop(done, None)
            self.changed.pop(done, None)
            if self.renderer:
                self.renderer.embedded[done].clear()

    # ---- a collection ------------------------------------------------------------------

    def take_over(self, collection: str) -> int:
        """A collection the previous build made from the same input: only what a later
        collection made again needs of it (ids to refer to, records to embed); its files stay."""
        previous = self.plan.incremental.previous
        if LAST_NEEDED.get(collection) not in self.plan.sources:
            return state.counts(previous)[BY_COLLECTION[collection].name]
        before = state.Previous(previous, collection, rows=False)
        self.known.ids[collection] = before.by_id
        if self.renderer is not None and collection in EMBEDDED:
            self.renderer.embedded[collection] = state.Stored(before.by_id, before.records)  # (closed when let go)
        else:
            before.close()
        return before.count

    def make(self, collection: str) -> int:
        """This part's range of one collection: rows taken over where the previous build had
        them and nothing they embed changed (whole segments of a file at once, where it is
        read by segment); the others checked, rendered and, when their bytes differ from
        before, written. Then the exchange with the other parts."""
        resource = BY_COLLECTION[collection]
        unique_field = resource.unique  # (a username: kept with the ids; None, and None kept, for most)
        source = self.plan.sources[collection][self.number]
        upstream = set().union(*(self.changed.get(d, set()) for d in embeds(collection)))
        share = self.plan.segments[collection][self.number] if collection in self.plan.segments else None
        before, segmented = self._previous(collection, upstream)
        unique = Unique(source, self.problems)
        # The first part learns every published id (its own here, the others' in the exchange)
        # to tell which of the previous build's records are gone.
        published_ids = set() if before is not None and self.number == 0 else None
        # The previous records are referred to where they lie (not copied) unless that would
        # keep too much that is no longer published.
        refer = before is not None and before.referable()
        if refer:
            before.link_data(self.team.scratch)
        keys = Keys()  # of every record, for the other parts and the next build
        read: list[tuple[int, int]] = []  # the keys of the records read (not taken over by segment)
        rows: list[int] = []  # records in each segment of the share
        with self.team.spool(state.records_name(collection), self.number) as spool:
            made = Made(spool, before, refer, embedded=self._embedded_and_reusable(collection))
            for run, segments in self._runs(source, share, segmented):
                if run is None:  # one segment, taken over
                    self._take_segment(segments[0], segmented, made, keys)
                    rows.append(segments[0].rows)
                    continue
                first = len(keys)
                # (a plain list, falsy while empty; another part's failure is asked after
                # every PROGRESS_EVERY records: a shared flag is slow to read a million times)
                problems, producing = self.problems.items, self.plan.producing and not self.team.failed
                for line, record in self._stream(run, before, unique, upstream):
                    published = False
                    if producing and not problems:
                        published = self._publish(collection, record, made)
                        if published and len(spool) % PROGRESS_EVERY == 0:
                            self.team.report(self.number, resource.name, len(spool))
                            producing = not self.team.failed
                    keys.append(record["id"], line, published, record.get(unique_field), record[ROW])
                    if published_ids is not None and published:
                        published_ids.add(record["id"])
                    if segmented is not None:
                        self._unique_among_kept(unique, record["id"], line, segmented)
                read.append((first, len(keys)))
                rows += _rows_by_segment(keys.lines[first:], segments)
            count = len(spool)
        self.details.flush()
        keys.save(self.team.file(state.keys_name(collection), self.number))
        self.team.save(f"read-{collection}", self.number, read)
        if share is not None:
            self.team.file(state.rows_name(collection), self.number).write_bytes(orjson.dumps(rows))
        self.team.report(self.number, resource.name, count, finished=True)
        if self.problems:
            self.team.fail()
        self.team.save(f"origin-{collection}", self.number, made.origin)
        if self._embedded_and_reusable(collection):
            self.team.save(f"changed-{collection}", self.number, made.new)
        self.team.save(f"unread-{collection}", self.number, collection in self.problems.unread)
        self.team.wait()
        with self.phases.within("exchanging ids (within the collections)"):
            self._exchange(collection, unique, published_ids)
            if any(self.team.load(f"unread-{collection}", k) for k in range(self.team.count)):
                # (its file was not read to the end, which is reported once: references to
                # it go unchecked rather than each fail in every part)
                self.known.ids.pop(collection, None)
            elif collection in LAST_NEEDED:
                self._learn_records(collection)
            else:
                self.known.ids.pop(collection, None)  # (only needed for the duplicate check)
            self._learn_changes(collection, made.new, before, published_ids)
        self.details.announce(not self.problems and not self.team.failed)
        return count

    def _embedded_and_reusable(self, collection: str) -> bool:
        """Whether the records of a later collection that embed this one's may be taken over
        from the previous build, so that the ids whose bytes changed must be known. (Not in
        a full build: a million ids in every process, for nothing.)"""
        return collection in LAST_NEEDED and self.plan.incremental.reuse

    def _previous(self, collection: str,
                  upstream: set[str]) -> tuple[state.Previous | None, state.Segmented | None]:
        """What the previous build made of the collection, and, where whole segments of its
        file may be taken over (it is read by segment and nothing it embeds changed), which."""
        incremental = self.plan.incremental
        if not incremental.reuse or not state.Previous.exists(incremental.previous, collection):
            return None, None
        segmented = None
        if collection in self.plan.segments and not upstream:
            every = tuple(s for run in self.plan.segments[collection] for s in run)
            segmented = state.Segmented.of(incremental.previous, collection, every)
        before = state.Previous(incremental.previous, collection, only=segmented.dropped if segmented else None)
        if segmented is not None:
            segmented.learn(before.keys)
        return before, segmented

    @staticmethod
    def _runs(source: Source, share: tuple[Segment, ...] | None,
              segmented: state.Segmented | None) -> Iterable[tuple[Source | None, tuple[Segment, ...]]]:
        """The part's range as (range to read, its segments) and (None, (a segment taken over,))."""
        if share is None:
            yield source, ()
            return
        pending: list[Segment] = []
        for segment in share + (None,):
            if segment is None or (segmented is not None and segment.old >= 0):
                if pending:
                    yield replace(source, start=pending[0].start, end=pending[-1].end,
                                  first_line=pending[0].line), tuple(pending)
                    pending = []
                if segment is not None:
                    yield None, (segment,)
            else:
                pending.append(segment)

    @staticmethod
    def _take_segment(segment: Segment, segmented: state.Segmented, made: "Made", keys: Keys) -> None:
        """An old segment found again: its records' keys (lines moved) and published bytes."""
        j = segment.old
        keys.extend(made.before.keys, segmented.starts[j], segmented.starts[j + 1], segmented.moved[j])
        made.keep_range(segmented.published[j], segmented.published[j + 1])

    @staticmethod
    def _unique_among_kept(unique: Unique, id: str, line: int, segmented: state.Segmented) -> None:
        """A record read must not reuse the id of one taken over by segment (in any part)."""
        other = segmented.line_of_kept(id)
        if other is not None:
            unique.twice(id, *sorted((other, line)))

    def _stream(self, source: Source, before: state.Previous | None, unique: Unique,
                upstream: set[str]) -> Iterable[tuple[int, dict]]:
        collection = source.collection
        if BY_COLLECTION[collection].tree:  # a node's path depends on the others: each is made again
            return category_tree(source, self.problems, self.known, unique)
        if before is None:
            return records(source, self.problems, self.known, unique=unique)

        def reuse(row: dict, digest: bytes):
            hit = before.by_hash.get(digest)
            if hit is not None and upstream and any(r in upstream for r in references(row, collection)):
                return None  # it embeds a record that changed
            return hit

        return records(source, self.problems, self.known, reuse, unique)

    def _publish(self, collection: str, record: dict, made: Made) -> bool:
        """Whether the record is published. Its bytes go into the spool; its document is
        written when they differ from the previous build's."""
        token = record.get(REUSED)
        if token is not None:  # taken over, unchecked and unrendered
            if token.published:
                made.keep(token.index)
            return token.published
        rendered = self.renderer.render(collection, record)
        if rendered is None:
            return False
        document, data = rendered
        before = made.before
        old = before.by_id.get(record["id"]) if before is not None else None
        if old is not None and before.bytes(old) == data:
            made.keep(old)
        else:
            resource = BY_COLLECTION[collection]
            path = detail_path(resource, record["id"])
            self.checker.check_record(resource.schema, document, path)
            self.details.write(path, data)
            made.add(record["id"], data)
        return True

    def _exchange(self, collection: str, unique: Unique, published_ids: set[str] | None) -> None:
        """The first part checks the other parts' records read of a collection (their ids and
        the values of its unique field: usernames) against everything before them, and adds
        those published to `published_ids`."""
        if self.team.count == 1 or self.number != 0:
            return
        referenced = collection in LAST_NEEDED
        for k in range(1, self.team.count):
            keys = Keys.load(self.team.file(state.keys_name(collection), k))
            for start, stop in _chunks(self.team.load(f"read-{collection}", k)):
                ids, lines = keys.id_list(start, stop), keys.lines[start:stop]
                if published_ids is not None:
                    published_ids.update(compress(ids, keys.published[start:stop]))
                # (the last part's ids need not be kept, unless another collection refers to them)
                unique.many(ids, lines, learn=referenced or k < self.team.count - 1)
                if BY_COLLECTION[collection].unique:
                    unique.many_values(keys.usernames[start:stop], lines)

    def _learn_records(self, collection: str) -> None:
        """Every part's ids of a collection later ones refer to, each with its place among the
        published records (-1: not published); those embedded are read where they lie, each
        when a record embeds it, rather than held by every process."""
        ids: dict[str, int] = {}
        position = 0
        paths = [self.team.file(state.records_name(collection), k) for k in range(self.team.count)]
        for k in range(self.team.count):
            keys = Keys.load(self.team.file(state.keys_name(collection), k))
            found = keys.id_list(0, len(keys))
            places = [place if published else -1
                      for place, published in zip(accumulate(keys.published, initial=position), keys.published)]
            if ids.keys().isdisjoint(found):
                ids.update(zip(found, places))
            else:  # (an id used twice, reported already: the first use counts)
                for id, place in zip(found, places):
                    ids.setdefault(id, place)
            position += keys.published.count(1)
        self.known.ids[collection] = ids
        if self.renderer is not None and collection in EMBEDDED:
            self.renderer.embedded[collection] = state.Stored(ids, Spools(paths))

    def _learn_changes(self, collection: str, new: set[str], before: state.Previous | None,
                       published_ids: set[str] | None) -> None:
        """Which ids of the collection changed or went (for the collections that embed it),
        and, in the first part, which of the previous build's records are gone."""
        changed = set(new)
        if self._embedded_and_reusable(collection):
            for k in range(self.team.count):
                if k != self.number:
                    changed |= self.team.load(f"changed-{collection}", k)
        if before is not None:
            # Only the ids the previous build published (every record of a collection others
            # embed): none of the rows it made refers to a new one, since a reference to a
            # missing id fails a build; so a record added (a user a write appends) leaves its
            # embedders' unchanged segments to be taken over unread.
            changed &= before.by_id.keys()
            if collection in LAST_NEEDED:  # every part knows every id of it now
                changed |= before.by_id.keys() - self.known.ids.get(collection, {}).keys()
            if published_ids is not None:
                self.dead[collection] = before.by_id.keys() - published_ids
            before.close()
        self.changed[collection] = changed

    # ---- pages -----------------------------------------------------------------------------

    def write_pages(self, resource: Resource) -> None:
        """This part's share of the pages of every page size that changed: a page is the
        previous build's when the count is the same and each of its records is too."""
        collection = resource.collection
        incremental = self.plan.incremental
        settings = self.plan.settings
        old_count = state.counts(incremental.previous)[resource.name] if incremental.reuse else None
        paths = [self.team.file(state.records_name(collection), k) for k in range(self.team.count)]
        with Spools(paths) as spooled:
            count = len(spooled)
            places = moved_records(self.team.scratch, collection)  # (new, changed or shifted: read once)
            moved = places.tolist() if count == old_count else []
            runs = paging.Runs(spooled)
            kept_sizes = incremental.old_sizes if count == old_count else ()  # (whose pages may be kept)
            limit_kept = kept_sizes.__contains__
            for offset, limit in paging.share(count, settings.page_sizes, self.number, self.team.count):
                clean = (limit in kept_sizes
                         and bisect.bisect_left(moved, offset) == bisect.bisect_left(moved, offset + limit))
                index = (limit == settings.default_page_size and offset == 0
                         and (not clean or incremental.old_default != limit))
                if clean and not index:
                    continue
                page = Page(resource, limit, offset, count)
                data, twin = runs.page(page, self.urls)
                if not clean:
                    path = page_path(resource, limit, offset)
                    self.checker.check_document("page", page.envelope(self.urls), path)
                    self.out.write(path, data, twin)
                if index:
                    self.out.write(first_page_path(resource), data, twin)
            default_kept = limit_kept(settings.default_page_size) and incremental.old_default == settings.default_page_size
            self._write_indexes(resource, spooled, moved if default_kept else None)
            if self.plan.index and resource.name in configured(settings.query):
                with self.phases.within(INDEX_PARTS):
                    self._index_parts(resource, spooled, places)

    def _write_indexes(self, resource: Resource, spooled: Spools, moved: list[int] | None) -> None:
        """This part's share of the page indexes (api/pageindex.py): one a span of the default
        size's pages, written again where its bytes changed: when one of its records is new
        or moved (`moved`; None: every one, as when the count or the default size changed)
        and the previous build's differs (a record edited to as many bytes moves none)."""
        limit, count = self.plan.settings.default_page_size, len(spooled)
        low, high = paging.offsets_of_part(count, self.plan.settings.page_sizes, self.number, self.team.count)
        for pages, stop in paging.index_spans(count, limit, low, high):
            first = pages[0]
            if moved is not None and bisect.bisect_left(moved, first) == bisect.bisect_left(moved, stop):
                continue
            starts = array("I")
            for offset in pages:
                head = Page(resource, limit, offset, count).head(self.urls)
                starts.extend(pageindex.record_starts(len(head), spooled.lengths(offset, min(offset + limit, count))))
            path, data = page_index_path(resource, limit, first), pageindex.encode(count, limit, first, starts)
            if moved is None or not same_bytes(self.plan.incremental.previous / path, data):
                self.out.write(path, data)

    def _index_parts(self, resource: Resource, spooled: Spools, moved: numpy.ndarray) -> None:
        """The query indexes' parts (sitebuild/stretches.py) of the stretches that begin in this
        part's share of the pages and hold a record new or moved (`moved`, sorted), made from
        the records spooled, while they are at hand: the query-index step would read them back
        from the pages."""
        settings, count = self.plan.settings, len(spooled)
        low, high = paging.offsets_of_part(count, settings.page_sizes, self.number, self.team.count)
        decode = stretches.decoder(stretches.reads(resource.name, settings.query), page=False).decode
        for start, stop in stretches.every(count, self.team.count, settings.default_page_size):
            if low <= start < high and numpy.searchsorted(moved, start) != numpy.searchsorted(moved, stop):
                documents = decode(b"[%b]" % b",".join(spooled.read(start, stop)))
                stretches.made_here(self.team.scratch, resource.name, (start, stop)).write_bytes(
                    stretches.parts(resource.name, settings.query, start, documents))


def moved_records(scratch: Path, collection: str) -> numpy.ndarray | None:
    """The places of a collection's records new, changed or shifted since the previous build
    (where its parts' origins, in the build's scratch, say another place or none), sorted;
    None where no part made the collection (taken over whole: its files are the previous's)."""
    files = part_files(scratch, f"origin-{collection}")
    if not files:
        return None
    origin = array("q")
    for path in files:
        with path.open("rb") as f:
            origin.extend(pickle.load(f))
    # (compared at once, not a record at a time: an edit moves a handful of a million)
    places = numpy.frombuffer(origin, dtype=numpy.int64)
    return numpy.flatnonzero(places != numpy.arange(len(places), dtype=numpy.int64))


def _chunks(ranges: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The ranges cut into runs of at most EXCHANGE_CHUNK records: another part's half a
    million ids as strings at once would be the first part's largest allocation of the build."""
    for first, last in ranges:
        for start in range(first, last, EXCHANGE_CHUNK):
            yield start, min(start + EXCHANGE_CHUNK, last)


def _rows_by_segment(lines: array, segments: tuple[Segment, ...]) -> list[int]:
    """How many of the records read (starting on these lines, in order) each segment holds."""
    starts = [bisect.bisect_left(lines, s.line) for s in segments[1:]]
    return [stop - start for start, stop in zip([0] + starts, starts + [len(lines)])]
