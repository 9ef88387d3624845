"""The write path for real: the write service (uvicorn) behind nginx, on loopback."""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from generator.writes import tokens
from generator.sitebuild import build, check
from generator.api.urls import ACCEPTED, BY_NAME, detail_path
from conftest import SAMPLE
from servers import Server, WriteService, WriteStack, children, server_params, wait_for_port

BASE = "https://ketab.example.ir"
HANG = 600  # seconds: a build that has not ended by then never will
OWNER = "21474dbb-f5dd-4163-9d23-2efaac50c7d3"  # a user of the sample catalogue
USERS = 8


@pytest.fixture(scope="module", params=server_params(writes=True))
def kind(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def stack(tmp_path_factory, kind):
    """Sample data, a built site, a token, the write service and a server in front of it."""
    root = tmp_path_factory.mktemp("writes")
    shutil.copytree(SAMPLE, root / "data")
    running = WriteStack.start(root / "data", root, kind)
    yield running
    running.stop()


def post(stack, resource: str, body, token: str | None = "good", content_type: str = "application/json",
         method: str = "POST"):
    headers = {"Content-Type": content_type} if content_type else {}
    if token == "good":
        token = stack.token
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    return stack.server.request(method, f"/api/v1/{resource}/", headers, data)


def data_files(stack) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in stack.data.iterdir()}


def wait_until(condition, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def rebuilt(stack) -> None:
    """Until no write waits for a build (an event, not a deadline: a loaded machine builds
    slowly; HANG bounds a service that never ends its build)."""
    deadline = time.monotonic() + HANG
    while stack.service.status()["rebuild"]["pending"]:
        assert time.monotonic() < deadline, stack.service.status()
        time.sleep(0.05)


def served(stack, url: str):
    return stack.server.get(url.removeprefix(BASE))


def id_of(answer) -> str:
    return json.loads(answer.body)["url"].rstrip("/").rsplit("/", 1)[1]


def count(stack, resource: str) -> int:
    return json.loads(stack.server.get(f"/api/v1/{resource}/").body)["count"]


# ---- success ---------------------------------------------------------------------------------

def test_a_new_user_is_answered_as_published(stack):
    rebuilt(stack)  # earlier tests' writes (the order is random) are published before counting
    before = count(stack, "user")
    answer = post(stack, "user", {"username": "reader.1403", "first_name": " نرگس ", "bio": "کتاب‌خوان"})
    assert answer.status == 201
    created = json.loads(answer.body)
    assert list(created) == ["url", "id", "username", "first_name", "last_name", "bio", "following_count",
                             "followers_count", "followed"]
    assert created["url"] == f"{BASE}/api/v1/user/{created['id']}/"
    assert (created["username"], created["first_name"], created["last_name"]) == ("reader.1403", "نرگس", "")
    assert answer.header("Location") == created["url"]
    assert answer.header("Content-Type") == "application/json"
    assert answer.header("Allow") == "GET, POST, HEAD, OPTIONS"
    assert answer.header("X-Frame-Options") == "DENY"
    # The rebuild publishes the same bytes.
    rebuilt(stack)
    detail = served(stack, created["url"])
    assert (detail.status, detail.body) == (200, answer.body)
    assert count(stack, "user") == before + 1
    tail = (stack.data / "users.yaml").read_text(encoding="utf-8").splitlines()[-4:]
    assert tail == [f"- id: {created['id']}", "  username: reader.1403", "  first_name: نرگس", "  bio: کتاب‌خوان"]


def test_a_new_record_is_read_at_once_then_as_published(stack):
    """DRF answers a GET of a 201's Location at once: so do the servers, from the accepted
    document until the rebuild publishes the same bytes."""
    answer = post(stack, "user", {"username": "at.once"})
    assert answer.status == 201
    first = served(stack, answer.header("Location"))
    assert (first.status, first.body) == (200, answer.body)
    accepted = stack.site / ACCEPTED
    assert wait_until(lambda: not [p for p in accepted.rglob("*") if p.is_file()])  # (published: it goes)
    assert served(stack, answer.header("Location")).body == answer.body


def test_an_accepted_document_is_served_only_while_unpublished(stack):
    unpublished = "0e3e0d2a-8a5c-4f6e-9d3e-2d8f7a1b9c02"
    path = stack.site / ACCEPTED / detail_path(BY_NAME["user"], unpublished)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"accepted":true}')
    got = stack.server.get(f"/api/v1/user/{unpublished}/")
    assert (got.status, got.body, got.header("Content-Type")) == (200, b'{"accepted":true}', "application/json")
    path.unlink()
    assert stack.server.get(f"/api/v1/user/{unpublished}/").status == 404


