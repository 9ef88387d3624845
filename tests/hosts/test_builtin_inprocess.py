"""The built-in server's application in this process: the requests of the conformance suite
(tests/hosts/test_conformance.py, which runs the server in a process of its own) sent straight
to its ASGI application, `builtin.Server`, over a real build of the sample catalogue in a
temporary folder; writes go to a small HTTP service on a loopback port of this process, which
records what it is given. `serve()` itself runs here too, in the foreground, stopped by a
signal this process sends itself. Here mutation testing sees the server's code run."""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import http.client
import json
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, unquote

import anyio
import pytest

from generator.api import meta
from generator.api.routes import Answer
from generator.api.serving import GZIP_MIN, MAX_BODY, content_type
from generator.api.urls import ACCEPTED, BY_NAME, CURRENT, PAGE_INDEX, PAGE_NOT_BUILT, detail_path
from generator.errors import CatalogueError
from generator.hosts import builtin
from generator.hosts.contract import Local
from generator.sitebuild import build
from conftest import SAMPLE, many_users
from golden_files import golden_answer, golden_routes, put_together

BASE = "https://ketab.example.ir"
BOOK = "76f9d815-44dc-545f-890b-4419e8e5e6da"
UNPUBLISHED = "0e3e0d2a-8a5c-4f6e-9d3e-2d8f7a1b9c02"  # no user of the sample
READ = "GET, HEAD, OPTIONS"
WRITE = "GET, POST, HEAD, OPTIONS"
MTIME = 1_700_000_000.25  # every file of the module's site (so each ETag and Last-Modified is known)
GOLDEN_TABLE = golden_routes()  # (as test_conformance.py reads it)


# ---- the driver -------------------------------------------------------------------------------

@dataclass
class Reply:
    status: int
    raw: list[tuple[bytes, bytes]]  # the header fields as the application sent them, names' case kept
    body: bytes
    messages: int = 0  # http.response.body messages (more than one: streamed)
    headers: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in self.raw}

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def names(self) -> list[str]:
        return [name.decode("latin-1") for name, _ in self.raw]

    def json(self):
        return json.loads(gzip.decompress(self.body) if self.header("Content-Encoding") == "gzip" else self.body)


class Client:
    """`builtin.Server` over a site folder, asked as uvicorn asks it (ASGI 3, spec 2.3: the
    path decoded, the raw path and query as sent; HEAD's body dropped, as uvicorn drops it)."""

    def __init__(self, site: Path, write_service: str | None = None) -> None:
        self.app = builtin.Server(site, *([write_service] if write_service else []))

    def request(self, method: str, target: str, headers: dict[str, str] | None = None,
                chunks: list[bytes | None] | None = None) -> Reply:
        """(A chunk None: a message without a body, which ASGI reads as an empty one.)"""
        raw_path, _, query = target.encode("ascii").partition(b"?")
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": unquote(raw_path.decode("ascii")), "raw_path": raw_path,
                 "query_string": query, "root_path": "", "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
                 "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]}
        incoming = [{"type": "http.request", **({} if c is None else {"body": c}), "more_body": i < len(chunks) - 1}
                    for i, c in enumerate(chunks)] if chunks else [{"type": "http.request", "body": b""}]
        got: dict = {"body": b"", "messages": 0}

        async def receive():
            if incoming:
                return incoming.pop(0)
            await anyio.sleep_forever()  # (the client stays: a streamed answer is sent to its end)

        async def send(message):
            if message["type"] == "http.response.start":
                got["status"], got["raw"] = message["status"], list(message["headers"])
            else:
                got["body"] += message.get("body", b"")
                got["messages"] += 1

        anyio.run(self.app, scope, receive, send)
        return Reply(got["status"], got["raw"], b"" if method == "HEAD" else got["body"], got["messages"])

    def get(self, target: str, **headers: str) -> Reply:
        return self.request("GET", target, {k.replace("_", "-"): v for k, v in headers.items()})


class WriteService:
    """A stand-in for the write service on a loopback port of this process: it keeps each
    request it is given (path, header fields, body) and answers what `answer` holds."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.requests: list[tuple[str, list[tuple[str, str]], bytes]] = []
        self.answer = (201, {"Content-Type": "application/json", "Location": f"{BASE}/api/v1/user/x/"}, b'{"id":"x"}')
        self.hold = threading.Event()  # (set: each request waits until it is cleared)
        self.held = threading.Event()  # (set once a request waits)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.requests.append((self.path, list(self.headers.items()), body))
                if owner.hold.is_set():
                    owner.held.set()
                    while owner.hold.is_set():
                        time.sleep(0.01)
                status, fields, content = owner.answer
                self.send_response_only(status)
                for name, value in fields.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args) -> None:  # (quiet)
                pass

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        server_class = type("Server", (ThreadingHTTPServer,), {"address_family": family})
        self.server = server_class((host, 0), Handler)
        port = self.server.server_address[1]
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.hold.clear()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


_CLOSED: list[socket.socket] = []  # (held for the run: their ports are never handed to anyone else)


def closed_address() -> str:
    """A loopback address where nothing listens (bound, never listening: connections are refused)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    _CLOSED.append(probe)
    return f"127.0.0.1:{probe.getsockname()[1]}"


