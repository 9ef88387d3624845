"""`catalogue deploy` to an S3 server (moto's, over HTTP on a free loopback port): the
published tree under the prefix, only changed files uploaded again, deletions last, and
an interrupted deploy resumed."""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import secrets
import sys
import threading
import time
from pathlib import Path

import boto3
import moto.server as moto_server
import pytest
from click.testing import CliRunner

from conftest import published_files
from generator.api.serving import HTML_TYPE
from generator.api.urls import PUBLISHED, STATE
from generator.catalogue import synth
from generator.errors import CatalogueError
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
    # (a new name each time: moto's buckets live as long as the process, which may run the tests again)
    name = f'{request.node.name.lower().replace("_", "-")[:50]}-{secrets.token_hex(4)}'
    client.create_bucket(Bucket=name)
    return client, name


def objects(client, bucket: str, markers: bool = False) -> dict[str, str]:
    """Every object's key and ETag (the MD5 of its bytes, for a single PUT); the deploys'
    markers only when asked for."""
    return {o["Key"]: o["ETag"].strip('"') for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", []) if markers or not o["Key"].endswith(deploy.MARKER)}


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
    assert result.output.splitlines()[:2] == [
        f"uploaded {len(files):,} files, deleted 0, 0 unchanged",
        "compared with the bucket (no finished deploy to this target recorded here): 0 of the site's files there, "
        f"{len(files)} missing, 0 different, 0 not in the site"]
    assert objects(client, name) == {f"catalogue/{path}": data for path, data in files.items()}
    assert set(objects(client, name, markers=True)) - set(objects(client, name)) == {"catalogue/.catalogue-deploy"}
    # What the site serves, pages/default as objects of their own (173 for the sample), and
    # never the build's state beside it.
    assert set(files) == published_files(site) and len(files) == 173
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
    # pages/12, pages/default and the collection's index.json, each an object) and of 24; and
    # the index of the pages of 12 (as pages/12 and pages/default), where its records moved.
    assert len(changed) == 11
    assert f"  /api/v1/books/{BOOK}/" in edited.output.splitlines()
    assert objects(client, name) == {f"catalogue/{path}": data for path, data in published(site).items()}


def add_user(data: Path) -> str:
    """A user at the end of users.csv (as a write appends one); its id."""
    path = data / "users.csv"
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    user = dict(zip(rows[0], rows[-1]))
    user.update(id="0f000000-0000-4000-8000-000000000001", username="tazeh.karbar")
    with path.open("a", encoding="utf-8", newline="") as file:
        csv.writer(file, lineterminator="\n").writerow([user[column] for column in rows[0]])
    return user["id"]


def test_pages_whose_only_change_is_the_count_go_up_after_the_rest(tmp_path, bucket, endpoint):
    client, name = bucket
    data, site = tmp_path / "data", tmp_path / "site"
    synth.write(data, 200, seed=3)  # (50 users: pages of 12 at 0..48, of 24 at 0..48)
    build(data, site)
    deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    before = published(site)
    user = add_user(data)
    build(data, site)
    after = published(site)
    changed = {path for path, digest in after.items() if before.get(path) != digest}
    plan = deploy.plan(client, site, deploy.Target.parse(f"s3://{name}"), endpoint)
    assert set(plan.changed) == changed and plan.later == []
    held: list[dict] = []
    deploy.carry_out(client, plan, lambda line: None, between=lambda: held.append(objects(client, name)))
    assert set(plan.changed) | set(plan.later) == changed and not set(plan.changed) & set(plan.later)
    # Every page of the user list but the last of each size (where the new user is) differs
    # in its count alone, and waits; the new user, those last pages and the block's page
    # index (its count, and where the new user's bytes lie) go first.
    pages = sorted(path for path in changed if "/user/pages/" in path and path.endswith(".json"))
    last = {path for path in pages if path.endswith("/48.json")}
    assert set(plan.later) == {page + suffix for page in set(pages) - last for suffix in ("", ".gz")}
    assert {f"api/v1/user/{user[:2]}/{user}.json"} | last <= set(plan.changed)
    assert any(path.endswith(".idx") for path in plan.changed)
    there = held[0]  # (when the first part was up)
    assert all(there[path] == after[path] for path in plan.changed)
    assert all(there[path] == before[path] for path in plan.later)  # (the count one behind, until now)
    assert objects(client, name) == after
    # The record knows what the bucket holds: the next deploy has nothing to do.
    again = deploy.plan(client, site, deploy.Target.parse(f"s3://{name}"), endpoint)
    assert (again.changed, again.later, again.gone) == ([], [], [])
    again.record.close()


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

    def failing(self, path, signature, body=None):
        calls[0] += 1
        if calls[0] == 40:
            raise OSError("interrupted")
        real(self, path, signature, body)
        recorded[0] += 1

    def interrupted() -> None:
        calls[0] = recorded[0] = 0
        monkeypatch.setattr(deploy.Record, "done", failing)
        with pytest.raises(OSError, match="interrupted"):
            deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
        monkeypatch.setattr(deploy.Record, "done", real)

    # The first deploy, interrupted, has recorded no marker: the next one lists the bucket,
    # and finds there the upload that was under way too (done, not recorded).
    interrupted()
    report = deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    assert report.compared.reason == "no finished deploy to this target recorded here"
    assert (report.unchanged, report.uploaded) == (recorded[0] + 1, len(published(site)) - recorded[0] - 1)
    assert set(objects(client, name)) == set(published(site))
    # A later one, interrupted, goes on from its record (it wrote the bucket's marker first).
    (data_dir / "site.yaml").write_text("base_url: https://ketab.example.ir\npage_sizes: [5, 12]\n", encoding="utf-8")
    build(data_dir, site)  # pages of 5 where there were pages of 24: more than 40 files change
    there = objects(client, name)
    changed = {path for path, data in published(site).items() if there.get(path) != data}
    interrupted()
    report = deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    assert report.compared is None and report.uploaded == len(changed) - recorded[0]
    assert objects(client, name) == published(site)


def empty(client, bucket: str) -> None:
    keys = [{"Key": key} for key in objects(client, bucket, markers=True)]
    client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})  # (fewer than 1,000)


