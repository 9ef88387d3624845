"""The CloudFront host: its viewer-request function, run in Node as CloudFront runs it (a bare
context: no require, no module), decides as the golden request table does; behind it, a
local S3 origin (moto's) holding a deployed build answers the bytes the built-in server
answers; and the CloudFormation template ties the function, the policies and the bucket."""
from __future__ import annotations

import fnmatch
import json
import subprocess
from pathlib import Path

import boto3
import moto.server as moto_server
import pytest
import yaml
from botocore.exceptions import ClientError

from conftest import SAMPLE
from generator import compose
from generator.api import meta
from generator.api.serving import ALLOW_READ, ALLOW_WRITE, SiteInfo, headers
from generator.api.urls import CURRENT, NOT_FOUND_FILE, PAGE_NOT_BUILT, RESOURCES
from generator.hosts import cloudfront
from generator.hosts.deploy import deploy
from golden_files import BOOK, GOLDEN, ROUTES, UNKNOWN
from servers import Server, free_port, runnable

needs_node = pytest.mark.skipif(not runnable("node"), reason="node is not installed")

# CloudFront's runtime: the function's code in a context of its own, then handler(event).
RUN = """
const vm = require("vm");
const {code, events} = JSON.parse(require("fs").readFileSync(0, "utf8"));
const context = vm.createContext({});
vm.runInContext(code, context);
process.stdout.write(JSON.stringify(events.map((event) => context.handler(event))));
"""