def has_the_site_s_headers(got: Reply, allow: str) -> bool:
    """Every answer carries them, errors included (docs/spec/http.md)."""
    return (got.header("Allow"), got.header("Server"), got.header("X-Content-Type-Options"), got.header("Vary"),
            got.header("Content-Type")) == (allow, "catalogue", "nosniff", "Accept, Accept-Encoding", "application/json")


def generation(site: Path) -> Path:
    return site / CURRENT


def files_of(site: Path, suffix: str = "") -> list[Path]:
    """The published generation's files (its links followed: a build shares folders between generations)."""
    return [Path(directory, name) for directory, _dirs, names in os.walk(generation(site), followlinks=True)
            for name in names if name.endswith(suffix)]


def touch_all(site: Path, mtime: float) -> None:
    for path in files_of(site):
        os.utime(path, (mtime, mtime))


def etag_of(path: Path) -> str:
    stat = path.stat()
    return f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("builtin") / "site"
    build(SAMPLE, site)
    touch_all(site, MTIME)
    return site


@pytest.fixture(scope="module")
def client(site: Path) -> Client:
    return Client(site, closed_address())


@pytest.fixture
def own_site(tmp_path: Path, data_dir: Path) -> Path:
    """A site of the test's own, to change."""
    build(data_dir, tmp_path / "site")
    return tmp_path / "site"


# ---- the golden request table, as every host answers it ------------------------------------------

def entry_id(entry: dict) -> str:
    """Method, path and query, percent-escaped (pytest cannot select an id with bytes above 0x7F again)."""
    return quote(" ".join(entry["request"][:3]).strip(), safe=" /=&?+") or "(empty)"


@pytest.mark.parametrize("entry", GOLDEN_TABLE, ids=entry_id)
def test_the_golden_request_table(client, site, entry):
    """As test_conformance.py's test of the same name: the file the table names (or the answer
    for a missing one), the status and body, the Allow; and here each file's validators."""
    method, path, query, _prefix, accept = entry["request"]
    answer = entry["answer"]
    got = client.request(method, quote(path, safe="/%") + (f"?{query}" if query else ""),
                         {"Accept": accept} if accept else {})
    assert (got.header("Allow") or "") == answer["allow"]
    if answer["location"] is not None:
        assert (got.status, got.header("Location"), got.body) == (301, answer["location"], b"")
        assert (got.header("Content-Type"), got.header("Content-Length")) == ("application/json", "0")
        return
    expected = golden_answer(generation(site), query, answer)
    assert (got.status, got.body) == (expected[0], b"" if method == "HEAD" else expected[1])
    file = answer["file"]
    if file is not None and (generation(site) / file).is_file():
        assert got.header("Content-Type") == content_type(file)
        assert got.header("ETag") == etag_of(generation(site) / file)
        assert got.header("Last-Modified") == formatdate(MTIME, usegmt=True)
    else:
        assert got.header("Content-Type") == "application/json"


# ---- headers ------------------------------------------------------------------------------------

def test_every_header_of_a_file_in_nginx_s_and_django_s_case(client, site):
    got = client.get(f"/api/v1/books/{BOOK}/")
    assert got.names() == ["Date", "Vary", "Access-Control-Allow-Origin", "X-Content-Type-Options", "X-Frame-Options",
                           "Referrer-Policy", "Cache-Control", "Server", "Allow", "ETag", "Last-Modified",
                           "Content-Length", "Content-Type"]
    assert got.header("Server") == "catalogue" and got.header("Cache-Control") == "no-cache"
    assert got.header("Vary") == "Accept, Accept-Encoding" and got.header("Allow") == READ
    assert int(got.header("Content-Length")) == len(got.body)


def test_the_date_is_now_in_http_s_form(client):
    before = time.time()
    got = client.get("/api/v1/")
    after = time.time()
    date = got.header("Date")
    assert date.endswith(" GMT") and int(before) <= parsedate_to_datetime(date).timestamp() <= after
    assert date == formatdate(parsedate_to_datetime(date).timestamp(), usegmt=True)


def test_the_date_is_formatted_once_a_second(monkeypatch):
    now = [1_000_000_000.5]
    monkeypatch.setattr(builtin, "time", SimpleNamespace(time=lambda: now[0]))  # (the module's clock alone)
    assert builtin._now() == "Sun, 09 Sep 2001 01:46:40 GMT"
    builtin._clock[1] = "kept"  # (the same second: the string made for it)
    now[0] = 1_000_000_000.9
    assert builtin._now() == "kept"
    now[0] = 1_000_000_001.0
    assert builtin._now() == "Sun, 09 Sep 2001 01:46:41 GMT"


def test_an_error_carries_the_site_s_headers(client):
    got = client.request("PUT", "/api/v1/books/")
    assert (got.status, got.json()) == (405, {"detail": 'Method "PUT" not allowed.'})
    assert got.names() == ["Date", "Vary", "Access-Control-Allow-Origin", "X-Content-Type-Options", "X-Frame-Options",
                           "Referrer-Policy", "Cache-Control", "Server", "Allow", "Content-Length", "Content-Type"]


# ---- files: gzip twins, validators --------------------------------------------------------------

@pytest.mark.parametrize("accept_encoding, zipped", [
    ("gzip", True), ("deflate, gzip", True), ("GZIP;q=0.5", True), ("gzip;q=0", False), ("identity", False),
    ("", False)])