def test_a_bucket_emptied_or_re_created_behind_the_deploy_is_filled_again(data_dir, tmp_path, bucket, endpoint):
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    target = f"s3://{name}/catalogue"
    run("deploy", target, "--site", str(site), "--endpoint-url", endpoint)
    files = {f"catalogue/{path}": data for path, data in published(site).items()}
    empty(client, name)
    result = run("deploy", target, "--site", str(site), "--endpoint-url", endpoint)
    assert result.output.splitlines()[:2] == [
        f"uploaded {len(files)} files, deleted 0, 0 unchanged",
        "compared with the bucket (the bucket has no deploy marker: emptied or re-created since the last "
        f"deploy): 0 of the site's files there, {len(files)} missing, 0 different, 0 not in the site"]
    assert objects(client, name) == files
    empty(client, name)
    client.delete_bucket(Bucket=name)
    client.create_bucket(Bucket=name)
    assert run("deploy", target, "--site", str(site), "--endpoint-url", endpoint).output.startswith(
        f"uploaded {len(files)} files, deleted 0, 0 unchanged\n")
    assert objects(client, name) == files
    assert run("deploy", target, "--site", str(site), "--endpoint-url", endpoint).output == (
        f"uploaded 0 files, deleted 0, {len(files)} unchanged\n")  # (one request: the marker)


def test_a_deploy_from_elsewhere_since_the_last_one_is_noticed(data_dir, tmp_path, bucket, endpoint):
    """Another site (another machine's, or an edited copy) deployed to the same target:
    this site's record no longer describes the bucket, and its next deploy puts back its own."""
    client, name = bucket
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    build(data_dir, ours)
    deploy.deploy(ours, f"s3://{name}", endpoint, progress=lambda line: None)
    edit_title(data_dir, "کلیدر", "کلیدر (ویرایش تازه)")
    (data_dir / "site.yaml").write_text("base_url: https://ketab.example.ir\npage_sizes: [12]\n", encoding="utf-8")
    build(data_dir, theirs)
    deploy.deploy(theirs, f"s3://{name}", endpoint, progress=lambda line: None)
    assert objects(client, name) == published(theirs)
    report = deploy.deploy(ours, f"s3://{name}", endpoint, progress=lambda line: None)
    assert report.compared.reason == "another deploy reached the bucket since this site's last one"
    # The book and its first pages of 12 (three objects, and their twins, and the page index
    # as two objects), and the six files of _meta/ that name the page sizes (site.json among
    # them), are theirs; the pages of 24 are gone with them.
    assert len(report.compared.different) == 15 and sum(p.startswith("_meta/") for p in report.compared.different) == 6
    assert len(report.compared.missing) == 11 and all("/pages/24/" in path for path in report.compared.missing)
    assert report.compared.extra == []
    assert objects(client, name) == published(ours)


