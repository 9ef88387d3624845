"""Where a CSV data file changed since the last build, found without parsing it.

A CSV file is cut into segments of about SEGMENT bytes of whole records (a cut follows
a newline outside quotes: an even number of '"' before it), each known by the digest
of its bytes, its first line and its number of lines. The build keeps the table of a
file's segments, with the records it read from each (`rows`). The next build looks
for each old segment again in the changed file, rsync's way: where it was, shifted
by what the bytes before it gained or lost, and, after a change, a little further
on. A segment found again holds the same records, which the build takes over without
reading them; only the bytes between the segments found are parsed again.

The parts of a build share out the segments (`shares`), so the same table also cuts a
file for several processes.
"""
from __future__ import annotations

import hashlib
import mmap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from ..catalogue.load import Source, readable_header

SEGMENT = 1 << 20  # bytes: an edit reads again about this much of the file
SEGMENTS = 256  # at least, in a file of up to SEGMENT * SEGMENTS bytes (so parts can share it)
SMALLEST = 1 << 14  # bytes: the least a segment is cut to
LOOKAHEAD = 16  # old segments tried after a change, each as far as WINDOW past its place
WINDOW = 1 << 24
HEAD = 64  # bytes of an old segment looked for first
AHEAD = 32  # old segments hashed at once where they would lie if they followed on (two threads)


def digest(data) -> bytes:
    return hashlib.sha256(data).digest()[:16]  # (with the CPU's SHA instructions, twice BLAKE2b's speed)


@dataclass(frozen=True)
class Segment:
    start: int
    end: int
    line: int  # the line it starts on
    lines: int  # newlines in it
    digest: bytes
    head: bytes  # its first HEAD bytes, looked for when it moved
    rows: int = -1  # records the build read from it (-1: not counted yet)
    old: int = -1  # the previous build's segment with the same bytes (-1: none: read it)


@dataclass(frozen=True)
class Table:
    """A CSV file's header row and segments, as one build found them."""
    header: bytes  # the header row's bytes (with its newline)
    segments: tuple[Segment, ...]

    def fingerprint(self) -> str:
        """The file's identity: the same header and the same segments."""
        whole = hashlib.blake2b(self.header, digest_size=16)
        for segment in self.segments:
            whole.update(segment.digest)
        return whole.hexdigest()

    def found_again(self) -> "Table":
        """The table of the same file found unchanged: each segment is its old self."""
        return replace(self, segments=tuple(replace(s, old=i) for i, s in enumerate(self.segments)))

    def counted(self, rows: list[int]) -> "Table":
        if len(rows) != len(self.segments):
            raise ValueError("a count for each segment is needed")
        return replace(self, segments=tuple(replace(s, rows=n) for s, n in zip(self.segments, rows)))

    def to_json(self) -> dict:
        return {"header": self.header.hex(),
                "segments": [[s.start, s.end, s.line, s.lines, s.digest.hex(), s.head.hex(), s.rows]
                             for s in self.segments]}

    @classmethod
    def from_json(cls, value: dict) -> "Table":
        return cls(bytes.fromhex(value["header"]),
                   tuple(Segment(a, b, line, lines, bytes.fromhex(d), bytes.fromhex(head), rows)
                         for a, b, line, lines, d, head, rows in value["segments"]))


TAKEN_OVER_WEIGHT = 64  # a segment taken over costs about this fraction of reading it


