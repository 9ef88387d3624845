"""Publish each rebuild of the write service to a bucket, and tell the CDN in front what to forget.

    catalogue write-service --publish s3://BUCKET[/PREFIX] [--endpoint-url URL] [--invalidate DISTRIBUTION_ID]

The write service is handed a Publisher (the CLI composes them: writes/ and hosts/ never
import each other) and calls rebuilt() after each rebuild that published a generation. The
publisher's thread then deploys the published generation as `catalogue deploy` does
(deploy.plan and carry_out: the deploy's own delta against its record in <site>/.deploy/,
uploads in stages a reader never catches half-way, deletions last, each step journalled),
and makes one CloudFront invalidation of what CloudFront caches of the files that changed
(cached()) as soon as they are up; the pages whose only change is the collection's count
follow (a new user changes the count on every page of the user list: thousands of
objects in a large catalogue, which would hold back the invalidation of the new record's
pages), with an invalidation of their own. A newer rebuild stops them between two files
and goes on from the newer generation, so under a stream of writes the counts of the
pages that do not hold a new record lag until the stream pauses. When it starts, the
same deploy brings the bucket up to the published generation (reading the bucket's
marker, and listing the bucket when the record is not trusted).

A write's new record goes up before its rebuild ends: the build announces the few detail
documents it writes as soon as its collection is made (`catalogue build --announce`), and
written() uploads them at once (the first of the deploy's stages: no page links to them
yet), journalled as the deploy's own uploads, so that the publish after the build finds
them up. Their directories are read again by that publish, which deletes them should the
build publish none of them; they are invalidated with it.

Nothing is lost to a fault. An attempt that fails (the bucket or the CDN unreachable,
throttled, credentials expired) is tried again after a pause that doubles from BACKOFF to
MAX_BACKOFF, with new clients (so credentials are read again); rebuilds meanwhile fold into
it, since each attempt deploys the newest generation against what the record says the
bucket holds. The paths to invalidate are written durably to <site>/.deploy/<target>.pending
before the first upload of the attempt that found them, and removed only once CloudFront
took them: after a crash (SIGKILL included) the next start goes on from the deploy's journal
and makes the invalidation then.

A publish reads the generation it deploys while the next rebuild may publish another; a
build keeps the generation it replaced, but the one after throws it away. So rebuilt() asks
an attempt under way to give up (no upload starts after that; what was uploaded is
journalled) and returns once it has: the next attempt deploys the newer generation, and a
publish never reads a generation two builds old. A rebuild that published no newer
generation (the tail of a burst: writes that came as a build started ask for one more,
which finds them built) leaves an attempt deploying that very generation to go on; stopped
and planned again, it cost seconds at 100K books.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..api.serving import SiteInfo
from ..api.urls import API, BY_NAME, CURRENT, PAGE_INDEX, QUERY_DIR, Shard, shard_of
from ..errors import CatalogueError
from ..system import fsync_dir, moment
from . import deploy
from .cloudfront import PAGES

BACKOFF = 0.5  # seconds before the second attempt, doubled each failure
MAX_BACKOFF = 8.0
HOLD = 60.0  # seconds the pages whose count alone changed wait for a rebuild that stopped them
MAX_PATHS = 3000  # paths CloudFront takes in an invalidation; beyond, everything
# Each request fails in seconds rather than hang the publish: botocore's own retries (of
# throttling among others) are few, the publisher's come after a pause.
CLIENT_CONFIG = {"connect_timeout": 5, "read_timeout": 20, "retries": {"total_max_attempts": 3, "mode": "standard"},
                 "max_pool_connections": deploy.WORKERS}  # (one connection for each upload under way)
log = logging.getLogger("catalogue.publish")


class Pending:
    """The paths the CDN has yet to forget, and since when something is waiting to be
    published; kept in a file so that a crash loses none of them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.paths: set[str] = set()
        self.since: float | None = None
        self.reference = secrets.token_hex(8)  # (names the invalidation: one per set of paths)
        if path.is_file():
            saved = json.loads(path.read_text(encoding="utf-8"))
            self.paths, self.since, self.reference = set(saved["paths"]), saved["since"], saved["reference"]

    def add(self, paths: list[str], since: float) -> None:
        """More paths to forget, on disk before anything they name changes in the bucket."""
        if set(paths) <= self.paths:
            return
        self.paths.update(paths)
        self.since = self.since or since
        temporary = self.path.with_suffix(".new")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump({"since": self.since, "reference": self.reference, "paths": sorted(self.paths)}, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        fsync_dir(self.path.parent)

    def done(self) -> None:
        """The CDN took them all."""
        self.paths, self.since, self.reference = set(), None, secrets.token_hex(8)
        self.path.unlink(missing_ok=True)


class Publisher:
    """The write service's publishing to one bucket (and the CloudFront distribution in front)."""

    def __init__(self, site: Path, url: str, endpoint: str | None = None, distribution: str | None = None) -> None:
        self.site = Path(site)
        self.url = url
        self.target = deploy.Target.parse(url)
        self.endpoint = endpoint
        self.distribution = distribution
        self.pending = Pending(self.site / deploy.DEPLOY_DIR / f"{deploy.record_name(self.target, endpoint)}.pending")
        self._since = self.pending.since  # the oldest rebuild not yet in the bucket (or the CDN)
        self._wanted = threading.Event()
        self._attempt = threading.Lock()  # held while an attempt runs
        self._give_up = threading.Event()  # (for the attempt under way: a newer generation is published)
        self._later = False  # the attempt under way uploads the pages whose count alone changed
        self._building = False  # a rebuild is under way (rebuilding() until rebuilt())
        self._lock = threading.Lock()  # the status
        self._stopping = threading.Event()
        self._failures = 0
        self._error: str | None = None
        self._retry_at: float | None = None
        self._last: dict | None = None
        self._record: deploy.Record | None = None  # (kept from one publish to the next: read once)
        self._deploying: Path | None = None  # the generation the last attempt planned
        self._ahead = 0  # files written() put up since the last publish (counted in its status)
        self._claimed: str | None = None  # the marker written() claimed for the rebuild under way
        self._clients: dict[str, object] = {}  # (kept while attempts succeed: a client costs a fifth of a second)
        self._thread = threading.Thread(target=self._run, name="publish", daemon=True)

    def start(self) -> None:
        try:
            import boto3  # noqa: F401
        except ImportError:
            raise CatalogueError("--publish needs boto3: pip install boto3") from None
        self._pending(time.time())
        self._wanted.set()  # (the bucket brought up to the published generation)
        self._thread.start()

    def rebuilding(self) -> None:
        """A rebuild starts: the pages whose count alone changed stop going up (their uploads
        would slow the rebuild down), and go on from the generation it publishes (rebuilt()),
        or after HOLD seconds when it publishes none. (They wait too when they come to go
        up while it runs.)"""
        self._building = True
        self._claimed = None
        if self._later:
            self._give_up.set()

    def written(self, files: list[tuple[str, str]]) -> None:
        """A rebuild under way wrote these detail documents ((path in its generation, where
        the file lies)): up at once, when the last attempt left the record trusted and the
        bucket's marker still says so (otherwise the publish after the rebuild takes them
        with the rest). Never raises: a failure leaves them to that publish."""
        with self._attempt:  # (after the stages of an attempt under way: rebuilding() stopped the rest)
            record = self._record
            if record is None or self._stopping.is_set():
                return
            try:
                s3 = self._client("s3")
                if record.marker != self._claimed:  # (once a rebuild, before its first change, as a deploy)
                    if deploy.bucket_marker(s3, self.target) != record.marker:
                        return  # (another deploy came: the next plan lists the bucket)
                    record.claim(deploy.put_marker(s3, self.target))
                    self._claimed = record.marker
                paths = [path for path, _ in files]
                self.pending.add(cached(paths), self._since or time.time())
                record.unsettle({path.rpartition("/")[0] for path in paths})
                cache_control = SiteInfo.of_site(self.site).cache_control  # (the build announces with the same settings)

                def put(each: tuple[str, str]) -> None:
                    path, file = each
                    found = os.stat(file)
                    deploy.put_file(s3, self.target, path, Path(file), cache_control, record,
                                    (found.st_ino, found.st_mtime_ns, found.st_size))

                with ThreadPoolExecutor(deploy.WORKERS) as pool:  # (a burst's rebuild tells of hundreds)
                    list(pool.map(put, files))  # (re-raises the first failure)
                self._ahead += len(files)
                log.info("written by the rebuild under way, up: %s", ", ".join(paths))
            except Exception as exc:  # (the record and clients are read again by the next attempt)
                self._record = None
                self._clients.clear()
                log.warning("uploading %s before its rebuild ends failed (it goes up with the rebuild): %s",
                            ", ".join(path for path, _ in files), describe(exc))

    def rebuilt(self) -> None:
        """A rebuild published a generation: publish it. Returns once an attempt under way that
        deploys an older one has ended (see the module's docstring), so that the next rebuild
        may start; one that deploys this very generation goes on."""
        now = time.time()
        if (self.site / CURRENT).resolve() == self._deploying:
            self._give_up.clear()  # (the pages whose count alone changed, stopped by rebuilding(), go on)
        else:
            self._give_up.set()
            with self._attempt:
                self._give_up.clear()
        self._building = False
        self._pending(now)
        self._wanted.set()

    def stop(self, timeout: float = 15) -> None:
        self._stopping.set()
        self._give_up.set()
        self._wanted.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def status(self) -> dict:
        """What is waiting to be published, since when, and how the last attempts went."""
        with self._lock:
            return {"target": self.url, "endpoint": self.endpoint, "invalidate": self.distribution,
                    "pending": self._since is not None, "since": moment(self._since),
                    "paths to invalidate": len(self.pending.paths), "failed attempts": self._failures,
                    "error": self._error, "next attempt": moment(self._retry_at), "published": self._last}

    def _pending(self, since: float) -> None:
        with self._lock:
            self._since = min(self._since or since, since)

    def _run(self) -> None:
        pause = BACKOFF
        while True:
            self._wanted.wait()
            if self._stopping.is_set():
                return
            self._wanted.clear()
            try:
                with self._attempt:
                    self._publish()
            except deploy.Stopped:  # (rebuilt() wants the newer generation published: at once)
                if not self._wanted.wait(HOLD):  # (stopped by rebuilding(), and no rebuilt() came)
                    self._building = False
                    self._give_up.clear()
                    self._wanted.set()
                continue
            except Exception as exc:  # (any fault: the next attempt reads the record again, and goes on)
                self._record = None
                self._clients.clear()  # (new ones read the credentials again)
                with self._lock:
                    self._failures += 1
                    self._error = describe(exc)
                    self._retry_at = time.time() + pause
                log.warning("publishing to %s failed (attempt %d; again in %g s): %s", self.url, self._failures,
                            pause, self._error)
                if self._stopping.wait(pause):
                    return
                pause = min(pause * 2, MAX_BACKOFF)
                self._wanted.set()
            else:
                pause = BACKOFF

    def _publish(self) -> None:
        """One attempt: deploy the published generation; an invalidation once all but the
        pages whose count alone changed are up, another once those are."""
        started = time.monotonic()
        with self._lock:
            since = self._since or time.time()
        s3 = self._client("s3")
        plan = deploy.plan(s3, self.site, self.target, self.endpoint, record=self._record)
        log.info("generation %s: %d files to upload, %d to delete; planned in %.2f s", plan.root.name,
                 len(plan.changed), len(plan.gone), time.monotonic() - started)
        self._record = plan.record  # (true in memory as on disk: each upload is known as it is journalled)
        self._deploying = plan.root
        self.pending.add(cached(plan.changed), since)
        invalidations: list[str] = []

        def forget(paths: list[str]) -> None:  # (what the uploads so far changed; then what is left to upload)
            if paths:
                log.info("generation %s: up but %d pages whose count alone changed, %.2f s after the attempt began",
                         plan.root.name, len(plan.later), time.monotonic() - started)
            if self.distribution and self.pending.paths:
                invalidations.append(invalidate(self._client("cloudfront"), self.distribution, sorted(self.pending.paths),
                                                self.pending.reference))
            self.pending.done()
            self.pending.add(cached(paths), since)
            self._later = bool(paths)
            if self._later and self._building:
                self._give_up.set()

        try:
            report = deploy.carry_out(s3, plan, log.info, self._give_up,
                                      between=lambda: forget(plan.later + plan.gone))
        finally:
            self._later = False
        forget([])
        invalidation = ", ".join(invalidations) or None
        seconds = time.monotonic() - started
        with self._lock:
            self._since = None
            self._failures, self._error, self._retry_at = 0, None, None
            self._last = {"at": moment(time.time()), "generation": plan.root.name,
                          "uploaded": report.uploaded + self._ahead, "deleted": report.deleted,
                          "invalidation": invalidation, "seconds": round(seconds, 3)}
        self._ahead = 0
        if report.uploaded or report.deleted or invalidation:
            log.info("published generation %s to %s in %.2f s: %d uploaded, %d deleted%s", plan.root.name, self.url,
                     seconds, report.uploaded, report.deleted, f", invalidation {invalidation}" if invalidation else "")

    def _client(self, service: str):
        """The client of S3 (at the endpoint) or CloudFront this publisher uses until an attempt fails."""
        if service not in self._clients:
            self._clients[service] = client(service, self.endpoint if service == "s3" else None)
        return self._clients[service]


def client(service: str, endpoint: str | None = None):
    """A new client, from a new session: credentials are read again (they may have been renewed)."""
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(service, endpoint_url=endpoint, config=Config(**CLIENT_CONFIG))


def cached(paths: list[str]) -> list[str]:
    """What CloudFront caches of these files of a generation, served by the CloudFront host
    (hosts/cloudfront.py): its function rewrites each request to the URI of the file's object
    (the key under the origin path: no base_url path) before the cache is looked up, so that
    URI names what to forget, a new detail's cached 404 included; the pages of a collection
    whose pages changed as one wildcard (a new record changes the count on all of them:
    thousands of paths, where CloudFront takes 3,000 an invalidation), and the pages the
    handler put together, with every query string (PAGES + collection + *). CloudFront
    compresses answers itself: the .gz twins are never asked for, nor the indexes, which the
    handler reads from the bucket itself."""
    found: set[str] = set()
    for path in paths:
        if deploy.is_page(path):
            found.add(f"/{path.partition('/pages/')[0]}/pages/*")
        elif not (path.endswith((".gz", PAGE_INDEX)) or f"/{QUERY_DIR}/" in path):  # (never asked of CloudFront)
            found.add(f"/{path}")
        parts = path.split("/")
        shard = Shard.parse(shard_of(path) or "")
        if path.startswith(f"{API}/") and parts[2] in BY_NAME and not (shard is not None and shard.limit is None):
            found.add(f"{PAGES}{parts[2]}*")
    return sorted(found)


def invalidate(cloudfront, distribution: str, paths: list[str], reference: str) -> str:
    """One invalidation of the paths (of everything, when CloudFront would not take that
    many); its id. The same paths with the same reference are the same invalidation to
    CloudFront, so an attempt whose answer was lost is not made twice."""
    items = paths if len(paths) <= MAX_PATHS else ["/*"]
    digest = hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]
    answer = cloudfront.create_invalidation(DistributionId=distribution, InvalidationBatch={
        "Paths": {"Quantity": len(items), "Items": items}, "CallerReference": f"catalogue-{reference}-{digest}"})
    return answer["Invalidation"]["Id"]


def describe(exc: Exception) -> str:
    """A failure as the status and the log say it: S3's or CloudFront's code and message when
    there is one (SlowDown, ExpiredToken, ...), else the exception's own words."""
    error = getattr(exc, "response", {}).get("Error", {}) if hasattr(exc, "response") else {}
    if error.get("Code"):
        return f"{error['Code']}: {error.get('Message') or exc}"
    return str(exc) or type(exc).__name__