def test_check_compares_the_bucket_with_the_site_and_touches_nothing_outside_the_prefix(
        data_dir, tmp_path, bucket, endpoint):
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    outside = {"other.txt": b"kept", "catalogue-old/api/v1/index.json": b"{}", "elsewhere/api/v1/x.json": b"{}",
               "catalogue/notes.txt": b"kept: the deploy owns catalogue/api/ and catalogue/_meta/ alone"}
    for key, body in outside.items():
        client.put_object(Bucket=name, Key=key, Body=body)
    target = f"s3://{name}/catalogue"
    run("deploy", target, "--site", str(site), "--endpoint-url", endpoint)
    files = {f"catalogue/{path}": data for path, data in published(site).items()}
    # By hand, behind the deploy's back: one object deleted, one changed, one added.
    client.delete_object(Bucket=name, Key="catalogue/api/v1/user/index.json")
    client.put_object(Bucket=name, Key="catalogue/_meta/site.json", Body=b"{}")
    client.put_object(Bucket=name, Key="catalogue/api/v1/books/stale.json", Body=b"{}")
    plain = run("deploy", target, "--site", str(site), "--endpoint-url", endpoint)
    assert plain.output == f"uploaded 0 files, deleted 0, {len(files)} unchanged\n"  # (its record is trusted)
    checked = run("deploy", target, "--site", str(site), "--endpoint-url", endpoint, "--check")
    assert checked.output.splitlines() == [
        f"uploaded 2 files, deleted 1, {len(files) - 2} unchanged",
        f"compared with the bucket (--check): {len(files) - 1} of the site's files there, 1 missing, 1 different, "
        "1 not in the site",
        "  missing: api/v1/user/index.json", "  different: _meta/site.json", "  not in the site: api/v1/books/stale.json",
        "paths to invalidate in a CDN in front of it:", "  /api/v1/books/", "  /api/v1/books/?*",
        "  /api/v1/user/", "  /api/v1/user/?*"]
    everything = objects(client, name)
    assert {key: everything.pop(key) for key in outside} == {
        key: hashlib.md5(body).hexdigest() for key, body in outside.items()}
    assert everything == files
    again = run("deploy", target, "--site", str(site), "--endpoint-url", endpoint, "--check")
    assert again.output.splitlines()[:2] == [
        f"uploaded 0 files, deleted 0, {len(files)} unchanged",
        f"compared with the bucket (--check): {len(files)} of the site's files there, 0 missing, 0 different, "
        "0 not in the site"]


def test_force_uploads_every_file(data_dir, tmp_path, bucket, endpoint):
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    run("deploy", f"s3://{name}", "--site", str(site), "--endpoint-url", endpoint)
    client.put_object(Bucket=name, Key="api/v1/books/stale.json", Body=b"{}")
    before = {o["Key"]: o["LastModified"] for o in client.list_objects_v2(Bucket=name)["Contents"]}
    time.sleep(1)  # (LastModified counts whole seconds)
    forced = run("deploy", f"s3://{name}", "--site", str(site), "--endpoint-url", endpoint, "--force")
    files = published(site)
    assert forced.output.splitlines()[:2] == [
        f"uploaded {len(files)} files, deleted 1, 0 unchanged",
        f"compared with the bucket (--force): {len(files)} of the site's files there, 0 missing, uploaded anyway, "
        "1 not in the site"]
    after = {o["Key"]: o["LastModified"] for o in client.list_objects_v2(Bucket=name)["Contents"]}
    assert all(after[path] > before[path] for path in files) and objects(client, name) == files


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


