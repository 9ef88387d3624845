"""Deploy the published site to an S3-compatible bucket (S3, R2, MinIO): only what changed.

    catalogue deploy s3://BUCKET[/PREFIX] [--site DIR] [--endpoint-url URL] [--check] [--force]

What the site serves of the published generation (api/ and _meta/, never the build's
.state/) goes under PREFIX/ with its own relative paths (PREFIX/api/v1/books/index.json,
...), each object with Content-Type, Cache-Control and, for a `.gz` twin,
Content-Encoding: gzip (for a router in front to choose it). A deploy touches nothing in
the bucket but PREFIX/api/, PREFIX/_meta/ and its marker, PREFIX/.catalogue-deploy.

What changed is known without reading the tree: a build never rewrites a file in place
and keeps every unchanged file's inode, size and modification time (hard links between
generations), so a deploy stats the tree and compares each file with what the last
deploy to the same target recorded (`<site>/.deploy/`). New and changed files go up
first, in stages a reader never catches half-way (details, then the pages that link to
them with their indexes, then the skeleton that names both: stage()); then the pages
whose only change is the collection's count (a record added at the end changes every
page's count: counted_only()), which a reader may read beside the newer files; then what
the new build no longer has is deleted. Each finished upload is journalled at once, so an
interrupted deploy resumes where it stopped. Credentials come from boto3's usual chain.

That record is trusted only while the bucket is the one it describes. Each deploy that
changes the target first writes a new random token into the marker object and into the
record; a deploy reads the marker (one request) and, when it is missing (the bucket was
emptied or re-created, or never deployed to from here) or holds another token (a deploy
from elsewhere came since), lists PREFIX/api/ and PREFIX/_meta/ instead and compares them
with the site, as `--check` always does: a key is the same file when its size and its
ETag (the MD5 of a single-part upload's bytes, as this deploy makes them) match. `--force`
lists too and uploads every file (after a change of cache_control, which no file shows).
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from ..api.serving import SiteInfo, content_type
from ..api.urls import (API, BY_NAME, CURRENT, OPENAPI_FILE, PAGE_INDEX, PUBLISHED, QUERY_DIR, SCHEMA_PATH, Shard,
                        key_of, shard_of)
from ..catalogue.fields import url_parts
from ..errors import CatalogueError

DEPLOY_DIR = ".deploy"  # <site>/.deploy/: what each target last received
MARKER = ".catalogue-deploy"  # PREFIX/.catalogue-deploy: the token of the deploy the bucket last had
WORKERS = 16
QUEUED = WORKERS * 16  # uploads queued at once
BATCH = 1000  # keys a DeleteObjects request may name
Signature = tuple[int, int, int]  # inode, modification time (ns), size


@dataclass(frozen=True)
class Target:
    bucket: str
    prefix: str  # "" or "some/prefix/" (with its slash)

    @classmethod
    def parse(cls, url: str) -> "Target":
        parts = url_parts(url)
        if parts is None or parts.scheme != "s3" or not parts.netloc:
            raise CatalogueError(f"deploy target {url!r}: give it as s3://BUCKET or s3://BUCKET/PREFIX")
        prefix = parts.path.strip("/")
        return cls(parts.netloc, f"{prefix}/" if prefix else "")

    def key(self, path: str) -> str:
        return self.prefix + path


@dataclass
class Comparison:
    """What listing the bucket found, against the site: why it was listed, how many of the
    site's keys it holds, and the paths that differ."""
    reason: str
    listed: int
    missing: list[str]
    different: list[str]  # (with --force, every file the bucket holds: none was compared)
    extra: list[str]  # under PREFIX/api/ or PREFIX/_meta/, and not in the site


@dataclass
class Report:
    uploaded: int = 0
    deleted: int = 0
    unchanged: int = 0
    invalidate: list[str] = field(default_factory=list)
    compared: Comparison | None = None  # when the bucket was listed


