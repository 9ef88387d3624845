"""The write service publishing to a bucket (`write-service --publish`): moto's S3 server as
the bucket and its CloudFront API for the invalidations, over HTTP on a free loopback port,
behind an endpoint of the test's own that can fail as a bucket fails (unreachable,
throttled, credentials expired) or hold uploads mid-publish. Each write reaches the bucket
with the bytes the local build published, in an order no reader catches half-way, with one
invalidation per publish; faults and a SIGKILL lose nothing."""
from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from buckets import CLOUDFRONT_ENDPOINT, CREDENTIALS, Endpoint, clients, distribution, invalidations, moto
from conftest import SAMPLE
from generator import compose
from generator.api.urls import BY_NAME, CURRENT, detail_path
from generator.catalogue import synth
from generator.cli import main
from generator.errors import DataError
from generator.hosts import deploy, publish
from generator.writes import tokens
from servers import WriteService, runnable

pytestmark = pytest.mark.skipif(not runnable("moto"), reason="moto is not installed")
WAIT = 600  # seconds at most for the service to publish (a loaded machine; never a pause)
PREFIX = "catalogue"


@pytest.fixture(scope="module")
def moto_port():
    with moto() as port:
        yield port


@pytest.fixture
def aws(moto_port, monkeypatch):
    """moto's server behind an endpoint that fails on demand, named in the environment the
    write service reads its credentials and CloudFront's address from."""
    endpoint = Endpoint(moto_port, PREFIX)
    for name, value in {**CREDENTIALS, CLOUDFRONT_ENDPOINT: endpoint.url}.items():
        monkeypatch.setenv(name, value)
    yield endpoint
    endpoint.release()
    endpoint.down()


def objects(s3, bucket: str) -> dict[str, str]:
    """Each object under the prefix (the deploy's marker aside) and the MD5 of its bytes."""
    return {o["Key"].removeprefix(f"{PREFIX}/"): o["ETag"].strip('"')
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{PREFIX}/")
            for o in page.get("Contents", []) if not o["Key"].endswith(deploy.MARKER)}


def published(site: Path) -> dict[str, str]:
    return {path: hashlib.md5((site / CURRENT / path).read_bytes()).hexdigest()
            for path in deploy.tree((site / CURRENT).resolve())}


class Stack:
    """A built site, its bucket and distribution, and the write service publishing to them."""

    def __init__(self, work: Path, aws: Endpoint, moto_port: int, data: Path = SAMPLE) -> None:
        self.work, self.endpoint = work, aws
        self.data, self.site = work / "data", work / "site"
        shutil.copytree(data, self.data)
        compose.build(self.data, self.site)
        self.token_file = work / "tokens"
        self.token = tokens.add(self.token_file, "librarian")
        self.s3, self.cloudfront = clients(moto_port)
        self.bucket = f"publish-{secrets.token_hex(6)}"
        self.s3.create_bucket(Bucket=self.bucket)
        self.distribution = distribution(self.cloudfront)
        self.service: WriteService | None = None

    def options(self) -> list[str]:
        return ["--publish", f"s3://{self.bucket}/{PREFIX}", "--endpoint-url", self.endpoint.url,
                "--invalidate", self.distribution]

    def start(self) -> WriteService:
        self.service = WriteService(self.data, self.site, self.token_file, None, *self.options())
        return self.service

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()

    def post(self, username: str) -> tuple[dict, bytes]:
        """The 201's record and its bytes."""
        body = self.service.create_user(self.token, username)
        return json.loads(body), body

    def published(self) -> dict:
        """Once every write is rebuilt and the published generation is in the bucket (and the
        CDN told): the service's status then."""
        deadline = time.monotonic() + WAIT
        while True:
            status = self.service.status()
            publish = status["publish"]
            done = publish["published"] and publish["published"]["generation"] == (self.site / CURRENT).resolve().name
            if not status["rebuild"]["pending"] and not publish["pending"] and done:
                return status
            assert time.monotonic() < deadline, (status, self.service.log.read_text())
            time.sleep(0.05)

    def failing(self) -> dict:
        """Once a publish attempt has failed: the status then."""
        deadline = time.monotonic() + WAIT
        while not (status := self.service.status())["publish"]["failed attempts"]:
            assert time.monotonic() < deadline, status
            time.sleep(0.05)
        return status

    def check(self) -> str:
        """`catalogue deploy --check` of the site to the bucket: what it finds to do."""
        result = CliRunner().invoke(main, ["deploy", f"s3://{self.bucket}/{PREFIX}", "--site", str(self.site),
                                           "--endpoint-url", self.endpoint.url, "--check"])
        assert result.exit_code == 0, result.output
        return result.output.splitlines()[1]


