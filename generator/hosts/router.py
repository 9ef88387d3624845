"""The route table as one small JavaScript router, for hosts that run JavaScript in front
of the files (a Worker, a CloudFront Function, an Edge Function).

Rendered from api/routes.py: the same regular expressions (named groups turned into
numbered ones, so that it stays ES5), the same bodies, the same file names (api/urls.py's
functions with placeholders). `route(method, path, query)` answers what
`api.routes.resolve` answers, as a plain object:

    {status, body, file, missingStatus, missingFile, location, forward, allow}
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from ..api import meta, routes
from ..api.serving import FORWARDED, GZIP_MIN, MAX_BODY, SiteInfo, headers
from ..api.urls import HOSTS, OPENAPI_FILE, PAGE_NOT_BUILT, detail_file, page_file, root_path
from .files import replace, templates

ROUTER = f"{HOSTS}/router/router.js"  # <site>/hosts/router/router.js: for the JavaScript hosts


def write(site: Path) -> Path:
    """The router for the published site, written beside the other hosts' files."""
    replace(site / ROUTER, javascript(urlsplit(SiteInfo.of_site(site).base_url).path))
    return site / ROUTER


def js_regex(pattern: str, whole: bool = True) -> tuple[str, dict[str, int]]:
    """A pattern as the source of a JavaScript RegExp (a JSON string) and its groups' numbers."""
    numbers = re.compile(pattern).groupindex
    source = re.sub(r"\(\?P<[A-Za-z_]+>", "(", pattern)
    return json.dumps(f"^{source}$" if whole else source), dict(numbers)


def javascript(prefix: str, no_match: bool = True) -> str:
    """The router for a site whose base_url has this path prefix ("" for none). Small enough
    for a CloudFront Function (10 KB): each body once, their common part once. Without
    `no_match`, a missing detail's answer has no body: for a host that answers it without
    the router (CloudFront's error document), which needs the bytes."""
    bodies = routes.Bodies()
    common = _common(bodies)
    texts, literal, patterns = {}, {}, []
    files = {"root": root_path(), "schema": OPENAPI_FILE}  # the file of a path that is one file
    for route in routes.ROUTES:
        entry = {"kind": route.kind, "allow": route.allow}
        if route.kind in files:
            texts[route.kind] = bodies.options(route).decode().replace(common, "\u0001")
            entry["file"] = files[route.kind]
        if route.resource is not None:
            name = route.resource.name
            texts.setdefault(name, {"list": None, "detail": None})
            if no_match:
                texts[name]["noMatch"] = bodies.no_match(route.resource).decode()
            texts[name]["list" if route.kind == "list" else "detail"] = (
                bodies.options(route).decode().replace(common, "\u0001"))
            entry.update(name=name, writable=route.resource.writable)
        if route.kind in routes.LITERAL_KINDS:
            literal[route.pattern] = entry
        else:
            source, groups = js_regex(route.pattern)
            patterns.append({**entry, "source": source, "shard": groups.get("catalogue_shard", 0),
                             "rest": groups.get("catalogue_rest", 0)})
    limit, limit_groups = js_regex(routes.LIMIT)
    offset, offset_groups = js_regex(routes.OFFSET)
    last_limit, last_groups = js_regex(routes.last("limit"), whole=False)
    bucket, bucket_groups = js_regex(routes.BUCKET)
    return templates.get_template("router.js.j2").render(
        prefix=json.dumps(prefix), literal=json.dumps(literal, ensure_ascii=False, separators=(",", ":")),
        bodies=json.dumps(texts, ensure_ascii=False, separators=(",", ":")), common=json.dumps(common),
        patterns=patterns, json=json.dumps, limit=limit, n=limit_groups["n"], offset=offset,
        offset_n=offset_groups["n"], last_limit=last_limit,
        last_offset=js_regex(routes.last("offset"), whole=False)[0], value=last_groups["value"],
        plain=js_regex(routes.PLAIN)[0], escaped_name=js_regex(routes.ESCAPED_NAME, whole=False)[0],
        bucket=bucket, b=bucket_groups["b"], invalid=json.dumps(routes.INVALID),
        default_limit=json.dumps(routes.LIMIT_SPELLING.otherwise),
        default_offset=json.dumps(routes.OFFSET_SPELLING.otherwise), redirect=js_regex(routes.REDIRECT)[0],
        not_found=json.dumps(bodies.not_found.decode()),
        page_not_built=json.dumps(PAGE_NOT_BUILT),
        page_file=json.dumps(page_file("{name}", "{limit}", "{bucket}", "{offset}")),
        detail_file=json.dumps(detail_file("{name}", "{shard}", "{id}")))


def _common(bodies: routes.Bodies) -> str:
    """What every OPTIONS body has after its name: stored once."""
    root = bodies.options(routes.ROUTES[0]).decode()
    return root[root.index(',"renders"'):root.index("]", root.index('"parses"')) + 1]


def answer_values(cache_control: str) -> dict:
    """What templates/answers.js.j2 needs: the part of an answer the JavaScript hosts that
    build their own Responses (a Worker, an Edge Function) share."""
    return {"headers": json.dumps(headers(cache_control)), "gzip_min": GZIP_MIN, "max_body": MAX_BODY,
            "too_large": json.dumps(meta.TOO_LARGE.decode()),
            "write_unavailable": json.dumps(meta.WRITE_UNAVAILABLE.decode()), "forwarded": json.dumps(FORWARDED)}