def tree(root: Path) -> dict[str, Signature]:
    """Every file a host is given of a published generation (its shards followed), by
    relative path: what its served directories hold, never the build's state beside them."""
    return scan(root)[0]


def scan(root: Path, linked: dict[str, str] | None = None) -> tuple[dict[str, Signature], dict[str, str], set[str]]:
    """tree(), but for the linked directories (shards) that name the store directory `linked`
    has for them: those are not read, and are returned apart (a build never changes a
    published store directory, it makes a new one, so the record's files of such a directory
    are still its files: a deploy after a small change reads a few shards, not the whole
    site). Also the store directory each linked directory names."""
    linked = linked or {}
    found: dict[str, Signature] = {}
    links: dict[str, str] = {}
    kept: set[str] = set()
    inside = str(root.resolve()) + os.sep

    def walk(directory: str, relative: str) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                path = f"{relative}/{entry.name}"
                if not entry.is_dir():
                    stat = entry.stat()
                    found[path] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
                    continue
                if entry.is_symlink() and not (target := os.path.realpath(entry.path)).startswith(inside):
                    links[path] = os.path.basename(target)
                    if linked.get(path) == links[path]:
                        kept.add(path)
                        continue
                walk(entry.path, path)

    for top in PUBLISHED:
        if (root / top).is_dir():
            walk(str(root / top), top)
    return found, links, kept


def record_name(target: Target, endpoint: str | None) -> str:
    """What names a target's files in <site>/.deploy/: the endpoint as given, the bucket and prefix."""
    return hashlib.sha256(f"{endpoint}|{target.bucket}|{target.prefix}".encode()).hexdigest()[:16]


class Record:
    """What a target has received: the last finished deploy (with the marker token it
    wrote), and the journal of the one under way (replayed when a deploy was interrupted).
    It stays true in memory too, so a process that deploys again and again (the write
    service's publisher) reads it once."""

    def __init__(self, site: Path, target: Target, endpoint: str | None) -> None:
        name = record_name(target, endpoint)
        self.directory = site / DEPLOY_DIR
        self.manifest = self.directory / f"{name}.json"
        self.journal = self.directory / f"{name}.journal"
        self.known: dict[str, list[int]] = {}
        self.bodies: dict[str, str] = {}  # of the pages uploaded: body_digest()
        self.marker: str | None = None
        self.links: dict[str, str] = {}  # what scan() found linked when the files were known
        if self.manifest.is_file():
            saved = json.loads(self.manifest.read_text(encoding="utf-8"))
            # (a record of an older version is the files alone, and no marker: the next
            # deploy compares the bucket with the site once)
            self.known, self.marker = (saved["files"], saved["marker"]) if "files" in saved else (saved, None)
            self.links = saved.get("links", {})
            self.bodies = saved.get("bodies", {})
        self._held: dict[str, set[str]] | None = None
        if self.journal.is_file():
            self._replay(self.journal.read_text(encoding="utf-8").splitlines())
        self.directory.mkdir(exist_ok=True)
        self._lock = threading.Lock()
        self._file = self.journal.open("a", encoding="utf-8")

    def _replay(self, lines: list[str]) -> None:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # (the line being written when it was interrupted)
            if isinstance(entry, dict):
                self.marker = entry["marker"]
                self.links = entry.get("links", self.links)
            else:
                self._know(*entry)

    def _know(self, path: str, signature: list[int] | None, body: str | None = None) -> None:
        if signature is None:
            self.known.pop(path, None)
        else:
            self.known[path] = signature
        if body is None:
            self.bodies.pop(path, None)
        else:
            self.bodies[path] = body
        if self._held is not None:
            files = self._held.setdefault(path.rpartition("/")[0], set())
            (files.discard if signature is None else files.add)(path)

    def held(self) -> dict[str, set[str]]:
        """The known files by directory."""
        if self._held is None:
            self._held = {}
            for path in self.known:
                self._held.setdefault(path.rpartition("/")[0], set()).add(path)
        return self._held

    def _write(self, entry: object) -> None:
        with self._lock:
            if self._file.closed:  # (a deploy after the last one finished)
                self._file = self.journal.open("a", encoding="utf-8")
            self._file.write(json.dumps(entry) + "\n")
            self._file.flush()
            if isinstance(entry, list):
                self._know(*entry)

    def done(self, path: str, signature: Signature | None, body: str | None = None) -> None:
        self._write([path, None if signature is None else list(signature)] + ([body] if body else []))

    def claim(self, marker: str) -> None:
        """The bucket's marker now holds this token."""
        self.marker = marker
        self._write({"marker": marker})

    def unsettle(self, directories: set[str]) -> None:
        """The files of these directories may no longer be the ones recorded (files of a build
        not yet published went up): the next deploy reads them rather than take their
        linked directory as known."""
        self.links = {path: name for path, name in self.links.items() if path not in directories}
        self._write({"marker": self.marker, "links": self.links})

    def close(self) -> None:
        """Stop journalling (what was journalled stays, for the next deploy to replay)."""
        self._file.close()

    def finish(self, links: dict[str, str], now: dict[str, Signature] | None = None) -> None:
        """The deploy is done: the bucket holds the known files (or `now`, every file, after a
        deploy that listed the bucket). The journal ends with the marker and links, and the
        manifest is written again (the journal emptied) once the journal has grown to half its size."""
        if now is not None:
            self.known, self._held = {path: list(signature) for path, signature in now.items()}, None
            self.bodies = {path: body for path, body in self.bodies.items() if path in now}
        self.links = links
        self._write({"marker": self.marker, "links": links})
        self._file.close()
        if now is None and self.journal.stat().st_size * 2 < self._size():
            return
        temporary = self.manifest.with_suffix(".new")
        temporary.write_text(json.dumps({"marker": self.marker, "links": links, "files": self.known,
                                          "bodies": self.bodies}), encoding="utf-8")
        os.replace(temporary, self.manifest)
        self.journal.unlink()

    def _size(self) -> int:
        try:
            return self.manifest.stat().st_size
        except FileNotFoundError:
            return 0