def run(code: str, events: list[dict]) -> list[dict]:
    done = subprocess.run(["node", "-e", RUN], input=json.dumps({"code": code, "events": events}),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def request_event(entry: dict) -> dict:
    """A request of the golden table as CloudFront's event."""
    method, path, query, _, accept = entry["request"]
    return event(method, path, query, {"Accept": accept} if accept else None)


def event(method: str, path: str, query: str, request_headers: dict | None = None) -> dict:
    """A viewer request as CloudFront hands it to a function: the path as sent, the query
    string as an object of values as sent, a repeated name's values in multiValue."""
    querystring: dict[str, dict] = {}
    for part in filter(None, query.split("&")):
        name, _, value = part.partition("=")
        if name in querystring:
            entry = querystring[name]
            entry.setdefault("multiValue", [{"value": entry["value"]}]).append({"value": value})
        else:
            querystring[name] = {"value": value}
    return {"version": "1.0", "context": {"eventType": "viewer-request"}, "viewer": {"ip": "192.0.2.1"},
            "request": {"method": method, "uri": path, "querystring": querystring,
                        "headers": {k.lower(): {"value": v} for k, v in (request_headers or {}).items()},
                        "cookies": {}}}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cloudfront") / "site"
    compose.build(SAMPLE, out)
    return out


def facts(site: Path) -> cloudfront.Facts:
    return cloudfront.Facts.of_generation(site / CURRENT)


def expected_reply(status: int, body: str, allow: str, location: str | None, cache_control: str) -> dict:
    reply_headers = {k: {"value": v} for k, v in cloudfront.answer_headers(cache_control).items()}
    if allow:
        reply_headers["allow"] = {"value": allow}
    if location:
        reply_headers["location"] = {"value": location}
    return {"statusCode": status, "headers": reply_headers, "body": body}


# ---- the function ---------------------------------------------------------------------------

@needs_node
def test_the_function_decides_as_the_golden_request_table(site):
    table = json.loads((GOLDEN / ROUTES).read_text(encoding="utf-8"))
    info = SiteInfo.of_site(site)
    codes = {prefix: cloudfront.function(prefix, facts(site), info.cache_control) for prefix in ("", "/catalogue")}
    assert (site / cloudfront.FUNCTION).read_text(encoding="utf-8") == codes[""]
    answers = {}
    for prefix, code in codes.items():
        entries = [entry for entry in table if entry["request"][3] == prefix]
        answers.update(zip(map(id, entries), run(code, [request_event(entry) for entry in entries])))
    not_built = (site / CURRENT / PAGE_NOT_BUILT).read_text(encoding="utf-8")
    for entry in table:
        expected, got = entry["answer"], answers[id(entry)]
        if expected["forward"]:
            want = expected_reply(503, meta.WRITE_UNAVAILABLE.decode(), expected["allow"], None, info.cache_control)
        elif expected["file"] is not None and expected["missing_file"] == PAGE_NOT_BUILT and not (
                site / CURRENT / expected["file"]).is_file():
            want = expected_reply(400, not_built, expected["allow"], None, info.cache_control)
        elif expected["file"] is not None:  # (a missing detail is the bucket's to answer)
            want = {**request_event(entry)["request"], "uri": "/" + expected["file"], "querystring": {}}
        else:
            want = expected_reply(expected["status"], expected["body"] or "", expected["allow"],
                                  expected["location"], info.cache_control)
        assert got == want, entry["request"]


@needs_node
def test_the_function_reads_a_repeated_parameter_and_escapes_as_cloudfront_passes_them(site):
    code = (site / cloudfront.FUNCTION).read_text(encoding="utf-8")
    got = run(code, [event("GET", "/api/v1/books/", "limit=24&offset=24&limit=12"),
                     event("GET", "/api/v1/books/", "limit=%2012%20&offset=%2B24"),
                     event("GET", f"/api/v1/books/%37{BOOK[1:]}/", ""),
                     event("GET", "/api/v1/books/%E0%A4%A/", "")])
    assert [answer.get("uri") for answer in got[:3]] == [
        "/api/v1/books/pages/12/0/24.json", "/api/v1/books/pages/12/0/24.json", f"/api/v1/books/76/{BOOK}.json"]
    assert got[3]["statusCode"] == 404 and got[3]["body"] == meta.NOT_FOUND.decode()  # (not UTF-8: kept as sent)


@needs_node
def test_the_counts_decide_which_pages_exist(site):
    """The function must be published again when a count changes: it is what answers 400."""
    known = facts(site)
    grown = cloudfront.Facts({**known.counts, "books": 50}, known.sizes, known.default, known.not_built)
    requests = [event("GET", "/api/v1/books/", "offset=48"), event("GET", "/api/v1/books/", "limit=24&offset=48")]
    exactly = cloudfront.Facts({**known.counts, "books": 48}, known.sizes, known.default, known.not_built)
    now = run(cloudfront.function("", known, "no-cache"), requests)
    later = run(cloudfront.function("", grown, "no-cache"), requests)
    assert [answer["statusCode"] for answer in now] == [400, 400]
    assert [answer["statusCode"] for answer in run(cloudfront.function("", exactly, "no-cache"), requests)] == [400, 400]
    assert [answer["uri"] for answer in later] == ["/api/v1/books/pages/default/0/48.json",
                                                  "/api/v1/books/pages/24/0/48.json"]
    empty = cloudfront.Facts({**known.counts, "user": 0}, known.sizes, known.default, known.not_built)
    first, second = run(cloudfront.function("", empty, "no-cache"),
                        [event("GET", "/api/v1/user/", ""), event("GET", "/api/v1/user/", "offset=12")])
    assert first["uri"] == "/api/v1/user/pages/default/0/0.json" and second["statusCode"] == 400


def test_the_function_fits_a_cloudfront_function(site):
    long = cloudfront.function("/a/longer/path/prefix", cloudfront.Facts(
        {r.name: 9_999_999 for r in RESOURCES}, [12, 24, 48, 100], 12, (site / CURRENT / PAGE_NOT_BUILT).read_text()),
        "public, max-age=600, stale-while-revalidate=60")
    assert len(long.encode("utf-8")) <= cloudfront.MAX_FUNCTION


def test_a_site_whose_function_would_not_fit_gets_no_cloudfront_files(tmp_path, capsys):
    out = tmp_path / "site"
    compose.build(SAMPLE, out, base_url="https://ketab.example.ir/" + "p" * 1000)
    assert not (out / cloudfront.FUNCTION).exists() and not (out / cloudfront.TEMPLATE).exists()
    assert "warning: no CloudFront files: the function would be" in capsys.readouterr().err
    assert (out / "hosts/router/router.js").is_file()


# ---- the template ---------------------------------------------------------------------------

def stack(site: Path) -> dict:
    return yaml.safe_load((site / cloudfront.TEMPLATE).read_text(encoding="utf-8"))


def references(node) -> set[str]:
    """Every resource or parameter a part of the template names with Ref or Fn::GetAtt."""
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref":
                found.add(value)
            elif key == "Fn::GetAtt":
                found.add(value[0])
            else:
                found |= references(value)
    elif isinstance(node, list):
        for value in node:
            found |= references(value)
    return found


def test_the_template_ties_the_function_the_policies_and_the_bucket(site):
    template = stack(site)
    resources, parameters = template["Resources"], template["Parameters"]
    assert references(template) <= set(resources) | set(parameters) | {"AWS::NoValue"}
    function = resources["Router"]["Properties"]
    assert function["FunctionConfig"]["Runtime"] == "cloudfront-js-2.0" and function["AutoPublish"] is True
    assert function["FunctionCode"] == (site / cloudfront.FUNCTION).read_text(encoding="utf-8")
    config = resources["Distribution"]["Properties"]["DistributionConfig"]
    every = [config["DefaultCacheBehavior"], *config["CacheBehaviors"]]
    for behaviour in every:
        assert behaviour["FunctionAssociations"] == [
            {"EventType": "viewer-request", "FunctionARN": {"Fn::GetAtt": ["Router", "FunctionMetadata.FunctionARN"]}}]
        assert resources[behaviour["CachePolicyId"]["Ref"]]["Type"] == "AWS::CloudFront::CachePolicy"
        assert resources[behaviour["ResponseHeadersPolicyId"]["Ref"]]["Type"] == "AWS::CloudFront::ResponseHeadersPolicy"
        assert set(behaviour["AllowedMethods"]) == {"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"}
        assert behaviour["Compress"] is True
    key = resources["CachePolicy"]["Properties"]["CachePolicyConfig"]["ParametersInCacheKeyAndForwardedToOrigin"]
    assert key["QueryStringsConfig"] == {"QueryStringBehavior": "all"}
    assert key["EnableAcceptEncodingGzip"] and key["EnableAcceptEncodingBrotli"]
    origin, = config["Origins"]
    assert origin["OriginAccessControlId"] == {"Fn::GetAtt": ["OriginAccessControl", "Id"]}
    assert origin["OriginPath"] == {"Ref": "OriginPath"}
    assert {(e["ErrorCode"], e["ResponseCode"], e["ResponsePagePath"]) for e in config["CustomErrorResponses"]} == {
        (403, 404, f"/{NOT_FOUND_FILE}"), (404, 404, f"/{NOT_FOUND_FILE}")}
    assert (site / CURRENT / NOT_FOUND_FILE).read_bytes() == meta.NOT_FOUND
    assert [b["PathPattern"] for b in config["CacheBehaviors"]] == [f"/api/v1/{r.name}/" for r in RESOURCES if r.writable]
    statement, = resources["BucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "s3:GetObject"  # (no ListBucket: a missing object is a 403)


def policy_headers(template: dict, path: str) -> dict[str, str]:
    """The headers CloudFront adds to an answer for this viewer path: the response headers
    policy of the first behaviour whose pattern matches it, else the default's."""
    config = template["Resources"]["Distribution"]["Properties"]["DistributionConfig"]
    behaviour = next((b for b in config["CacheBehaviors"] if fnmatch.fnmatchcase(path, b["PathPattern"])),
                     config["DefaultCacheBehavior"])
    policy = template["Resources"][behaviour["ResponseHeadersPolicyId"]["Ref"]]["Properties"]
    policy = policy["ResponseHeadersPolicyConfig"]
    security = policy["SecurityHeadersConfig"]
    found = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": security["FrameOptions"]["FrameOption"],
             "Referrer-Policy": security["ReferrerPolicy"]["ReferrerPolicy"]}
    found.update({item["Header"]: item["Value"] for item in policy["CustomHeadersConfig"]["Items"]})
    return found


def test_every_path_group_carries_every_header_and_its_allow(site):
    template, info = stack(site), SiteInfo.of_site(site)
    for path, allow in [("/api/v1/user/", ALLOW_WRITE), ("/api/v1/bookshelf/", ALLOW_WRITE),
                        ("/api/v1/books/", ALLOW_READ), (f"/api/v1/user/{BOOK}/", ALLOW_READ), ("/api/v1/", ALLOW_READ)]:
        added = policy_headers(template, path)
        assert added.pop("Allow") == allow, path
        assert added.pop("Vary") == "Accept, Accept-Encoding"
        assert added == {k: v for k, v in headers(info.cache_control).items() if k != "Vary"}


# ---- a local origin ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def origin(site):
    """The built sample deployed to a bucket of a local S3 server, under the prefix the
    template's OriginPath names, and an S3 client reading it as CloudFront would."""
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                            "AWS_DEFAULT_REGION": "us-east-1"}.items():
            patch.setenv(name, value)
        client = boto3.client("s3", endpoint_url=endpoint)
        client.create_bucket(Bucket="catalogue-origin")
        deploy(site, "s3://catalogue-origin/catalogue", endpoint, progress=lambda line: None)
        yield client
    server.stop()


