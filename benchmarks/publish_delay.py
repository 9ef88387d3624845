"""make bench (writes that reach the CDN): how long a POSTed record takes to be in the bucket.

    python benchmarks/publish_delay.py [--sizes 10000,100000] [--workdir bench-work] [--outage 30]

For each catalogue (the synthetic one of N books, as bench.py makes it), in a copy: build,
start moto's S3 server (with its CloudFront API) on a free loopback port, behind an endpoint
that can be stopped, and `catalogue write-service --publish s3://... --invalidate ...` in
front of it; then
  - one at a time, --singles POSTs of a user: the delay from each 201 to its detail object
    being in the bucket with the bytes of the 201 (which the local build published) (median,
    p95), each POSTed once the one before is invalidated (its detail goes up while its
    rebuild runs: a POST then would wait for that build and its publish, as one of a burst
    does), while the pages whose count alone changed go up; then the time from the last
    one's 201 until an invalidation names each of them;
  - 200 concurrent POSTs (16 at a time): the time from the first POST until every one is in
    the bucket with its bytes, and until every one is invalidated;
  - writes while the bucket is stopped (--outage seconds, one write a second, from its start):
    the time from the bucket's return until every one is in the bucket, and invalidated.
A record is in the bucket from the moment moto answered the upload that put its bytes there
(the endpoint in front writes each change down; the bytes are read back once), and
invalidated from the moment it answered the request that made the invalidation, not from
when a look saw it: moto answers in this process, and under load a look waited seconds
among the publish's uploads (200 of them in a row, tens of seconds).
Every page of a collection names its count, so each new user changes every page of the
user list (and its .gz twins and indexes): a publish after a write uploads the detail, the
pages holding the new user and the indexes, invalidates them, and then the pages whose count
alone changed (the column "→every page up": from the last single's 201 until the service
has nothing left to publish).
Before the writes the bucket is brought up to the published site by the write service's own
start-up publish (timed), for a catalogue of at most --upload-at-start books; a larger one is
taken as deployed (the record and marker a finished deploy leaves, not the objects), which
changes nothing a write's publish reads or uploads. Prints one table.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from buckets import CLOUDFRONT_ENDPOINT, CREDENTIALS, Endpoint, clients, distribution, moto  # noqa: E402
from servers import WriteService  # noqa: E402
from workload import catalogue  # noqa: E402

from generator.api.urls import BY_NAME, CURRENT, detail_path  # noqa: E402
from generator.hosts import deploy  # noqa: E402
from generator.writes import tokens  # noqa: E402

PREFIX = "catalogue"
UPLOADED_AT_START = 0  # (moto takes about 10 minutes for the 30,869 files of 10K books here)
POLL = 0.02  # seconds between two looks at the bucket
WAIT = 600


class Run:
    """One catalogue's site, bucket, distribution and publishing write service."""

    def __init__(self, data: Path, work: Path, moto_port: int, built: Path | None = None) -> None:
        self.data, self.site, self.work = data, work / "site", work
        if built is not None:  # (a site built of the same data: a copy, links kept)
            shutil.copytree(built, self.site, symlinks=True)
        subprocess.run([sys.executable, "-m", "generator", "build", "--data", str(data), "--out", str(self.site)],
                       check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        self.endpoint = Endpoint(moto_port, PREFIX)
        os.environ.update({**CREDENTIALS, CLOUDFRONT_ENDPOINT: self.endpoint.url})
        self.s3, self.cloudfront = clients(moto_port)
        self.bucket = f"bench-{secrets.token_hex(6)}"
        self.s3.create_bucket(Bucket=self.bucket)
        self.distribution = distribution(self.cloudfront)
        self.token_file = work / "tokens"
        self.token = tokens.add(self.token_file, "bench")
        self.service: WriteService | None = None
        self.made: dict[str, set[str]] = {}  # the distribution's invalidations: id -> paths
        self.put_at: dict[str, float] = {}  # key -> when the endpoint passed on the answer to its last upload
        self._read = 0  # (of the endpoint's changes, those put_at holds)
        self._checked: dict[str, float] = {}  # key -> the upload whose bytes were read back (not the 201's)
        self.times = (0.0, 0.0)  # (all_published's)

    def start(self) -> float:
        """Start the write service; the seconds until the bucket holds the published site."""
        started = time.monotonic()
        self.service = WriteService(self.data, self.site, self.token_file, None, "--publish",
                                    f"s3://{self.bucket}/{PREFIX}", "--endpoint-url", self.endpoint.url,
                                    "--invalidate", self.distribution)
        self.until(lambda: not self.service.status()["publish"]["pending"])
        return time.monotonic() - started

    def seed(self) -> None:
        """The record of a finished deploy of the published site and the bucket's marker, as the
        write service's start-up publish leaves them (without the hour moto takes to receive a
        large site over HTTP); the objects themselves are not put there, which changes nothing
        the writes' publishing reads or uploads."""
        root = (self.site / CURRENT).resolve()
        now, links, _ = deploy.scan(root)
        target = deploy.Target.parse(f"s3://{self.bucket}/{PREFIX}")
        record = deploy.Record(self.site, target, self.endpoint.url)
        record.marker = deploy.put_marker(self.s3, target)
        record.bodies = {path: deploy.body_digest(path, (root / path).read_bytes())
                         for path in now if deploy.is_page(path)}
        record.finish(links, now)

    def post(self, username: str) -> tuple[str, bytes, str]:
        """The new user's object key, its bytes, and what CloudFront caches it as (publish.cached)."""
        body = self.service.create_user(self.token, username)
        detail = detail_path(BY_NAME["user"], json.loads(body)["url"].rstrip("/").rsplit("/", 1)[1])
        return f"{PREFIX}/{detail}", body, f"/{detail}"

    def arrived(self, key: str, body: bytes) -> float | None:
        """When the bucket came to hold these bytes under the key (time.monotonic()), or None:
        when moto answered the key's last upload, as the endpoint it goes through wrote it
        down, that upload's bytes read back once. (Not by looking at the bucket again and again:
        each look is a request to the moto the publish uploads to, in this process, and 200 of
        them one after another took seconds under load, which counted as delay.)"""
        changes, times = self.endpoint.changes, self.endpoint.times
        done = len(times)  # (a change is written down before its time)
        for (method, path), at in zip(changes[self._read:done], times[self._read:done]):
            if method == "PUT":
                self.put_at[path.removeprefix(f"/{self.bucket}/")] = at
        self._read = done
        at = self.put_at.get(key)
        if at is None or self._checked.get(key) == at:
            return None
        if self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read() == body and self.put_at[key] == at:
            return at
        self._checked[key] = at  # (other bytes, or uploaded again meanwhile: read at its next upload)
        return None

    def invalidated(self, urls: set[str]) -> set[str]:
        """Of these URL paths, those the distribution's invalidations name."""
        listed = self.cloudfront.list_invalidations(DistributionId=self.distribution)["InvalidationList"]
        for item in listed.get("Items", []):
            if item["Id"] not in self.made:  # (each read once)
                batch = self.cloudfront.get_invalidation(DistributionId=self.distribution, Id=item["Id"])
                self.made[item["Id"]] = set(batch["Invalidation"]["InvalidationBatch"]["Paths"]["Items"])
        return {url for url in urls if any(url in paths or "/*" in paths for paths in self.made.values())}

    def until(self, done, what: str = "publishing") -> None:
        deadline = time.monotonic() + WAIT
        while not done():
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} took more than {WAIT} s: see the write service's log")
            time.sleep(POLL)

    def landed(self, written: list[tuple[str, bytes, str]]) -> list[float]:
        """When each written record came to be in the bucket with its bytes (arrived()), once all are."""
        landed: dict[str, float] = {}

        def all_arrived() -> bool:
            for key, body, _ in written:
                if key not in landed and (at := self.arrived(key, body)) is not None:
                    landed[key] = at
            return len(landed) == len(written)

        self.until(all_arrived)
        return [landed[key] for key, _, _ in written]

    def all_published(self, written: list[tuple[str, bytes, str]], since: float) -> None:
        """Until every written record is in the bucket with its bytes, and invalidated; the
        seconds from `since` to each, in `times`."""
        in_bucket = max(self.landed(written), default=time.monotonic())
        urls = {url for _, _, url in written}
        self.until(lambda: self.invalidated(urls) == urls, "the invalidation")
        # (when moto answered the request that made it, as the endpoint wrote it down: each
        # look at the invalidations waits its turn among moto's uploads, seconds under load)
        made = self.endpoint.invalidations
        invalidated = max((min(made[id] for id, paths in self.made.items() if url in paths or "/*" in paths)
                           for url in urls), default=time.monotonic())
        self.times = (in_bucket - since, invalidated - since)

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()
        self.endpoint.down()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(run: Run, singles: int, outage: float) -> dict:
    to_bucket = []
    written = []
    for n in range(singles):  # (each waits for its detail alone: the pages may still be on their way)
        key, body, url = run.post(f"publish.{n}")
        answered = time.monotonic()
        to_bucket.append(run.landed([(key, body, url)])[0] - answered)
        written.append((key, body, url))
        run.until(lambda: run.invalidated({url}) == {url}, "the invalidation")
    singles_done = singles_whole = math.nan  # (--singles 0: the burst alone)
    if written:
        run.all_published(written, answered)
        singles_done = run.times[1]
        run.until(lambda: not run.service.status()["publish"]["pending"])  # (the pages whose count alone changed)
        singles_whole = time.monotonic() - answered
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as pool:
        burst = list(pool.map(lambda n: run.post(f"burst.{n}"), range(200)))
    answered = time.monotonic() - started
    run.all_published(burst, started)
    burst_published, burst_invalidated = run.times
    run.endpoint.down()
    stopped = time.monotonic()
    during = []
    while time.monotonic() - stopped < outage:
        during.append(run.post(f"outage.{len(during)}"))
        time.sleep(max(0.0, stopped + len(during) - time.monotonic()))
    failed = run.service.status()["publish"]["failed attempts"]
    run.endpoint.up()
    back = time.monotonic()
    run.all_published(during, back)
    return {"median": statistics.median(to_bucket or [math.nan]), "p95": percentile(to_bucket or [math.nan], 0.95),
            "singles invalidated": singles_done, "singles whole": singles_whole, "burst answered": answered, "burst published": burst_published,
            "burst invalidated": burst_invalidated, "outage writes": len(during), "failed attempts": failed,
            "after outage": run.times}