@pytest.mark.parametrize("url, bucket, prefix", [
    ("s3://b", "b", ""), ("s3://b/", "b", ""), ("s3://b//a/b//", "b", "a/b/"), ("s3://b/a", "b", "a/"),
    ("s3://b/X/", "b", "X/"),  # (only slashes are taken off the prefix's ends)
])
def test_a_target_and_its_keys(url, bucket, prefix):
    target = deploy.Target.parse(url)
    assert (target.bucket, target.prefix) == (bucket, prefix)
    assert target.key("api/v1/index.json") == f"{prefix}api/v1/index.json"


@pytest.mark.parametrize("url", ["s3:///prefix", "s3:bucket", "S4://bucket", "s3://[bucket"])
def test_a_target_needs_a_bucket(url):
    with pytest.raises(CatalogueError, match="give it as s3://BUCKET or s3://BUCKET/PREFIX"):
        deploy.Target.parse(url)


def test_the_bucket_is_compared_by_size_and_the_md5_of_a_single_part_upload(tmp_path):
    root = tmp_path
    (root / "api").mkdir()
    for name, body in {"same": b"abc", "size": b"abc", "bytes": b"abc", "parts": b"abc", "new": b"n"}.items():
        (root / "api" / name).write_bytes(body)
    now = deploy.tree(root)
    md5 = hashlib.md5(b"abc").hexdigest()
    listed = {"api/same": (3, md5), "api/size": (4, md5), "api/bytes": (3, hashlib.md5(b"abd").hexdigest()),
              "api/parts": (3, md5[:-2] + "-1"), "api/gone": (1, md5)}
    compared = deploy.compare(root, now, listed, "--check", force=False)
    assert (compared.reason, compared.listed) == ("--check", 4)
    assert (compared.missing, compared.different, compared.extra) == (
        ["api/new"], ["api/bytes", "api/parts", "api/size"], ["api/gone"])
    forced = deploy.compare(root, now, listed, "--force", force=True)
    assert forced.different == ["api/bytes", "api/parts", "api/same", "api/size"]
    # (a multipart ETag, whatever its digits, is never taken for the MD5 of the bytes)
    assert deploy.compare(root, now, {"api/same": (3, f"{md5}-1")}, "r", False).different == ["api/same"]


def test_md5_of_a_file_larger_than_a_chunk(tmp_path):
    path = tmp_path / "big"
    body = os.urandom((1 << 20) + 5)
    path.write_bytes(body)
    assert deploy.md5(path) == hashlib.md5(body).hexdigest()


def test_what_a_cdn_must_forget():
    paths = ["api/v1/books/76/76f9d815-44dc-545f-890b-4419e8e5e6da.json.gz",
             "api/v1/books/76/76f9d815-44dc-545f-890b-4419e8e5e6da.json",
             "api/v1/user/pages/12/0/0.json", "api/v1/author/index.json", "api/v1/index.json",
             "_meta/openapi.json", "_meta/site.json", "api/v1/books/index.json.gz"]
    assert deploy.invalidations(paths, "/p") == [
        "/p/api/v1/", "/p/api/v1/author/", "/p/api/v1/author/?*", "/p/api/v1/books/",
        "/p/api/v1/books/76f9d815-44dc-545f-890b-4419e8e5e6da/", "/p/api/v1/books/?*", "/p/api/v1/schema/", "/p/api/v1/user/",
        "/p/api/v1/user/?*"]
    assert deploy.invalidations(["api/v1/books/76/76f9d815-44dc-545f-890b-4419e8e5e6da.json"], "") == [
        "/api/v1/books/76f9d815-44dc-545f-890b-4419e8e5e6da/"]


