"""The CloudFront host: its viewer-request function, run in Node as CloudFront runs it (a bare
context: no require, no module), decides as the golden request table does; behind it, a
local S3 origin (moto's) holding a deployed build, its answers through the edge handler on
origin response, answers the bytes the built-in server answers; and the CloudFormation
template ties the function, the handler, the policies and the bucket."""
from __future__ import annotations

import base64
import contextlib
import fnmatch
import gzip
import hashlib
import io
import json
import os
import subprocess
import threading
import zipfile
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
from generator.api.urls import CURRENT, RESOURCES, detail_file
from generator.hosts import cloudfront
from generator.hosts.deploy import deploy
from golden_files import BOOK, GOLDEN, ROUTES, UNKNOWN, put_together
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
        answers.update(zip(map(id, entries), run(code, [request_event(entry) for entry in entries]), strict=True))
    for entry in table:
        expected, got = entry["answer"], answers[id(entry)]
        built = expected["file"] is not None and (site / CURRENT / expected["file"]).is_file()
        if expected["forward"]:
            want = expected_reply(503, meta.WRITE_UNAVAILABLE.decode(), expected["allow"], None, info.cache_control)
        elif expected["page"] is not None and not built:  # put together by the handler, the query kept
            want = {**request_event(entry)["request"], "uri": cloudfront.PAGES + expected["page"]}
        elif expected["file"] is not None:  # (a missing detail is the bucket's to answer)
            want = {**request_event(entry)["request"], "uri": "/" + expected["file"], "querystring": {}}
        else:
            want = expected_reply(expected["status"], expected["body"] or "", expected["allow"],
                                  expected["location"], info.cache_control)
        assert got == want, entry["request"]


@needs_node
def test_the_function_passes_a_query_string_on_as_cloudfront_gives_it(site):
    """A plain spelling names its file; any other (a repeated parameter, escapes) goes to the
    handler as CloudFront gave it, for the handler to read as Django does."""
    code = (site / cloudfront.FUNCTION).read_text(encoding="utf-8")
    sent = [event("GET", "/api/v1/books/", "limit=24&offset=24&limit=12"),
            event("GET", "/api/v1/books/", "limit=%2012%20&offset=%2B24"), event("GET", "/api/v1/books/", "offset=24&limit=12"),
            event("GET", f"/api/v1/books/%37{BOOK[1:]}/", ""), event("GET", "/api/v1/books/%E0%A4%A/", "")]
    got = run(code, sent)
    assert [(answer.get("uri"), answer.get("querystring")) for answer in got[:4]] == [
        ("/_pages/books", sent[0]["request"]["querystring"]), ("/_pages/books", sent[1]["request"]["querystring"]),
        ("/api/v1/books/pages/12/0/24.json", {}), (f"/api/v1/books/76/{BOOK}.json", {})]
    assert sent[0]["request"]["querystring"]["limit"]["multiValue"] == [{"value": "24"}, {"value": "12"}]
    assert got[4]["statusCode"] == 404 and got[4]["body"] == meta.NOT_FOUND.decode()  # (not UTF-8: kept as sent)


@needs_node
def test_the_counts_decide_which_pages_exist(site):
    """The function must be published again when a count changes: it is what tells a page
    file from a page the handler puts together."""
    known = facts(site)
    grown = cloudfront.Facts({**known.counts, "books": 50}, known.sizes, known.default)
    requests = [event("GET", "/api/v1/books/", "offset=48"), event("GET", "/api/v1/books/", "limit=24&offset=48")]
    exactly = cloudfront.Facts({**known.counts, "books": 48}, known.sizes, known.default)
    now = run(cloudfront.function("", known, "no-cache"), requests)
    later = run(cloudfront.function("", grown, "no-cache"), requests)
    assert [(answer["uri"], answer["querystring"]) for answer in now] == [
        ("/_pages/books", {"offset": {"value": "48"}}),
        ("/_pages/books", {"limit": {"value": "24"}, "offset": {"value": "48"}})]
    assert [answer["uri"] for answer in run(cloudfront.function("", exactly, "no-cache"), requests)] == [
        "/_pages/books", "/_pages/books"]
    assert [(answer["uri"], answer["querystring"]) for answer in later] == [
        ("/api/v1/books/pages/default/0/48.json", {}), ("/api/v1/books/pages/24/0/48.json", {})]
    empty = cloudfront.Facts({**known.counts, "user": 0}, known.sizes, known.default)
    first, second = run(cloudfront.function("", empty, "no-cache"),
                        [event("GET", "/api/v1/user/", ""), event("GET", "/api/v1/user/", "offset=12")])
    assert first["uri"] == "/api/v1/user/pages/default/0/0.json" and second["uri"] == "/_pages/user"


