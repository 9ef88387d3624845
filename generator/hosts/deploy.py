"""Deploy the published site to an S3-compatible bucket (S3, R2, MinIO): only what changed.

    catalogue deploy s3://BUCKET[/PREFIX] [--site DIR] [--endpoint-url URL]

The published generation goes under PREFIX/ with its own relative paths
(PREFIX/api/v1/books/index.json, ...), each object with Content-Type, Cache-Control and,
for a `.gz` twin, Content-Encoding: gzip (for a router in front to choose it).

What changed is known without reading the tree: a build never rewrites a file in place
and keeps every unchanged file's inode, size and modification time (hard links between
generations), so a deploy stats the tree and compares each file with what the last
deploy to the same target recorded (`<site>/.deploy/`). New and changed files go up
first (shards, then the skeleton that links to them), then what the new build no longer
has is deleted. Each finished upload is journalled at once, so an interrupted deploy
resumes where it stopped. Credentials come from boto3's usual chain.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from ..api.serving import SiteInfo, content_type
from ..api.urls import API, BY_NAME, CURRENT, OPENAPI_FILE, PUBLISHED, SCHEMA_PATH, Shard, key_of, shard_of
from ..errors import CatalogueError

DEPLOY_DIR = ".deploy"  # <site>/.deploy/: what each target last received
WORKERS = 16
Signature = tuple[int, int, int]  # inode, modification time (ns), size


@dataclass(frozen=True)
class Target:
    bucket: str
    prefix: str  # "" or "some/prefix/" (with its slash)

    @classmethod
    def parse(cls, url: str) -> "Target":
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise CatalogueError(f"deploy target {url!r}: give it as s3://BUCKET or s3://BUCKET/PREFIX")
        prefix = parts.path.strip("/")
        return cls(parts.netloc, f"{prefix}/" if prefix else "")

    def key(self, path: str) -> str:
        return self.prefix + path


@dataclass
class Report:
    uploaded: int = 0
    deleted: int = 0
    unchanged: int = 0
    invalidate: list[str] = field(default_factory=list)


def tree(root: Path) -> dict[str, Signature]:
    """Every file a host is given of a published generation (its shards followed), by
    relative path: what its served directories hold, never the build's state beside them."""
    found = {}
    for top in PUBLISHED:
        for directory, _, names in os.walk(root / top, followlinks=True):
            relative = os.path.relpath(directory, root)
            for name in names:
                stat = os.stat(os.path.join(directory, name))
                found[f"{relative}/{name}"] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return found


class Record:
    """What a target has received: the last finished deploy, and the journal of the one
    under way (replayed when a deploy was interrupted)."""

    def __init__(self, site: Path, target: Target, endpoint: str | None) -> None:
        name = hashlib.sha256(f"{endpoint}|{target.bucket}|{target.prefix}".encode()).hexdigest()[:16]
        self.directory = site / DEPLOY_DIR
        self.manifest = self.directory / f"{name}.json"
        self.journal = self.directory / f"{name}.journal"
        self.known: dict[str, list[int]] = {}
        if self.manifest.is_file():
            self.known = json.loads(self.manifest.read_text(encoding="utf-8"))
        if self.journal.is_file():
            for line in self.journal.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # (the line being written when it was interrupted)
                if entry[1] is None:
                    self.known.pop(entry[0], None)
                else:
                    self.known[entry[0]] = entry[1]
        self.directory.mkdir(exist_ok=True)
        self._lock = threading.Lock()
        self._file = self.journal.open("a", encoding="utf-8")

    def done(self, path: str, signature: Signature | None) -> None:
        with self._lock:
            self._file.write(json.dumps([path, None if signature is None else list(signature)]) + "\n")
            self._file.flush()

    def finish(self, now: dict[str, Signature]) -> None:
        self._file.close()
        temporary = self.manifest.with_suffix(".new")
        temporary.write_text(json.dumps({k: list(v) for k, v in now.items()}), encoding="utf-8")
        os.replace(temporary, self.manifest)
        self.journal.unlink()


def deploy(site: Path, url: str, endpoint: str | None = None,
           progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr)) -> Report:
    """Upload what changed since the last deploy to this target, then delete what is gone."""
    try:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise CatalogueError("catalogue deploy needs boto3: pip install boto3") from None
    try:
        return _deploy(boto3.client("s3", endpoint_url=endpoint), site, url, endpoint, progress)
    except (BotoCoreError, ClientError) as exc:
        raise CatalogueError(f"deploying to {url} failed: {exc}\nWhat was uploaded is recorded: run the "
                             "same deploy again to go on from there.") from None


def _deploy(client, site: Path, url: str, endpoint: str | None, progress: Callable[[str], None]) -> Report:
    target = Target.parse(url)
    info = SiteInfo.of_site(site)
    root = (site / CURRENT).resolve()
    now = tree(root)
    record = Record(site, target, endpoint)
    changed = sorted(path for path, signature in now.items() if record.known.get(path) != list(signature))
    gone = sorted(set(record.known) - set(now))
    # Shards first, the skeleton (root, first pages) last: a link never names a missing object.
    stages = ([p for p in changed if shard_of(p) is not None], [p for p in changed if shard_of(p) is None])
    report = Report(unchanged=len(now) - len(changed))
    uploaded, last = [0], [time.monotonic()]

    def upload(path: str) -> None:
        extra = {"ContentType": content_type(path.removesuffix(".gz")), "CacheControl": info.cache_control}
        if path.endswith(".gz"):
            extra["ContentEncoding"] = "gzip"
        client.put_object(Bucket=target.bucket, Key=target.key(path), Body=(root / path).read_bytes(), **extra)
        record.done(path, now[path])
        uploaded[0] += 1
        if time.monotonic() - last[0] >= 1:
            last[0] = time.monotonic()
            progress(f"  uploaded {uploaded[0]:,} of {len(changed):,}")

    for stage in stages:
        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(upload, stage))  # (re-raises the first failure)
    for start in range(0, len(gone), 1000):
        batch = gone[start:start + 1000]
        client.delete_objects(Bucket=target.bucket,
                              Delete={"Objects": [{"Key": target.key(p)} for p in batch], "Quiet": True})
        for path in batch:
            record.done(path, None)
    record.finish(now)
    report.uploaded, report.deleted = len(changed), len(gone)
    report.invalidate = invalidations(changed + gone, urlsplit(info.base_url).path)
    return report


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