def test_a_record_of_an_older_version_and_a_cut_journal(tmp_path):
    """A record that is the files alone (no marker) is read; a journal's cut last line is
    skipped, its deletions and marker replayed."""
    target = deploy.Target.parse("s3://b/p")
    record = deploy.Record(tmp_path, target, "http://e")
    record.done("api/a", (1, 2, 3))
    record.done("api/b", (4, 5, 6))
    record.claim("token-1")
    record.done("api/a", None)
    record.done("api/listed-only", None)  # (a deletion of what a listing found: never recorded)
    record._file.close()
    with record.journal.open("a", encoding="utf-8") as f:
        f.write('["api/c", [7, 8')  # (interrupted mid-line)
    again = deploy.Record(tmp_path, target, "http://e")
    assert (again.known, again.marker) == ({"api/b": [4, 5, 6]}, "token-1")
    # Interrupted again: the next deploy's entries follow the cut line, and are replayed.
    again.done("api/d", (1, 1, 1))
    again.done("api/e", (2, 2, 2))
    again._file.close()
    third = deploy.Record(tmp_path, target, "http://e")
    assert (third.known["api/b"], third.known["api/e"]) == ([4, 5, 6], [2, 2, 2])
    third._file.close()
    again.finish({"api/s": "store-1"}, {"api/b": (4, 5, 6)})
    assert json.loads(again.manifest.read_text()) == {"marker": "token-1", "links": {"api/s": "store-1"},
                                                       "files": {"api/b": [4, 5, 6]}, "bodies": {}}
    assert not again.journal.exists()
    assert again.manifest.parent == tmp_path / deploy.DEPLOY_DIR
    assert deploy.Record(tmp_path, deploy.Target.parse("s3://b/q"), "http://e").known == {}  # (another target's)
    assert deploy.Record(tmp_path, target, None).known == {}  # (another endpoint's)
    again.manifest.write_text(json.dumps({"api/b": [4, 5, 6]}))  # (as an older version wrote it)
    older = deploy.Record(tmp_path, target, "http://e")
    assert (older.known, older.marker) == ({"api/b": [4, 5, 6]}, None)


def test_a_failing_bucket_says_the_deploy_can_go_on(data_dir, tmp_path, bucket, endpoint):
    site = tmp_path / "site"
    build(data_dir, site)
    with pytest.raises(CatalogueError) as caught:
        deploy.deploy(site, "s3://no-such-bucket-here", endpoint, progress=lambda line: None)
    assert str(caught.value).startswith("deploying to s3://no-such-bucket-here failed: ")
    assert str(caught.value).endswith("\nWhat was uploaded is recorded: run the same deploy again to go on from there.")


def test_the_marker_is_never_cached_and_deletions_go_in_batches(data_dir, tmp_path, bucket, endpoint, monkeypatch):
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    head = client.head_object(Bucket=name, Key=deploy.MARKER)
    assert (head["ContentType"], head["CacheControl"], head["ContentLength"]) == ("text/plain", "no-store", 32)
    viewer = client.head_object(Bucket=name, Key="_meta/viewer.html.gz")  # (a twin has its own file's type)
    assert (viewer["ContentType"], viewer["ContentEncoding"]) == (HTML_TYPE, "gzip")
    (data_dir / "site.yaml").write_text("base_url: https://ketab.example.ir\npage_sizes: [12]\n", encoding="utf-8")
    build(data_dir, site)
    monkeypatch.setattr(deploy, "BATCH", 3)
    report = deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    assert report.deleted > 3 * 2 and set(objects(client, name)) == set(published(site))


def test_progress_counts_each_upload(tmp_path, bucket, endpoint, monkeypatch):
    """A line at most each second (here a clock that moves a second each time it is read):
    the uploads counted from one, of all that changed."""
    client, name = bucket
    root = tmp_path / "generation"
    (root / "api").mkdir(parents=True)
    for n in range(3):
        (root / "api" / f"{n}.json").write_bytes(b"{}")
    now = deploy.tree(root)
    ticks = iter(range(10 ** 6))
    monkeypatch.setattr(deploy.time, "monotonic", lambda: float(next(ticks)))
    lines: list[str] = []
    target = deploy.Target.parse(f"s3://{name}")
    record = deploy.Record(tmp_path, target, endpoint)
    deploy.upload_all(client, target, root, now, sorted(now), "no-cache", record, lines.append)
    assert sorted(lines) == ["  uploaded 1 of 3", "  uploaded 2 of 3", "  uploaded 3 of 3"]


def a_generation_of(count: int, tmp_path: Path) -> tuple[Path, dict[str, deploy.Signature]]:
    root = tmp_path / "generation"
    (root / "api").mkdir(parents=True)
    for n in range(count):
        (root / "api" / f"{n}.json").write_bytes(b"{}")
    return root, deploy.tree(root)