def test_a_file_s_gzip_twin_to_clients_that_take_it(client, site, accept_encoding, zipped):
    plain = generation(site) / "api/v1/books/pages/12/0/0.json"
    twin = Path(f"{plain}.gz")
    got = client.get("/api/v1/books/", Accept_Encoding=accept_encoding)
    assert got.status == 200
    assert got.body == (twin if zipped else plain).read_bytes()
    assert got.header("Content-Encoding") == ("gzip" if zipped else None)
    assert got.header("ETag") == etag_of(twin if zipped else plain)


def test_a_small_file_has_no_twin(client, site):
    got = client.get("/api/v1/", Accept_Encoding="gzip")
    assert got.header("Content-Encoding") is None
    assert got.body == (generation(site) / "api/v1/index.json").read_bytes()


@pytest.mark.parametrize("condition, status", [
    ("etag", 304), ("weak", 304), ("listed", 304), ("packed", 304), ("star", 304), ("other", 200), ("since", 304),
    ("since-before", 200), ("since-garbage", 200), ("other-but-since", 200)])
def test_conditional_requests_of_a_file(client, site, condition, status):
    path = generation(site) / f"api/v1/books/76/{BOOK}.json"
    tag, modified = etag_of(path), formatdate(MTIME, usegmt=True)
    headers = {"etag": {"If-None-Match": tag}, "weak": {"If-None-Match": f"W/{tag}"},
               "listed": {"If-None-Match": f'"a",  {tag} ,"b"'}, "packed": {"If-None-Match": f'"a",{tag},"b"'},
               "star": {"If-None-Match": "*"},
               "other": {"If-None-Match": '"a"'}, "since": {"If-Modified-Since": modified},
               "since-before": {"If-Modified-Since": formatdate(MTIME - 1, usegmt=True)},
               "since-garbage": {"If-Modified-Since": "yesterday"},
               "other-but-since": {"If-None-Match": '"a"', "If-Modified-Since": modified}}[condition]
    got = client.request("GET", f"/api/v1/books/{BOOK}/", headers)
    assert got.status == status
    assert got.body == (b"" if status == 304 else path.read_bytes())
    assert (got.header("ETag"), got.header("Last-Modified")) == (tag, modified)


def test_a_304_of_a_twin_says_no_content_encoding(client, site):
    twin = generation(site) / "api/v1/books/pages/12/0/0.json.gz"
    got = client.request("GET", "/api/v1/books/", {"Accept-Encoding": "gzip", "If-None-Match": etag_of(twin)})
    assert (got.status, got.body, got.header("ETag")) == (304, b"", etag_of(twin))
    assert got.header("Content-Encoding") is None and got.header("Content-Type") is None


@pytest.mark.parametrize("match, etag, expected", [
    ('"a"', '"a"', True), ('"b", W/"a"', '"a"', True), (' "a" ', '"a"', True), ("*", '"a"', True),
    ('"b"', '"a"', False), ('"a-gzip"', '"a"', False), ("", '"a"', False)])
def test_if_none_match(match, etag, expected):
    assert builtin._not_modified({"if-none-match": match}, etag, 0.0) is expected


@pytest.mark.parametrize("since, mtime, expected", [
    (formatdate(100, usegmt=True), 100.0, True), (formatdate(100, usegmt=True), 100.9, True),
    (formatdate(100, usegmt=True), 101.0, False), (formatdate(101, usegmt=True), 100.0, True),
    ("not a date", 100.0, False), ("", 100.0, False)])
def test_if_modified_since(since, mtime, expected):
    assert builtin._not_modified({"if-modified-since": since}, '"a"', mtime) is expected


def test_no_condition_is_modified():
    assert builtin._not_modified({}, '"a"', 0.0) is False


@pytest.mark.parametrize("accept_encoding, expected", [
    ("gzip", True), ("br, gzip", True), ("gzip , br", True), ("GZip", True), ("gzip;q=1", True), ("gzip; q=0.001", True),
    ("gzip;q=0", False), ("gzip;q=0.0", False), ("gzip;q=1.2.3", False), ("x-gzip", False), ("gzipped", False),
    ("", False), ("deflate", False)])
def test_accepts_gzip(accept_encoding, expected):
    assert builtin._accepts_gzip(accept_encoding) is expected


# ---- pages put together -------------------------------------------------------------------------

def test_a_page_put_together_has_a_strong_tag_of_its_bytes(client, site):
    got = client.get("/api/v1/books/?limit=7&offset=3")
    status, body = put_together(generation(site), "books", "limit=7&offset=3")
    assert (got.status, got.body) == (status, body) == (200, body)
    assert got.header("ETag") == f'"{hashlib.sha1(body).hexdigest()[:32]}"'
    assert got.header("Last-Modified") == formatdate(MTIME, usegmt=True)
    assert (got.header("Content-Type"), got.header("Allow"), got.header("Content-Encoding")) == (
        "application/json", READ, None)
    again = client.request("GET", "/api/v1/books/?limit=7&offset=3", {"If-None-Match": got.header("ETag")})
    assert (again.status, again.body, again.header("ETag")) == (304, b"", got.header("ETag"))
    since = client.request("GET", "/api/v1/books/?limit=7&offset=3", {"If-Modified-Since": got.header("Last-Modified")})
    assert (since.status, since.body) == (304, b"")
    earlier = formatdate(MTIME - 1, usegmt=True)
    assert client.request("GET", "/api/v1/books/?limit=7&offset=3", {"If-Modified-Since": earlier}).status == 200