def deploy(site: Path, url: str, endpoint: str | None = None,
           progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
           check: bool = False, force: bool = False) -> Report:
    """Upload what changed since the last deploy to this target, then delete what is gone;
    with check (or when the bucket is not the one the record describes), what differs from
    the bucket's listing; with force, every file."""
    try:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise CatalogueError("catalogue deploy needs boto3: pip install boto3") from None
    try:
        return _deploy(boto3.client("s3", endpoint_url=endpoint), site, url, endpoint, progress, check, force)
    except (BotoCoreError, ClientError) as exc:
        raise CatalogueError(f"deploying to {url} failed: {exc}\nWhat was uploaded is recorded: run the "
                             "same deploy again to go on from there.") from None


@dataclass
class Plan:
    """What a deploy is to do: the generation's files, what changed and what is gone since
    the record it goes on from (or, listed, against the bucket)."""
    target: Target
    info: SiteInfo
    root: Path
    now: dict[str, Signature]  # (every file, or with a trusted record those of the shards read)
    links: dict[str, str]  # (scan()'s)
    record: Record
    found: str | None  # the bucket's marker
    changed: list[str]
    gone: list[str]
    compared: Comparison | None
    later: list[str] = field(default_factory=list)  # of `changed`, the pages whose only change is the count
    # (known once the details are up: carry_out)

    def invalidate(self) -> list[str]:
        """The URL paths a CDN in front must forget once this deploy is done."""
        return invalidations(self.changed + self.later + self.gone, urlsplit(self.info.base_url).path)


def _deploy(client, site: Path, url: str, endpoint: str | None, progress: Callable[[str], None],
            check: bool, force: bool) -> Report:
    return carry_out(client, plan(client, site, Target.parse(url), endpoint, check, force), progress)