def test_the_function_fits_a_cloudfront_function(site):
    long = cloudfront.function("/a/longer/path/prefix", cloudfront.Facts(
        {r.name: 9_999_999 for r in RESOURCES}, [12, 24, 48, 100], 12), "public, max-age=600, stale-while-revalidate=60")
    assert len(long.encode("utf-8")) <= cloudfront.MAX_FUNCTION


def test_a_site_whose_function_would_not_fit_gets_no_cloudfront_files(tmp_path, capsys):
    out = tmp_path / "site"
    compose.build(SAMPLE, out, base_url="https://ketab.example.ir/" + "p" * 1000)
    assert not any((out / path).exists() for path in cloudfront.FILES)
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
    # (no error page: one would replace the handler's 404 of each path with one body for all)
    assert config["CustomErrorResponses"] == [{"ErrorCode": code, "ErrorCachingMinTTL": cloudfront.ERROR_TTL}
                                              for code in (403, 404)]
    assert [b["PathPattern"] for b in config["CacheBehaviors"]] == [f"/api/v1/{r.name}/" for r in RESOURCES]
    assert [b["ResponseHeadersPolicyId"]["Ref"] for b in config["CacheBehaviors"]] == [
        "WriteHeaders" if r.writable else "ReadHeaders" for r in RESOURCES]
    statement, = resources["BucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "s3:GetObject"  # (no ListBucket: a missing object is a 403)


def test_the_template_calls_the_handler_from_each_list_and_on_every_origin_response(site):
    """Only the lists' behaviours call the handler on origin request (a page no file holds is
    always a list's); every behaviour calls it on origin response (a missing file's 404); a
    numbered version of the function whose archive is the one the build wrote."""
    resources = stack(site)["Resources"]
    config = resources["Distribution"]["Properties"]["DistributionConfig"]
    calls = {event: {"EventType": event, "LambdaFunctionARN": {"Ref": "PagesVersion"}}
             for event in ("origin-request", "origin-response")}
    for behaviour in config["CacheBehaviors"]:
        assert behaviour["LambdaFunctionAssociations"] == [calls["origin-request"], calls["origin-response"]]
    assert config["DefaultCacheBehavior"]["LambdaFunctionAssociations"] == [calls["origin-response"]]
    function = resources["Pages"]["Properties"]
    assert (function["Runtime"], function["Handler"], function["Code"]) == ("nodejs22.x", "pages.handler", "pages.zip")
    assert function["Role"] == {"Fn::GetAtt": ["PagesRole", "Arn"]} and function["Timeout"] <= 30
    archive = (site / cloudfront.PAGES_ZIP).read_bytes()
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        assert opened.namelist() == ["pages.mjs"]
        assert opened.read("pages.mjs") == (site / cloudfront.PAGES_MODULE).read_bytes()
    version = resources["PagesVersion"]["Properties"]
    assert version == {"FunctionName": {"Ref": "Pages"},
                       "CodeSha256": base64.b64encode(hashlib.sha256(archive).digest()).decode()}
    role = resources["PagesRole"]["Properties"]
    assert set(role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["Service"]) == {
        "lambda.amazonaws.com", "edgelambda.amazonaws.com"}
    granted = {s["Action"]: s["Resource"]["Fn::Sub"] for s in role["Policies"][0]["PolicyDocument"]["Statement"]}
    assert granted == {"s3:GetObject": "arn:${AWS::Partition}:s3:::${Bucket}${OriginPath}/*",
                       "s3:ListBucket": "arn:${AWS::Partition}:s3:::${Bucket}"}


def test_a_rebuild_of_the_same_code_keeps_the_archive(site, tmp_path):
    """The same pages.mjs makes the same archive: no new version of the function without a change."""
    assert cloudfront.package(cloudfront.pages_module("no-cache")) == cloudfront.package(cloudfront.pages_module("no-cache"))
    assert cloudfront.package(cloudfront.pages_module("no-cache")) != cloudfront.package(cloudfront.pages_module("public"))


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


# ---- the pages' handler -------------------------------------------------------------------------

# pages.mjs as Lambda@Edge runs it: handler(event) for each origin-request event, its objects
# read (readFrom) from a directory or a bucket's URL, under the origin's path, as S3 keys.
HANDLER = """
import {readFileSync, statSync} from "node:fs";
const [module, source] = process.argv.slice(1);  // (node -e: no script name)
const pages = await import(module);
if (source) pages.readFrom((origin) => async (key) => {
  const where = source + origin.s3.path + "/" + key;
  if (source.startsWith("http")) {
    const found = await fetch(where);
    if (found.status !== 200) return null;
    return {bytes: new Uint8Array(await found.arrayBuffer()), modified: found.headers.get("Last-Modified")};
  }
  try {
    return {bytes: new Uint8Array(readFileSync(where)), modified: statSync(where).mtime.toUTCString()};
  } catch (error) {
    return null;
  }
});
const answers = [];
for (const event of JSON.parse(readFileSync(0, "utf8"))) answers.push(await pages.handler(event));
process.stdout.write(JSON.stringify(answers));
"""


def handle(module: Path, events: list[dict], source: str | None = None, env: dict | None = None) -> list[dict]:
    done = subprocess.run(["node", "--input-type=module", "-e", HANDLER, "--", module.as_uri(), source or ""],
                          input=json.dumps(events), capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def origin_event(method: str, uri: str, query: str, request_headers: dict | None = None, path: str = "",
                 domain: str = "catalogue-origin.s3.us-east-1.amazonaws.com", region: str = "us-east-1") -> dict:
    """A request CloudFront sends on to an S3 origin, as Lambda@Edge's origin-request event."""
    sent = {"host": [{"key": "Host", "value": domain}], "user-agent": [{"key": "User-Agent", "value": "Amazon CloudFront"}]}
    sent.update({k.lower(): [{"key": k, "value": v}] for k, v in (request_headers or {}).items()})
    return {"Records": [{"cf": {
        "config": {"distributionDomainName": "d111111abcdef8.cloudfront.net", "distributionId": "EDFDVBD6EXAMPLE",
                   "eventType": "origin-request", "requestId": "4TyzHTaYWb1GX1qTfsHhEqV6HUDd_BzoBZnwfnvQc_1oF26ClkoUSEQ=="},
        "request": {"clientIp": "192.0.2.1", "headers": sent, "method": method, "querystring": query, "uri": uri,
                    "origin": {"s3": {"authMethod": "origin-access-identity", "customHeaders": {}, "domainName": domain,
                                      "path": path, "region": region}}}}}]}


def response_event(uri: str, status: int, response_headers: dict, path: str = "") -> dict:
    """The origin's answer to a request CloudFront sent on, as Lambda@Edge's origin-response
    event (which never shows the body)."""
    event = origin_event("GET", uri, "", path=path)
    cf = event["Records"][0]["cf"]
    cf["config"]["eventType"] = "origin-response"
    cf["response"] = {"status": str(status), "statusDescription": HTTPStatus(status).phrase,
                      "headers": {k.lower(): [{"key": k, "value": v}] for k, v in response_headers.items()}}
    return event


def made(answer: dict) -> tuple[int, bytes, dict[str, str]]:
    """A generated response's status, body and headers (one value each)."""
    body = answer["body"].encode() if answer["bodyEncoding"] == "text" else base64.b64decode(answer["body"])
    return int(answer["status"]), body, {name: values[0]["value"] for name, values in answer["headers"].items()}


@pytest.fixture(scope="module")
def handler_module(site) -> Path:
    return site / cloudfront.PAGES_MODULE


QUERIES = ["limit=5&offset=3&utm_source=x", "offset=480", "limit=24&offset=24&limit=12", "limit=%2012%20&offset=%2B24",
           "limit=12&offset=11", "", "&".join(["a=1"] * 1001)]


@needs_node
def test_the_handler_answers_pages_as_the_python_hosts(site, handler_module):
    answers = handle(handler_module, [origin_event("GET", "/_pages/books", query) for query in QUERIES], str(site / CURRENT))
    info = SiteInfo.of_site(site)
    for query, answer in zip(QUERIES, answers, strict=True):
        status, body, sent = made(answer)
        assert (status, body) == put_together(site / CURRENT, "books", query), query
        assert answer["bodyEncoding"] == "text" and isinstance(answer["status"], str)
        assert "content-length" not in sent  # (CloudFront's to set)
        assert sent["content-type"] == "application/json" and sent["allow"] == ALLOW_READ
        assert {k: sent[k.lower()] for k in headers(info.cache_control)} == headers(info.cache_control)
        assert ("etag" in sent and "last-modified" in sent) == (status == 200), query
        assert answer["headers"]["etag" if status == 200 else "content-type"][0]["key"] in ("ETag", "Content-Type")


@needs_node
def test_the_handler_compresses_answers_heads_and_passes_files_on(site, handler_module):
    files = origin_event("GET", "/api/v1/books/pages/12/0/0.json", "", path="/catalogue")
    events = [origin_event("GET", "/_pages/books", "limit=5", {"Accept-Encoding": "br,gzip"}),
              origin_event("HEAD", "/_pages/bookshelf", "offset=2"), files, origin_event("GET", "/_pages/nothing", "")]
    zipped, head, passed, unknown = handle(handler_module, events, str(site / CURRENT))
    status, body, sent = made(zipped)
    assert zipped["bodyEncoding"] == "base64" and sent["content-encoding"] == "gzip" and sent["etag"].endswith('-gzip"')
    assert (status, gzip.decompress(body)) == put_together(site / CURRENT, "books", "limit=5")
    # A HEAD is made as its GET: CloudFront sets the length from the body and sends none.
    assert made(head)[:2] == put_together(site / CURRENT, "bookshelf", "offset=2")
    assert made(head)[2]["allow"] == ALLOW_WRITE
    assert passed == files["Records"][0]["cf"]["request"]
    assert made(unknown)[:2] == (404, meta.NOT_FOUND)


# What S3 answers for a missing object to a distribution that may not list the bucket.
S3_DENIED = {"Content-Type": "application/xml", "Transfer-Encoding": "chunked", "Date": "Sat, 28 Nov 2026 12:00:00 GMT",
             "Server": "AmazonS3", "x-amz-request-id": "0AB1C2D3E4F5A6B7", "x-amz-id-2": "EXAMPLE"}


@needs_node
def test_the_handler_answers_a_missing_file_with_the_404_of_its_path(site, handler_module):
    """On origin response, S3's 403 (or 404) for a missing file becomes the 404 the route
    table gives its path: DRF's message naming the collection's record for a detail, the
    generic one else; S3's own headers left out, the rest kept. Any other answer passes."""
    details = [detail_file(r.name, UNKNOWN[:2], UNKNOWN) for r in RESOURCES]
    found = {"Content-Type": "application/json", "ETag": '"5d41402abc4b2a76b9719d911017c592"', "Content-Length": "42"}
    events = ([response_event("/" + file, 403, S3_DENIED, path="/catalogue") for file in details]
              + [response_event("/" + details[0], 404, S3_DENIED), response_event("/api/v1/index.json", 403, S3_DENIED),
                 response_event("/_meta/openapi.json", 403, S3_DENIED), response_event("/" + details[1], 200, found)])
    answers = handle(handler_module, events)
    expected = [meta.no_match(r) for r in RESOURCES] + [meta.no_match(RESOURCES[0]), meta.NOT_FOUND, meta.NOT_FOUND]
    assert len(answers) == len(events)
    for event, answer, body in zip(events[:-1], answers[:-1], expected, strict=True):  # (the last one passes: below)
        status, got, sent = made(answer)
        assert (status, got) == (404, body), event["Records"][0]["cf"]["request"]["uri"]
        assert sent == {"content-type": "application/json", "transfer-encoding": "chunked",
                        "date": S3_DENIED["Date"], "server": "AmazonS3"}
    assert answers[-1] == events[-1]["Records"][0]["cf"]["response"]


@needs_node
def test_a_page_over_the_generated_response_limit_answers_the_400(site, tmp_path):
    """CloudFront takes at most 1 MB of a generated response: a larger page is the 400
    that names the largest page (docs/spec/query.md), here with a limit of 5,000 bytes."""
    module = tmp_path / "pages.mjs"
    module.write_text(cloudfront.pages_module(SiteInfo.of_site(site).cache_control, page_bytes=5000), encoding="utf-8")
    small, large = handle(module, [origin_event("GET", "/_pages/user", "limit=3"),
                                   origin_event("GET", "/_pages/books", "limit=24")], str(site / CURRENT))
    assert made(small)[:2] == put_together(site / CURRENT, "user", "limit=3")
    status, body, sent = made(large)
    largest = int(json.loads(body)["detail"].split("at most ")[1].split(" ")[0])
    assert status == 400 and json.loads(body)["detail"].startswith(f"This host answers pages of at most {largest} records")
    assert 0 < largest < 24 and "etag" not in sent


@needs_node
def test_a_page_of_exactly_the_response_limit_is_answered(site, tmp_path):
    """At most the limit's bytes: a page of exactly as many is answered, one byte more is the 400."""
    page = put_together(site / CURRENT, "user", "limit=3")[1]
    for page_bytes, status in ((len(page), 200), (len(page) - 1, 400)):
        module = tmp_path / f"pages-{page_bytes}.mjs"
        module.write_text(cloudfront.pages_module(SiteInfo.of_site(site).cache_control, page_bytes=page_bytes),
                          encoding="utf-8")
        answer, = handle(module, [origin_event("GET", "/_pages/user", "limit=3")], str(site / CURRENT))
        assert made(answer)[0] == status, page_bytes


@needs_node
def test_the_400_of_a_page_too_large_names_the_largest_page_twice(site, tmp_path):
    module = tmp_path / "pages.mjs"
    module.write_text(cloudfront.pages_module(SiteInfo.of_site(site).cache_control, page_bytes=5000), encoding="utf-8")
    large, = handle(module, [origin_event("GET", "/_pages/books", "limit=24")], str(site / CURRENT))
    detail = json.loads(made(large)[1])["detail"]
    largest = int(detail.split("at most ")[1].split(" ")[0])
    assert detail == meta.PAGE_TOO_LARGE.format(largest=largest)


# A stand-in for the AWS SDK's S3 client (the Lambda runtime provides the real one): objects
# from <root>/<bucket>/<key>, and every client and GetObject written down.
SDK = """
import {readFileSync, statSync, appendFileSync} from "node:fs";
const note = (what) => appendFileSync(process.env.SDK_LOG, JSON.stringify(what) + "\\n");
export class GetObjectCommand { constructor(input) { this.input = input; } }
export class S3Client {
  constructor(config) { note({client: config}); }
  async send(command) {
    const {Bucket, Key} = command.input;
    note({get: command.input});
    if (Key.includes("denied")) throw Object.assign(new Error("Access Denied"), {name: "AccessDenied", $metadata: {httpStatusCode: 403}});
    const file = process.env.SDK_ROOT + "/" + Bucket + "/" + Key;
    let bytes;
    try { bytes = readFileSync(file); }
    catch (error) { throw Object.assign(new Error("NoSuchKey"), {name: "NoSuchKey", $metadata: {httpStatusCode: 404}}); }
    return {Body: {transformToByteArray: async () => new Uint8Array(bytes)}, LastModified: statSync(file).mtime};
  }
}
"""


@needs_node
def test_the_handler_reads_the_bucket_and_path_of_its_origin(site, handler_module, tmp_path):
    """In AWS the handler reads S3 with the SDK: the bucket named by the origin's domain, in
    the origin's region, each key under the origin path; a missing object is a missing
    file, any other failure is the handler's."""
    sdk = tmp_path / "node_modules" / "@aws-sdk" / "client-s3"
    sdk.mkdir(parents=True)
    (sdk / "package.json").write_text('{"name": "@aws-sdk/client-s3", "type": "module", "exports": "./index.mjs"}')
    (sdk / "index.mjs").write_text(SDK, encoding="utf-8")
    module = tmp_path / "pages.mjs"
    module.write_bytes(handler_module.read_bytes())
    (tmp_path / "buckets" / "my.catalogue" / "v1").mkdir(parents=True)
    (tmp_path / "buckets" / "my.catalogue" / "v1" / "site").symlink_to(site / CURRENT)
    log = tmp_path / "sdk.log"
    env = {"PATH": os.environ["PATH"], "SDK_ROOT": str(tmp_path / "buckets"), "SDK_LOG": str(log)}
    where = {"path": "/v1/site", "domain": "my.catalogue.s3.eu-west-1.amazonaws.com", "region": "eu-west-1"}
    answer, = handle(module, [origin_event("GET", "/_pages/books", "limit=5&offset=20000", **where)], env=env)
    assert made(answer)[:2] == put_together(site / CURRENT, "books", "limit=5&offset=20000")
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    assert notes[0] == {"client": {"region": "eu-west-1"}}
    keys = [note["get"]["Key"] for note in notes[1:]]
    assert {note["get"]["Bucket"] for note in notes[1:]} == {"my.catalogue"} and keys[0] == "v1/site/_meta/site.json"
    assert all(key.startswith("v1/site/api/v1/books/pages/") for key in keys[1:])  # (block 2's index: missing)
    done = subprocess.run(["node", "--input-type=module", "-e", HANDLER, "--", module.as_uri(), ""],
                          input=json.dumps([origin_event("GET", "/_pages/books", "", path="/denied")]),
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0 and "Access Denied" in done.stderr


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
    """Each request through the function, then (for a rewritten one) the origin: for a page
    sent to the handler, the handler reading the bucket; else the bucket, an object's bytes
    and metadata or for a missing one S3's 403, through the handler on origin response; with
    the headers the response headers policy of the viewer's path adds."""
    code, template = (site / cloudfront.FUNCTION).read_text(encoding="utf-8"), stack(site)
    decided = run(code, [event(*request) for request in requests])
    sent_on = [origin_event(got["method"], got["uri"], query_string(got["querystring"]), path="/catalogue")
               for got in decided if got.get("uri", "").startswith(cloudfront.PAGES)]
    with signed_reads(client) as bucket:
        handled = iter(handle(site / cloudfront.PAGES_MODULE, sent_on, bucket) if sent_on else [])
    objects = [bucket_answer(client, got["uri"]) for got in decided
               if "uri" in got and not got["uri"].startswith(cloudfront.PAGES)]
    responded = iter(zip(objects, handle(site / cloudfront.PAGES_MODULE, [event for _, event in objects]), strict=True))
    answers = []
    for request, got in zip(requests, decided, strict=True):
        if "statusCode" in got:
            answers.append((got["statusCode"], got["body"].encode(), {k: v["value"] for k, v in got["headers"].items()}))
            continue
        added = {k.lower(): v for k, v in policy_headers(template, request[1]).items()}
        if got["uri"].startswith(cloudfront.PAGES):
            status, body, sent = made(next(handled))  # (the GET's body: CloudFront sends none to a HEAD)
            answers.append((status, b"" if request[0] == "HEAD" else body, {**added, **sent}))
            continue
        (stored, _), response = next(responded)
        status, body, sent = made({"bodyEncoding": "text", "body": "", **response})
        answers.append((status, body if "body" in response else stored, {**added, **sent}))
    return answers


def bucket_answer(client, uri: str) -> tuple[bytes, dict]:
    """The bucket's answer to the object at uri: its bytes and the origin-response event of
    its status and metadata; for a missing object, S3's 403 (the distribution may not list)."""
    try:
        found = client.get_object(Bucket="catalogue-origin", Key="catalogue" + uri)
    except ClientError as exc:
        assert exc.response["Error"]["Code"] in ("NoSuchKey", "AccessDenied", "404", "403")
        return b"<Error><Code>AccessDenied</Code></Error>", response_event(uri, 403, S3_DENIED, path="/catalogue")
    metadata = {"Content-Type": found["ContentType"], "Cache-Control": found["CacheControl"]}
    return found["Body"].read(), response_event(uri, 200, metadata, path="/catalogue")


@contextlib.contextmanager
def signed_reads(client):
    """The bucket over plain HTTP for the handler's reads (GET /<key>: the object, or 404),
    each read made by the S3 client, signed as the handler's role reads it."""
    class Reads(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                found = client.get_object(Bucket="catalogue-origin", Key=self.path[1:])
            except ClientError:
                self.send_error(404)
                return
            body = found["Body"].read()
            self.send_response(200)
            self.send_header("Last-Modified", formatdate(found["LastModified"].timestamp(), usegmt=True))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Reads)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def query_string(querystring: dict) -> str:
    """A function's query string object as CloudFront sends it on: every value, in order."""
    return "&".join(f"{name}={value['value']}" for name, entry in querystring.items()
                    for value in entry.get("multiValue", [entry]))


REQUESTS = [
    ("GET", "/api/v1/", ""), ("GET", "/api/v1/books/", ""), ("GET", "/api/v1/books/", "offset=24&limit=12"),
    ("GET", "/api/v1/books/", "limit=24&offset=24", {"Accept-Encoding": "gzip"}), ("GET", "/api/v1/user/", "limit=24"),
    ("GET", f"/api/v1/books/{BOOK}/", "", {"Accept-Encoding": "gzip"}), ("GET", "/api/v1/books/", "offset=48"),
    ("GET", "/api/v1/books/", "limit=5"), ("GET", "/api/v1/books/", "offset=13"), ("OPTIONS", "/api/v1/user/", ""),
    ("OPTIONS", f"/api/v1/books/{BOOK}/", ""), ("GET", "/api/v1/books", "offset=24&limit=12"),
    ("PUT", "/api/v1/books/", ""), ("POST", "/api/v1/bookshelf/", ""), ("GET", "/api/v1/nothing/", ""),
    ("GET", "/api/v1/books/not-a-uuid/", ""), ("GET", "/api/v1/books/", "limit=5&offset=3&utm_source=x"),
    ("GET", "/api/v1/user/", "offset=2&limit=3&offset=4"), ("HEAD", "/api/v1/bookshelf/", "limit=7"),
]


@needs_node
def test_the_function_and_the_bucket_answer_as_the_built_in_server(site, origin, builtin):
    answers = through_cloudfront(site, origin, [request[:3] for request in REQUESTS])
    for request, (status, body, sent) in zip(REQUESTS, answers, strict=True):
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
def test_a_missing_detail_gets_its_collections_404_body(site, origin, builtin):
    """The bucket's 403 for a missing detail, through the handler on origin response: the
    body DRF and every other host answer, naming the collection's record."""
    requests = [("GET", f"/api/v1/{r.name}/{UNKNOWN}/", "") for r in RESOURCES]
    for resource, request, (status, body, sent) in zip(RESOURCES, requests, through_cloudfront(site, origin, requests),
                                                       strict=True):
        served = builtin.get(request[1])
        assert (status, body) == (served.status, served.body) == (404, meta.no_match(resource)), request
        for name in ["Content-Type", *headers("")]:
            assert sent[name.lower()] == served.header(name), (request, name)
