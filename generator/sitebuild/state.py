"""What a build keeps for the next one, beside its generation (gens/<N>/.state/).

    fingerprint.json   generator version, settings, a hash of each input file, the
                       files and bytes of every shard of the site
    records.json       the published records per resource
    keys-<c>.<part>    every record's id, line, published, username, row hash (keys.py)
    segments-<c>.json  a CSV file's segments and the records read from each (segments.py),
                       for the collections read by segment (SEGMENTED)
    records-<c>.<part> where each encoded record lies (a Spool's index)
    records-<c>.<part>.data-<N>  the bytes of records, in files named after the build N
                       that wrote them: each build's own, and the files of earlier builds
                       that still hold records it publishes (hard links)
    query-parts-<c>-<first>-<N>  what the query indexers made of a stretch of the
                       collection's pages from record <first>, named after the build N
                       that made it (queries.py)

A rebuild whose fingerprint equals the published one has nothing to do. Otherwise
each collection whose input, settings and embedded collections are unchanged is
taken over as it is (`Incremental`), and in the others only rows whose text changed
(or that embed a changed record) are checked and rendered again (`Previous`).
"""
from __future__ import annotations

import bisect
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from itertools import accumulate, compress
from pathlib import Path
from typing import NamedTuple

import orjson

from ..api.backends import BACKENDS, PAGINATION
from ..api.urls import CURRENT, STATE
from ..catalogue.resources import BY_COLLECTION, COLLECTIONS, embeds
from ..catalogue.load import Source
from ..catalogue.settings import Settings
from . import segments
from .keys import Keys
from .spool import Spools, spool_files
from .team import part_file, part_files

VERSION = "14"  # bump when the generator's output or this state changes for the same input
READ_AHEAD = 256  # records read at once when taking over a previous build's records
# A build refers to the previous records where they lie unless they are spread over more
# files than this, or the files hold more bytes no longer published than published.
MAX_DATA_FILES = 32
FINGERPRINT = "fingerprint.json"
COUNTS = "records.json"
# Collections whose CSV files' unchanged segments are taken over unread: a change to one of
# their records touches that record alone (and, in a collection others embed, the records
# embedding it, which are read again: Part._previous). Not the category tree, whose nodes'
# paths depend on one another.
SEGMENTED = tuple(c for c in COLLECTIONS if not BY_COLLECTION[c].tree)


def segments_name(collection: str) -> str:
    return f"segments-{collection}.json"


def rows_name(collection: str) -> str:
    """What each part's count of the records in each of its segments is named after."""
    return f"rows-{collection}"


def keys_name(collection: str) -> str:
    """What each part's file of a collection's keys is named after."""
    return f"keys-{collection}"


def records_name(collection: str) -> str:
    """What each part's index of a collection's encoded records is named after."""
    return f"records-{collection}"


def data_tag(build: int) -> str:
    """The suffix of the record data files build number `build` writes."""
    return f"data-{build:06d}"