def plan(client, site: Path, target: Target, endpoint: str | None, check: bool = False,
         force: bool = False, record: Record | None = None) -> Plan:
    """The delta of the published generation against this target's record (the deploy's
    own, never a listing: only the shards that changed are read), or against the bucket's
    listing when the record is not trusted. `record`: the one a previous plan used, kept."""
    info = SiteInfo.of_site(site)
    root = (site / CURRENT).resolve()
    found = bucket_marker(client, target)
    record = record or Record(site, target, endpoint)
    try:
        reason = why_list(record, found, check, force)
        if reason is None:
            now, links, kept = scan(root, record.links)
            changed = sorted(path for path, signature in now.items() if record.known.get(path) != list(signature))
            held = record.held()
            gone = sorted(path for directory in held.keys() - kept for path in held[directory] if path not in now)
            compared = None
        else:
            now, links, _ = scan(root)
            compared = compare(root, now, listing(client, target), reason, force)
            changed, gone = sorted(compared.missing + compared.different), compared.extra
    except BaseException:
        record.close()
        raise
    return Plan(target, info, root, now, links, record, found, changed, gone, compared)


def counted_only(root: Path, changed: list[str], bodies: dict[str, str]) -> set[str]:
    """The changed pages (with their .gz twins) that differ from what the bucket holds (as the
    record's body digests say) in the collection's count alone, written with as many digits:
    a record added at the end of a collection changes the count on every one of its pages.
    Such a page holds the same records at the same bytes as before, so a reader who reads it
    beside newer files (the page index whose count a query takes, the pages holding the new
    record) reads a consistent answer, one count behind: they may go up after the rest."""
    candidates = [path for path in changed if path in bodies]  # (the record keeps pages' alone)

    def same(path: str) -> bool:
        return body_digest(path, (root / path).read_bytes()) == bodies[path]

    with ThreadPoolExecutor(WORKERS) as pool:  # (reads and digests let go of the GIL)
        later = {path for path, kept in zip(candidates, pool.map(same, candidates)) if kept}
    twins = {f"{path}.gz" for path in later} & set(changed)
    return later | twins


def is_page(path: str) -> bool:
    """A page of a collection's pages/ (not its .gz twin, not a block's page index)."""
    return path.startswith(f"{API}/") and "/pages/" in path and path.endswith(".json")


def body_digest(path: str, data: bytes) -> str | None:
    """For a page, a digest of its bytes but the collection's count (its head's `{"count":N`,
    api/assemble.head), and of how many digits the count has (so that the records' bytes lie
    where they lay); None for any other file."""
    if not is_page(path):
        return None
    comma = data.find(b",")
    return hashlib.blake2b(b"%d" % comma + data[comma:], digest_size=16).hexdigest()


class Stopped(Exception):
    """A deploy was asked to stop before it was done: what it did is journalled."""


def carry_out(client, plan: Plan, progress: Callable[[str], None], stop: threading.Event | None = None,
              between: Callable[[], None] | None = None) -> Report:
    """Upload what changed (in stages a reader never catches half-way): the details first,
    then, the pages whose only change is the count set apart (plan.later), the rest; then
    (after `between()`) those pages; then delete what is gone, each step journalled; then
    the record of the finished deploy. Once `stop` is set, no upload starts (Stopped)."""
    target, record = plan.target, plan.record
    try:
        fresh = None
        if plan.changed or plan.gone or plan.found is None:  # (before the first change: see above)
            fresh = put_marker(client, target)
            if plan.compared is None:
                record.claim(fresh)  # (interrupted, it goes on from its record; a listing one lists again)
        upload = partial(upload_all, client, target, plan.root, plan.now, cache_control=plan.info.cache_control,
                         record=record, progress=progress, stop=stop)
        upload([path for path in plan.changed if stage(path) == 0])  # (the new records: no wait for the rest)
        if plan.compared is None:
            later = counted_only(plan.root, plan.changed, record.bodies)
            plan.changed, plan.later = [path for path in plan.changed if path not in later], sorted(later)
        upload([path for path in plan.changed if stage(path) > 0])
        if between is not None:
            between()
        upload(plan.later)
        delete_all(client, target, plan.gone, record)
    finally:
        record.close()
    record.marker = fresh or plan.found  # (nothing changed: the bucket holds the site, trust it from now on)
    record.finish(plan.links, None if plan.compared is None else plan.now)
    uploaded = len(plan.changed) + len(plan.later)
    return Report(uploaded=uploaded, deleted=len(plan.gone), unchanged=len(record.known) - uploaded,
                  invalidate=plan.invalidate(), compared=plan.compared)