@pytest.fixture(scope="module")
def builtin(site):
    server = Server(site)
    yield server
    server.stop()


def through_cloudfront(site: Path, client, requests: list[tuple]) -> list[tuple[int, bytes, dict]]:
    """Each request through the function, then (for a rewritten one) the bucket: an object's
    bytes and metadata, or for a missing one the error document with 404, with the headers
    the response headers policy of the viewer's path adds."""
    code, template = (site / cloudfront.FUNCTION).read_text(encoding="utf-8"), stack(site)
    answers = []
    for request, got in zip(requests, run(code, [event(*request) for request in requests])):
        if "statusCode" in got:
            answers.append((got["statusCode"], got["body"].encode(), {k: v["value"] for k, v in got["headers"].items()}))
            continue
        try:
            found = client.get_object(Bucket="catalogue-origin", Key="catalogue" + got["uri"])
            status = 200
        except ClientError as exc:
            assert exc.response["Error"]["Code"] in ("NoSuchKey", "AccessDenied", "404", "403")
            found = client.get_object(Bucket="catalogue-origin", Key=f"catalogue/{NOT_FOUND_FILE}")
            status = 404
        sent = {k.lower(): v for k, v in policy_headers(template, request[1]).items()}
        sent.update({"content-type": found["ContentType"], "cache-control": found["CacheControl"]})
        answers.append((status, found["Body"].read(), sent))
    return answers


