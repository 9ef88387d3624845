"""`catalogue deploy` to an S3 server (moto's, over HTTP on a free loopback port): the
published tree under the prefix, only changed files uploaded again, deletions last, and
an interrupted deploy resumed."""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import os
from pathlib import Path

import boto3
import moto.server as moto_server
import pytest
from click.testing import CliRunner

from conftest import published_files
from generator.api.urls import PUBLISHED, STATE
from generator.sitebuild import build
from generator.cli import main
from generator.hosts import deploy
from servers import free_port

BOOK = "76f9d815-44dc-545f-890b-4419e8e5e6da"


@pytest.fixture(scope="module")
def endpoint():
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def bucket(endpoint, monkeypatch, request):
    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=endpoint)
    name = request.node.name.lower().replace("_", "-")[:50]
    client.create_bucket(Bucket=name)
    return client, name


def objects(client, bucket: str) -> dict[str, str]:
    """Every object's key and ETag (the MD5 of its bytes, for a single PUT)."""
    return {o["Key"]: o["ETag"].strip('"') for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", [])}


def published(site: Path) -> dict[str, str]:
    """Every file of the published generation and the MD5 of its bytes."""
    return {path: hashlib.md5((site / "current" / path).read_bytes()).hexdigest()
            for path in deploy.tree((site / "current").resolve())}


def edit_title(data: Path, old: str, new: str) -> None:
    path = data / "books.csv"
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    column = rows[0].index("title")
    next(row for row in rows if row[column] == old)[column] = new
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_deploy_uploads_the_tree_then_only_what_changed(data_dir, tmp_path, bucket, endpoint):
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    result = run("deploy", f"s3://{name}/catalogue", "--site", str(site), "--endpoint-url", endpoint)
    assert result.exit_code == 0, result.output
    files = published(site)
    assert result.output.splitlines()[0] == f"uploaded {len(files):,} files, deleted 0, 0 unchanged"
    assert objects(client, name) == {f"catalogue/{path}": data for path, data in files.items()}
    # What the site serves, pages/default as objects of their own (161 for the sample), and
    # never the build's state beside it.
    assert set(files) == published_files(site) and len(files) == 161
    assert any((site / "current" / STATE).iterdir()) and not any(STATE in key for key in objects(client, name))
    head = client.head_object(Bucket=name, Key="catalogue/api/v1/books/index.json")
    assert (head["ContentType"], head["CacheControl"]) == ("application/json", "no-cache")
    zipped = client.head_object(Bucket=name, Key="catalogue/api/v1/books/index.json.gz")
    assert zipped["ContentEncoding"] == "gzip"
    body = client.get_object(Bucket=name, Key="catalogue/api/v1/books/index.json.gz")["Body"].read()
    assert gzip.decompress(body) == (site / "current/api/v1/books/index.json").read_bytes()

    again = run("deploy", f"s3://{name}/catalogue", "--site", str(site), "--endpoint-url", endpoint)
    assert again.output == f"uploaded 0 files, deleted 0, {len(files):,} unchanged\n"

    edit_title(data_dir, "کلیدر", "کلیدر (ویرایش تازه)")  # the book BOOK
    build(data_dir, site)
    edited = run("deploy", f"s3://{name}/catalogue", "--site", str(site), "--endpoint-url", endpoint)
    changed = {path for path, data in published(site).items() if files.get(path) != data}
    assert edited.output.splitlines()[0] == (
        f"uploaded {len(changed)} files, deleted 0, {len(files) - len(changed):,} unchanged")
    # The book, and the pages that hold it with their .gz twins: the first page of 12 (as
    # pages/12, pages/default and the collection's index.json, each an object) and of 24.
    assert len(changed) == 9
    assert f"  /api/v1/books/{BOOK}/" in edited.output.splitlines()
    assert objects(client, name) == {f"catalogue/{path}": data for path, data in published(site).items()}


def test_what_the_build_no_longer_has_is_deleted(data_dir, tmp_path, bucket, endpoint):
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    (data_dir / "site.yaml").write_text("base_url: https://ketab.example.ir\npage_sizes: [12]\n", encoding="utf-8")
    build(data_dir, site)  # the pages of 24 are gone
    report = deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    assert report.deleted > 0 and not any("/pages/24/" in key for key in objects(client, name))
    assert set(objects(client, name)) == set(published(site))


def test_an_interrupted_deploy_resumes_where_it_stopped(data_dir, tmp_path, bucket, endpoint, monkeypatch):
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    real = deploy.Record.done
    calls, recorded = [0], [0]

    def failing(self, path, signature):
        calls[0] += 1
        if calls[0] == 40:
            raise OSError("interrupted")
        real(self, path, signature)
        recorded[0] += 1

    monkeypatch.setattr(deploy.Record, "done", failing)
    with pytest.raises(OSError, match="interrupted"):
        deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    monkeypatch.setattr(deploy.Record, "done", real)
    report = deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    assert (report.unchanged, report.uploaded) == (recorded[0], len(published(site)) - recorded[0])
    assert set(objects(client, name)) == set(published(site))


def test_a_generation_holds_what_hosts_are_given_and_the_build_state_alone(data_dir, tmp_path):
    """A new top-level directory must be one hosts are given (PUBLISHED) or the build's own."""
    build(data_dir, tmp_path / "site")
    assert sorted(os.listdir(tmp_path / "site" / "current")) == sorted((*PUBLISHED, STATE))


def test_a_target_that_is_not_s3(tmp_path):
    result = run("deploy", "https://bucket.example/x", "--site", str(tmp_path))
    assert result.exit_code == 1
    assert result.output == ("deploy target 'https://bucket.example/x': give it as s3://BUCKET or "
                             "s3://BUCKET/PREFIX\n")


def test_a_changed_openapi_document_invalidates_its_path():
    """The document lives under _meta/ (never a path of its own) but is served at /api/v1/schema/."""
    paths = ["_meta/openapi.json", "_meta/openapi.json.gz", "_meta/page-not-built.json", "api/v1/index.json"]
    assert deploy.invalidations(paths, "/p") == ["/p/api/v1/", "/p/api/v1/schema/"]
    assert deploy.invalidations(["_meta/site.json"], "") == []