def put_marker(client, target: Target) -> str:
    """A new token in the bucket's marker; returns it."""
    token = secrets.token_hex(16)
    client.put_object(Bucket=target.bucket, Key=target.key(MARKER), Body=token.encode(),
                      ContentType="text/plain", CacheControl="no-store")
    return token


def bucket_marker(client, target: Target) -> str | None:
    """The token the bucket's marker holds, or None when there is none."""
    try:
        return client.get_object(Bucket=target.bucket, Key=target.key(MARKER))["Body"].read().decode()
    except client.exceptions.NoSuchKey:
        return None


def why_list(record: Record, found: str | None, check: bool, force: bool) -> str | None:
    """Why this deploy must list the bucket rather than trust its record; None: it need not."""
    if force or check:
        return "--force" if force else "--check"
    if record.marker is None:  # (never deployed to from here, or the last one was interrupted)
        return "no finished deploy to this target recorded here"
    if found is None:
        return "the bucket has no deploy marker: emptied or re-created since the last deploy"
    if found != record.marker:
        return "another deploy reached the bucket since this site's last one"
    return None


def listing(client, target: Target) -> dict[str, tuple[int, str]]:
    """Size and ETag of every object under PREFIX/api/ and PREFIX/_meta/, by path in the site."""
    found = {}
    pages = client.get_paginator("list_objects_v2")
    for top in PUBLISHED:
        for page in pages.paginate(Bucket=target.bucket, Prefix=target.key(f"{top}/")):
            for entry in page.get("Contents", []):
                found[entry["Key"].removeprefix(target.prefix)] = (entry["Size"], entry["ETag"].strip('"'))
    return found


def compare(root: Path, now: dict[str, Signature], listed: dict[str, tuple[int, str]], reason: str,
            force: bool) -> Comparison:
    """The site's files against the bucket's listing."""
    held = sorted(path for path in now if path in listed)

    def same(path: str) -> bool:
        size, etag = listed[path]
        # (an ETag with a dash is a multipart upload's, no MD5 of the bytes: it counts as different)
        return size == now[path][2] and "-" not in etag and md5(root / path) == etag

    with ThreadPoolExecutor(WORKERS) as pool:
        kept = [False] * len(held) if force else list(pool.map(same, held))
    return Comparison(reason, len(held), missing=sorted(set(now) - set(listed)),
                      different=[path for path, ok in zip(held, kept) if not ok],
                      extra=sorted(set(listed) - set(now)))


def md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def stage(path: str) -> int:
    """When a changed file goes up: 0, the details, which pages link to; 1, the pages in
    blocks and the indexes that say where each record lies in them (see order()); 2, the
    skeleton (the API root, first pages, _meta), which names all of them. A reader between
    two stages finds every file a file it can reach names."""
    return order(path)[0]


def order(path: str) -> tuple[int, int, str, bool]:
    """A changed file's place in the uploads: its stage, then (in stage 1) block by block,
    each block's page indexes after its pages (the first span's tells the count a query's
    answer takes records by: never before the pages holding them), and the query indexes
    after every page."""
    shard = Shard.parse(shard_of(path) or "")
    if shard is not None and shard.limit is None:
        return (0, 0, "", False)
    if f"/{QUERY_DIR}/" in path:
        return (1, 1, path, False)
    if shard is not None or "/pages/" in path:  # (pages/default/ too: its own objects in a bucket)
        return (1, 0, path.rpartition("/")[0], path.endswith(PAGE_INDEX))
    return (2, 0, "", False)