def test_a_page_put_together_is_gzipped_for_clients_that_take_it(client, site):
    _, body = put_together(generation(site), "books", "limit=24&offset=5")
    assert len(body) >= GZIP_MIN
    got = client.get("/api/v1/books/?limit=24&offset=5", Accept_Encoding="gzip")
    assert got.header("Content-Encoding") == "gzip" and gzip.decompress(got.body) == body
    assert got.header("ETag") == f'"{hashlib.sha1(body).hexdigest()[:32]}-gzip"'
    again = client.request("GET", "/api/v1/books/?limit=24&offset=5",
                           {"Accept-Encoding": "gzip", "If-None-Match": got.header("ETag")})
    assert (again.status, again.header("Content-Encoding")) == (304, None)
    assert client.get("/api/v1/books/?limit=24&offset=5").body == body


@pytest.mark.parametrize("size, zipped", [(GZIP_MIN - 1, False), (GZIP_MIN, True)])
def test_gzip_from_its_threshold(client, size, zipped):
    body = b"x" * size
    made = client.app._made(body, MTIME, {}, {"accept-encoding": "gzip"})
    assert (made.headers.get("content-encoding") == "gzip") is zipped
    assert (gzip.decompress(made.body) if zipped else made.body) == body


def test_a_page_put_together_is_as_new_as_the_newest_file_it_read(own_site):
    touch_all(own_site, MTIME)
    for page in files_of(own_site, ".json"):
        if "/author/pages/12/" in str(page):
            os.utime(page, (MTIME + 100, MTIME + 100))
    got = Client(own_site).get("/api/v1/author/?limit=5&offset=1")
    assert got.header("Last-Modified") == formatdate(MTIME + 100, usegmt=True)
    assert Client(own_site).get("/api/v1/author/?limit=5&offset=100000").header("Last-Modified") == \
        formatdate(MTIME, usegmt=True)  # (past the last page: span 0's index alone, for the count)


def test_too_many_parameters(client):
    got = client.get("/api/v1/books/?" + "&".join(["a=1"] * 1001))
    assert (got.status, got.body, got.header("Content-Type")) == (400, meta.TOO_MANY_FIELDS, "application/json")
    assert has_the_site_s_headers(got, READ)
    assert client.get("/api/v1/books/?" + "&".join(["a=1"] * 999)).status == 200


def test_a_generation_without_page_indexes_answers_from_its_pages_and_past_them_page_not_built(own_site):
    """A page put together needs the pages alone; past the last one, the count is the first
    span's index's: a generation built before pages had indexes answers that 400."""
    for index in files_of(own_site, PAGE_INDEX):
        index.unlink(missing_ok=True)  # (pages/default/ is a link to a size of its own)
    assert Client(own_site).get("/api/v1/books/?limit=7").status == 200
    got = Client(own_site).get("/api/v1/books/?limit=7&offset=100000")
    assert (got.status, got.body) == (400, (generation(own_site) / PAGE_NOT_BUILT).read_bytes())
    assert has_the_site_s_headers(got, READ)


@pytest.fixture(scope="module")
def query_site(tmp_path_factory) -> Path:
    """The sample with search, ordering and filters (tests/query_probes.py), built."""
    from query_probes import with_settings

    root = tmp_path_factory.mktemp("query")
    build(with_settings(SAMPLE, root / "data", base_url=BASE), root / "site")
    return root / "site"


def test_random_searches_orderings_and_filters(query_site):
    """As test_conformance.py's: what every host answers, for random probes (a refusal among them)."""
    from query_probes import SETTINGS, Probes

    client, root = Client(query_site), generation(query_site)
    names = sorted({name for key in ("search", "ordering", "filters") for name in SETTINGS[key]})
    documents = {name: json.loads(put_together(root, name, "limit=100")[1])["results"] for name in names}
    probes, statuses = Probes(documents, seed=11), set()
    for name in names:
        for _ in range(8):
            query = probes.query(name)
            got = client.get(f"/api/v1/{name}/?{query}")
            assert (got.status, got.body) == put_together(root, name, query), query
            statuses.add(got.status)
    refused = client.get("/api/v1/books/?authors=nope")
    assert (refused.status, refused.body) == put_together(root, "books", "authors=nope")
    assert refused.status == 400 and has_the_site_s_headers(refused, READ)
    assert statuses == {200, 400}


# ---- large answers --------------------------------------------------------------------------------

USERS = 2000


@pytest.fixture(scope="module")
def big_site(tmp_path_factory) -> Path:
    """The sample with 2,000 users and a page size of 2,000: pages and files over STREAM_FROM."""
    return many_users(tmp_path_factory.mktemp("big"), USERS, (12, USERS), bio="x" * 100)


def test_a_large_page_put_together_is_streamed(big_site):
    got = Client(big_site).get(f"/api/v1/user/?limit={USERS}&offset=1")
    status, body = put_together(generation(big_site), "user", f"limit={USERS}&offset=1")
    assert len(body) > builtin.STREAM_FROM
    assert (got.status, got.body) == (status, body) == (200, body)
    assert got.messages > 1 and got.header("Content-Length") is None and got.header("ETag") is None
    assert (got.header("Content-Type"), got.header("Allow")) == ("application/json", WRITE)