@pytest.fixture
def stack(tmp_path, aws, moto_port):
    made = Stack(tmp_path, aws, moto_port)
    yield made
    made.stop()


def detail_of(record: dict) -> str:
    """The detail file of a user (whose object CloudFront caches for it: see publish.cached)."""
    return detail_path(BY_NAME["user"], record["url"].rstrip("/").rsplit("/", 1)[1])


def in_sync(stack: Stack) -> None:
    files = published(stack.site)
    assert objects(stack.s3, stack.bucket) == files
    assert stack.check() == (f"compared with the bucket (--check): {len(files):,} of the site's files there, "
                             "0 missing, 0 different, 0 not in the site")


# ---- the tests ----------------------------------------------------------------------------------

def test_a_write_reaches_the_bucket_in_order_and_is_invalidated(stack):
    stack.start()
    stack.published()  # on start: the bucket brought up to the published generation
    in_sync(stack)
    before = len(invalidations(stack.cloudfront, stack.distribution))
    stack.endpoint.changes.clear()
    created, body = stack.post("publish.one")
    status = stack.published()
    detail = detail_of(created)
    assert stack.s3.get_object(Bucket=stack.bucket, Key=f"{PREFIX}/{detail}")["Body"].read() == (
        stack.site / CURRENT / detail).read_bytes() == body
    in_sync(stack)
    # Details and indexes first, then the pages of blocks, then the first pages that name them;
    # each change once: the deploy's delta, never the whole site.
    changes = [path.split(f"/{PREFIX}/", 1)[1] for method, path in stack.endpoint.changes
               if f"/{PREFIX}/" in path and not path.endswith(deploy.MARKER)]
    assert detail in changes and deploy.stage(detail) == 0
    # The detail went up as soon as the build had written it, before the build ended, and
    # that upload was the publish's (journalled): not made again (each change once, below).
    log = stack.service.log.read_text()
    assert log.index(f"up: {detail}") < log.rindex("rebuilt and published in")
    assert [deploy.stage(path) for path in changes] == sorted(deploy.stage(path) for path in changes)
    assert len(changes) == len(set(changes)) == status["publish"]["published"]["uploaded"] < 30
    # One invalidation of exactly what CloudFront caches of what changed: the objects the
    # function rewrites requests to (the new user's, whose 404 it may hold), and the user
    # list's pages put together, with every query string.
    made = invalidations(stack.cloudfront, stack.distribution)[before:]
    assert made == [publish.cached(changes)] and {f"/{detail}", "/_pages/user*"} <= set(made[0])
    assert status["publish"]["published"]["invalidation"]


def test_the_pages_whose_count_alone_changed_follow_and_wait_for_a_rebuild(tmp_path, aws, moto_port):
    synth.write(tmp_path / "synth", 200, seed=3)  # (50 users: 5 pages of 12)
    stack = Stack(tmp_path, aws, moto_port, tmp_path / "synth")
    try:
        stack.start()
        stack.published()
        before = len(invalidations(stack.cloudfront, stack.distribution))
        first_page = f"{PREFIX}/api/v1/user/pages/12/0/0.json"
        old = stack.s3.get_object(Bucket=stack.bucket, Key=first_page)["Body"].read()
        stack.endpoint.hold_at("/user/pages/12/0/0.json")  # (a page whose count alone changes)
        created, body = stack.post("counted.one")
        assert stack.endpoint.holding.wait(WAIT)
        # The new user, the page holding it and the indexes are up, and the CDN told, while
        # the pages that only count it wait: one count behind, their records where they were.
        made = invalidations(stack.cloudfront, stack.distribution)[before:]
        assert len(made) == 1 and f"/{detail_of(created)}" in made[0] and "/_pages/user*" in made[0]
        assert stack.s3.get_object(Bucket=stack.bucket, Key=f"{PREFIX}/{detail_of(created)}")["Body"].read() == body
        assert stack.s3.get_object(Bucket=stack.bucket, Key=first_page)["Body"].read() == old
        stack.endpoint.release()
        stack.published()
        in_sync(stack)
        made = invalidations(stack.cloudfront, stack.distribution)[before:]
        assert len(made) == 2 and "/_pages/user*" in made[1]
        assert b'"count":51,' in stack.s3.get_object(Bucket=stack.bucket, Key=first_page)["Body"].read()
    finally:
        stack.stop()