@pytest.mark.parametrize("by", ["id", "url"])
def test_a_new_bookshelf_embeds_its_owner(stack, by):
    owner = OWNER if by == "id" else f"{BASE}/api/v1/user/{OWNER}/"
    answer = post(stack, "bookshelf", {"user": owner, "title": f"قفسهٔ تازه ({by})"})
    assert answer.status == 201
    created = json.loads(answer.body)
    assert list(created) == ["url", "user", "title"]
    assert created["user"] == json.loads(served(stack, f"{BASE}/api/v1/user/{OWNER}/").body)
    rebuilt(stack)
    detail = served(stack, created["url"])
    assert (detail.status, detail.body) == (200, answer.body)
    last = (stack.data / "bookshelves.csv").read_text(encoding="utf-8").splitlines()[-1]
    assert last == f"{id_of(answer)},{OWNER},قفسهٔ تازه ({by})"


# ---- failures: exact status and body, and nothing written -------------------------------------

LONG = "a" * 151
FAILURES = [
    ("user", {"username": "x"}, None, "application/json", 401,
     {"detail": "Authentication credentials were not provided."}),
    ("user", {"username": "x"}, "not-a-token", "application/json", 401, {"detail": "Invalid token."}),
    ("user", {"username": "x"}, "", "application/json", 401,
     {"detail": "Invalid token header. No credentials provided."}),
    ("user", {"username": "x"}, "two words", "application/json", 401,
     {"detail": "Invalid token header. Token string should not contain spaces."}),
    ("user", b'{"username": ', "good", "application/json", 400,
     {"detail": "JSON parse error - Expecting value: line 1 column 14 (char 13)"}),
    ("user", b'{"username": NaN}', "good", "application/json", 400,
     {"detail": "JSON parse error - Out of range float values are not JSON compliant: 'NaN'"}),
    ("user", b"username=x", "good", "application/x-www-form-urlencoded", 415,
     {"detail": 'Unsupported media type "application/x-www-form-urlencoded" in request.'}),
    ("user", b"x", "good", "text/plain; charset=utf-8", 415,
     {"detail": 'Unsupported media type "text/plain; charset=utf-8" in request.'}),
    ("user", {"bio": "x" * 70000}, "good", "application/json", 413, {"detail": "Request body is too large."}),
    ("user", {}, "good", "application/json", 400, {"username": ["This field is required."]}),
    ("user", b"", "good", "application/json", 400, {"username": ["This field is required."]}),
    ("user", [], "good", "application/json", 400,
     {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]}),
    ("user", {"username": "  "}, "good", "application/json", 400, {"username": ["This field may not be blank."]}),
    ("user", {"username": None}, "good", "application/json", 400, {"username": ["This field may not be null."]}),
    ("user", {"username": ["a"]}, "good", "application/json", 400, {"username": ["Not a valid string."]}),
    ("user", {"username": "nul", "bio": "a\x00b"}, "good", "application/json", 400,
     {"bio": ["Null characters are not allowed."]}),
    ("user", b'{"username": "surrogate", "bio": "a\\ud800b"}', "good", "application/json", 400,
     {"bio": ["Surrogate characters are not allowed: U+D800."]}),
    ("user", {"username": "sara.ahmadi"}, "good", "application/json", 400,
     {"username": ["A user with that username already exists."]}),
    ("user", {"username": "نام کاربری!"}, "good", "application/json", 400,
     {"username": ["Enter a valid username. This value may contain only letters, numbers, and @/./+/-/_ characters."]}),
    ("user", {"username": LONG}, "good", "application/json", 400,
     {"username": ["Ensure this field has no more than 150 characters."]}),
    ("user", {"username": "ok", "first_name": LONG, "followed": True, "email": "a@b.c"}, "good",
     "application/json", 400, {"first_name": ["Ensure this field has no more than 150 characters."],
                               "followed": ["This field is read-only."], "email": ["This field is not accepted."]}),
    ("bookshelf", {}, "good", "application/json", 400,
     {"user": ["This field is required."], "title": ["This field is required."]}),
    ("bookshelf", {"user": "2147", "title": "t"}, "good", "application/json", 400,
     {"user": ["“2147” is not a valid UUID."]}),
    ("bookshelf", {"user": "00000000-0000-4000-8000-000000000000", "title": "t"}, "good", "application/json",
     400, {"user": ['Invalid pk "00000000-0000-4000-8000-000000000000" - object does not exist.']}),
    ("bookshelf", {"user": 12, "title": ""}, "good", "application/json", 400,
     {"user": ["Incorrect type. Expected pk value, received int."], "title": ["This field may not be blank."]}),
    ("bookshelf", {"user": f"{BASE}/api/v1/books/{OWNER}/", "title": "t"}, "good", "application/json", 400,
     {"user": ["Invalid hyperlink - No URL match."]}),
    # (a host with a bracket unmatched, which urlsplit refuses and DRF's urlparse raises on: a 500 there)
    ("bookshelf", {"user": f"http://[ketab/api/v1/user/{OWNER}/", "title": "t"}, "good", "application/json", 400,
     {"user": ["Invalid hyperlink - No URL match."]}),
    ("bookshelf", {"user": f"{BASE}/api/v1/user/00000000-0000-4000-8000-000000000000/", "title": "t"}, "good",
     "application/json", 400, {"user": ["Invalid hyperlink - Object does not exist."]}),
]


