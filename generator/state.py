"""What a build keeps for the next one, beside its generation (gens/<N>/.state/).

    fingerprint.json   generator version, settings, a hash of each input file, the
                       files and bytes of every shard of the site
    keys-<c>.<part>    every record's (id, line, published, username, row hash)
    records-<c>.<part> where each encoded record lies (a Spool's index)
    records-<c>.<part>.<build>  the bytes of records: each build's own, and the files of
                       earlier builds that still hold records it publishes (hard links)

A rebuild whose fingerprint equals the published one has nothing to do. Otherwise
each collection whose input, settings and embedded collections are unchanged is
taken over as it is, and in the others only rows whose text changed (or that embed
a changed record) are checked and rendered again.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import load
from .paginate import Spools
from .parts import read_chunks
from .validate import Settings

VERSION = "5"  # bump when the generator's output or this state changes for the same input
READ_AHEAD = 256  # records read at once when taking over a previous build's records
# A build refers to the previous records where they lie unless they are spread over more
# files than this, or the files hold more bytes no longer published than published.
MAX_DATA_FILES = 32
STATE_DIR = ".state"


@dataclass
class Fingerprint:
    version: str
    settings: dict
    inputs: dict[str, str]  # collection -> content hash of its source file
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
        directory = generation_root / STATE_DIR
        directory.mkdir(exist_ok=True)
        (directory / "fingerprint.json").write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def load(cls, generation_root: Path | None) -> "Fingerprint | None":
        path = generation_root / STATE_DIR / "fingerprint.json" if generation_root else None
        if path is None or not path.is_file():
            return None
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def fingerprint(settings: Settings, sources: dict[str, load.Source]) -> Fingerprint:
    settings_as_saved = json.loads(json.dumps(asdict(settings)))  # tuples become lists
    return Fingerprint(VERSION, settings_as_saved, {c: file_hash(s) for c, s in sources.items()})


def file_hash(source: load.Source) -> str:
    with source.open() as f:
        return hashlib.file_digest(f, "blake2b").hexdigest()[:32]


def state_dir(generation_root: Path) -> Path:
    return generation_root / STATE_DIR


def shard_sizes(directory: Path) -> list[int]:
    files = size = 0
    with os.scandir(directory) as entries:
        for entry in entries:
            files += 1
            size += entry.stat().st_size
    return [files, size]


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
        parts = sorted(directory.glob(f"keys-{collection}.*"), key=lambda p: int(p.suffix[1:]))
        self.by_hash: dict[bytes, Reused] = {}
        self.by_id: dict[str, int] = {}
        position = 0
        for path in parts:
            for id, _line, published, username, digest in read_chunks(path):
                if rows:
                    self.by_hash[digest] = Reused(id, published, username, position if published else -1)
                if published:
                    self.by_id[id] = position
                    position += 1
        self.count = position
        self.records = Spools([directory / f"records-{collection}.{p.suffix[1:]}" for p in parts])
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

    @staticmethod
    def exists(generation_root: Path | None, collection: str) -> bool:
        return generation_root is not None and any(state_dir(generation_root).glob(f"keys-{collection}.*"))