@dataclass
class Fingerprint:
    version: str
    settings: dict
    inputs: dict[str, str]  # collection -> content hash of its source file
    signatures: dict[str, list[int]] = field(default_factory=dict)  # collection -> Source.signature hashed
    shards: dict[str, list[int]] = field(default_factory=dict)  # shard -> [files, bytes]
    skeleton: list[int] = field(default_factory=lambda: [0, 0])  # files, bytes outside shards
    # the backends' index layouts (Backend.index_format): another makes a query backend's
    # files again (sitebuild/queries.py), the pages taken over; the paging backend's, every
    # page and page index (Incremental)
    formats: dict[str, str] = field(default_factory=dict)

    @property
    def files(self) -> int:
        return self.skeleton[0] + sum(f for f, _ in self.shards.values())

    @property
    def bytes(self) -> int:
        return self.skeleton[1] + sum(b for _, b in self.shards.values())

    def same_output(self, other: "Fingerprint | None") -> bool:
        return (other is not None and other.version == self.version and other.settings == self.settings
                and other.inputs == self.inputs and other.formats == self.formats)

    def save(self, generation_root: Path) -> None:
        directory = state_dir(generation_root)
        directory.mkdir(exist_ok=True)
        (directory / FINGERPRINT).write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def load(cls, generation_root: Path | None) -> "Fingerprint | None":
        path = state_dir(generation_root) / FINGERPRINT if generation_root else None
        if path is None or not path.is_file():
            return None
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def fingerprint(settings: Settings, sources: dict[str, Source], before: Fingerprint | None,
                previous: Path | None) -> tuple[Fingerprint, dict[str, segments.Table]]:
    """The fingerprint of the input, and the segments of the SEGMENTED collections' CSV files
    (found again in the previous build's where they changed). A file with the same settled
    signature as when the previous build hashed it keeps that hash, unread (a million books
    are 700 MB)."""
    settings_as_saved = json.loads(json.dumps(asdict(settings)))  # tuples become lists
    inputs, signatures, tables = {}, {}, {}
    for collection, source in sources.items():
        signature = list(source.signature) if source.signature is not None else None
        same = (before is not None and signature is not None and collection in before.inputs
                and before.signatures.get(collection) == signature)
        table = None
        if collection in SEGMENTED and source.format == "csv":
            old = load_table(previous, collection)
            if same and old is not None:
                table, inputs[collection] = old.found_again(), before.inputs[collection]
            elif not same:
                table = segments.table(source.path, source.size, old)
                if table is not None:
                    inputs[collection] = table.fingerprint()
        if table is not None:
            tables[collection] = table
        else:
            inputs[collection] = before.inputs[collection] if same else file_hash(source)
        if signature is not None:
            signatures[collection] = signature
    formats = {backend.name: backend.index_format for backend in BACKENDS}
    return Fingerprint(VERSION, settings_as_saved, inputs, signatures, formats=formats), tables


def load_table(generation_root: Path | None, collection: str) -> segments.Table | None:
    path = state_dir(generation_root) / segments_name(collection) if generation_root else None
    if path is None or not path.is_file():
        return None
    return segments.Table.from_json(orjson.loads(path.read_bytes()))


def file_hash(source: Source) -> str:
    with source.open() as f:
        return hashlib.file_digest(f, "sha256").hexdigest()[:32]


def state_dir(generation_root: Path) -> Path:
    return generation_root / STATE


def published_links(site: Path) -> str | None:
    """The links (catalogue build --links) of the build a site directory publishes; None when
    it publishes none. (What rebuilds by the write service keep.)"""
    found = Fingerprint.load(site / CURRENT) if (site / CURRENT).is_dir() else None
    return found.settings.get("links", "api") if found is not None else None  # (builds before --links: API links)


def counts(generation_root: Path) -> dict[str, int]:
    """The published records per resource of a build."""
    return orjson.loads((state_dir(generation_root) / COUNTS).read_bytes())


@dataclass(frozen=True)
class Incremental:
    """What the previous build leaves this one to take over."""
    previous: Path | None = None  # its generation (and state)
    reuse: bool = False  # same generator, base_url, time zone and links: its rows may be taken over
    unchanged: frozenset[str] = frozenset()  # collections taken over whole
    old_sizes: tuple[int, ...] = ()  # its page sizes, whose pages may be taken over
    old_default: int | None = None

    @classmethod
    def between(cls, previous: Path | None, before: Fingerprint | None,
                now: Fingerprint | None) -> "Incremental":
        if now is None or before is None or before.version != now.version or _pages_laid_out_otherwise(before, now):
            return cls()
        old = {"links": "api", **before.settings}  # (builds before --links made API links)
        if any(old[k] != now.settings[k] for k in ("base_url", "time_zone", "links")):
            return cls()
        same_pages = before.settings["page_sizes"] == now.settings["page_sizes"]
        unchanged: set[str] = set()
        for collection in COLLECTIONS:
            if (same_pages and before.inputs.get(collection) == now.inputs.get(collection)
                    and all(d in unchanged for d in embeds(collection))
                    and Previous.exists(previous, collection)):
                unchanged.add(collection)
        sizes = tuple(before.settings["page_sizes"])
        return cls(previous, True, frozenset(unchanged), sizes, sizes[0])