def publishing(work: Path, aws: Endpoint, moto_port: int, books: int) -> tuple[Path, object, str, publish.Publisher]:
    """A synthetic catalogue of this many books built, and a publisher of it (without the write
    service) that has brought a new bucket up to it: the site, S3, the bucket, the publisher."""
    synth.write(work / "data", books, seed=3)
    site = work / "site"
    compose.build(work / "data", site)
    s3, _ = clients(moto_port)
    bucket = f"publisher-{secrets.token_hex(6)}"
    s3.create_bucket(Bucket=bucket)
    publisher = publish.Publisher(site, f"s3://{bucket}/{PREFIX}", aws.url)
    publisher.start()
    wait_until(lambda: not publisher.status()["pending"])
    return site, s3, bucket, publisher


@pytest.mark.parametrize("when", ["while they go up", "before they go up"])
def test_a_rebuild_that_starts_stops_the_pages_whose_count_alone_changed(tmp_path, aws, moto_port, monkeypatch, when):
    """They wait for the generation the rebuild publishes (their uploads would slow it down),
    or, when it publishes none, HOLD seconds: whether it starts while they go up, or before
    (while the new record's files go up)."""
    monkeypatch.setattr(publish, "HOLD", 5.0)
    site, s3, bucket, publisher = publishing(tmp_path, aws, moto_port, 1200)  # (300 users: 25 pages of 12)
    try:
        with (tmp_path / "data/users.csv").open("a", encoding="utf-8") as f:
            f.write("0f000000-0000-4000-8000-000000000001,tazeh.karbar,نام,,,1,2,false\n")
        compose.build(tmp_path / "data", site)
        aws.changes.clear()
        aws.times.clear()
        aws.hold_at("/user/pages/12/0/0.json" if when == "while they go up" else ".json")
        publisher.rebuilt()
        assert aws.holding.wait(WAIT)
        publisher.rebuilding()
        aws.release()
        wait_until(lambda: not publisher.status()["pending"])  # (HOLD passed, no rebuilt(): it goes on)
        assert objects(s3, bucket) == published(site)
        # The pause, told by the changes' own times (a lower bound, which load only lengthens):
        # HOLD seconds at least between the last upload under way at the stop and the next,
        # and most of the pages after it.
        gap, resumed = max((later - earlier, at) for at, (earlier, later) in enumerate(zip(aws.times, aws.times[1:]), 1))
        assert gap >= publish.HOLD and len(aws.changes) - resumed > 60, (gap, resumed, len(aws.changes))
    finally:
        publisher.stop()


def test_a_detail_up_before_a_rebuild_that_fails_goes_when_the_data_no_longer_holds_it(tmp_path, aws, moto_port):
    """written() puts a new user's detail up while the build runs; the build then fails (a
    shelf of no user, by hand), and the user is taken out of the data again: the next publish
    finds the bucket's detail in no generation and deletes it."""
    site, s3, bucket, publisher = publishing(tmp_path, aws, moto_port, 200)
    try:
        users, shelves = tmp_path / "data/users.csv", tmp_path / "data/bookshelves.csv"
        kept = {path: path.read_bytes() for path in (users, shelves)}
        with users.open("a", encoding="utf-8") as f:
            f.write("0f000000-0000-4000-8000-000000000001,tazeh.karbar,نام,,,1,2,false\n")
        with shelves.open("a", encoding="utf-8") as f:
            f.write("0f000000-0000-4000-8000-000000000002,0f000000-0000-4000-8000-00000000dead,بی‌صاحب\n")
        told: list[tuple[str, str]] = []

        def up_at_once(path: str, file: str) -> None:
            told.append((path, file))
            publisher.written([(path, file)])

        with pytest.raises(DataError):
            compose.build(tmp_path / "data", site, announce=up_at_once)
        detail = "api/v1/user/0f/0f000000-0000-4000-8000-000000000001.json"
        assert [path for path, _ in told] == [detail]
        assert detail in objects(s3, bucket) and detail not in published(site)
        for path, data in kept.items():
            path.write_bytes(data)
        compose.build(tmp_path / "data", site)  # (the generation as it was: nothing to build)
        publisher.rebuilt()
        wait_until(lambda: not publisher.status()["pending"])
        assert objects(s3, bucket) == published(site)
    finally:
        publisher.stop()