def shares(segments: tuple[Segment, ...], count: int) -> list[tuple[Segment, ...]]:
    """The segments cut into `count` consecutive runs of about the same work."""
    weights = [(s.end - s.start) // (TAKEN_OVER_WEIGHT if s.old >= 0 else 1) + 1 for s in segments]
    total, runs, start, done = sum(weights), [], 0, 0
    for k in range(1, count + 1):
        stop = start
        while stop < len(segments) and (k == count or done * count < total * k):
            done += weights[stop]
            stop += 1
        runs.append(segments[start:stop])
        start = stop
    return runs


def sources(source: Source, runs: list[tuple[Segment, ...]]) -> list[Source] | None:
    """The source's range for each run of segments (empty for an empty run); None when its
    header cannot be read (its reader reports why)."""
    header = readable_header(source.path)
    if header is None:
        return None
    return [replace(source, start=run[0].start, end=run[-1].end, first_line=run[0].line, header=header)
            if run else replace(source, start=0, end=0) for run in runs]


class Unsegmented(Exception):
    """A file that cannot be read by segment: one with a lone carriage return, which CSV
    counts as a line end (and segments count lines by newlines), or no newline at all."""


def table(path: Path, size: int, before: Table | None = None) -> Table | None:
    """The file's segments (its first `size` bytes): the previous table's wherever they
    are found again (their `old` set), the bytes between them cut anew; None when it
    cannot be read by segment (Unsegmented): it is read whole."""
    with path.open("rb") as f:
        if size == 0:
            return Table(b"", ())
        with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as data:
            try:
                header_end = _header_end(data, size)
                header = _lines_end_in_newlines(data[:header_end])
                line = header.count(b"\n") + 1
                if before is None or before.header != header or not before.segments:
                    return Table(header, tuple(cut(data, header_end, size, line)))
                with ThreadPoolExecutor(2) as pool:
                    ahead = _Ahead(data, size, before.segments, pool)
                    return Table(header, tuple(_find_again(ahead, header_end, line)))
            except Unsegmented:
                return None


def _lines_end_in_newlines(piece: bytes) -> bytes:
    if b"\r" in piece and piece.count(b"\r") != piece.count(b"\r\n"):  # (`in` finds none at once)
        raise Unsegmented
    return piece


def _header_end(data, size: int) -> int:
    end = 0
    while True:  # the header row may hold quoted newlines
        newline = data.find(b"\n", end)
        if newline < 0:
            if data.find(b"\r") >= 0:
                raise Unsegmented  # (lines ended by carriage returns alone)
            return size
        end = newline + 1
        if data[:end].count(b'"') % 2 == 0:
            return end


def cut(data, start: int, end: int, line: int) -> list[Segment]:
    """Segments of about SEGMENT bytes (fewer in a small file) over data[start:end] (whole
    records from line `line`). (An mmap has no count: each segment's bytes are copied.)"""
    segments = []
    size = min(SEGMENT, max(SMALLEST, len(data) // SEGMENTS))
    while start < end:
        target = min(start + size, end)
        stop = end
        piece = data[start:target]  # (copied once: the segment is most of it)
        if target < end:
            quotes = piece.count(b'"')
            position = target
            while True:
                newline = data.find(b"\n", position, end)
                if newline < 0:
                    break
                quotes += data[position:newline].count(b'"')
                if quotes % 2 == 0:
                    stop = newline + 1
                    break
                position = newline + 1
        piece = _lines_end_in_newlines(piece + data[target:stop] if stop > target else piece)
        lines = piece.count(b"\n")
        segments.append(Segment(start, stop, line, lines, digest(piece), piece[:HEAD]))
        line += lines
        _let_go(data, start, stop)
        start = stop
    return segments


def _let_go(data, start: int, stop: int) -> None:
    """The mapped pages of bytes start to stop, read once, no longer counted as the process's
    own (a million books are 700 MB; the page cache keeps them)."""
    low, high = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE, stop // mmap.PAGESIZE * mmap.PAGESIZE
    if isinstance(data, mmap.mmap) and low < high:
        data.madvise(mmap.MADV_DONTNEED, low, high - low)


class _Ahead:
    """The new file's bytes, the old segments, and the digests of the bytes where an old
    segment may lie: asked for one, those of the AHEAD segments from it are made at once (by
    two threads: hashing lets go of the interpreter), where they lie if they follow on, as
    after an edit all but one do."""

    def __init__(self, data, size: int, old: tuple[Segment, ...], pool: ThreadPoolExecutor) -> None:
        self.data, self.size, self.old, self.pool = data, size, old, pool
        self.known: dict[tuple[int, int], bytes] = {}

    def digest(self, at: int, j: int) -> bytes:
        """The digest of the bytes at `at` as long as old segment j."""
        if (at, j) not in self.known:
            shift = at - self.old[j].start
            spans = [(k, self.old[k].start + shift, self.old[k].end + shift)
                     for k in range(j, min(j + AHEAD, len(self.old))) if self.old[k].end + shift <= self.size]
            with memoryview(self.data) as view:  # (hashed where they lie, not copied)
                digests = list(self.pool.map(lambda span: digest(view[span[1]:span[2]]), spans))
            self.known.update(((start, k), found) for (k, start, _), found in zip(spans, digests))
        return self.known[at, j]


def _find_again(ahead: _Ahead, position: int, line: int) -> list[Segment]:
    """The new file from `position` (line `line`) as segments: the old ones found again in
    order, new ones cut over the bytes between (see the module's docstring)."""
    data, size, old = ahead.data, ahead.size, ahead.old
    found: list[Segment] = []
    i = 0
    while position < size and i < len(old):
        match = _match(ahead, position, i)
        if match is None:
            break  # nothing further is found again: the rest is read
        at, j = match
        if at > position:
            fresh = cut(data, position, at, line)
            found += fresh
            line += sum(s.lines for s in fresh)
        segment = old[j]
        found.append(replace(segment, start=at, end=at + segment.end - segment.start, line=line, old=j))
        line += segment.lines
        position, i = at + segment.end - segment.start, j + 1
    return found + cut(data, position, size, line)


def _match(ahead: _Ahead, position: int, i: int) -> tuple[int, int] | None:
    """Where the first old segment from i found again begins at or after `position`, and
    which it is: segment i right at `position`, or one of the next found a little further
    on, after bytes that close every quote they open (so the cut is one a full read makes)."""
    data, size, old = ahead.data, ahead.size, ahead.old
    if _same(ahead, position, i):
        return position, i
    for j in range(i, min(i + LOOKAHEAD, len(old))):
        segment = old[j]
        expected = position + segment.start - old[i].start
        limit = min(expected + WINDOW, size)
        at = data.find(segment.head, position, limit)
        while at >= 0:
            if (data[at - 1:at] == b"\n" and data[position:at].count(b'"') % 2 == 0
                    and _same(ahead, at, j)):
                return at, j
            at = data.find(segment.head, at + 1, limit)
    return None


def _same(ahead: _Ahead, at: int, j: int) -> bool:
    """Whether old segment j's bytes are at `at`, ending a record (a newline, or the file's end:
    an old last record without one may have been continued since)."""
    data, size, segment = ahead.data, ahead.size, ahead.old[j]
    end = at + segment.end - segment.start
    if end > size or data[at:at + len(segment.head)] != segment.head:
        return False
    if end < size and data[end - 1:end] != b"\n":
        return False
    return ahead.digest(at, j) == segment.digest