@pytest.mark.parametrize("over", [0, 1])
def test_a_page_is_streamed_once_over_the_bound(client, site, monkeypatch, over):
    """A page of exactly STREAM_FROM bytes is sent whole (with its ETag); one byte more, streamed."""
    _, body = put_together(generation(site), "books", "limit=24&offset=5")
    monkeypatch.setattr(builtin, "STREAM_FROM", len(body) - over)
    got = client.get("/api/v1/books/?limit=24&offset=5")
    assert got.body == body
    assert (got.header("ETag") is None, got.header("Content-Length") is None) == (bool(over), bool(over))


def test_a_large_file_is_streamed(big_site):
    path = generation(big_site) / f"api/v1/user/pages/{USERS}/0/0.json"
    assert path.stat().st_size > builtin.STREAM_FROM
    got = Client(big_site).get(f"/api/v1/user/?limit={USERS}")
    assert (got.status, got.body, got.header("ETag")) == (200, path.read_bytes(), etag_of(path))
    assert got.messages > 1 and got.header("Accept-Ranges") == "bytes"
    assert got.header("Content-Type") == "application/json"
    assert int(got.header("Content-Length")) == path.stat().st_size


# ---- accepted documents ----------------------------------------------------------------------------

@pytest.mark.parametrize("size, streamed", [(10, False), (builtin.STREAM_FROM, False), (builtin.STREAM_FROM + 1, True)])
def test_an_accepted_document_is_served_until_published(own_site, size, streamed):
    path = own_site / ACCEPTED / detail_path(BY_NAME["user"], UNPUBLISHED)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"a":"' + b"x" * (size - 8) + b'"}')
    client = Client(own_site)
    got = client.get(f"/api/v1/user/{UNPUBLISHED}/")
    assert (got.status, got.body, got.header("ETag")) == (200, path.read_bytes(), etag_of(path))
    assert got.header("Content-Type") == "application/json"
    assert (got.header("Accept-Ranges") == "bytes") is streamed
    path.unlink()
    gone = client.get(f"/api/v1/user/{UNPUBLISHED}/")
    assert (gone.status, gone.json()) == (404, {"detail": "No User matches the given query."})


def test_a_missing_file_answered_with_another_file_s_body_is_never_an_accepted_one(own_site):
    """An answer whose missing file has a body of its own (`missing_file`, a page's: pages are
    never accepted) is never taken from the accepted documents."""
    name = "api/v1/user/pages/12/0/none.json"
    (own_site / ACCEPTED / name).parent.mkdir(parents=True)
    (own_site / ACCEPTED / name).write_bytes(b'{"accepted":true}')
    app = Client(own_site).app
    got = app._file(app.generation(), Answer(file=name, missing_status=400, missing_file=PAGE_NOT_BUILT), {}, {})
    assert (got.status_code, got.body) == (400, (generation(own_site) / PAGE_NOT_BUILT).read_bytes())
    assert got.media_type == "application/json"
    assert app._accepted(Answer(file=name)) == (own_site / ACCEPTED / name, (own_site / ACCEPTED / name).stat())


# ---- the published generation -------------------------------------------------------------------------

def test_a_rebuild_is_served_at_once(own_site, data_dir):
    client = Client(own_site)
    first = client.app.generation()
    assert client.app.generation() is first  # (the same build: looked up once)
    assert client.get("/api/v1/books/").json()["next"] == f"{BASE}/api/v1/books/?limit=12&offset=12"
    (data_dir / "site.yaml").write_text(f"base_url: {BASE}\npage_sizes: [10]\ncache_control: 'public, max-age=60'\n",
                                        encoding="utf-8")
    build(data_dir, own_site)
    after = client.get("/api/v1/books/")
    assert after.json()["next"] == f"{BASE}/api/v1/books/?limit=10&offset=10"
    assert after.header("Cache-Control") == "public, max-age=60"
    twelve = client.get("/api/v1/books/?limit=12").json()  # (no longer a file: put together)
    assert twelve["next"] == f"{BASE}/api/v1/books/?limit=12&offset=12" and len(twelve["results"]) == 12
    assert client.app.generation() is not first
    assert client.app.generation().root == own_site / os.readlink(own_site / CURRENT)


def test_a_site_under_a_path(tmp_path, data_dir):
    (data_dir / "site.yaml").write_text("base_url: http://127.0.0.1/catalogue\npage_sizes: [5, 12]\n",
                                        encoding="utf-8")
    build(data_dir, tmp_path / "site")
    client = Client(tmp_path / "site")
    assert client.get("/catalogue/api/v1/books/").json()["next"] == "http://127.0.0.1/catalogue/api/v1/books/?limit=5&offset=5"
    assert client.get("/api/v1/books/").status == 404
    assert client.get("/catalogue/api/v1/books").header("Location") == "/catalogue/api/v1/books/"


def test_the_site_is_its_absolute_path(own_site, monkeypatch):
    monkeypatch.chdir(own_site.parent)
    client = Client(Path(own_site.name))
    assert client.app.site == own_site
    monkeypatch.chdir("/")
    assert client.get("/api/v1/").status == 200


