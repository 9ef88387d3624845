"""The CloudFront and S3 host: a viewer-request function around the router, and a
CloudFormation template tying it to a private bucket, response headers and the distribution.

    <site>/hosts/cloudfront/function.js     the CloudFront Function (cloudfront-js-2.0)
    <site>/hosts/cloudfront/template.yaml   the stack, with function.js inlined

The function is the JavaScript router (hosts/router.py, the route table) and a small
handler: it answers what the route table answers with a status and body (OPTIONS, 301,
404, 405; 503 for a POST: this host is read-only) and rewrites every other request to its
object's key. A bucket cannot say which of two statuses a missing object means, and
CloudFront maps a status to one body for the whole distribution, so the function knows,
from the published site, each collection's count and the page sizes: it answers a page that
was not built with the exact 400 itself, and only a missing detail reaches the bucket's 403,
answered with the generic 404 body. The counts make the function part of each deploy.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import orjson

from ..api import meta
from ..api.serving import ALLOW_READ, ALLOW_WRITE, SiteInfo, headers
from ..api.urls import (API, CURRENT, DEFAULT_LIMIT, HOSTS, NOT_FOUND_FILE, PAGE_NOT_BUILT, RESOURCES,
                        first_page_path, page_file)
from .contract import Host
from .files import replace, templates
from .router import javascript

DIRECTORY = f"{HOSTS}/cloudfront"  # <site>/hosts/cloudfront/
FUNCTION = f"{DIRECTORY}/function.js"
TEMPLATE = f"{DIRECTORY}/template.yaml"
MAX_FUNCTION = 10 * 1024  # bytes of code a CloudFront Function may hold
ERROR_TTL = 10  # seconds CloudFront keeps a 404 for a missing detail: a new record shows soon
# The router's comment lines, its indentation and its CommonJS export: a CloudFront Function
# has no use for them, and they take bytes of its 10 KB. (A line's leading blanks are never
# inside a string: an ES5 string cannot span lines.)
_UNUSED = re.compile(r"(?m)^[ \t]*//.*\n|^[ \t]+|^\n|^if \(typeof module !== \"undefined\"\).*\n?")
_DECLARATION = re.compile(r"(?m)^(var [A-Z_]+) = ")  # (a line's first `=`: never in a string)


class Facts:
    """What the function must know of the published generation: how pages are named and
    which exist, and the body of the 400 for the others."""

    def __init__(self, counts: dict[str, int], sizes: list[int], default: int, not_built: str) -> None:
        self.counts = counts
        self.sizes = sizes
        self.default = default
        self.not_built = not_built

    @classmethod
    def of_generation(cls, root: Path) -> "Facts":
        counts = {r.name: orjson.loads((root / first_page_path(r)).read_bytes())["count"] for r in RESOURCES}
        pages = root / API / RESOURCES[0].name / "pages"  # (every collection has the same sizes)
        sizes = sorted(int(p.name) for p in pages.iterdir() if p.name.isdigit())
        default = int(os.readlink(pages / DEFAULT_LIMIT))
        return cls(counts, sizes, default, (root / PAGE_NOT_BUILT).read_text(encoding="utf-8"))


def write(site: Path) -> list[Path]:
    """function.js and template.yaml for the published site, beside the other hosts' files;
    none (and a warning) when the function would not fit: the site itself is fine."""
    info = SiteInfo.of_site(site)
    code = function(urlsplit(info.base_url).path, Facts.of_generation(site / CURRENT), info.cache_control)
    size = len(code.encode("utf-8"))
    if size > MAX_FUNCTION:
        for path in (FUNCTION, TEMPLATE):  # (never leave a stale function to be deployed)
            (site / path).unlink(missing_ok=True)
        print(f"warning: no CloudFront files: the function would be {size:,} bytes, over CloudFront's "
              f"{MAX_FUNCTION:,} (a shorter base_url path or cache_control would fit)", file=sys.stderr)
        return []
    replace(site / FUNCTION, code)
    replace(site / TEMPLATE, template(code, info))
    return [site / FUNCTION, site / TEMPLATE]


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
    return templates.get_template("cloudfront.js.j2").render(
        router=_DECLARATION.sub(r"\1=", _UNUSED.sub("", javascript(prefix))).rstrip("\n"),
        counts=json.dumps(facts.counts, **compact), sizes=json.dumps(sizes, **compact),
        not_built=json.dumps(facts.not_built), unavailable=json.dumps(meta.WRITE_UNAVAILABLE.decode()),
        headers=json.dumps(answer_headers(cache_control), **compact), page=json.dumps(f"^{page}$"), **groups)


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
    for policy_id, name, allow in (("ReadHeaders", "read", ALLOW_READ), ("WriteHeaders", "write", ALLOW_WRITE)):
        custom = []
        for header, value in headers(cache_control).items():
            if header in SECURITY:
                if SECURITY[header][1] != value:
                    raise ValueError(f"{header}: {value} is not what the response headers policy sets")
                continue
            custom.append({"name": header, "value": VARY_FILES if header == "Vary" else value, "override": "true"})
        # The function's own Allow wins over the path group's (its answers name their route's).
        custom.append({"name": "Allow", "value": allow, "override": "false"})
        found.append({"id": policy_id, "name": name, "allow": allow, "custom": custom})
    return found


def behaviours(prefix: str) -> list[dict]:
    """The cache behaviours besides the default: the writable lists, by their viewer path."""
    return [{"path": f"{prefix}/{API}/{r.name}/", "policy": "WriteHeaders"} for r in RESOURCES if r.writable]


def template(code: str, info: SiteInfo) -> str:
    """The CloudFormation stack with the function's code inlined (values are written into
    double-quoted YAML, hence the check)."""
    prefix = urlsplit(info.base_url).path
    for value in (info.cache_control, info.base_url):
        if '"' in value or "\\" in value:
            raise ValueError(f"{value!r} cannot be written into the CloudFormation template")
    return templates.get_template("cloudfront.yaml.j2").render(
        function=code.rstrip("\n"), base_url=info.base_url, host=urlsplit(info.base_url).hostname,
        policies=policies(info.cache_control), behaviours=behaviours(prefix), default_policy="ReadHeaders",
        security={key: config for key, config in (v[0::2] for v in SECURITY.values())},
        not_found=NOT_FOUND_FILE, error_ttl=ERROR_TTL)


HOST = Host("cloudfront", "CloudFront and S3: a CloudFront Function and a CloudFormation stack (hosts/cloudfront/)", lambda site, hosting: write(site))