def test_uploads_go_sixteen_at_once(tmp_path):
    """A deploy of many small files waits on the network, not the processor: WORKERS uploads
    are under way at once (here a bucket that answers no PUT before sixteen are; with fewer
    threads, as the default pool has on a machine with fewer than twelve cores, it never would)."""
    arrived = threading.Barrier(deploy.WORKERS, timeout=10)

    class Client:
        def put_object(self, Bucket: str, Key: str, Body: bytes, **extra: str) -> None:
            arrived.wait()  # (BrokenBarrierError when fewer are under way: the deploy fails)

    root, now = a_generation_of(deploy.WORKERS, tmp_path)
    target = deploy.Target.parse("s3://b")
    record = deploy.Record(tmp_path, target, None)
    deploy.upload_all(Client(), target, root, now, sorted(now), "no-cache", record, lambda line: None)
    record._file.close()
    assert deploy.Record(tmp_path, target, None).known == {path: list(signature) for path, signature in now.items()}


def test_the_bucket_is_compared_sixteen_files_at_once(tmp_path, monkeypatch):
    """As the uploads: a listing of many files is compared WORKERS files at a time (each an MD5
    of a file read from disk), here by an MD5 that answers none before sixteen are asked for."""
    arrived = threading.Barrier(deploy.WORKERS, timeout=10)

    def md5(path: Path) -> str:
        arrived.wait()
        return hashlib.md5(path.read_bytes()).hexdigest()

    root, now = a_generation_of(deploy.WORKERS, tmp_path)
    monkeypatch.setattr(deploy, "md5", md5)
    listed = {path: (2, hashlib.md5(b"{}").hexdigest()) for path in now}
    compared = deploy.compare(root, now, listed, "--check", force=False)
    assert (compared.listed, compared.missing, compared.different, compared.extra) == (deploy.WORKERS, [], [], [])


def test_a_deletion_the_bucket_refuses_fails_the_deploy_and_stays_recorded(tmp_path, monkeypatch):
    """DeleteObjects answers 200 with the keys it could not delete in Errors: those are named,
    and kept in the record so that running the deploy again tries them again."""
    class Client:
        def delete_objects(self, Bucket: str, Delete: dict) -> dict:
            return {"Errors": [{"Key": "p/api/b", "Code": "AccessDenied", "Message": "Access Denied"}]}

    target = deploy.Target.parse("s3://b/p")
    record = deploy.Record(tmp_path, target, "http://e")
    for path in ("api/a", "api/b"):
        record.done(path, (1, 2, 3))
    with pytest.raises(CatalogueError) as caught:
        deploy.delete_all(Client(), target, ["api/a", "api/b"], record)
    assert str(caught.value) == ("the bucket refused to delete 1 file: p/api/b (Access Denied)\n"
                                 "Run the same deploy again to try them again.")
    record._file.close()
    assert deploy.Record(tmp_path, target, "http://e").known == {"api/b": [1, 2, 3]}


def test_deletions_go_in_batches_of_distinct_keys_each_recorded(tmp_path, monkeypatch):
    """Seven deletions in batches of three: three requests (3, 3, 1 keys, none twice, under the
    target's prefix), each deletion in the journal, so that an interrupted deploy knows them gone."""
    class Client:
        def __init__(self) -> None:
            self.requests: list[tuple[str, list[str], bool]] = []

        def delete_objects(self, Bucket: str, Delete: dict) -> dict:
            self.requests.append((Bucket, [o["Key"] for o in Delete["Objects"]], Delete["Quiet"]))
            return {}

    monkeypatch.setattr(deploy, "BATCH", 3)
    target = deploy.Target.parse("s3://b/p")
    record = deploy.Record(tmp_path, target, "http://e")
    gone = [f"api/{n}" for n in "abcdefg"]
    for path in gone + ["api/kept"]:
        record.done(path, (1, 2, 3))
    client = Client()
    deploy.delete_all(client, target, gone, record)
    assert client.requests == [("b", ["p/api/a", "p/api/b", "p/api/c"], True), ("b", ["p/api/d", "p/api/e", "p/api/f"], True),
                               ("b", ["p/api/g"], True)]
    record._file.close()
    assert deploy.Record(tmp_path, target, "http://e").known == {"api/kept": [1, 2, 3]}