class TestIndexes:
    """The index files kept in memory, the least recently read let go first, up to a bound."""

    def test_what_is_kept(self):
        assert builtin.Indexes.holds("api/v1/books/_query/title/3.keys")
        assert builtin.Indexes.holds(f"api/v1/books/pages/12/0{PAGE_INDEX}")
        assert not builtin.Indexes.holds("api/v1/books/pages/12/0/0.json")

    def test_bound(self):
        indexes = builtin.Indexes(bound=10)
        indexes.put("a", b"1234", 1.0)
        indexes.put("b", b"123456", 2.0)  # the bound exactly: both kept
        assert list(indexes.held) == ["a", "b"] and indexes.size == 10
        indexes = builtin.Indexes(bound=10)
        indexes.put("a", b"1234", 1.0)
        indexes.put("b", b"1234", 2.0)
        assert indexes.get("a") == (b"1234", 1.0)  # (now the most recent)
        indexes.put("c", b"123", 3.0)  # 11 bytes: the least recent goes
        assert list(indexes.held) == ["a", "c"] and indexes.size == 7
        assert indexes.get("b") is None
        indexes.put("d", b"1234", 4.0)  # 11 again
        assert list(indexes.held) == ["c", "d"] and indexes.size == 7
        indexes.put("e", b"x" * 20, 5.0)  # over the bound alone: kept, the last
        assert list(indexes.held) == ["e"] and indexes.size == 20

    def test_the_default_bound(self):
        assert builtin.Indexes().bound == 256 << 20 and builtin.Indexes().size == 0


def test_reads_keep_index_files_and_the_newest_time(tmp_path):
    root = tmp_path / "gen"
    (root / "api/_query").mkdir(parents=True)
    (root / "api/a.json").write_bytes(b"A")
    (root / "api/_query/k").write_bytes(b"K")
    (root / "api/p.idx").write_bytes(b"P")
    for name, mtime in (("api/a.json", 0.5), ("api/_query/k", 70.0), ("api/p.idx", 60.0)):
        os.utime(root / name, (mtime, mtime))
    indexes = builtin.Indexes()
    reads = builtin.Reads(root, indexes)
    assert reads.newest == 0.0
    assert (reads("api/a.json"), reads.newest) == (b"A", 0.5)
    assert (reads("api/_query/k"), reads.newest) == (b"K", 70.0)
    assert (reads("api/p.idx"), reads.newest) == (b"P", 70.0)
    assert reads("api/none.json") is None and reads.newest == 70.0
    assert set(indexes.held) == {f"{root}/api/_query/k", f"{root}/api/p.idx"}
    for name in ("api/a.json", "api/_query/k", "api/p.idx"):
        (root / name).write_bytes(b"new")
    again = builtin.Reads(root, indexes)
    assert [again(n) for n in ("api/a.json", "api/_query/k", "api/p.idx")] == [b"new", b"K", b"P"]


# ---- writes --------------------------------------------------------------------------------------

@pytest.fixture
def service():
    running = WriteService()
    yield running
    running.stop()


def test_a_write_is_forwarded_with_its_headers_and_answered_as_the_service_answers(site, service):
    service.answer = (401, {"Content-Type": "application/json", "WWW-Authenticate": 'Bearer realm="api"',
                            "Location": f"{BASE}/api/v1/user/x/", "X-Other": "no"}, b'{"detail":"x"}')
    body = b'{"username":"reader"}'
    got = Client(site, service.address).request(
        "POST", "/api/v1/%75ser/?a=%20b&c", {"Content-Type": "application/json", "Authorization": "Bearer t",
                                              "Accept": "application/json", "User-Agent": "tests", "Cookie": "c=1",
                                              "X-Forwarded-For": "1.2.3.4", "Content-Length": str(len(body))}, [body])
    assert (got.status, got.body) == (401, b'{"detail":"x"}')
    assert got.header("WWW-Authenticate") == 'Bearer realm="api"' and got.header("Location") == f"{BASE}/api/v1/user/x/"
    assert "WWW-Authenticate" in got.names() and "Location" in got.names() and got.header("X-Other") is None
    assert (got.header("Content-Type"), got.header("Allow")) == ("application/json", WRITE)
    [(target, fields, sent)] = service.requests
    assert (target, sent) == ("/api/v1/%75ser/?a=%20b&c", body)
    named = {name.lower(): value for name, value in fields}
    assert {name: named[name] for name in named if name not in ("host", "accept-encoding")} == {
        "authorization": "Bearer t", "content-type": "application/json", "accept": "application/json",
        "user-agent": "tests", "content-length": str(len(body))}


def test_a_write_s_answer_keeps_its_type_or_is_json(site, service):
    client = Client(site, service.address)
    service.answer = (201, {"Content-Type": "application/problem+json"}, b"made")
    got = client.request("POST", "/api/v1/user/", {}, [b"{}"])
    assert (got.status, got.body, got.header("Content-Type")) == (201, b"made", "application/problem+json")
    assert got.header("Location") is None and got.header("WWW-Authenticate") is None
    service.answer = (201, {"Location": ""}, b"{}")
    got = client.request("POST", "/api/v1/user/", {}, [b"{}"])
    assert (got.status, got.header("Content-Type"), got.header("Location")) == (201, "application/json", None)
    assert [target for target, _, _ in service.requests] == ["/api/v1/user/", "/api/v1/user/"]


def test_a_body_streamed_in_pieces_is_forwarded_whole_with_its_length(site, service):
    pieces = [b"a" * 10, None, b"b" * 5, b"c"]
    got = Client(site, service.address).request("POST", "/api/v1/bookshelf/", {"Content-Type": "application/json"},
                                                pieces)
    assert got.status == 201
    [(_, fields, sent)] = service.requests
    assert sent == b"a" * 10 + b"b" * 5 + b"c" and {k.lower(): v for k, v in fields}["content-length"] == "16"


