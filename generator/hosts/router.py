"""The route table as one small JavaScript router, for hosts that run JavaScript in front
of the files (a Worker, a CloudFront Function, an Edge Function): a part those hosts use
(their `parts`, contract.py), written once into `<site>/hosts/router/` for any other.

Rendered from api/routes.py: the same regular expressions (named groups turned into
numbered ones, so that it stays ES5), the same bodies, the same file names (api/urls.py's
functions with placeholders). `route(method, path, query)` answers what
`api.routes.resolve` answers, as a plain object:

    {status, body, file, missingStatus, missingFile, location, forward, allow}
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from ..api import meta, pageindex, routes
from ..api.backends import PAGINATION
from ..api.serving import FORWARDED, GZIP_MIN, HTML_TYPE, JSON_TYPE, MAX_BODY, WRITE_TIMEOUT, SiteInfo, headers
from ..api.urls import API, HOSTS, OPENAPI_FILE, PAGE_BUCKET, SITE_INFO, VIEWER, detail_file, page_file, page_index_file, root_path
from . import query, querystring
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


def javascript(prefix: str) -> str:
    """The router for a site whose base_url has this path prefix ("" for none). Small enough
    for a CloudFront Function (10 KB): a resource's bodies from its label (checked here
    against the real ones), their common part once."""
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
            texts[route.resource.name] = _resource_texts(route.resource, bodies, common)
            entry.update(name=route.resource.name, writable=route.resource.writable)
        if route.kind in routes.LITERAL_KINDS:
            literal[route.pattern] = entry
        else:
            source, groups = js_regex(route.pattern)
            patterns.append({**entry, "source": source, "id": False, "shard": groups.get("catalogue_shard", 0),
                             "rest": groups.get("catalogue_rest", 0)})
    # Every detail pattern ends alike (the UUID): said once, for the 10 KB of a CloudFront Function.
    id_pattern = os.path.commonprefix([p["source"][::-1] for p in patterns if p["kind"] == "detail"])[::-1][:-1]
    for p in patterns:
        if p["kind"] == "detail":
            p["source"], p["id"] = p["source"][:-len(id_pattern) - 1] + '"', True
    plain = []
    for spelling in PAGINATION.plain_spellings():
        source, groups = js_regex(spelling.pattern)
        parts = [groups[part] if part in groups else part for part in (spelling.limit, spelling.bucket, spelling.offset)]
        plain.append([json.loads(source), *parts])
    return templates().get_template("router.js.j2").render(
        plain=json.dumps(plain), page_file=json.dumps(page_file("{name}", "{limit}", "{bucket}", "{offset}")),
        prefix=json.dumps(prefix), literal=json.dumps(literal, ensure_ascii=False, separators=(",", ":")),
        bodies=json.dumps(texts, ensure_ascii=False, separators=(",", ":")), common=json.dumps(common),
        patterns=patterns, json=json.dumps, redirect=js_regex(routes.REDIRECT)[0],
        not_found=json.dumps(bodies.not_found.decode()),
        viewer=json.dumps(VIEWER), id_pattern=json.dumps(id_pattern),
        accept=json.dumps([[re.escape(media_range), int(html)] for media_range, html in routes.ACCEPT_RANGES]),
        accept_around=json.dumps(routes.ACCEPT_AROUND),
        detail_file=json.dumps(detail_file("{name}", "{shard}", "{id}")))


# The shapes the router builds a resource's bodies in (templates/router.js.j2 `options`, `route`).
def _options_shape(label: str, kind: str, common: str, actions: str | None) -> str:
    name = f"{label} {'List' if kind == 'list' else 'Instance'}"
    return '{"name":"' + name + '","description":""' + common + (f',"actions":{actions}' if actions else "") + "}"


def _no_match_shape(label: str) -> str:
    return '{"detail":"No ' + label + ' matches the given query."}'


def _resource_texts(resource, bodies: routes.Bodies, common: str) -> dict:
    """What the router needs to make a resource's OPTIONS and 404 bodies: its label, and the
    POST actions of its list; the bodies it makes are the route table's own (checked)."""
    listed = bodies.options(next(r for r in routes.ROUTES if r.kind == "list" and r.resource is resource)).decode()
    actions = listed[listed.index(',"actions":') + len(',"actions":'):-1] if ',"actions":' in listed else None
    for route in routes.ROUTES:
        if route.resource is resource and route.kind in ("list", "detail"):
            made = _options_shape(resource.label, route.kind, common, actions if route.kind == "list" else None)
            if made != bodies.options(route).decode():
                raise AssertionError(f"the router would answer OPTIONS {route.pattern} otherwise: {made}")
    if _no_match_shape(resource.label) != bodies.no_match(resource).decode():
        raise AssertionError(f"the router would answer a missing {resource.name} otherwise")
    return {"label": resource.label, **({"actions": actions} if actions else {})}


def _common(bodies: routes.Bodies) -> str:
    """What every OPTIONS body has after its name: stored once."""
    root = bodies.options(routes.ROUTES[0]).decode()
    return root[root.index(',"renders"'):root.index("]", root.index('"parses"')) + 1]


def answer_values(cache_control: str) -> dict:
    """What templates/answers.js.j2 needs: the part of an answer the JavaScript hosts that
    build their own Responses (a Worker, an Edge Function) share, and the pages they put
    together (templates/pages.js.j2, with the query-string reading of querystring.py)."""
    return {"headers": json.dumps(headers(cache_control)), "max_body": MAX_BODY,
            "querystring": querystring.javascript(), "query": query.javascript(), "site_info": json.dumps(SITE_INFO), "api_path": json.dumps(API),
            "index": json.dumps({"bucket": PAGE_BUCKET, "results": pageindex.RESULTS.decode()}),
            "page_file": json.dumps(page_file("{name}", "{limit}", "{bucket}", "{offset}")),
            "index_file": json.dumps(page_index_file("{name}", "{limit}", "{bucket}", "{offset}")),
            "too_many_fields": json.dumps(meta.TOO_MANY_FIELDS.decode()),
            "too_large_text": json.dumps(meta.PAGE_TOO_LARGE), "too_many_reads": json.dumps(meta.TOO_MANY_READS), "gzip_min": GZIP_MIN,
            "json_type": json.dumps(JSON_TYPE), "html_type": json.dumps(HTML_TYPE),
            "too_large": json.dumps(meta.TOO_LARGE.decode()),
            "write_unavailable": json.dumps(meta.WRITE_UNAVAILABLE.decode()), "forwarded": json.dumps(FORWARDED),
            "write_timeout": WRITE_TIMEOUT}