HEADER = (f"{'books':>9}  {'201→bucket median s':>19}  {'p95 s':>5}  {'last single→invalidated s':>25}  "
          f"{'→every page up s':>16}  "
          f"{'200 POSTs answered s':>20}  {'all 200 in bucket s':>19}  {'invalidated s':>13}  "
          f"{'outage writes':>13}  {'after it: in bucket, invalidated s':>34}")


def row(size: int, r: dict) -> str:
    return (f"{size:>9,}  {r['median']:>19.2f}  {r['p95']:>5.2f}  {r['singles invalidated']:>25.2f}  "
            f"{r['singles whole']:>16.2f}  "
            f"{r['burst answered']:>20.2f}  {r['burst published']:>19.2f}  {r['burst invalidated']:>13.2f}  "
            f"{r['outage writes']:>13}  {r['after outage'][0]:>16.2f}, {r['after outage'][1]:>15.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--workdir", default="bench-work", type=Path)
    parser.add_argument("--outage", default=30.0, type=float, help="seconds the bucket is stopped (0: no outage)")
    parser.add_argument("--singles", default=20, type=int, help="writes one at a time (0: none, the burst alone)")
    parser.add_argument("--built", type=Path, help="a site already built of the (one) catalogue: rebuilt, not built")
    parser.add_argument("--upload-at-start", default=UPLOADED_AT_START, type=int,
                        help="the largest catalogue the write service uploads on start (larger: seeded)")
    args = parser.parse_args()
    print("the bucket: moto's S3 server, with its CloudFront API for the invalidations", flush=True)
    print(HEADER, flush=True)
    with moto() as port:
        for size in [int(s) for s in args.sizes.split(",")]:
            source = catalogue(args.workdir, size)
            work = args.workdir / f"publish-{size}-{time.time_ns()}"
            shutil.copytree(source, work / "data", ignore=shutil.ignore_patterns("*.orig"))
            run = Run(work / "data", work, port, args.built)
            try:
                if size > args.upload_at_start:
                    run.seed()
                start = run.start()
                print(row(size, measure(run, args.singles, args.outage)) + f"  (start {start:.1f} s)", flush=True)
            finally:
                run.stop()
                if run.service is not None:  # (the service's log outlives the run: what went wrong, or how)
                    shutil.copy(run.service.log, args.workdir / f"publish-{size}.log")
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