def test_a_burst_s_new_users_are_told_of_and_go_up_side_by_side_while_it_builds(tmp_path, aws, moto_port):
    """A burst of writes makes rebuilds of a hundred or two new users: the build tells of
    every one (not only of a few), and written() puts them up WORKERS at a time (one after
    another, 200 of them took seconds of the rebuild), each journalled as the deploy's own."""
    site, s3, bucket, publisher = publishing(tmp_path, aws, moto_port, 200)
    try:
        burst = 100
        with (tmp_path / "data/users.csv").open("a", encoding="utf-8") as f:
            for n in range(burst):
                f.write(f"0f000000-0000-4000-8000-{n:012d},tazeh.{n},نام,,,1,2,false\n")
        told: list[tuple[str, str]] = []
        compose.build(tmp_path / "data", site, announce=lambda path, file: told.append((path, file)))
        assert len(told) == burst and all(path.startswith("api/v1/user/0f/") for path, _ in told)
        aws.hold_after(0)
        putting = threading.Thread(target=publisher.written, args=(told,))
        putting.start()
        deadline = time.monotonic() + 60  # (16 threads to start: long enough under any load)
        while aws.held < deploy.WORKERS and time.monotonic() < deadline:
            time.sleep(0.05)
        held = aws.held
        aws.release()
        putting.join(WAIT)
        assert held == deploy.WORKERS
        up, files = objects(s3, bucket), published(site)
        assert all(up[path] == files[path] for path, _ in told)
        aws.changes.clear()
        publisher.rebuilt()
        wait_until(lambda: not publisher.status()["pending"])
        assert objects(s3, bucket) == published(site)
        assert not {path for _, path in aws.changes} & {f"/{bucket}/{PREFIX}/{path}" for path, _ in told}
    finally:
        publisher.stop()


def test_a_rebuild_that_published_nothing_newer_leaves_the_publish_under_way_to_go_on(tmp_path, aws, moto_port):
    """The tail of a burst: writes that came as a build started ask for one more, which finds
    them built and publishes no newer generation. The publish of that generation goes on
    (stopped and planned again, it cost seconds at 100K books): rebuilt() returns at once, and
    each file goes up once."""
    site, s3, bucket, publisher = publishing(tmp_path, aws, moto_port, 200)
    try:
        with (tmp_path / "data/users.csv").open("a", encoding="utf-8") as f:
            f.write("0f000000-0000-4000-8000-000000000001,tazeh.karbar,نام,,,1,2,false\n")
        compose.build(tmp_path / "data", site)
        generation = (site / CURRENT).resolve()
        aws.changes.clear()
        aws.hold_at("/user/pages/")  # (the publish's second stage)
        publisher.rebuilt()
        assert aws.holding.wait(WAIT)
        compose.build(tmp_path / "data", site)
        assert (site / CURRENT).resolve() == generation
        again = threading.Thread(target=publisher.rebuilt)
        again.start()
        again.join(60)  # (with the upload still held)
        returned = not again.is_alive()
        aws.release()
        again.join(WAIT)
        assert returned
        wait_until(lambda: not publisher.status()["pending"])
        assert objects(s3, bucket) == published(site)
        uploads = [path for method, path in aws.changes if method == "PUT" and not path.endswith(deploy.MARKER)]
        assert len(uploads) == len(set(uploads))
    finally:
        aws.release()
        publisher.stop()


def wait_until(done) -> None:
    deadline = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_what_cloudfront_is_told_to_forget():
    """The objects its function rewrites requests to, a collection's pages as one wildcard
    (a new record changes the count on every one: thousands), and the pages put together."""
    changed = ["api/v1/user/81/8162a4c5.json", "api/v1/user/81/8162a4c5.json.gz", "api/v1/user/pages/12/0/0.json",
               "api/v1/user/pages/12/0/0.json.gz", "api/v1/user/pages/12/1/10008.json", "api/v1/user/pages/12/0/0.idx",
               "api/v1/user/_query/search/root.bin", "api/v1/user/index.json"]
    assert publish.cached(changed) == ["/_pages/user*", "/api/v1/user/81/8162a4c5.json", "/api/v1/user/index.json",
                                       "/api/v1/user/pages/*"]