def _pages_laid_out_otherwise(before: Fingerprint, now: Fingerprint) -> bool:
    """Whether the previous build laid out its pages' indexes otherwise (the paging backend's
    index_format): then none of its pages is taken over, the site is made again whole."""
    return before.formats.get(PAGINATION.name) != now.formats.get(PAGINATION.name)


def keep(generation_root: Path, scratch: Path, incremental: Incremental, published: dict[str, int],
         tables: dict[str, segments.Table]) -> None:
    """What the next build takes over, into a new generation's state: the records and keys
    of every collection (this build's moved from its scratch directory, those it took
    over linked from the previous state), the segments of the files it read, each with
    the records the parts counted in it, and the published counts."""
    directory = state_dir(generation_root)
    directory.mkdir(exist_ok=True)
    for collection in COLLECTIONS:
        if collection in incremental.unchanged:
            for path in state_dir(incremental.previous).glob(f"*-{collection}.*"):
                os.link(path, directory / path.name)
            continue
        for index in part_files(scratch, records_name(collection)):
            keys = part_file(scratch, keys_name(collection), int(index.suffix[1:]))
            for name in (index.name, keys.name, *spool_files(index)):
                if not (directory / name).exists():  # (a data file two parts refer to)
                    os.rename(scratch / name, directory / name)
        rows = [n for path in part_files(scratch, rows_name(collection)) for n in orjson.loads(path.read_bytes())]
        if collection in tables and len(rows) == len(tables[collection].segments):  # (read by segment)
            table = tables[collection].counted(rows).to_json()
            (directory / segments_name(collection)).write_bytes(orjson.dumps(table))
    (directory / COUNTS).write_bytes(orjson.dumps(published))


def published_ids(generation_root: Path, collection: str) -> list[str]:
    """The ids of a collection's published records, in order, from the keys kept (`keep`)."""
    keys = Keys.joined(part_files(state_dir(generation_root), keys_name(collection)))
    return list(compress(keys.id_list(0, len(keys)), keys.published))


class Reused(NamedTuple):  # (a million are made: a tuple is made fastest)
    """A row the previous build had, taken over without checking or rendering it again."""
    id: str
    published: bool
    username: str | None
    index: int  # its place among the previous build's published records, or -1


class Previous:
    """The previous build's records of one collection: what each row became, and the bytes."""

    def __init__(self, generation_root: Path, collection: str, rows: bool = True,
                 only: list[tuple[int, int]] | None = None) -> None:
        """rows=False: only the published records and their ids, not what each row became;
        `only`: rows start to stop, for both (the others are taken over by segment)."""
        directory = state_dir(generation_root)
        self.keys = keys = Keys.joined(part_files(directory, keys_name(collection)))
        self.by_hash: dict[bytes, Reused] = {}
        self.by_id: dict[str, int] = {}
        for start, stop in only if only is not None else [(0, len(keys))]:
            self._learn(start, stop, rows)
        self.count = keys.published.count(1)
        self.records = Spools(part_files(directory, records_name(collection)))
        self._block: tuple[int, list[bytes]] = (0, [])

    def _learn(self, start: int, stop: int, rows: bool) -> None:
        """Rows start to stop into by_id (and, with `rows`, by_hash), by columns rather than a
        row at a time: a build that takes over a collection learns every id of it (at a
        million books, the authors' 333,333 in each part: 0.63 s of CPU a row at a time, 0.35 s so)."""
        keys = self.keys
        ids, published = keys.id_list(start, stop), keys.published[start:stop]
        first = keys.published_before(start)
        shown = list(compress(ids, published))
        self.by_id.update(zip(shown, range(first, first + len(shown))))
        if rows:
            places = accumulate(published, initial=first)  # (each row's place among the published)
            self.by_hash.update(
                (digest, Reused(id, bool(flag), username, place if flag else -1))
                for id, flag, place, username, digest in zip(ids, published, places, keys.usernames[start:stop],
                                                             keys.digest_list(start, stop)))

    def bytes(self, index: int) -> bytes:
        """Record `index`; rows mostly come in their old order, so read ahead a block."""
        start, block = self._block
        if not start <= index < start + len(block):
            block = list(self.records.read(index, min(index + READ_AHEAD, self.count)))
            self._block = (start, block) = (index, block)
        return block[index - start]

    def location(self, index: int) -> tuple[str, int, int]:
        return self.records.locate(index)

    def referable(self) -> bool:
        """Whether a build may refer to these records where they lie rather than copy them."""
        paths = self.records.data_paths()
        return (len(paths) <= MAX_DATA_FILES
                and 2 * self.records.live_bytes() >= sum(os.stat(p).st_size for p in paths))

    def link_data(self, directory: Path) -> None:
        """The data files beside a spool in `directory` that refers to them."""
        for path in self.records.data_paths():
            try:
                os.link(path, directory / path.name)
            except FileExistsError:  # (linked by another part)
                pass

    def close(self) -> None:
        self.records.close()

    @staticmethod
    def exists(generation_root: Path | None, collection: str) -> bool:
        return generation_root is not None and bool(part_files(state_dir(generation_root), keys_name(collection)))