@pytest.mark.parametrize("declared, pieces, status", [
    (str(MAX_BODY), [b"x" * MAX_BODY], 201),
    (str(MAX_BODY + 1), [b"x" * (MAX_BODY + 1)], 413),
    (str(MAX_BODY + 1), [b"x"], 413),  # (refused by what it declares, before any is read)
    (None, [b"x" * 1000] * 65 + [b"x" * 536], 201),  # 65,536 bytes in pieces
    (None, [b"x" * 1000] * 65 + [b"x" * 537], 413),
    ("nonsense", [b"x" * (MAX_BODY + 1)], 413),
])
def test_the_size_limit_of_a_write(site, service, declared, pieces, status):
    headers = {"Content-Length": declared} if declared else {}
    got = Client(site, service.address).request("POST", "/api/v1/user/", headers, pieces)
    assert got.status == status
    if status == 413:
        assert (got.body, got.header("Content-Type")) == (meta.TOO_LARGE, "application/json")
        assert has_the_site_s_headers(got, WRITE)
        assert service.requests == []
    else:
        assert len(service.requests[0][2]) == MAX_BODY


def test_a_write_without_a_write_service_is_503(client):
    got = client.request("POST", "/api/v1/user/", {"Content-Type": "application/json"}, [b"{}"])
    assert (got.status, got.body) == (503, meta.WRITE_UNAVAILABLE) and has_the_site_s_headers(got, WRITE)


def test_the_write_service_at_an_ipv6_address(site):
    try:
        service = WriteService("::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        got = Client(site, service.address).request("POST", "/api/v1/user/", {}, [b"{}"])
        assert got.status == 201 and len(service.requests) == 1
    finally:
        service.stop()


# ---- paths ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, normal", [
    ("/api/v1/books/", "/api/v1/books/"), ("/api/v1//books/", "/api/v1/books/"), ("//a", "/a"), ("/a//b", "/a/b"),
    ("/a/./b", "/a/b"), ("/a/../b", "/b"), ("/../a", "/a"), ("/a/b/..", "/a/"), ("/a/..", "/"), ("/a//", "/a/"),
    ("/a/.", "/a/"), ("/.hidden", "/.hidden"), ("/a/.b/", "/a/.b/"), ("/a/b/../../..", "/"), ("/a/b/../c/./", "/a/c/"),
    ("/./", "/"), ("/a..", "/a.."), ("/a/...", "/a/..."),
])
def test_paths_as_nginx_reads_them(path, normal):
    assert builtin.normalise(path) == normal


def test_a_path_is_read_normalised(client, site):
    got = client.get(f"/api/v1/./books//76f9d815-44dc-545f-890b-4419e8e5e6da/")
    assert (got.status, got.body) == (200, (generation(site) / f"api/v1/books/76/{BOOK}.json").read_bytes())


# ---- lifespan -------------------------------------------------------------------------------------

def test_the_lifespan_is_answered(client):
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.other"}, {"type": "lifespan.shutdown"}]
    sent = []

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    anyio.run(client.app, {"type": "lifespan"}, receive, send)
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}] and messages == []


# ---- serve(): uvicorn in the foreground --------------------------------------------------------------

def over_http(connect, method: str, path: str, body: bytes | None = None):
    connection = connect()
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(10)
        self.sock.connect(str(self.path))


class Application(builtin.Server):
    """The built-in server's application as uvicorn is handed it. (Under mutation testing each
    method is wrapped in a function that takes any arguments, and uvicorn, calling the
    application without any to see whether it is a factory, took it for one; here `__call__`
    is the plain coroutine function uvicorn inspects, and the server's own runs inside it.)"""

    async def __call__(self, scope, receive, send) -> None:
        await super().__call__(scope, receive, send)


@pytest.fixture
def application(monkeypatch):
    monkeypatch.setattr(builtin, "Server", Application)


def serving(site: Path, local: Local, ready, ask, stop_with: int) -> tuple[int, list]:
    """serve() in this thread, asked from another once `ready()` answers, then stopped by the
    signal `stop_with`; its exit status and the answers. The signal is sent only while serve()
    runs (its handlers are uvicorn's then: else the signal would end this process)."""
    answers, failed, returned = [], [], threading.Event()

    def client() -> None:
        deadline = time.monotonic() + 30
        while not ready() and not returned.is_set():
            if time.monotonic() > deadline:
                failed.append("not ready")
                break
            time.sleep(0.02)
        try:
            if not failed and not returned.is_set():
                answers.extend(ask())
        except Exception as exc:  # (stopped all the same: the test fails, not hangs)
            failed.append(exc)
        finally:
            if not returned.is_set():
                os.kill(os.getpid(), stop_with)

    status = serve_beside(site, local, client, returned)
    assert failed == []
    return status, answers


def serve_beside(site: Path, local: Local, client, returned: threading.Event) -> int:
    """serve() in this thread (a signal reaches the main thread only) while client() runs in
    another; `returned` is set once serve() has returned. Its exit status."""
    thread = threading.Thread(target=client)
    thread.start()
    try:
        return builtin.serve(site, local)
    finally:
        returned.set()
        thread.join()


def listening(connect) -> bool:
    try:
        connect().connect()
        return True
    except OSError:
        return False


