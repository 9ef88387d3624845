"""The CloudFront and S3 host: a viewer-request function around the router, an
edge handler that puts together the pages no file holds and answers a missing file's 404,
and a CloudFormation template tying them to a private bucket, response headers and the
distribution.

    <site>/hosts/cloudfront/function.js     the CloudFront Function (cloudfront-js-2.0)
    <site>/hosts/cloudfront/pages.mjs       the Lambda@Edge handler (Node.js 22, an ES module)
    <site>/hosts/cloudfront/pages.zip       pages.mjs as Lambda takes it (the same bytes each build)
    <site>/hosts/cloudfront/template.yaml   the stack, with function.js inlined and pages.zip named

The function is the JavaScript router (hosts/router.py, the route table) and a small
handler: it answers what the route table answers with a status and body (OPTIONS, 301,
404, 405; 503 for a POST: this host is read-only) and rewrites every other request: a file
to its object's key, and a page no file holds to PAGES + its collection, the query string
kept. A bucket cannot say which of two statuses a missing object means, so the function
knows, from the published site, each collection's count and the page sizes: a page file
that was not built is never asked of the bucket. The counts make the function part of each
deploy. Only a missing detail (or API root) reaches the bucket's 403, and CloudFront's own
error responses give one body for the whole distribution, where DRF names the collection's
record ("No Book matches the given query."); a CloudFront Function never sees the origin's
status. So the handler is called on origin response too, from every behaviour: on S3's 403
or 404 it answers 404 with the body the route table gives the missing file
(api/routes.py missing_files).

A CloudFront Function cannot read objects, so the pages sent to PAGES are put together by
pages.mjs, on origin request: templates/pages.js.j2 (the JavaScript hosts' one
implementation) reading the pages and indexes from the S3 origin. Its caps: LIMITS
(the time and memory Lambda@Edge gives it), and the body CloudFront takes from a generated response (1 MB): a
larger page answers the 400 that names the largest page (docs/spec/query.md). Only the collections'
lists can ask for such a page, so only their cache behaviours call it.

`catalogue serve --server cloudfront` runs both here (cloudfront.mjs, in Node): the
function in a bare context as CloudFront runs it, the handler reading the published files
instead of S3, and between them what CloudFront does (behaviours, compression, response
headers policies, 304).
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import orjson

from ..api import meta, routes
from ..api.serving import ACCEPTS_GZIP, ALLOW_READ, ALLOW_WRITE, HTML_TYPE, JSON_TYPE, SiteInfo, allow, headers
from ..api.urls import API, CURRENT, DEFAULT_LIMIT, HOSTS, RESOURCES, first_page_path, page_file
from ..errors import CatalogueError
from ..system import foreground
from .contract import Host, Limits, Local
from .files import replace, replace_bytes, templates
from . import router
from .router import answer_values, javascript, js_regex

DIRECTORY = f"{HOSTS}/cloudfront"  # <site>/hosts/cloudfront/
FUNCTION = f"{DIRECTORY}/function.js"
PAGES_MODULE = f"{DIRECTORY}/pages.mjs"
PAGES_ZIP = f"{DIRECTORY}/pages.zip"
TEMPLATE = f"{DIRECTORY}/template.yaml"
FILES = (FUNCTION, PAGES_MODULE, PAGES_ZIP, TEMPLATE)
# The URI the function gives a page no file holds (+ the collection's name): no object has
# it, and only the handler answers it.
PAGES = "/_pages/"
MAX_FUNCTION = 10 * 1024  # bytes of code a CloudFront Function may hold
# A response generated at origin request may be 1 MB, headers included (read as 10^6
# bytes, the smaller reading); the page's body gets what its headers leave, with room.
MAX_GENERATED = 1_000_000
PAGE_BYTES = MAX_GENERATED - 4096
# Lambda@Edge at origin request: up to 30 s (TIMEOUT) and the memory the stack gives it (its
# quotas allow 128 MB to 10 GB), and no count of GetObjects; each is tens of milliseconds
# from the edge to the bucket's region, one after the other, so the time allows about
# TIMEOUT / READ_SECONDS of them.
TIMEOUT, MEMORY_MB, READ_SECONDS = 30, 512, 0.05
LIMITS = Limits(objects=round(TIMEOUT / READ_SECONDS), memory=MEMORY_MB << 20,
                source="https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/"
                       "cloudfront-limits.html#limits-lambda-at-edge")
ERROR_TTL = 10  # seconds CloudFront keeps a 404 for a missing detail: a new record shows soon
BUCKET_MISSES = (403, 404)  # S3's statuses for a missing object (403: the distribution may not list)
RUNNER = Path(__file__).with_name("cloudfront.mjs")
INSTALL_HINT = "node is not installed: `catalogue serve --server cloudfront` runs the function and the handler in it"
# The router's comment lines and its indentation: a CloudFront Function has no use for them,
# and they take bytes of its 10 KB. (A line's leading blanks are never inside a string: an
# ES5 string cannot span lines.)
_UNUSED = re.compile(r"(?m)^[ \t]*//.*\n|^[ \t]+|^\n")
_DECLARATION = re.compile(r"(?m)^(var [A-Z_]+) = ")  # (a line's first `=`: never in a string)


class Facts:
    """What the function must know of the published generation: how pages are named and
    which exist."""

    def __init__(self, counts: dict[str, int], sizes: list[int], default: int) -> None:
        self.counts = counts
        self.sizes = sizes
        self.default = default

    @classmethod
    def of_generation(cls, root: Path) -> "Facts":
        counts = {r.name: orjson.loads((root / first_page_path(r)).read_bytes())["count"] for r in RESOURCES}
        pages = root / API / RESOURCES[0].name / "pages"  # (every collection has the same sizes)
        sizes = sorted(int(p.name) for p in pages.iterdir() if p.name.isdigit())
        default = int(os.readlink(pages / DEFAULT_LIMIT))
        return cls(counts, sizes, default)


def write(site: Path) -> list[Path]:
    """The CloudFront files for the published site, beside the other hosts' files; none
    (and a warning) when the function would not fit: the site itself is fine."""
    SiteInfo.of_site(site)  # (says so when there is no built site)
    return write_generation(site, (site / CURRENT).resolve())


def write_generation(site: Path, generation: Path) -> list[Path]:
    """The CloudFront files for one generation of the site (the published one, read once:
    a build may publish another meanwhile)."""
    info = SiteInfo.of_generation(generation)
    code = function(info.prefix, Facts.of_generation(generation), info.cache_control)
    size = len(code.encode("utf-8"))
    if size > MAX_FUNCTION:
        for path in FILES:  # (never leave a stale function to be deployed)
            (site / path).unlink(missing_ok=True)
        print(f"warning: no CloudFront files: the function would be {size:,} bytes, over CloudFront's "
              f"{MAX_FUNCTION:,} (a shorter base_url path or cache_control would fit)", file=sys.stderr)
        return []
    handler = pages_module(info.cache_control)
    archive = package(handler)
    replace(site / FUNCTION, code)
    replace(site / PAGES_MODULE, handler)
    replace_bytes(site / PAGES_ZIP, archive)
    replace(site / TEMPLATE, template(code, archive, info))
    return [site / path for path in FILES]


def function(prefix: str, facts: Facts, cache_control: str) -> str:
    """The viewer-request function of a site whose base_url has this path prefix."""
    sizes = {str(size): size for size in facts.sizes} | {DEFAULT_LIMIT: facts.default}
    # A page file's name as a pattern, from api/urls.py's own: its name, limit and offset.
    page = re.escape(page_file("NAMEPART", "LIMITPART", "BUCKETPART", "OFFSETPART"))
    ordered = sorted(("name", "limit", "offset"), key=lambda group: page.index(f"{group.upper()}PART"))
    groups = {group: number for number, group in enumerate(ordered, 1)}
    for group in ordered:
        page = page.replace(f"{group.upper()}PART", "([^/]+)")
    page = page.replace("BUCKETPART", "[^/]+")
    compact = {"separators": (",", ":")}
    return templates().get_template("cloudfront.js.j2").render(
        router=_DECLARATION.sub(r"\1=", _UNUSED.sub("", javascript(prefix))).rstrip("\n"),
        counts=json.dumps(facts.counts, **compact), sizes=json.dumps(sizes, **compact), pages=json.dumps(PAGES),
        unavailable=json.dumps(meta.WRITE_UNAVAILABLE.decode()),
        headers=json.dumps(answer_headers(cache_control), **compact), page=json.dumps(f"^{page}$"), **groups)


def pages_module(cache_control: str, page_bytes: int = PAGE_BYTES) -> str:
    """The origin-request handler (an ES module) of a site whose answers carry this
    Cache-Control."""
    return templates().get_template("cloudfront-pages.mjs.j2").render(
        pages=json.dumps(PAGES), allow=json.dumps({r.name: allow(r) for r in RESOURCES}),
        not_found=json.dumps(meta.NOT_FOUND.decode()), missing=missing_table(),
        misses=json.dumps([str(status) for status in BUCKET_MISSES]), bytes=page_bytes, **LIMITS.javascript(),
        accepts_gzip=js_regex(ACCEPTS_GZIP, whole=False)[0], **answer_values(cache_control))


def missing_table() -> str:
    """The route table's 404 bodies by missing file (routes.missing_files), as the handler's
    JSON: [[the source of a JavaScript RegExp, the body], ...]."""
    return json.dumps([[json.loads(js_regex(pattern)[0]), body.decode()]
                       for pattern, body in routes.missing_files(routes.Bodies())], ensure_ascii=False)


def package(handler: str) -> bytes:
    """pages.mjs as the zip archive Lambda runs, the same bytes for the same code (its
    SHA-256 names the function's version in the stack)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        entry = zipfile.ZipInfo(Path(PAGES_MODULE).name, date_time=(1980, 1, 1, 0, 0, 0))
        entry.external_attr = 0o644 << 16
        entry.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(entry, handler)
    return buffer.getvalue()


def answer_headers(cache_control: str) -> dict[str, str]:
    """The headers of every answer the function makes itself (Allow aside), named as
    CloudFront Functions name them (lower case)."""
    return {"content-type": "application/json", **{k.lower(): v for k, v in headers(cache_control).items()}}


# ---- the stack ---------------------------------------------------------------------------

# Headers the response headers policies set with their own settings rather than as custom
# headers, and how (serving.headers() names every header an answer carries).
SECURITY = {"X-Content-Type-Options": ("ContentTypeOptions", "nosniff", "{Override: true}"),
            "X-Frame-Options": ("FrameOptions", "DENY", "{FrameOption: DENY, Override: true}"),
            "Referrer-Policy": ("ReferrerPolicy", "same-origin", "{ReferrerPolicy: same-origin, Override: true}")}
# Files may be compressed by CloudFront (JSON of 1,000 bytes or more), so their Vary names both.
VARY_FILES = "Accept, Accept-Encoding"


def policies(cache_control: str) -> list[dict]:
    """One response headers policy per Allow: the writable lists', and everything else's."""
    found = []
    for policy_id, name, allowed in (("ReadHeaders", "read", ALLOW_READ), ("WriteHeaders", "write", ALLOW_WRITE)):
        custom = []
        for header, value in headers(cache_control).items():
            if header in SECURITY:
                if SECURITY[header][1] != value:
                    raise ValueError(f"{header}: {value} is not what the response headers policy sets")
                continue
            custom.append({"name": header, "value": VARY_FILES if header == "Vary" else value, "override": "true"})
        # The function's own Allow wins over the path group's (its answers name their route's).
        custom.append({"name": "Allow", "value": allowed, "override": "false"})
        found.append({"id": policy_id, "name": name, "allow": allowed, "custom": custom})
    return found


def behaviours(prefix: str) -> list[dict]:
    """The cache behaviours besides the default: each collection's list, by its viewer path,
    with its Allow's policy and the handler on origin request (only a list asks for a page no
    file holds; the default behaviour's requests go to the bucket without a Lambda call).
    Every behaviour calls the handler on origin response, for a missing file's 404."""
    return [{"path": f"{prefix}/{API}/{r.name}/", "policy": "WriteHeaders" if r.writable else "ReadHeaders",
             "pages": True} for r in RESOURCES]


DEFAULT_BEHAVIOUR = {"policy": "ReadHeaders", "pages": False}


def template(code: str, archive: bytes, info: SiteInfo) -> str:
    """The CloudFormation stack with the function's code inlined and the handler's archive
    named (values are written into double-quoted YAML, hence the check)."""
    for value in (info.cache_control, info.base_url):
        if '"' in value or "\\" in value:
            raise ValueError(f"{value!r} cannot be written into the CloudFormation template")
    return templates().get_template("cloudfront.yaml.j2").render(
        function=code.rstrip("\n"), base_url=info.base_url, host=urlsplit(info.base_url).hostname,
        policies=policies(info.cache_control), behaviours=behaviours(info.prefix), default=DEFAULT_BEHAVIOUR,
        security={key: config for key, config in (v[0::2] for v in SECURITY.values())},
        misses=BUCKET_MISSES, error_ttl=ERROR_TTL, archive=Path(PAGES_ZIP).name, pages_uri=PAGES,
        timeout=TIMEOUT, memory=MEMORY_MB, handler=f"{Path(PAGES_MODULE).stem}.handler", code_sha256=base64.b64encode(hashlib.sha256(archive).digest()).decode())


# ---- here -----------------------------------------------------------------------------------

def distribution(info: SiteInfo) -> dict:
    """What the stack makes of the distribution, as the local runner carries it out: each
    behaviour's path, response headers ([name, value, override]) and whether it calls the
    handler on origin request (every one calls it on origin response); the limit of a
    generated response; the objects' types and Cache-Control as the deploy sets them; the
    Accept-Encoding that takes gzip, and brotli."""
    made = {}
    for policy in policies(info.cache_control):
        made[policy["id"]] = ([[header, value[1], True] for header, value in SECURITY.items()]
                              + [[c["name"], c["value"], c["override"] == "true"] for c in policy["custom"]])
    return {"behaviours": [{**b, "headers": made[b["policy"]]} for b in behaviours(info.prefix)],
            "default": {**DEFAULT_BEHAVIOUR, "headers": made[DEFAULT_BEHAVIOUR["policy"]]},
            "maxGenerated": MAX_GENERATED,
            "jsonType": JSON_TYPE, "htmlType": HTML_TYPE, "cacheControl": info.cache_control,
            "acceptsGzip": json.loads(js_regex(ACCEPTS_GZIP, whole=False)[0]),
            "acceptsBrotli": json.loads(js_regex(ACCEPTS_GZIP.replace("gzip", "br"), whole=False)[0])}


def deploy_here(site: Path) -> dict:
    """The CloudFront files for the published generation, as a deploy publishes them with
    it; which generation, and the distribution's part for the local runner."""
    SiteInfo.of_site(site)
    generation = (site / CURRENT).resolve()
    if not write_generation(site, generation):
        raise CatalogueError("no CloudFront function for this site: it would not fit (see the warning)")
    return {"generation": str(generation), "distribution": distribution(SiteInfo.of_generation(generation))}


def installed() -> bool:
    return shutil.which("node") is not None


def serve(site: Path, local: Local) -> int:
    """Run the site's function and handler in Node, as CloudFront would, in the foreground
    until Ctrl-C or SIGTERM; its exit status. Each new generation the site publishes is
    deployed before it is served: its function made again (the counts), as a deploy does."""
    node = shutil.which("node")
    if node is None:
        raise CatalogueError(INSTALL_HINT)
    if local.socket is not None:
        raise CatalogueError("--socket: only the built-in server listens on a Unix socket")
    site = site.absolute()
    deployed = deploy_here(site)
    options = {"site": str(site), "current": CURRENT, "function": str(site / FUNCTION),
               "pages": str(site / PAGES_MODULE), "host": local.host, "port": local.port,
               "deploy": [sys.executable, "-m", __name__, str(site)], **deployed}
    prefix = SiteInfo.of_site(site).prefix
    print(f"starting the CloudFront Function and the pages' Lambda@Edge handler in Node for {site} at "
          f"http://{local.host}:{local.port}{prefix}/{API}/", file=sys.stderr, flush=True)
    return foreground([node, str(RUNNER), json.dumps(options)])


HOST = Host("cloudfront", "CloudFront and S3: a CloudFront Function, a Lambda@Edge handler for the pages no file "
            "holds and a CloudFormation stack (hosts/cloudfront/), run here in Node",
            write, serve, installed, takes_writes=False, parts=(router.write,))


if __name__ == "__main__":
    # The local runner's deploy of a new generation: its files written, and what it serves by.
    try:
        print(json.dumps(deploy_here(Path(sys.argv[1]))))
    except CatalogueError as error:
        sys.exit(f"error: {error}")