@pytest.mark.parametrize("resource, body, token, content_type, status, expected", FAILURES)
def test_refused_requests_write_nothing(stack, resource, body, token, content_type, status, expected):
    before = data_files(stack)
    answer = post(stack, resource, body, token, content_type)
    assert (answer.status, json.loads(answer.body)) == (status, expected)
    assert answer.header("Content-Type") == "application/json"
    assert answer.header("Allow") == "GET, POST, HEAD, OPTIONS"
    if status == 401:
        assert answer.header("WWW-Authenticate") == 'Bearer realm="api"'
    assert data_files(stack) == before


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_other_methods_are_not_allowed(stack, method):
    answer = post(stack, "user", {"username": "x"}, method=method)
    assert (answer.status, json.loads(answer.body)) == (405, {"detail": f'Method "{method}" not allowed.'})


def test_the_service_itself_answers_in_drf_shapes(stack):
    """Reached without nginx (a proxy that forgets the size limit, say)."""
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", stack.service.port, timeout=10)
    auth = {"Authorization": f"Bearer {stack.token}", "Content-Type": "application/json"}
    for method, path, body, status, expected in [
        ("POST", "/api/v1/user/", b'{"bio": "%s"}' % (b"x" * 70000), 413, {"detail": "Request body is too large."}),
        ("DELETE", "/api/v1/user/", b"", 405, {"detail": 'Method "DELETE" not allowed.'}),
        ("POST", "/api/v1/books/", b"{}", 404, {"detail": "Not found."}),
        ("POST", "/elsewhere", b"{}", 404, {"detail": "Not found."}),
    ]:
        connection.request(method, path, body=body, headers=auth)
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())) == (status, expected), path
    before = data_files(stack)
    chunks = (b"x" * 8192 for _ in range(9))  # 72 KiB, streamed: no Content-Length to go by
    connection.request("POST", "/api/v1/user/", body=chunks, encode_chunked=True,
                       headers={**auth, "Transfer-Encoding": "chunked"})
    response = connection.getresponse()
    assert (response.status, json.loads(response.read())) == (413, {"detail": "Request body is too large."})
    assert data_files(stack) == before
    connection.close()


