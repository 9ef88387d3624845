"""The Cloudflare adapter: its wrangler configurations, and the Worker over an R2 bucket
that `catalogue deploy` filled (in workerd). The Worker over static assets is
`catalogue serve --server cloudflare`, which the conformance and write suites run."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tomllib
from email.utils import formatdate
from pathlib import Path

import boto3
import moto.server as moto_server
import pytest
from click.testing import CliRunner

from conftest import SAMPLE, published_files
from generator.cli import main
from generator.compose import build
from generator.hosts import cloudflare, npm
from generator.system import dying_with_parent
from servers import WRANGLER, Server, free_port, runnable

BOOK = "76f9d815-44dc-545f-890b-4419e8e5e6da"
needs_workerd = pytest.mark.skipif(not runnable("cloudflare"), reason="cloudflare is not installed")
needs_wrangler = pytest.mark.skipif(not runnable("wrangler"), reason="wrangler is not installed")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("cloudflare") / "site"
    build(SAMPLE, site)
    return site


def test_wrangler_serves_the_published_generation_through_the_worker(site):
    config = tomllib.loads((site / cloudflare.CONFIG_DIR / "wrangler.toml").read_text(encoding="utf-8"))
    here = site / cloudflare.CONFIG_DIR
    assert (here / config["main"]).is_file()
    assets = here / config["assets"]["directory"]
    assert {entry.name: entry.resolve() for entry in assets.iterdir()} == {
        name: (site / "current" / name).resolve() for name in ("api", "_meta")}  # (never .state)
    assert config["assets"]["run_worker_first"] is True  # (else a query string would never reach the router)
    assert config["vars"]["PUBLISHED"] == formatdate(os.lstat(site / "current").st_mtime, usegmt=True)
    r2 = tomllib.loads((here / "wrangler-r2.toml").read_text(encoding="utf-8"))
    assert "assets" not in r2 and r2["main"] == config["main"]
    assert r2["r2_buckets"] == [{"binding": "BUCKET", "bucket_name": cloudflare.BUCKET}]
    assert r2["vars"]["PREFIX"] == ""


def uploaded_by_wrangler(site: Path, work: Path) -> set[str]:
    """What `wrangler deploy` would upload as the Worker's static assets: the files of the
    assets directory that its dry run reads (its debug log names each entry it read, and
    each it ignores), as paths relative to that directory. Its bundling of worker.js warns
    of nothing (the router's CommonJS export in an ES module did)."""
    config = site / cloudflare.CONFIG_DIR / "wrangler.toml"
    environment = {**os.environ, "WRANGLER_LOG": "debug", "WRANGLER_SEND_METRICS": "false",
                   "XDG_CONFIG_HOME": str(work / "config")}  # (its logs and settings stay in work/)
    run = subprocess.run(["node", str(WRANGLER), "deploy", "--dry-run", "--outdir", str(work / "out"),
                          "--config", str(config)], cwd=work, env=environment, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING" not in run.stdout + run.stderr, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "from the assets directory" in line)
    read = {line[1:] for line in lines[start + 1:] if line.startswith("/")}
    ignored = {line.split("Ignoring asset:", 1)[1].strip() for line in lines if "Ignoring asset:" in line}
    assets = config.parent / tomllib.loads(config.read_text(encoding="utf-8"))["assets"]["directory"]
    return {path for path in read - ignored if (assets / path).is_file()}


@needs_wrangler
def test_wrangler_uploads_what_the_site_serves_and_never_the_build_state(tmp_path):
    site = tmp_path / "site"
    build(SAMPLE, site)
    state = site / "current" / ".state"
    assert any(state.iterdir())  # (the build's own: what must not leave the machine)
    with open(state / "records-books.big", "wb") as part:  # a record part past an asset's 25 MiB
        part.truncate(26 << 20)  # (sparse: no disk for it)
    uploaded = uploaded_by_wrangler(site, tmp_path)
    assert uploaded == published_files(site)
    assert not any(".state" in path for path in uploaded)
    # The sample: the build's 145 files and, as files of their own, the 16 of the six
    # collections' pages/default (the default page size's pages, which the router names).
    assert len(uploaded) == 173 and sum("/pages/default/" in path for path in uploaded) == 22


def test_a_rebuild_that_publishes_nothing_leaves_the_configuration_alone(site):
    files = sorted((site / cloudflare.CONFIG_DIR).iterdir())
    before = [path.stat().st_mtime_ns for path in files]
    build(SAMPLE, site)
    assert [path.stat().st_mtime_ns for path in files] == before


def test_serve_without_npm_says_how_to_install_workerd(site, monkeypatch, tmp_path):
    """Node.js alone (no npm, no workerd in the checkout or the user's cache): what to install."""
    node = shutil.which("node")
    here = tmp_path / "bin"
    here.mkdir()
    if node is not None:
        (here / "node").symlink_to(node)
    monkeypatch.setenv("PATH", str(here))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(npm, "CHECKOUT", tmp_path)
    result = CliRunner().invoke(main, ["serve", "--server", "cloudflare", "--site", str(site)])
    expected = (cloudflare.INSTALL_HINT if node is None else
                f"miniflare is not installed and npm is not here to install it: install Node.js and npm, then run "
                f"this again (it installs miniflare into {tmp_path / 'cache/catalogue/node'} once)")
    assert (result.exit_code, result.output) == (1, expected + "\n")


# ---- the Worker over R2 ------------------------------------------------------------------

HARNESS = Path(__file__).with_name("worker_over_r2.mjs")
REQUESTS = [
    ("GET", "/api/v1/", {}), ("GET", "/api/v1/books/", {}), ("GET", "/api/v1/books/?offset=24&limit=12", {}),
    ("GET", "/api/v1/user/?limit=24", {}), ("GET", f"/api/v1/books/{BOOK}/", {}),
    ("HEAD", f"/api/v1/books/{BOOK}/", {}), ("GET", "/api/v1/books/76f9d815-0000-4000-8000-000000000000/", {}),
    ("GET", "/api/v1/books/?limit=5", {}), ("GET", "/api/v1/books/?offset=48", {}), ("PUT", "/api/v1/books/", {}),
    ("OPTIONS", "/api/v1/user/", {}), ("GET", "/api/v1/books", {}), ("POST", "/api/v1/user/", {}),
    ("GET", "/_meta/site.json", {}),
]
PREFIX = "mirror/"  # of s3://catalogue/mirror: the Worker's PREFIX
COMPARED = ("content-type", "allow", "vary", "cache-control", "access-control-allow-origin", "location")


@pytest.fixture(scope="module")
def deployed(site, tmp_path_factory) -> dict[str, Path]:
    """`catalogue deploy` to a local S3 server under PREFIX/; each object's key and a file of
    its bytes, for the Worker's R2 bucket."""
    work = tmp_path_factory.mktemp("objects")
    port = free_port()
    s3 = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    s3.start()
    with pytest.MonkeyPatch.context() as environment:
        for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                            "AWS_DEFAULT_REGION": "us-east-1"}.items():
            environment.setenv(name, value)
        try:
            endpoint = f"http://127.0.0.1:{port}"
            client = boto3.client("s3", endpoint_url=endpoint)
            client.create_bucket(Bucket="catalogue")
            result = CliRunner().invoke(main, ["deploy", f"s3://catalogue/{PREFIX}", "--site", str(site),
                                               "--endpoint-url", endpoint])
            assert result.exit_code == 0, result.output
            objects = {}
            for page in client.get_paginator("list_objects_v2").paginate(Bucket="catalogue"):
                for entry in page["Contents"]:
                    file = work / entry["Key"]
                    file.parent.mkdir(parents=True, exist_ok=True)
                    file.write_bytes(client.get_object(Bucket="catalogue", Key=entry["Key"])["Body"].read())
                    objects[entry["Key"]] = file
            return objects
        finally:
            s3.stop()


@needs_workerd
def test_the_worker_over_r2_answers_as_the_built_in_server(site, deployed):
    """The bucket filled by `catalogue deploy` (to an S3 server here), its objects put into R2
    under the same keys, and the Worker reading them with PREFIX."""
    answers = _ask_worker(site, deployed, REQUESTS)
    served = Server(site)
    try:
        for (method, target, headers), got in zip(REQUESTS, answers, strict=True):
            expected = served.request(method, target, headers)
            assert got["status"] == expected.status, target
            assert got["body"].encode() == expected.body, target
            for name in COMPARED:
                assert got["headers"].get(name) == expected.header(name), (target, name)
            if expected.status == 200 and method in ("GET", "HEAD"):
                assert got["headers"]["etag"] and got["headers"]["last-modified"], target
    finally:
        served.stop()


@needs_workerd
def test_the_worker_over_r2_answers_conditional_requests(site, deployed):
    path = "/api/v1/books/?limit=24"
    first, = _ask_worker(site, deployed, [("GET", path, {})])
    etag = first["headers"]["etag"]  # (the object's MD5: the same in every bucket; its upload time is not)
    again = _ask_worker(site, deployed, [("GET", path, {"If-None-Match": etag}),
                                   ("GET", path, {"If-None-Match": '"other"'}),
                                   ("GET", path, {"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"}),
                                   ("GET", path, {"If-Modified-Since": "Thu, 01 Jan 2015 00:00:00 GMT"})])
    assert [(a["status"], a["body"]) for a in again] == [(304, ""), (200, first["body"]), (304, ""),
                                                         (200, first["body"])]
    assert again[0]["headers"]["etag"] == etag


def _ask_worker(site: Path, objects: dict[str, Path], requests: list, prefix: str = PREFIX,
                write_service: str = "") -> list[dict]:
    given = {"packages": str(npm.find(cloudflare.WORKERD)), "worker": str(site / cloudflare.CONFIG_DIR / "worker.js"),
             "prefix": prefix, "writeService": write_service,
             "compatibilityDate": cloudflare.COMPATIBILITY_DATE,
             "objects": [[key, str(file)] for key, file in objects.items()], "requests": requests}
    # node in a process group of its own, the workerd miniflare starts with it: all of it goes
    # at the end, even when node is killed before it could stop workerd (a timeout, Ctrl-C).
    process = subprocess.Popen(**dying_with_parent(["node", str(HARNESS)]), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(json.dumps(given), timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == 0, err
    return json.loads(out)
