"""The build's query indexes: what each query backend (api/backends/) writes, made after the
pages from each *stretch*'s parts (what every backend's indexer made of its records,
sitebuild/stretches.py), and written only where a file's bytes changed; an unchanged one is
linked from the previous generation. The parts of a stretch whose records are new or moved
are made by the part of the build that cut its pages, from the records it spooled; the
others' are taken over from the previous build, or made here from the pages of the default
size the new generation holds (only the fields the indexers read), read by as many
processes as the build uses, in runs of whole blocks (a few a process, each taken by the
process that comes free). Each backend then finishes from the stretches' parts.

Each stretch's parts are kept in the generation's state, named after the build that made
them: the next build, made with the same settings and generator, takes over the parts of
every stretch whose pages hold the records they held (a hard link; a stretch whose pages
are the previous generation's files, the same inodes, without reading them) and parses and
keys only the stretches that changed (a one-title edit: one). Where at most EDIT_STRETCHES changed and no record moved (records
added at the end: the last stretch longer), each backend that can, and whose related
collections' ids are as before (`Backend.given_ids`), edits the previous build's files
where those records changed (`Backend.edit`: the term index, the orderings, the filters)
instead of making every file again from every part. A collection whose every part, and
the ids of every collection its backends were given, are as the previous build had them,
and whose backends write their files as then (`index_format`), has its index files
linked from it as they are, not made again (an edit of another collection).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field as dataclass_field
from itertools import zip_longest
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy
import orjson

from ..api.backends import Backend, common, configured, indexing
from ..api.pageindex import RESULTS
from ..api.urls import BY_NAME, PAGE_BUCKET, page_file
from ..catalogue.settings import Settings
from ..system import big_arrays, no_cycle_collector
from . import stretches
from .part import moved_records
from .publish import Generation, Site, same_bytes
from .state import VERSION as STATE_VERSION, published_ids, state_dir

PARTS_FORMAT = b"10"  # bump when what an indexer's close() gives changes for the same records, or how it is kept
EDIT_STRETCHES = 4  # stretches changed at most where the indexes are edited (backends that can), not made again


@dataclass(frozen=True)
class Job:
    """The query indexes of one build: where they go, and what they are made from."""
    site: Site
    generation: Generation
    previous: Path | None
    settings: Settings
    counts: dict[str, int]
    scratch: Path | None = None  # (the build's: what its parts made, part.moved_records)
    moved: dict[str, numpy.ndarray | None] = dataclass_field(default_factory=dict, repr=False)  # (by collection, once)

    def flush(self, path: str, data: bytes) -> None:
        """A file, written, or linked from the previous generation when it holds these bytes."""
        if self.previous is not None and same_bytes(self.previous / path, data):
            self.site.carry(self.generation, self.previous, path)
        else:
            self.generation.write(path, data)

    def read_previous(self, path: str) -> bytes | None:
        """A file of the previous generation (None: it has none)."""
        try:
            return (self.previous / path).read_bytes() if self.previous is not None else None
        except FileNotFoundError:
            return None

    def page_bytes(self, name: str, start: int, stop: int, generation: Path | None = None) \
            -> Iterator[tuple[int, bytes]]:
        """The default pages holding a collection's records start..stop (stop within it):
        each one's offset and bytes (of the generation at `generation`; None: the new one)."""
        for offset, path in self.page_paths(name, start, stop, generation):
            with open(path, "rb") as f:
                yield offset, f.read()

    def page_paths(self, name: str, start: int, stop: int, generation: Path | None = None) -> Iterator[tuple[int, str]]:
        """The default pages holding a collection's records start..stop: their offsets and paths."""
        size = self.settings.default_page_size
        root = f"{generation or self.generation.root}/"
        for offset in range(start - start % size, stop, size):
            yield offset, root + page_file(name, str(size), str(offset // PAGE_BUCKET), str(offset))

    def records_kept(self, name: str, start: int, stop: int) -> bool:
        """Whether records start..stop are the previous build's, at the same places with the
        same bytes, as the build's parts say (no page read: a record added rewrites every
        page, its count, and moves none); False where they do not say."""
        if not (self.previous and self.scratch):
            return False  # (no previous build's records, or no parts of this build's to say)
        collection = BY_NAME[name].collection
        if collection not in self.moved:
            self.moved[collection] = moved_records(self.scratch, collection)
        moved = self.moved[collection]
        return moved is not None and numpy.searchsorted(moved, start) == numpy.searchsorted(moved, stop)

    def page_folder(self, name: str, offset: int, generation: Path | None = None) -> str:
        """The folder of the default pages of a collection whose offsets lie in the bucket of `offset`."""
        return f"{generation or self.generation.root}/" + page_file(name, str(self.settings.default_page_size),
                                                                    str(offset // PAGE_BUCKET), "").rpartition("/")[0]

    def documents(self, name: str) -> Callable[[bytes, int, int, int], list[dict]]:
        """What reads a collection's documents of records start..stop from its default page at
        `offset` (page, offset, start, stop): of each, only the fields its backends' indexers
        read (Backend.reads)."""
        decode = stretches.decoder(stretches.reads(name, self.settings.query), page=True).decode
        return lambda page, offset, start, stop: decode(page)["results"][max(start - offset, 0):stop - offset]


def write_query_indexes(job: Job, processes: int) -> None:
    """Every index file of the collections site.yaml configures a query backend for (the
    cyclic garbage collector off: the parts, keys and sets make no reference cycles; the
    memory of the arrays a million books' keys and sets take kept for reuse)."""
    with no_cycle_collector(), big_arrays():
        _write_query_indexes(job, processes)


def _write_query_indexes(job: Job, processes: int) -> None:
    """The collections, largest first. With more than one process a collection's backends
    finish in a thread of their own while the next collections are read and finished beside
    them: a million books' finish leaves a core idle at times (its key table's last steps,
    the writer's start), which the smaller collections' work fills."""
    shared = _Shared(job)
    names = sorted(configured(job.settings.query), key=lambda name: -job.counts[name])
    if names:
        # (imported here, before the threads: the term index's and the orderings' edits each
        # importing it at once, beside the threads linking files, took a one-title edit of a
        # million books 1.3 s more)
        import polars  # noqa: F401
    if processes == 1 or len(names) < 2:
        for name in names:
            _collected(job, name, processes, shared)()
        return
    with ThreadPoolExecutor(len(names)) as pool:  # (a failure waits for the others)
        for done in [pool.submit(_collected(job, name, processes, shared)) for name in names]:
            done.result()


class _Shared:
    """What the collections' finishes share, one thread at a time: the generation's files,
    and the ids of each collection some backend is given, with their digest (each read and
    digested once)."""

    def __init__(self, job: Job) -> None:
        self.job, self.lock, self._ids = job, threading.Lock(), {}

    def ids(self, target: str) -> tuple[list[str], str]:
        with self.lock:
            if target not in self._ids:
                found = published_ids(self.job.generation.root, BY_NAME[target].collection)
                self._ids[target] = found, _ids_digest(found)
            return self._ids[target]

    def flush(self, path: str, data: bytes) -> None:
        with self.lock:
            self.job.flush(path, data)

    def carry(self, folder: str, skip: Iterable[str] = ()) -> None:
        with self.lock:
            _carry(self.job, folder, skip)


def _collected(job: Job, name: str, processes: int, shared: _Shared) -> Callable[[], None]:
    """A collection's stretches' parts, made or taken over (by as many processes as the build
    uses); then what writes its index files from them and keeps, in the state, what they
    were made from."""
    query = job.settings.query
    made_with = _made_with(job)
    before = _made(job.previous, name)
    runs = stretches.runs(job.counts[name], processes)
    parts = _parts_by_bounds(before, made_with)
    # (forked: a run's indexers use no polars, whose threads a fork leaves behind: it would hang)
    if len(runs) > 1:
        with ProcessPoolExecutor(min(len(runs), processes), mp_context=multiprocessing.get_context("fork")) as pool:
            kept = [path for run in pool.map(_collect, *zip(*[(job, name, run, parts) for run in runs])) for path in run]
    else:
        kept = _collect(job, name, runs[0], parts)
    made = {"parts": [path.name for path in kept], "ids": {}, "made_with": made_with,
            "formats": [backend.index_format for backend in indexing(name, query)],
            "stretches": [list(bounds) for bounds in stretches.every(job.counts[name], processes,
                                                                     job.settings.default_page_size)]}

    def finish() -> None:
        same_ids = before is not None and all(_ids_kept(job, target) or shared.ids(target)[1] == digest
                                              for target, digest in before["ids"].items())
        if same_ids and (before["parts"], before.get("formats")) == (made["parts"], made["formats"]):
            made["ids"] = before["ids"]  # (every part and every id it was made from as before: its files too)
            shared.carry(common.query_dir(name))
        else:
            edits = _changes(job, name, before, made) if before is not None else None
            if edits is not None:
                made["ids"] = dict(before["ids"])  # (the ids as then: what an edit takes them to be)
            _finish(job, name, kept, made, shared, edits, processes, same_ids)
        (state_dir(job.generation.root) / _made_file(name)).write_bytes(orjson.dumps(made))
    return finish


def _finish(job: Job, name: str, kept: list[Path], made: dict, shared: _Shared, changes: list[common.Change] | None,
            processes: int, same_ids: bool) -> None:
    """Each backend's files of the collection: edited from the previous build's where only
    the records `changes` names changed, the backend can and the ids of the collections it
    is given are as before (`same_ids`: every one's; a record added to a related collection
    makes again only the backends given its ids: the filters, not the term index), else made
    from its stretches' parts; `made["ids"]` says the digest of the ids of each collection
    they were given. With more than one process, the backends work side by side, a thread
    each (their work is numpy's and polars', which let go of the interpreter: the filters
    and orderings take the processor time the term index's key table leaves idle; the
    processes its writer forks use neither polars nor the lock), their files and ids given
    out one at a time (`shared`)."""
    def ids(target: str) -> list[str]:
        found, made["ids"][target] = shared.ids(target)
        return found

    query, count = job.settings.query, job.counts[name]

    def make(at: int, backend: Backend) -> None:
        def parts() -> list:
            return [stretches.read_part(path, at) for path in kept]
        editable = changes is not None and (same_ids or not backend.given_ids(name, query))
        edited = backend.edit(name, query, job.read_previous, changes, count, parts) if editable else None
        if edited is None:
            backend.finish(name, query, shared.flush, parts(), ids, processes)
            return
        for path, data in edited.files.items():
            if data is not None:
                shared.flush(path, data)
        for folder in edited.folders:
            shared.carry(folder, skip=edited.files.keys())

    backends = list(enumerate(indexing(name, query)))
    if processes == 1:  # (one after another, here: a failure or an interrupt stops them at once)
        for at, backend in backends:
            make(at, backend)
        return
    with ThreadPoolExecutor(len(backends)) as pool:  # (all begun at once: a failure waits for the others)
        for done in [pool.submit(make, at, backend) for at, backend in backends]:
            done.result()


def _changes(job: Job, name: str, before: dict, made: dict) -> list[common.Change] | None:
    """The records whose fields the indexers read differ from the previous build's (position,
    then, now: those fields; a record added at the end, then `{}`), where its indexes were
    made with the same settings and formats, the collection's stretches lie where they lay
    (the last one longer, more after it, where records were added) and at most
    EDIT_STRETCHES of them changed (an edit, or records added at the end: not records
    inserted or taken away, which move every record after them); else None."""
    then_stretches, now_stretches = before["stretches"], made["stretches"]
    if any(before.get(key) != made[key] for key in ("made_with", "formats")) \
            or not _grown_from(then_stretches, now_stretches):
        return None
    changed = [bounds for at, bounds in enumerate(now_stretches)
               if at >= len(before["parts"]) or before["parts"][at] != made["parts"][at]]
    if len(changed) > EDIT_STRETCHES:
        return None
    had = then_stretches[-1][1]  # (the previous build's count)
    changes, documents = [], job.documents(name)
    for start, stop in changed:
        then_pages = dict(job.page_bytes(name, start, min(stop, had), job.previous)) if start < had else {}
        for offset, now in job.page_bytes(name, start, stop):
            then = then_pages.get(offset)
            if now != then:
                first = max(offset, start)
                was = documents(then, offset, start, min(stop, had)) if then is not None else []
                changes.extend((position, old, new) for position, (old, new) in enumerate(
                    zip_longest(was, documents(now, offset, start, stop), fillvalue={}), first) if old != new)
    return changes


def _grown_from(then: list[list[int]], now: list[list[int]]) -> bool:
    """Whether stretches `now` are `then`, or `then` with its last one longer and maybe more
    after it (records added at the end)."""
    if not then or len(now) < len(then) or now[:len(then) - 1] != then[:-1]:
        return False
    (start, stop), (new_start, new_stop) = then[-1], now[len(then) - 1]
    return new_start == start and new_stop >= stop


def _made_file(name: str) -> str:
    """What a collection's index files were made from (the state's): its stretches' parts
    files, the digests of the ids of the collections its backends were given."""
    return f"query-made-{name}"  # (not "*-<collection>.*", which keep() links from the previous state)


def _made(previous: Path | None, name: str) -> dict | None:
    try:
        return orjson.loads((state_dir(previous) / _made_file(name)).read_bytes()) if previous else None
    except FileNotFoundError:
        return None


def _ids_digest(ids: list[str]) -> str:
    return hashlib.blake2b("\n".join(ids).encode(), digest_size=16).hexdigest()


def _carry(job: Job, folder: str, skip: Iterable[str] = ()) -> None:
    """Every index file under a folder of the previous build (but those `skip` names) linked
    from it as it is: a collection's made from the same parts and ids, or the files of a
    backend's edit that it did not change."""
    assert job.previous is not None
    job.site.carry_folder(job.generation, job.previous, folder, set(skip))


def _collect(job: Job, name: str, run: tuple[int, int], before: dict[tuple[int, int], str]) -> list[Path]:
    """The state's files of a run's stretches, in order: each holds every indexing backend's
    part of its records (stretches.parts), taken over from the previous build's state where it
    kept the same (`before`: its parts files by their stretches' bounds, where made with
    these settings), else made."""
    return [_stretch_parts(job, name, start, stop, before)
            for start, stop in stretches.cut(run, job.counts[name], job.settings.default_page_size)]


def _parts_by_bounds(before: dict | None, made_with: str) -> dict[tuple[int, int], str]:
    """The previous build's parts files of a collection by their stretches' bounds, where they
    were made by this generator with these settings (else none)."""
    if before is None or before.get("made_with") != made_with:
        return {}
    return {(start, stop): part for (start, stop), part in zip(before["stretches"], before["parts"])}


def _made_with(job: Job) -> str:
    """What every stretch's parts are made with, digested: the generator's state version and
    formats, the settings."""
    digest = hashlib.blake2b(PARTS_FORMAT + STATE_VERSION.encode(), digest_size=16)
    digest.update(orjson.dumps([job.settings.default_page_size, job.settings.query], option=orjson.OPT_SORT_KEYS))
    return digest.hexdigest()


def _stretch_parts(job: Job, name: str, start: int, stop: int, before: dict[tuple[int, int], str]) -> Path:
    """The state's file of the parts of records start..stop: linked from the previous state
    where it holds this stretch's (`before`, made with the same settings) and its records
    did not move or its pages are the previous generation's files (an unchanged page is
    linked, never written again: the same inode, its bytes unread); else the one a part of
    the build made as it cut the stretch's pages (part.py); else linked from the previous
    state where its pages hold the same records' bytes, or made from the pages."""
    state = state_dir(job.generation.root)
    state.mkdir(exist_ok=True)
    kept = before.get((start, stop))
    if kept is not None and (job.records_kept(name, start, stop) or _pages_kept(job, name, start, stop)) \
            and (taken := _taken_over(job, kept)):
        return taken
    path = state / f"query-parts-{name}-{start}-{job.generation.number}"
    if job.scratch is not None:
        try:
            os.replace(stretches.made_here(job.scratch, name, (start, stop)), path)
            return path
        except FileNotFoundError:
            pass
    pages = list(job.page_bytes(name, start, stop))
    if kept is not None and _same_pages(job, name, start, stop, pages) and (taken := _taken_over(job, kept)):
        return taken
    read = job.documents(name)
    documents = [document for offset, data in pages for document in read(data, offset, start, stop)]
    path.write_bytes(stretches.parts(name, job.settings.query, start, documents))
    return path


def _taken_over(job: Job, file: str) -> Path | None:
    """A parts file of the previous state linked into the new one (None: it is gone, and the
    stretch's parts are made again)."""
    path = state_dir(job.generation.root) / file
    try:
        os.link(state_dir(job.previous) / file, path)
    except FileNotFoundError:
        return None
    return path


def _ids_kept(job: Job, name: str) -> bool:
    """Whether a collection's ids are the previous build's: its every default page is the
    previous generation's file (each names the count: a record added or taken away writes
    them all), without reading a million books' pages."""
    return job.previous is not None and _pages_kept(job, name, 0, max(job.counts[name], 1))


def _same_pages(job: Job, name: str, start: int, stop: int, pages: list[tuple[int, bytes]]) -> bool:
    """Whether the previous generation's default pages of records start..stop hold these
    records, in the same bytes (read until one differs: a fresh build digests none of a
    million books' pages); their heads may differ (a record added: every page's count)."""
    try:
        return all(_records(data) == _records(then)
                   for (_, data), (_, then) in zip(pages, job.page_bytes(name, start, stop, job.previous)))
    except FileNotFoundError:
        return False


def _records(page: bytes) -> bytes:
    """A page's records, and what follows them (api/assemble.head: the head ends at RESULTS)."""
    return page[page.find(RESULTS):]


def _pages_kept(job: Job, name: str, start: int, stop: int) -> bool:
    """Whether the default pages of records start..stop are the previous generation's files:
    those of a bucket at once where both generations link its shard directory (the same
    directory: its every file is), else each (a million books' pages one by one: 0.4 s)."""
    try:
        for first in range(start - start % PAGE_BUCKET, stop, PAGE_BUCKET):
            if os.path.samefile(*(job.page_folder(name, first, generation) for generation in (None, job.previous))):
                continue
            within = (max(start, first), min(stop, first + PAGE_BUCKET))
            pairs = zip(job.page_paths(name, *within), job.page_paths(name, *within, job.previous))
            if not all(os.path.samefile(new, old) for (_, new), (_, old) in pairs):
                return False
        return True
    except FileNotFoundError:
        return False
