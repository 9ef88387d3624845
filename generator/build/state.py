"""What a build keeps for the next one, beside its generation (gens/<N>/.state/).

    fingerprint.json   generator version, settings, a hash of each input file, the
                       files and bytes of every shard of the site
    records.json       the published records per resource
    keys-<c>.<part>    every record's (id, line, published, username, row hash)
    records-<c>.<part> where each encoded record lies (a Spool's index)
    records-<c>.<part>.data-<N>  the bytes of records, in files named after the build N
                       that wrote them: each build's own, and the files of earlier builds
                       that still hold records it publishes (hard links)

A rebuild whose fingerprint equals the published one has nothing to do. Otherwise
each collection whose input, settings and embedded collections are unchanged is
taken over as it is (`Incremental`), and in the others only rows whose text changed
(or that embed a changed record) are checked and rendered again (`Previous`).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from ..api.urls import STATE
from ..catalogue.fields import COLLECTIONS, embeds
from ..catalogue.load import Source
from ..catalogue.settings import Settings
from .spool import Spools, spool_files
from .team import part_file, part_files, read_chunks

VERSION = "8"  # bump when the generator's output or this state changes for the same input
READ_AHEAD = 256  # records read at once when taking over a previous build's records
# A build refers to the previous records where they lie unless they are spread over more
# files than this, or the files hold more bytes no longer published than published.
MAX_DATA_FILES = 32
FINGERPRINT = "fingerprint.json"
COUNTS = "records.json"


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

    @property
    def files(self) -> int:
        return self.skeleton[0] + sum(f for f, _ in self.shards.values())

    @property
    def bytes(self) -> int:
        return self.skeleton[1] + sum(b for _, b in self.shards.values())

    def same_output(self, other: "Fingerprint | None") -> bool:
        return (other is not None and other.version == self.version and other.settings == self.settings
                and other.inputs == self.inputs)

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


def fingerprint(settings: Settings, sources: dict[str, Source], before: Fingerprint | None) -> Fingerprint:
    """The fingerprint of the input; a file with the same settled signature as when the
    previous build hashed it keeps that hash, unread (a million books are 700 MB)."""
    settings_as_saved = json.loads(json.dumps(asdict(settings)))  # tuples become lists
    inputs, signatures = {}, {}
    for collection, source in sources.items():
        signature = list(source.signature) if source.signature is not None else None
        if (before is not None and signature is not None and collection in before.inputs
                and before.signatures.get(collection) == signature):
            inputs[collection] = before.inputs[collection]
        else:
            inputs[collection] = file_hash(source)
        if signature is not None:
            signatures[collection] = signature
    return Fingerprint(VERSION, settings_as_saved, inputs, signatures)


def file_hash(source: Source) -> str:
    with source.open() as f:
        return hashlib.file_digest(f, "blake2b").hexdigest()[:32]


def state_dir(generation_root: Path) -> Path:
    return generation_root / STATE


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
        if now is None or before is None or before.version != now.version:
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


def keep(generation_root: Path, scratch: Path, incremental: Incremental, published: dict[str, int]) -> None:
    """What the next build takes over, into a new generation's state: the records and keys
    of every collection (this build's moved from its scratch directory, those it took
    over linked from the previous state) and the published counts."""
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
    (directory / COUNTS).write_bytes(orjson.dumps(published))


class Reused(NamedTuple):  # (a million are made: a tuple is made fastest)
    """A row the previous build had, taken over without checking or rendering it again."""
    id: str
    published: bool
    username: str | None
    index: int  # its place among the previous build's published records, or -1


class Previous:
    """The previous build's records of one collection: what each row became, and the bytes."""

    def __init__(self, generation_root: Path, collection: str, rows: bool = True) -> None:
        """rows=False: only the published records and their ids, not what each row became."""
        directory = state_dir(generation_root)
        self.by_hash: dict[bytes, Reused] = {}
        self.by_id: dict[str, int] = {}
        position = 0
        for path in part_files(directory, keys_name(collection)):
            for id, _line, published, username, digest in read_chunks(path):
                if rows:
                    self.by_hash[digest] = Reused(id, published, username, position if published else -1)
                if published:
                    self.by_id[id] = position
                    position += 1
        self.count = position
        self.records = Spools(part_files(directory, records_name(collection)))
        self._block: tuple[int, list[bytes]] = (0, [])

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

    def stored(self) -> "Stored":
        return Stored(self)

    @staticmethod
    def exists(generation_root: Path | None, collection: str) -> bool:
        return generation_root is not None and bool(part_files(state_dir(generation_root), keys_name(collection)))


class Stored:
    """The previous build's published records of a collection taken over whole, as the
    Renderer's embedded records: each read where it lies when a record embeds it. An edit
    renders a handful of books; loading all 333K authors of a million-book catalogue
    into every process would cost more than the edit itself."""

    def __init__(self, previous: Previous) -> None:
        self._previous = previous

    def __getitem__(self, id: str) -> orjson.Fragment:
        index = self._previous.by_id[id]
        return orjson.Fragment(next(self._previous.records.read(index, index + 1)))

    def __setitem__(self, id: str, data: orjson.Fragment) -> None:
        raise TypeError("records taken over are read, not set")

    def clear(self) -> None:
        """No longer needed: let go of the files."""
        self._previous.close()