def test_serve_on_a_unix_socket_until_sigterm(site, service, capsys, application):
    sock = site.parent / "serve.sock"
    connect = lambda: UnixConnection(sock)  # noqa: E731
    previous = signal.getsignal(signal.SIGHUP)
    status, answers = serving(site, Local(socket=sock, write_service=service.address), lambda: listening(connect),
                              lambda: [over_http(connect, "GET", f"/api/v1/books/{BOOK}/"),
                                       over_http(connect, "POST", "/api/v1/user/", b"{}")], signal.SIGTERM)
    assert status == 0
    (got, fields, body), (posted, _, _) = answers
    assert (got, body) == (200, (generation(site) / f"api/v1/books/76/{BOOK}.json").read_bytes())
    names = [name for name, _ in fields]
    lower = [name.lower() for name in names]  # (uvicorn's own Server and Date would be in lower case)
    assert lower.count("server") == 1 and lower.count("date") == 1 and "ETag" in names and "X-Frame-Options" in names
    assert dict(fields)["Server"] == "catalogue"
    assert posted == 201 and len(service.requests) == 1  # (to the write service it was given)
    assert f"starting the built-in server for {site} at unix:{sock}\n" == capsys.readouterr().err
    assert signal.getsignal(signal.SIGHUP) is previous


@pytest.mark.parametrize("stop_with", [signal.SIGINT, signal.SIGHUP])
def test_serve_on_a_port_until_a_signal(site, stop_with, capsys, application):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # (let go for the server; another taking it meanwhile would fail the test, not hang it)
    connect = lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # noqa: E731
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    status, answers = serving(site, Local(port=port), lambda: listening(connect),
                              lambda: [over_http(connect, "GET", "/api/v1/")], stop_with)
    assert status == 0 and answers[0][0] == 200
    assert capsys.readouterr().err == f"starting the built-in server for {site} at http://127.0.0.1:{port}/api/v1/\n"
    assert {signum: signal.getsignal(signum) for signum in previous} == previous


def test_serve_needs_a_built_site(tmp_path):
    with pytest.raises(CatalogueError, match="there is no built site"):
        builtin.serve(tmp_path, Local(socket=tmp_path / "s.sock"))
    assert not (tmp_path / "s.sock").exists()


def hold_a_write(connect, service, returned: threading.Event) -> bool:
    """Once the server listens, a POST from a thread of its own that the write service holds
    (cut off when the server stops); whether the service got it within 10 s."""
    deadline = time.monotonic() + 30
    while not listening(connect) and time.monotonic() < deadline and not returned.is_set():
        time.sleep(0.02)

    def stuck_write() -> None:
        with contextlib.suppress(OSError, http.client.HTTPException):
            over_http(connect, "POST", "/api/v1/user/", b"{}")

    threading.Thread(target=stuck_write, daemon=True).start()
    return service.held.wait(10)


def test_a_second_signal_stops_serve_at_once(site, service, application):
    """The first signal waits for the requests being answered; a second ends them."""
    sock = site.parent / "second.sock"
    connect = lambda: UnixConnection(sock)  # noqa: E731
    service.hold.set()
    returned, outcome = threading.Event(), {}

    def client() -> None:
        outcome["held"] = hold_a_write(connect, service, returned)
        if returned.is_set():  # (serve() failed: a signal now would end this process)
            return
        os.kill(os.getpid(), signal.SIGTERM)
        outcome["waited"] = not returned.wait(0.5)
        if returned.is_set():  # (stopped at the first: as above)
            return
        os.kill(os.getpid(), signal.SIGTERM)
        outcome["stopped"] = returned.wait(10)
        service.hold.clear()  # (else serve would wait for it: the test fails, not hangs)

    status = serve_beside(site, Local(socket=sock, write_service=service.address), client, returned)
    assert status == 0 and outcome == {"held": True, "waited": True, "stopped": True}


def test_a_write_waits_in_a_daemon_thread_and_a_stop_gives_it_its_grace(site, service, application, monkeypatch):
    """One signal while a POST waits for a write service that does not answer: serve() stops
    after SHUTDOWN_GRACE seconds, the POST abandoned in its daemon thread (nginx's fast
    shutdown drops what is in flight), which ends quietly once the service answers."""
    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_type))
    sock = site.parent / "grace.sock"
    connect = lambda: UnixConnection(sock)  # noqa: E731
    service.hold.set()
    returned, outcome = threading.Event(), {}

    def client() -> None:
        outcome["held"] = hold_a_write(connect, service, returned)
        outcome["waiting"] = [t for t in threading.enumerate() if t.name == "write service request"]
        if returned.is_set():  # (serve() failed: a signal now would end this process)
            return
        os.kill(os.getpid(), signal.SIGTERM)
        outcome["waited"] = not returned.wait(builtin.SHUTDOWN_GRACE - 1)
        # (returned while the service still holds the POST: the stop did not wait for it)
        outcome["stopped"] = returned.wait(60)
        service.hold.clear()  # (else serve would wait for it: the test fails, not hangs)

    status = serve_beside(site, Local(socket=sock, write_service=service.address), client, returned)
    assert status == 0 and [t.daemon for t in outcome["waiting"]] == [True]
    assert (outcome["held"], outcome["waited"], outcome["stopped"]) == (True, True, True)
    for abandoned in outcome["waiting"]:  # (answered now, after the server's loop has closed)
        abandoned.join(10)
    assert raised == [] and not any(t.is_alive() for t in outcome["waiting"])