def test_a_bucket_down_throttled_or_refusing_loses_nothing(stack):
    stack.start()
    stack.published()
    before = len(invalidations(stack.cloudfront, stack.distribution))
    stack.endpoint.down()
    written = [stack.post("down.one")[0]]  # acknowledged, durable: the bucket is not the write's business
    status = stack.failing()
    assert status["publish"]["pending"] and status["publish"]["since"] and status["publish"]["error"]
    written.append(stack.post("down.two")[0])  # folded into the pending publish
    stack.endpoint.answer = "SlowDown"
    stack.endpoint.up()
    written.append(stack.post("throttled")[0])
    assert "SlowDown" in wait_for_error(stack, "SlowDown")
    stack.endpoint.answer = "ExpiredToken"
    assert "ExpiredToken" in wait_for_error(stack, "ExpiredToken")
    stack.endpoint.answer = None
    stack.published()
    in_sync(stack)
    for record in written:
        detail = detail_of(record)
        assert objects(stack.s3, stack.bucket)[detail] == hashlib.md5((stack.site / CURRENT / detail).read_bytes()).hexdigest()
    made = invalidations(stack.cloudfront, stack.distribution)[before:]
    # Every user written while the bucket failed is forgotten by the CDN, in one invalidation.
    assert len(made) == 1 and {f"/{detail_of(record)}" for record in written} <= set(made[0])


def wait_for_error(stack: Stack, code: str) -> str:
    deadline = time.monotonic() + WAIT
    while code not in (error := stack.service.status()["publish"]["error"] or ""):
        assert time.monotonic() < deadline, stack.service.status()
        time.sleep(0.05)
    return error


def test_a_publish_killed_midway_resumes_on_restart(stack):
    stack.start()
    stack.published()
    before = len(invalidations(stack.cloudfront, stack.distribution))
    stack.endpoint.hold_after(2)  # the detail and one more go up; the rest wait
    created, _ = stack.post("killed.midway")
    assert stack.endpoint.holding.wait(WAIT)
    stack.service.process.send_signal(signal.SIGKILL)
    stack.service.process.wait()
    stack.endpoint.release()
    pending = list((stack.site / deploy.DEPLOY_DIR).glob("*.pending"))
    assert len(pending) == 1 and f"/{detail_of(created)}" in json.loads(pending[0].read_text())["paths"]
    stack.start()
    stack.published()
    in_sync(stack)
    # The URLs of the killed publish, whose uploads went up before the kill, are forgotten too.
    made = invalidations(stack.cloudfront, stack.distribution)[before:]
    assert len(made) == 1 and f"/{detail_of(created)}" in made[0]
    assert not list((stack.site / deploy.DEPLOY_DIR).glob("*.pending"))


@pytest.mark.skipif(not runnable("cloudflare"), reason="cloudflare is not installed")
def test_a_write_through_the_worker_is_read_back_through_the_worker(stack, tmp_path):
    """The whole path: POST to the Worker, forwarded to the write service, written, rebuilt,
    uploaded and invalidated; then the Worker over an R2 bucket holding what the S3 bucket
    holds answers the new record at its Location, and the list that counts it."""
    from test_cloudflare import _ask_worker

    service = stack.start()
    stack.published()
    body = json.dumps({"username": "through.the.edge"})
    headers = {"Authorization": f"Bearer {stack.token}", "Content-Type": "application/json"}
    answer, = _ask_worker(stack.site, {}, [("POST", "/api/v1/user/", headers, body)], prefix=f"{PREFIX}/",
                          write_service=f"http://127.0.0.1:{service.port}")
    assert answer["status"] == 201, answer
    location = answer["headers"]["location"].split("ketab.example.ir", 1)[1]
    stack.published()
    held = tmp_path / "r2"
    files = {}
    for key in objects(stack.s3, stack.bucket):
        files[f"{PREFIX}/{key}"] = held / key
        files[f"{PREFIX}/{key}"].parent.mkdir(parents=True, exist_ok=True)
        files[f"{PREFIX}/{key}"].write_bytes(stack.s3.get_object(Bucket=stack.bucket, Key=f"{PREFIX}/{key}")["Body"].read())
    detail, listed = _ask_worker(stack.site, files, [("GET", location, {}), ("GET", "/api/v1/user/?limit=100", {})],
                                 prefix=f"{PREFIX}/")
    assert (detail["status"], detail["body"]) == (200, answer["body"])
    assert json.loads(answer["body"]) in json.loads(listed["body"])["results"]
    assert f"/{detail_of(json.loads(answer['body']))}" in invalidations(stack.cloudfront, stack.distribution)[-1]