REQUESTS = [
    ("GET", "/api/v1/", ""), ("GET", "/api/v1/books/", ""), ("GET", "/api/v1/books/", "offset=24&limit=12"),
    ("GET", "/api/v1/books/", "limit=24&offset=24", {"Accept-Encoding": "gzip"}), ("GET", "/api/v1/user/", "limit=24"),
    ("GET", f"/api/v1/books/{BOOK}/", "", {"Accept-Encoding": "gzip"}), ("GET", "/api/v1/books/", "offset=48"),
    ("GET", "/api/v1/books/", "limit=5"), ("GET", "/api/v1/books/", "offset=13"), ("OPTIONS", "/api/v1/user/", ""),
    ("OPTIONS", f"/api/v1/books/{BOOK}/", ""), ("GET", "/api/v1/books", "offset=24&limit=12"),
    ("PUT", "/api/v1/books/", ""), ("POST", "/api/v1/bookshelf/", ""), ("GET", "/api/v1/nothing/", ""),
    ("GET", "/api/v1/books/not-a-uuid/", ""),
]


@needs_node
def test_the_function_and_the_bucket_answer_as_the_built_in_server(site, origin, builtin):
    answers = through_cloudfront(site, origin, [request[:3] for request in REQUESTS])
    for request, (status, body, sent) in zip(REQUESTS, answers):
        method, path, query, *extra = request
        served = builtin.request(method, path + (f"?{query}" if query else ""), extra[0] if extra else None)
        assert (status, body) == (served.status, served.body), request
        for name in ["Content-Type", "Allow", "Location", *headers("").keys()]:
            value = served.header(name)
            if name == "Vary" and value is not None:
                assert set(value.split(", ")) <= set(sent["vary"].split(", ")), request
            else:
                assert sent.get(name.lower()) == value, (request, name)


@needs_node
def test_a_missing_detail_gets_the_generic_404_body(site, origin, builtin):
    """The one answer that differs from the other hosts: CloudFront gives a missing object
    one error document for the whole distribution, so not the resource's own message."""
    (status, body, sent), = through_cloudfront(site, origin, [("GET", f"/api/v1/author/{UNKNOWN}/", "")])
    served = builtin.get(f"/api/v1/author/{UNKNOWN}/")
    assert (served.status, served.body) == (404, b'{"detail":"No Author matches the given query."}')
    assert (status, body) == (404, meta.NOT_FOUND)
    assert sent["content-type"] == served.header("Content-Type")
