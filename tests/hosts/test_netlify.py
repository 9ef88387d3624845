"""What the build writes for Netlify, and the Netlify Edge Function, run in Deno (Netlify's
runtime) in front of the built sample site's files, standing in for Netlify's static files:
(a) called directly, it answers every request of the golden request table as the table
says; (b) served by `catalogue serve --server netlify`, it answers as the built-in server
does (status, body, headers), POSTs to a real write service included."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import sys
import subprocess
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from generator.api import meta
from generator.api.serving import content_type
from generator.api.urls import CURRENT
from generator.sitebuild import build
from generator.api.serving import SiteInfo
from generator.hosts import netlify
from generator.system import dying_with_parent
from conftest import SAMPLE, published_files
from golden_files import GOLDEN, ROUTES, put_together
from servers import Server, WriteStack, find_deno, runnable

needs_deno = pytest.mark.skipif(not runnable("deno"), reason="deno is not installed")

KEY = "0123456789abcdef0123456789abcdef"
BOOK = "76f9d815-44dc-545f-890b-4419e8e5e6da"
# Netlify's runtime has a Netlify global; here its env reads the process's environment.
NETLIFY_GLOBAL = "globalThis.Netlify = {env: {get: (name) => Deno.env.get(name)}};\n"
TABLE = NETLIFY_GLOBAL + """
const table = JSON.parse(await new Response(Deno.stdin.readable).text());
const [origin, plain, prefixed] = Deno.args;
const functions = {"": (await import(plain)).default, "/catalogue": (await import(prefixed)).default};
// The context Netlify passes: next() is the static file at the request's own path.
const context = (request) => ({next: () => fetch(new URL(new URL(request.url).pathname, origin))});
const answers = [];
for (const {request: [method, path, query, prefix, accept]} of table) {
  const url = origin + path + (query ? "?" + query : "");
  const headers = new Headers(accept ? {Accept: accept} : {});
  // (fetch's Request refuses TRACE: what the function reads of a request, as it would arrive)
  const request = method === "TRACE" ? {method, url, headers, body: null}
                                     : new Request(url, {method, headers});
  const answer = await functions[prefix](request, context(request));
  answers.push({status: answer.status, body: await answer.text(),
                headers: Object.fromEntries(answer.headers)});
}
console.log(JSON.stringify(answers));
"""
class Files(SimpleHTTPRequestHandler):
    """A plain static file server, as Netlify serves a deploy's files."""

    def log_message(self, format, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("netlify") / "site"
    build(SAMPLE, site)
    return site


def start_origin(root: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Files, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def origin(site):
    server = start_origin(site / CURRENT)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def function_module(directory: Path, prefix: str = "") -> Path:
    path = directory / f"catalogue{prefix.replace('/', '-')}.js"
    info = SiteInfo(f"https://ketab.example.ir{prefix}", "no-cache")
    path.write_text(netlify.edge_function(info, KEY), encoding="utf-8")
    return path


def deno(*args: str) -> list[str]:
    return [find_deno() or "deno", "run", "--quiet", "--no-prompt", "--allow-net=127.0.0.1",
            "--allow-env", "--allow-read", *args]


def deno_env(tmp: Path, write_service: str | None = None) -> dict:
    env = {**os.environ, "DENO_DIR": str(tmp / "deno"), "DENO_NO_UPDATE_CHECK": "1"}
    env.pop(netlify.WRITE_SERVICE, None)
    if write_service:
        env[netlify.WRITE_SERVICE] = write_service
    return env


# ---- what the build writes ----------------------------------------------------------------

def test_the_build_writes_the_function_and_netlify_toml(tmp_path):
    from generator.compose import build as build_and_host
    site = tmp_path / "site"
    build_and_host(SAMPLE, site)
    root = site / netlify.NETLIFY
    function = (root / "edge-functions" / "catalogue.js").read_text(encoding="utf-8")
    key = (root / netlify.KEY_FILE).read_text(encoding="ascii").strip()
    assert len(key) == 32 and json.dumps(key) in function and (root / netlify.KEY_FILE).stat().st_mode & 0o077 == 0
    assert function.startswith("// The catalogue's Netlify Edge Function") and "export default async" in function
    toml = (root / "netlify.toml").read_text(encoding="utf-8")
    assert 'publish = "public"' in toml and 'edge_functions = "edge-functions"' in toml
    assert '[[edge_functions]]\n  path = "/*"\n  function = "catalogue"' in toml
    before = (root / "edge-functions" / "catalogue.js").stat().st_mtime_ns
    build_and_host(SAMPLE, site)  # a rebuild keeps the key, so the function is unchanged
    assert (root / netlify.KEY_FILE).read_text(encoding="ascii").strip() == key
    assert (root / "edge-functions" / "catalogue.js").stat().st_mtime_ns == before


def test_the_publish_directory_holds_what_the_site_serves_and_never_the_build_state(tmp_path):
    """The command netlify.toml names, run as it says (Python alone): a plain copy of api/ and
    _meta/, and whatever else the directory held (a .state/ an older command copied, a link)
    taken out; run again after a rebuild, it holds the new generation's files."""
    from generator.compose import build as build_and_host
    site = tmp_path / "site"
    build_and_host(SAMPLE, site)
    root = site / netlify.NETLIFY
    toml = (root / "netlify.toml").read_text(encoding="utf-8")
    command = next(line for line in toml.splitlines() if line.startswith("#   python ")).removeprefix("#   ")
    (root / "public" / ".state").mkdir(parents=True)
    (root / "public" / ".state" / "keys-books.0").write_bytes(b"private")
    (root / "public" / "stale").symlink_to(site)
    command = command.replace("python ", f"{sys.executable} ", 1).replace("SITE", str(site))
    subprocess.run(command.split(), cwd=root, check=True)
    public = root / "public"
    copied = {str(p.relative_to(public)) for p in public.rglob("*") if not p.is_dir()}
    assert copied == published_files(site) and not any(p.is_symlink() for p in public.rglob("*"))
    assert sorted(p.name for p in public.iterdir()) == ["_meta", "api"]
    assert len(copied) == 173  # the build's 151 files and the 22 of pages/default, as files
    SAMPLE_COPY = tmp_path / "data"
    shutil.copytree(SAMPLE, SAMPLE_COPY, dirs_exist_ok=True)
    (SAMPLE_COPY / "site.yaml").write_text((SAMPLE / "site.yaml").read_text(encoding="utf-8").replace(
        "[12, 24]", "[12]"), encoding="utf-8")
    build_and_host(SAMPLE_COPY, site)
    subprocess.run(command.split(), cwd=root, check=True)
    assert {str(p.relative_to(public)) for p in public.rglob("*") if not p.is_dir()} == published_files(site)


# ---- (a) the golden request table -------------------------------------------------------

def expected(site: Path, entry: dict) -> tuple[int, bytes, str | None]:
    """Status, body and Location of the answer the table's decision makes on this site."""
    answer = entry["answer"]
    if answer["forward"]:  # (no write service configured)
        return 503, meta.WRITE_UNAVAILABLE, None
    if answer["location"] is not None:
        return answer["status"], b"", answer["location"]
    if answer["page"] is not None:
        return (*put_together(site / CURRENT, answer["page"], entry["request"][2]), None)
    if answer["file"] is not None:
        path = site / CURRENT / answer["file"]
        if path.is_file():
            return 200, path.read_bytes(), None  # (HEAD too: the server sends no body)
        missing = answer["missing_file"]
        body = (site / CURRENT / missing).read_bytes() if missing else answer["body"].encode()
        return answer["missing_status"], body, None
    return answer["status"], answer["body"].encode(), None


@needs_deno
def test_the_function_answers_the_golden_request_table(tmp_path, site, origin):
    table = json.loads((GOLDEN / ROUTES).read_text(encoding="utf-8"))
    harness = tmp_path / "table.js"
    harness.write_text(TABLE, encoding="utf-8")
    plain, prefixed = function_module(tmp_path), function_module(tmp_path, "/catalogue")
    done = subprocess.run(**dying_with_parent(deno(str(harness), origin, plain.as_uri(), prefixed.as_uri())),
                          input=json.dumps(table), capture_output=True, text=True, env=deno_env(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert len(answers) == len(table)
    for entry, got in zip(table, answers, strict=True):
        status, body, location = expected(site, entry)
        headers = got["headers"]
        assert (got["status"], got["body"].encode(), headers.get("location")) == (status, body, location), entry
        assert headers.get("allow") == (entry["answer"]["allow"] or None), entry
        assert headers["vary"] == "Accept, Accept-Encoding", entry
        assert headers["content-type"] == content_type(entry["answer"]["file"] or ""), entry
        assert headers["access-control-allow-origin"] == "*" and headers["cache-control"] == "no-cache", entry
        routed_to_a_file = entry["answer"]["file"] is not None or entry["answer"]["page"] is not None
        assert ("etag" in headers) == (status == 200 and routed_to_a_file), entry


@needs_deno
def test_the_function_steps_aside_only_for_its_own_reads(tmp_path, site, origin):
    """A request carrying the key is the function's own read (undefined: Netlify serves the
    file); the same path without it, or with another key, is routed: the JSON 404."""
    module = function_module(tmp_path)
    harness = tmp_path / "aside.js"
    harness.write_text(NETLIFY_GLOBAL + f"""
const edge = (await import({json.dumps(module.as_uri())})).default;
const url = "{origin}/api/v1/books/index.json";
const answers = [];
for (const key of [{json.dumps(KEY)}, null, "another"]) {{
  const answer = await edge(new Request(url, {{headers: key ? {{"{netlify.FILE_HEADER}": key}} : {{}}}}), {{}});
  answers.push(answer === undefined ? null : [answer.status, await answer.text()]);
}}
console.log(JSON.stringify(answers));
""", encoding="utf-8")
    done = subprocess.run(**dying_with_parent(deno(str(harness))), capture_output=True, text=True,
                          env=deno_env(tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr
    not_found = [404, meta.NOT_FOUND.decode()]
    assert json.loads(done.stdout) == [None, not_found, not_found]


# ---- (b) served by `catalogue serve --server netlify`, compared with the built-in server --------

COMPARED = ("Content-Type", "Content-Encoding", "Allow", "Location", "Cache-Control", "Access-Control-Allow-Origin",
            "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "WWW-Authenticate")


def same(edge, builtin, what) -> None:
    """Status, body and headers alike; validators present alike (their values are each host's)."""
    assert (edge.status, edge.body) == (builtin.status, builtin.body), what
    for name in COMPARED:
        assert edge.header(name) == builtin.header(name), (what, name)
    assert edge.vary() == builtin.vary(), what
    for name in ("ETag", "Last-Modified"):
        assert (edge.header(name) is None) == (builtin.header(name) is None), (what, name)
    if edge.status != 304 and edge.header("Content-Encoding") != "gzip":  # (a page put together: each host's gzip)
        assert edge.header("Content-Length") == builtin.header("Content-Length"), what


@pytest.fixture(scope="module")
def servers(site):
    edge, builtin = Server(site, kind="netlify"), Server(site)
    yield edge, builtin
    edge.stop()
    builtin.stop()


REQUESTS = [
    ("GET", "/api/v1/", {}), ("GET", "/api/v1/books/", {}), ("GET", "/api/v1/books/?offset=24&limit=12", {}),
    ("GET", "/api/v1/books/?limit=%2B24&offset=0024&search=x", {}), ("GET", "/api/v1/user/?limit=24", {}),
    ("GET", "/api/v1/books/?limit=5", {}), ("GET", "/api/v1/books/?offset=13", {}),
    ("GET", "/api/v1/books/?offset=480", {}), ("GET", f"/api/v1/books/{BOOK}/", {}),
    ("GET", "/api/v1/books/76f9d815-0000-4000-8000-000000000000/", {}), ("GET", "/api/v1/books/not-a-uuid/", {}),
    ("GET", "/api/v1/books", {}), ("GET", "/api/v1/books?limit=12", {}), ("GET", f"/api/v1/books/{BOOK}", {}),
    ("GET", "/", {}), ("GET", "/_meta/site.json", {}), ("GET", "/api/v1/books/index.json", {}),
    ("GET", "/api/v1/books/pages/12/0/0.json", {}), ("GET", "/api/v1/books/%2e%2e/%2e%2e/_meta/site.json", {}),
    ("GET", "//api/v1/books/", {}), ("GET", "/api/v1/./books/", {}),
    ("HEAD", "/api/v1/books/?limit=24", {}), ("HEAD", f"/api/v1/books/{BOOK}/", {}),
    ("OPTIONS", "/api/v1/", {}), ("OPTIONS", "/api/v1/user/", {}), ("OPTIONS", f"/api/v1/books/{BOOK}/", {}),
    ("PUT", "/api/v1/books/", {}), ("DELETE", f"/api/v1/books/{BOOK}/", {}), ("POST", "/api/v1/books/", {}),
    ("POST", "/api/v1/user/", {"Content-Type": "application/json"}),
    ("POST", "/api/v1/bookshelf/", {"Content-Type": "application/json"}),
    ("POST", "/api/v1/user/", {"Content-Length": str(64 * 1024 + 1)}),
    ("GET", "/api/v1/books/", {"Accept-Encoding": "gzip"}), ("GET", "/api/v1/", {"Accept-Encoding": "gzip, br"}),
    ("GET", "/api/v1/books/?limit=24", {"Accept-Encoding": "br;q=1, gzip;q=0.5"}),
    ("GET", "/api/v1/books/", {"Accept-Encoding": "gzip;q=0"}), ("GET", "/api/v1/books/", {"Accept-Encoding": "br"}),
    ("HEAD", "/api/v1/books/", {"Accept-Encoding": "gzip"}),
    ("GET", f"/api/v1/books/{BOOK}/", {"Accept-Encoding": "gzip"}),
    ("GET", "/api/v1/books/?limit=5", {"Accept-Encoding": "gzip"}),
]


@needs_deno
@pytest.mark.parametrize("method, path, headers", REQUESTS, ids=[f"{m} {p} {h}" for m, p, h in REQUESTS])
def test_the_function_answers_as_the_builtin_server(servers, method, path, headers):
    edge, builtin = servers
    body = b"x" * int(headers["Content-Length"]) if "Content-Length" in headers else (
        b'{"username":"x"}' if method == "POST" else None)
    same(edge.request(method, path, headers, body), builtin.request(method, path, headers, body), (method, path))


@needs_deno
@pytest.mark.parametrize("encoding", ["identity", "gzip"])
@pytest.mark.parametrize("path", ["/api/v1/books/", "/api/v1/books/?limit=24&offset=24", f"/api/v1/books/{BOOK}/"])
def test_conditional_requests(servers, path, encoding):
    """304 for the validators each host gave, 200 for others: the function answers it."""
    for server in servers:
        first = server.get(path, Accept_Encoding=encoding)
        assert first.status == 200
        for condition in ({"If-None-Match": first.header("ETag")}, {"If-None-Match": f'W/{first.header("ETag")}, "x"'},
                          {"If-None-Match": "*"}, {"If-Modified-Since": first.header("Last-Modified")}):
            again = server.request("GET", path, {**condition, "Accept-Encoding": encoding})
            assert (again.status, again.body) == (304, b""), (server, condition)
            assert again.header("ETag") == first.header("ETag")
        for condition in ({"If-None-Match": '"other"'}, {"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"},
                          {"If-None-Match": '"other"', "If-Modified-Since": first.header("Last-Modified")}):
            assert server.request("GET", path, {**condition, "Accept-Encoding": encoding}).status == 200, condition


@needs_deno
@pytest.mark.parametrize("path, location", [
    ("/api/v1/books/%DA%A9%D8%AA%D8%A7%D8%A8", "/api/v1/books/%DA%A9%D8%AA%D8%A7%D8%A8/"),
    ("/api/v1/books/a%20b?limit=12", "/api/v1/books/a%20b/?limit=12"),
])
def test_a_redirect_to_a_path_beyond_ascii_is_escaped(servers, path, location):
    """The slash added to a path of Persian letters: a 301 whose Location a header can carry."""
    answer = servers[0].get(path)
    assert (answer.status, answer.header("Location")) == (301, location)


@needs_deno
def test_a_streamed_body_over_the_limit_is_refused(servers):
    """A chunked POST (no Content-Length) over 64 KiB: 413 in DRF's shape, from both."""
    for server in servers:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            chunks = (b"x" * 8192 for _ in range(9))
            connection.request("POST", "/api/v1/user/", body=chunks, encode_chunked=True,
                               headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
            response = connection.getresponse()
            assert (response.status, response.read()) == (413, meta.TOO_LARGE), server
        finally:
            connection.close()


@needs_deno
def test_posts_go_to_the_write_service(tmp_path, data_dir):
    """With CATALOGUE_WRITE_SERVICE set, a POST reaches the write service and its answer
    comes back as the built-in server relays it: 401 without a token, 400 for a bad body,
    201 with Location for a new user, which the function then serves."""
    stack = WriteStack.start(data_dir, tmp_path)
    edge = Server(stack.site, stack.service.port, kind="netlify")
    try:
        json_type = {"Content-Type": "application/json"}
        token = {**json_type, "Authorization": f"Bearer {stack.token}"}
        for headers, body in ((json_type, b'{"username":"nobody"}'), (token, b'{"username":""}'),
                              (token, b"not json")):
            same(edge.request("POST", "/api/v1/user/", headers, body),
                 stack.server.request("POST", "/api/v1/user/", headers, body), (headers, body))
        answers = [server.request("POST", "/api/v1/user/", token, json.dumps({"username": name}).encode())
                   for server, name in ((edge, "edge.user"), (stack.server, "builtin.user"))]
        for answer in answers:
            assert answer.status == 201 and answer.header("Location").startswith("https://ketab.example.ir/api/v1/user/")
            assert answer.header("Allow") == "GET, POST, HEAD, OPTIONS"
        created = json.loads(answers[0].body)
        assert created["username"] == "edge.user"
        path = urlsplit(answers[0].header("Location")).path
        deadline = time.monotonic() + 30  # (the write service rebuilds the site in the background)
        while (served := edge.get(path)).status == 404 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (served.status, json.loads(served.body)) == (200, created)
    finally:
        edge.stop()
        stack.stop()