def test_without_boto3_the_deploy_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # (an import of it then raises ImportError)
    with pytest.raises(CatalogueError) as caught:
        deploy.deploy(tmp_path, "s3://b", progress=lambda line: None)
    assert str(caught.value) == "catalogue deploy needs boto3: pip install boto3"


def test_the_record_of_an_earlier_deploy_is_found_by_its_name(tmp_path):
    """The record's file is named after the endpoint, bucket and prefix: a name spelt otherwise
    by a new version would lose every site's record (each bucket listed again once)."""
    (tmp_path / deploy.DEPLOY_DIR).mkdir()
    (tmp_path / deploy.DEPLOY_DIR / "089256ff9e6cd839.json").write_text(
        json.dumps({"marker": "token-1", "files": {"api/b": [4, 5, 6]}}), encoding="utf-8")
    record = deploy.Record(tmp_path, deploy.Target.parse("s3://b/p"), "http://e")
    record._file.close()
    assert (record.known, record.marker) == ({"api/b": [4, 5, 6]}, "token-1")


def test_the_same_bucket_through_an_endpoint_spelt_otherwise_is_listed(data_dir, tmp_path, bucket, endpoint):
    """The record is kept for each endpoint as given: one spelt otherwise (here the same server
    by another name) may be another service whose bucket has the same name, so it is listed."""
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)
    deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None)
    assert deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None).compared is None
    other = endpoint.replace("127.0.0.1", "localhost")
    report = deploy.deploy(site, f"s3://{name}", other, progress=lambda line: None)
    assert report.compared.reason == "no finished deploy to this target recorded here"
    assert (report.uploaded, report.compared.listed) == (0, len(published(site)))


def test_a_deploy_that_changes_the_bucket_writes_a_new_marker_first(data_dir, tmp_path, bucket, endpoint):
    """A new token whenever the bucket changes (uploads alone, deletions alone, or a marker
    gone), so that another site's record of the bucket is no longer trusted; none when
    nothing changes."""
    client, name = bucket
    site = tmp_path / "site"
    build(data_dir, site)

    def marker() -> str:
        return client.get_object(Bucket=name, Key=deploy.MARKER)["Body"].read().decode()

    def deployed(**options) -> deploy.Report:
        return deploy.deploy(site, f"s3://{name}", endpoint, progress=lambda line: None, **options)

    deployed()
    first = marker()
    assert deployed().uploaded == 0 and marker() == first
    edit_title(data_dir, "کلیدر", "کلیدر (ویرایش تازه)")
    build(data_dir, site)
    report = deployed()
    assert (report.uploaded, report.deleted, report.compared) == (11, 0, None)
    uploads_only = marker()
    assert uploads_only != first
    client.put_object(Bucket=name, Key="api/v1/books/stale.json", Body=b"{}")
    report = deployed(check=True)
    assert (report.uploaded, report.deleted) == (0, 1)
    deletion_only = marker()
    assert deletion_only != uploads_only
    client.delete_object(Bucket=name, Key=deploy.MARKER)
    report = deployed()
    assert (report.uploaded, report.deleted) == (0, 0) and marker() != deletion_only
    assert deployed().compared is None  # (the new marker is the record's)


@pytest.mark.parametrize("keys, more", [("ab", ""), ("abcde", ""), ("abcdef", " ...")])
def test_many_refused_deletions_are_counted_and_the_first_five_named(tmp_path, keys, more):
    """A refusal without a Message is named by its Code. (moto refuses no deletion: a client
    answers as S3 does when it refuses, as in the test above.)"""
    class Client:
        def delete_objects(self, Bucket: str, Delete: dict) -> dict:
            return {"Errors": [{"Key": o["Key"], "Code": "AccessDenied"} for o in Delete["Objects"]]}

    target = deploy.Target.parse("s3://b/p")
    record = deploy.Record(tmp_path, target, "http://e")
    with pytest.raises(CatalogueError) as caught:
        deploy.delete_all(Client(), target, [f"api/{n}" for n in keys], record)
    record._file.close()
    named = ", ".join(f"p/api/{n} (AccessDenied)" for n in keys[:5])
    assert str(caught.value) == (f"the bucket refused to delete {len(keys)} files: {named}{more}\n"
                                 "Run the same deploy again to try them again.")