def test_tokens_are_never_logged(stack):
    post(stack, "user", {"username": "x"}, token="not-a-token")
    post(stack, "user", {"username": ""})
    logs = [stack.service.log] + list((stack.site / ".run").glob("*.log"))
    assert logs and all(stack.token not in p.read_text(errors="replace") for p in logs)
    assert all("not-a-token" not in p.read_text(errors="replace") for p in logs)
    assert stack.token not in stack.token_file.read_text()  # only its hash


def test_a_revoked_token_stops_writing(stack, tmp_path):
    original = stack.token_file.read_text()
    try:
        revoke_and_break(stack)
    finally:
        stack.token_file.write_text(original)


def revoke_and_break(stack):
    extra = tokens.add(stack.token_file, "temporary")
    assert post(stack, "user", {"username": "temporary.user"}, token=extra).status == 201
    lines = stack.token_file.read_text().splitlines()
    stack.token_file.write_text("\n".join(l for l in lines if not l.startswith("temporary ")) + "\n")
    answer = post(stack, "user", {"username": "temporary.user2"}, token=extra)
    assert (answer.status, json.loads(answer.body)) == (401, {"detail": "Invalid token."})
    # A token file that breaks lets no one write until it is mended.
    kept = stack.token_file.read_text()
    stack.token_file.write_text("not a token line\n")
    assert post(stack, "user", {"username": "temporary.user3"}).status == 401
    stack.token_file.write_text(kept)
    assert post(stack, "user", {"username": "temporary.user3"}).status == 201


def test_a_hand_edit_of_the_data_is_seen(stack):
    path = stack.data / "users.yaml"
    original = path.read_bytes()
    try:
        with path.open("a", encoding="utf-8") as f:
            f.write("- username: hand.made\n")
        answer = post(stack, "user", {"username": "hand.made"})
        assert (answer.status, json.loads(answer.body)) == (400, {"username": [
            "A user with that username already exists."]})
    finally:
        path.write_bytes(original)


def test_data_that_does_not_load_stops_writes_until_fixed(stack):
    path = stack.data / "bookshelves.csv"
    good = path.read_bytes()
    path.write_bytes(good + b"not,a,uuid\n")
    try:
        answer = post(stack, "bookshelf", {"user": OWNER, "title": "t"})
        assert (answer.status, json.loads(answer.body)) == (503, {
            "detail": "Writing is not available right now: the catalogue's data has problems."})
        assert path.read_bytes() == good + b"not,a,uuid\n"
    finally:
        path.write_bytes(good)
    assert post(stack, "bookshelf", {"user": OWNER, "title": "t"}).status == 201


# ---- many at once, and a crash ---------------------------------------------------------------

def test_200_concurrent_posts(stack):
    before = check(stack.data).records["user"]  # (earlier writes may not be published yet)
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda n: post(stack, "user", {"username": f"burst.{n}"}), range(200)))
    assert [a.status for a in answers] == [201] * 200
    ids = {json.loads(a.body)["id"] for a in answers}
    assert len(ids) == 200
    text = (stack.data / "users.yaml").read_text(encoding="utf-8")
    assert all(f"- id: {id}\n" in text for id in ids)
    assert check(stack.data).records["user"] == before + 200  # the data file loads
    rebuilt(stack)
    assert count(stack, "user") == before + 200
    listed = json.loads(stack.server.get("/api/v1/user/?limit=24&offset=0").body)
    assert listed["count"] == before + 200