class Stored:
    """Published records of a collection, as the Renderer's embedded records: each read
    from the record store when a record embeds it, where it lies or, once the collection is
    looked up often and small enough, from its data files held whole (Spools.record). An
    edit renders only a handful of records and reads only theirs."""

    # A collection this small keeps each record once looked up, ready to embed: the few
    # hundred categories are embedded twice in every book.
    MEMO = 4096

    def __init__(self, ids: dict[str, int], records: Spools) -> None:
        self._ids = ids  # id -> its place among the published records
        self._records = records
        self._memo: dict[str, orjson.Fragment] | None = {} if len(ids) <= self.MEMO else None

    def __getitem__(self, id: str) -> orjson.Fragment:
        memo = self._memo
        if memo is None:
            return orjson.Fragment(self._records.record(self._ids[id]))
        found = memo.get(id)
        if found is None:
            found = memo[id] = orjson.Fragment(self._records.record(self._ids[id]))
        return found

    def clear(self) -> None:
        """No longer needed: let go of the files."""
        self._records.close()


class Segmented:
    """The previous build's records of a collection read by segment, as the new file's
    segments find them again: where each old segment's records begin (rows and published
    records), how far its lines moved, and the rows of the old segments not found again,
    which alone are looked up by row hash."""

    LOOKUPS = 32  # ids looked for in the kept records one by one before all are indexed

    def __init__(self, old: segments.Table, new: tuple[segments.Segment, ...]) -> None:
        self.old = old
        self.starts = [0]  # first row of each old segment
        for segment in old.segments:
            self.starts.append(self.starts[-1] + segment.rows)
        self.moved = {s.old: s.line - old.segments[s.old].line for s in new if s.old >= 0}
        self.dropped = [(self.starts[j], self.starts[j + 1]) for j in range(len(old.segments)) if j not in self.moved]
        self.published: list[int] = []
        self._keys: Keys | None = None
        self._dropped_ids: set[str] = set()
        self._index: dict[str, int] | None = None
        self._lookups = 0

    @classmethod
    def of(cls, previous: Path, collection: str, new: tuple[segments.Segment, ...]) -> "Segmented | None":
        old = load_table(previous, collection)
        if old is None or any(s.rows < 0 for s in old.segments):
            return None
        return cls(old, new)

    def learn(self, keys: Keys) -> None:
        """The previous build's keys (all its parts'), as Previous loaded them."""
        self._keys = keys
        self.published = [0]
        for start, stop in zip(self.starts, self.starts[1:]):
            self.published.append(self.published[-1] + keys.published.count(1, start, stop))
        self._dropped_ids = {keys.id(i) for start, stop in self.dropped for i in range(start, stop)}

    def line_of_kept(self, id: str) -> int | None:
        """The line, in the new file, of the record with this id in a segment taken over."""
        if id in self._dropped_ids:
            return None  # (ids were unique in the previous build)
        self._lookups += 1
        if self._index is None and self._lookups > self.LOOKUPS:
            keys = self._keys
            self._index = {keys.id(i): i for start, stop in zip(self.starts, self.starts[1:])
                           for i in range(start, stop)}
        index = self._index.get(id, -1) if self._index is not None else self._keys.find(id)
        if index < 0:
            return None
        j = bisect.bisect_right(self.starts, index) - 1
        return self._keys.lines[index] + self.moved[j] if j in self.moved else None
