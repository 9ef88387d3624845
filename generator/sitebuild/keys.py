"""What a build learned of each record it read, kept by columns: its id, line, whether it
was published, username and row hash.

By columns (fixed-width ids and hashes in one buffer each) rather than a tuple per
record, so that a build can take over a run of a million records from the previous
one as a few slices, and look up an id without a dictionary of them all.
"""
from __future__ import annotations

import pickle
from array import array
from pathlib import Path

from ..errors import GeneratorBug

ID_SIZE = 36  # every id is a UUID in its canonical form
DIGEST_SIZE = 16  # catalogue.records.row_hash


class Keys:
    def __init__(self) -> None:
        self.ids = bytearray()
        self.lines = array("q")
        self.published = bytearray()  # 1 or 0 per record
        self.usernames: list[str | None] = []
        self.digests = bytearray()

    def __len__(self) -> int:
        return len(self.lines)

    def append(self, id: str, line: int, published: bool, username: str | None, digest: bytes) -> None:
        encoded = id.encode("ascii")
        if len(encoded) != ID_SIZE or len(digest) != DIGEST_SIZE:
            raise GeneratorBug(f"a record's key is malformed: id {id!r}")
        self.ids += encoded
        self.lines.append(line)
        self.published.append(published)
        self.usernames.append(username)
        self.digests += digest

    def extend(self, other: "Keys", start: int, stop: int, shift: int) -> None:
        """Records start to stop of `other`, their lines moved by `shift`."""
        self.ids += other.ids[start * ID_SIZE:stop * ID_SIZE]
        lines = other.lines[start:stop]
        self.lines.extend(lines if shift == 0 else array("q", [line + shift for line in lines]))
        self.published += other.published[start:stop]
        self.usernames += other.usernames[start:stop]
        self.digests += other.digests[start * DIGEST_SIZE:stop * DIGEST_SIZE]

    def id(self, index: int) -> str:
        return self.ids[index * ID_SIZE:(index + 1) * ID_SIZE].decode("ascii")

    def id_list(self, start: int, stop: int) -> list[str]:
        """The ids of records start to stop."""
        text = self.ids[start * ID_SIZE:stop * ID_SIZE].decode("ascii")
        return [text[i:i + ID_SIZE] for i in range(0, len(text), ID_SIZE)]

    def digest_list(self, start: int, stop: int) -> list[bytes]:
        """The row hashes of records start to stop."""
        digests = bytes(self.digests[start * DIGEST_SIZE:stop * DIGEST_SIZE])
        return [digests[i:i + DIGEST_SIZE] for i in range(0, len(digests), DIGEST_SIZE)]

    def published_before(self, index: int) -> int:
        """How many of the records before `index` were published."""
        return self.published.count(1, 0, index)

    def find(self, id: str) -> int:
        """The index of the record with this id, or -1."""
        encoded = id.encode("ascii", "replace")
        at = self.ids.find(encoded)
        while at >= 0 and at % ID_SIZE:
            at = self.ids.find(encoded, at + 1)
        return at // ID_SIZE if at >= 0 else -1

    def save(self, path: Path) -> None:
        with path.open("wb") as f:
            pickle.dump((bytes(self.ids), self.lines, bytes(self.published), self.usernames, bytes(self.digests)),
                        f, pickle.HIGHEST_PROTOCOL)

    @classmethod
    def load(cls, path: Path) -> "Keys":
        keys = cls()
        with path.open("rb") as f:
            ids, keys.lines, published, keys.usernames, digests = pickle.load(f)
        keys.ids, keys.published, keys.digests = bytearray(ids), bytearray(published), bytearray(digests)
        return keys

    @classmethod
    def joined(cls, paths: list[Path]) -> "Keys":
        """The keys of several parts, in order, as one."""
        if len(paths) == 1:
            return cls.load(paths[0])
        keys = cls()
        for path in paths:
            part = cls.load(path)
            keys.extend(part, 0, len(part), 0)
        return keys