STAGES = 3


def upload_all(client, target: Target, root: Path, now: dict[str, Signature], changed: list[str],
               cache_control: str, record: Record, progress: Callable[[str], None],
               stop: threading.Event | None = None) -> None:
    """Each stage's files (see stage()) once the stage before is in the bucket, in order()."""
    stages: list[list[str]] = [[] for _ in range(STAGES)]
    for path in sorted(changed, key=order):
        stages[stage(path)].append(path)
    uploaded, last = [0], [time.monotonic()]

    def upload(path: str) -> None:
        if stop is not None and stop.is_set():
            raise Stopped
        put_file(client, target, path, root / path, cache_control, record, now[path])
        uploaded[0] += 1
        if time.monotonic() - last[0] >= 1:
            last[0] = time.monotonic()
            progress(f"  uploaded {uploaded[0]:,} of {len(changed):,}")

    for paths in stages:
        with ThreadPoolExecutor(WORKERS) as pool:
            # (a run of files at a time: a stop leaves the rest unqueued, where thousands of
            # queued uploads each had to be taken and refused first: seconds of a loaded machine)
            for start in range(0, len(paths), QUEUED):
                list(pool.map(upload, paths[start:start + QUEUED]))  # (re-raises the first failure)


def put_file(client, target: Target, path: str, file: Path, cache_control: str, record: Record,
             signature: Signature) -> None:
    """One file of the site up as the object of its path (with its headers), journalled."""
    extra = {"ContentType": content_type(path.removesuffix(".gz")), "CacheControl": cache_control}
    if path.endswith(".gz"):
        extra["ContentEncoding"] = "gzip"
    body = file.read_bytes()
    client.put_object(Bucket=target.bucket, Key=target.key(path), Body=body, **extra)
    record.done(path, signature, body_digest(path, body))


def delete_all(client, target: Target, gone: list[str], record: Record) -> None:
    """Delete what is gone, a batch a request, each deletion journalled; a key the bucket
    refused (the reply's Errors: DeleteObjects answers 200 either way) stays in the record, so
    that the same deploy run again tries it again, and fails the deploy, named."""
    refused: list[str] = []
    for start in range(0, len(gone), BATCH):
        batch = gone[start:start + BATCH]
        reply = client.delete_objects(Bucket=target.bucket,
                                      Delete={"Objects": [{"Key": target.key(p)} for p in batch], "Quiet": True})
        errors = {error.get("Key"): error.get("Message") or error.get("Code") for error in reply.get("Errors", ())}
        for path in batch:
            if target.key(path) in errors:
                refused.append(f"{target.key(path)} ({errors[target.key(path)]})")
            else:
                record.done(path, None)
    if refused:
        raise CatalogueError(f"the bucket refused to delete {len(refused)} file{'s' if len(refused) > 1 else ''}: "
                             f"{', '.join(refused[:5])}{' ...' if len(refused) > 5 else ''}\n"
                             "Run the same deploy again to try them again.")


def invalidations(paths: list[str], prefix: str) -> list[str]:
    """The URL paths a CDN in front must forget: each changed detail, and each collection
    whose pages changed (with every query string)."""
    found: set[str] = set()
    for path in paths:
        if path.removesuffix(".gz") == OPENAPI_FILE:
            found.add(f"{prefix}/{SCHEMA_PATH}")
        if not path.startswith(f"{API}/"):
            continue  # (_meta: error bodies, served under the paths below)
        shard = Shard.parse(shard_of(path) or "")
        parts = path.split("/")
        if path == f"{API}/index.json":
            found.add(f"{prefix}/{API}/")
        elif shard is not None and shard.limit is None:
            found.add(f"{prefix}/{API}/{shard.resource}/{key_of(parts[-1])}/")
        elif parts[2] in BY_NAME:
            found.update({f"{prefix}/{API}/{parts[2]}/", f"{prefix}/{API}/{parts[2]}/?*"})
    return sorted(found)