def test_killed_mid_burst_keeps_every_answered_record(tmp_path: Path, data_dir: Path, kind: str):
    stack = WriteStack.start(data_dir, tmp_path, kind)
    answered: list[str] = []
    refused = [0]  # answers that were not 201: the service was gone
    stop = threading.Event()

    def writer(k: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                answer = post(stack, "bookshelf" if n % 3 == 0 else "user",
                              {"user": OWNER, "title": f"shelf {k}.{n}"} if n % 3 == 0 else {"username": f"kill.{k}.{n}"})
            except (OSError, http.client.HTTPException):  # (the service was killed mid-answer)
                refused[0] += 1
                continue
            if answer.status == 201:
                answered.append(id_of(answer))
            else:
                refused[0] += 1
    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    try:
        assert wait_until(lambda: len(answered) >= 60)
        os.kill(stack.service.process.pid, signal.SIGKILL)
        stack.service.process.wait()
        assert wait_until(lambda: refused[0] >= 16)  # every writer has met the dead service
    finally:
        stop.set()
        for t in threads:
            t.join()
        stack.server.stop()
    summary = check(data_dir)  # every data file loads
    text = (data_dir / "users.yaml").read_text(encoding="utf-8") + (data_dir / "bookshelves.csv").read_text(encoding="utf-8")
    assert answered and all(id in text for id in answered)
    assert summary.records["user"] + summary.records["bookshelf"] >= USERS + 12 + len(answered)
    # Started again, it publishes every record that was answered.
    api = stack.site / "current" / "api" / "v1"
    service = WriteService(data_dir, stack.site, stack.token_file)
    try:
        assert wait_until(lambda: all((api / "user" / id[:2] / f"{id}.json").exists()
                                      or (api / "bookshelf" / id[:2] / f"{id}.json").exists() for id in answered))
    finally:
        service.stop()


# ---- `catalogue serve --data` (`make serve`): one per server, shared by the tests below ---------

@pytest.fixture(scope="module")
def serving(tmp_path_factory, kind):
    """`catalogue serve --data --tokens` beside a deployed build of the same data: a local
    build of the data, links where it is served, and its write service. Started once for
    the tests that take it (a start builds the data and starts the server and its write
    service, a second or more of processor time), in any order."""
    running = start_serving(tmp_path_factory.mktemp("serve-data"), kind)
    yield running
    if running.server.process.poll() is None:
        running.server.stop()


def start_serving(root: Path, kind: str) -> SimpleNamespace:
    data = root / "data"
    shutil.copytree(SAMPLE, data)
    site = root / "site"
    build(data, site)
    deployed = {p: p.read_bytes() for p in (site / "current").resolve().rglob("*") if p.is_file()}
    token_file = root / "tokens"
    token = tokens.add(token_file, "librarian")
    server = Server(site, None, "--data", str(data), "--tokens", str(token_file), kind=kind)
    return SimpleNamespace(server=server, token=token, site=site, deployed=deployed)


def ready_line(server: Server, seconds: float = 60.0) -> str:
    """`catalogue serve`'s word that every part of it answers (hosts/contract.py)."""
    found = wait_until(lambda: next((line for line in server.log.read_text().splitlines()
                                     if line.startswith(("ready:", "not ready"))), None), seconds)
    assert found, server.log.read_text()
    return found


def test_serve_says_ready_only_once_its_write_service_answers_and_stops_with_it(tmp_path: Path, kind: str):
    """The first POST after `ready:` is taken (once, on a loaded machine, reads were answered
    while the write service still started, and that POST got 503); then SIGTERM stops the
    server and its write service, and the deployed build was never touched (its links still
    point to base_url). A server of its own: its POST is the server's first."""
    serving = start_serving(tmp_path, kind)
    server = serving.server
    try:
        line = ready_line(server)
        answer = post(serving, "user", {"username": "first.post"})
        assert answer.status == 201, answer.body
        assert line == (f"ready: http://127.0.0.1:{server.port}/api/v1/ answers; writes go to the write service "
                        f"at 127.0.0.1:{server.write_port} (Ctrl-C stops)")
    finally:
        stopped = server.stop()
    assert stopped == 0
    assert not [pid for pid in children(os.getpid()) if pid == server.process.pid]
    with pytest.raises(OSError):  # the write service stopped with the server
        socket.create_connection(("127.0.0.1", server.write_port), timeout=0.5).close()
    assert {p: p.read_bytes() for p in (serving.site / "current").resolve().rglob("*") if p.is_file()} == serving.deployed


def test_serve_with_data_serves_a_local_build_and_takes_writes(serving):
    """`make serve`: a local build of the data, links where it is served; writes published."""
    server = serving.server
    local = f"http://127.0.0.1:{server.port}"
    wait_for_port(server.write_port, server.process, "the write service", log=server.log)
    assert json.loads(server.get("/api/v1/books/").body)["next"] == f"{local}/api/v1/books/?limit=12&offset=12"
    answer = post(serving, "user", {"username": "served.user"})
    assert answer.status == 201
    url = json.loads(answer.body)["url"]
    assert url.startswith(f"{local}/api/v1/user/")
    assert wait_until(lambda: server.get(url.removeprefix(local)).status == 200)


def test_serve_starts_the_write_service_again_when_it_dies(serving):
    server = serving.server
    wait_for_port(server.write_port, server.process, "the write service", log=server.log)
    # (twice for one kind, the pause growing between; once for the others, whose servers
    # each carry the POST to the service started again: `serve` supervises it alike for all)
    rounds = 2 if server.kind == "builtin" else 1
    for round in range(rounds):
        service = [pid for pid in server.children() if b"write-service" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(service) == 1
        os.kill(service[0], signal.SIGKILL)
        assert wait_until(lambda: post(serving, "user", {"username": f"again.{round}"}).status == 201, 20)
    assert server.log.read_text().count("the write service exited with status -9; starting it again") == rounds


def test_the_write_service_keeps_a_paths_site_a_paths_site(tmp_path: Path, data_dir: Path):
    """A site built with --links paths stays one through the service's rebuilds (the one it
    makes on starting, and each after a write), and a 201 links as the published record will."""
    site = tmp_path / "site"
    build(data_dir, site, links="paths")
    root_before = (site / "current/api/v1/index.json").read_bytes()
    token_file = tmp_path / "tokens"
    token = tokens.add(token_file, "librarian")
    service = WriteService(data_dir, site, token_file)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=10)
        connection.request("POST", "/api/v1/user/", json.dumps({"username": "paths.reader"}),
                           {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        answer = connection.getresponse()
        created = json.loads(answer.read())
        connection.close()
        assert answer.status == 201, created
        id = created["id"]
        assert created["url"] == f"{BASE}/api/v1/user/{id[:2]}/{id}.json"
        published = site / "current/api/v1/user" / id[:2] / f"{id}.json"
        assert wait_until(lambda: published.is_file() and published.read_bytes() == json.dumps(
            created, ensure_ascii=False, separators=(",", ":")).encode())
        assert (site / "current/api/v1/index.json").read_bytes() == root_before
        first_page = json.loads((site / "current/api/v1/user/index.json").read_bytes())
        assert all(user["url"].endswith(".json") for user in first_page["results"])
    finally:
        service.stop()


def test_serve_says_plainly_that_writes_are_off(tmp_path: Path, kind: str):
    """`make serve-cloudflare` and the like: a write port, no write service behind it."""
    site = tmp_path / "site"
    build(SAMPLE, site)
    server = Server(site, kind=kind)  # (its write port: held, nothing listening)
    try:
        assert ready_line(server) == (
            f"ready: http://127.0.0.1:{server.port}/api/v1/ answers; writes are off: no write service answers "
            f"at 127.0.0.1:{server.write_port}, so every POST answers 503 (serve with --data and --tokens, or "
            "run `catalogue write-service` there) (Ctrl-C stops)")
        assert post(SimpleNamespace(server=server, token="any"), "user", {"username": "nobody"}).status == 503
    finally:
        assert server.stop() == 0
