"""The write service's application in this process: the same requests as the end-to-end tests
(tests/writes/test_service.py, which run it behind the servers), sent straight to the ASGI
application, over a real copy of the sample data, token file and output folder. Here the
service's own answers are seen without a server in front, and mutation testing sees the code run."""
from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from pathlib import Path

import anyio
import pytest

from generator.api import meta
from generator.api.urls import ACCEPTED
from generator.writes import service, tokens
from generator.catalogue.fields import derived_id
from generator.writes.create import Catalogue, Unavailable

BASE = "https://ketab.example.ir"
OWNER = "21474dbb-f5dd-4163-9d23-2efaac50c7d3"  # a user of the sample catalogue


class App:
    """The application over a copy of the data, with what it asked to publish counted."""

    def __init__(self, data: Path, out: Path, base_url: str | None = None, max_body: int = service.MAX_BODY,
                 links: str = "api") -> None:
        self.data = data
        self.out = out
        self.token_file = out.parent / "tokens"
        self.token = tokens.add(self.token_file, "librarian")
        self.published: list[None] = []
        config = service.Config(data, out, self.token_file, base_url=base_url, max_body=max_body, links=links)
        (out / service.STATE_DIR).mkdir(parents=True)  # (as the service makes it on starting)
        self.catalogue = Catalogue(data, base_url, out / service.STATE_DIR / "append.journal", links)
        self.catalogue.refresh()  # (as the service does on starting)
        self.app = service.application(config, self.catalogue, tokens.Tokens(self.token_file),
                                       lambda: self.published.append(None))

    def request(self, method: str, path: str, headers: dict[str, str], chunks: list[bytes]):
        """(status, headers, body) of one request, its body sent in these chunks."""
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
                 "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8001)}
        incoming = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                    for i, c in enumerate(chunks or [b""])]
        answer: dict = {"body": b""}

        async def receive():
            return incoming.pop(0) if incoming else {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
            else:
                answer["body"] += message.get("body", b"")

        async def call():
            try:
                await self.app(scope, receive, send)
            except RuntimeError as exc:  # (Starlette raises a server error again once it has answered)
                answer["raised"] = exc
        anyio.run(call)
        return answer["status"], answer["headers"], answer["body"]

    def post(self, resource: str, body, token: str | None = "good", content_type: str | None = "application/json",
             method: str = "POST", path: str | None = None, headers: dict[str, str] | None = None,
             chunked: bool = False):
        data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
        sent = dict(headers or {})
        if content_type:
            sent["Content-Type"] = content_type
        if token is not None:
            sent["Authorization"] = f"Bearer {self.token if token == 'good' else token}"
        if not chunked:
            sent.setdefault("Content-Length", str(len(data)))
        step = 10 if chunked else len(data) or 1  # (streamed in small pieces: the limit is on their sum)
        chunks = [data[i:i + step] for i in range(0, len(data), step)] or [b""]
        return self.request(method, path or f"/api/v1/{resource}/", sent, chunks)

    def files(self) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in self.data.iterdir()}


@pytest.fixture
def app(data_dir: Path, tmp_path: Path) -> App:
    return App(data_dir, tmp_path / "site")


def test_a_new_user_is_answered_kept_and_published(app):
    status, headers, body = app.post("user", {"username": "reader.1403", "first_name": " نرگس ", "bio": "کتاب‌خوان"})
    assert status == 201, body
    created = json.loads(body)
    assert list(created) == ["url", "id", "username", "first_name", "last_name", "bio", "following_count",
                             "followers_count", "followed"]
    assert created["url"] == f"{BASE}/api/v1/user/{created['id']}/"
    assert (created["username"], created["first_name"], created["last_name"]) == ("reader.1403", "نرگس", "")
    assert headers["location"] == created["url"] and headers["content-type"] == "application/json"
    kept = app.out / ACCEPTED / "api/v1/user" / created["id"][:2] / f"{created['id']}.json"
    assert kept.read_bytes() == body  # (served until a build publishes it)
    assert app.published == [None]
    tail = (app.data / "users.yaml").read_text(encoding="utf-8").splitlines()[-4:]
    assert tail == [f"- id: {created['id']}", "  username: reader.1403", "  first_name: نرگس", "  bio: کتاب‌خوان"]


@pytest.mark.parametrize("by", ["id", "url"])
def test_a_new_bookshelf_embeds_its_owner(app, by):
    owner = OWNER if by == "id" else f"{BASE}/api/v1/user/{OWNER}/"
    status, headers, body = app.post("bookshelf", {"user": owner, "title": "قفسهٔ تازه"})
    assert status == 201, body
    created = json.loads(body)
    assert list(created) == ["url", "user", "title"]
    assert created["user"]["url"] == f"{BASE}/api/v1/user/{OWNER}/"
    id = created["url"].rstrip("/").rsplit("/", 1)[1]
    assert (app.data / "bookshelves.csv").read_text(encoding="utf-8").splitlines()[-1] == f"{id},{OWNER},قفسهٔ تازه"


def service_failures() -> list:
    """The refused requests of the end-to-end tests, with their exact answers."""
    import ast
    tree = ast.parse((Path(__file__).parent / "test_service.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "FAILURES":
            source = ast.unparse(node.value)
            return eval(source, {"LONG": "a" * 151, "BASE": BASE, "OWNER": OWNER})
    raise AssertionError("tests/writes/test_service.py has no FAILURES")


@pytest.mark.parametrize("resource, body, token, content_type, status, expected", service_failures())
def test_refused_requests_write_nothing(app, resource, body, token, content_type, status, expected):
    before = app.files()
    got, headers, answer = app.post(resource, body, token, content_type)
    assert (got, json.loads(answer)) == (status, expected)
    assert headers["content-type"] == "application/json"
    assert headers.get("www-authenticate") == ('Bearer realm="api"' if status == 401 else None)
    assert app.files() == before
    assert app.published == []
    assert not (app.out / ACCEPTED).exists()


@pytest.mark.parametrize("header, status", [
    ("BEARER {token}", 201), ("bearer {token}", 201), ("Token {token}", 401), ("Bearer", 401), ("", 401),
])
def test_the_bearer_keyword_in_any_case(app, header, status):
    got, _, body = app.post("user", {"username": "any.case"}, token=None,
                            headers={"Authorization": header.format(token=app.token)} if header else None)
    assert got == status, body


def test_the_media_type_is_read_as_drf_reads_it(app):
    """Its parameters and case do not matter; a request without a body needs none."""
    assert app.post("user", {"username": "typed.1"}, content_type="Application/JSON ; charset=utf-8")[0] == 201
    status, _, body = app.post("user", b"", content_type="text/plain")
    assert (status, json.loads(body)) == (400, {"username": ["This field is required."]})
    status, _, body = app.post("user", b"", content_type=None)
    assert (status, json.loads(body)) == (400, {"username": ["This field is required."]})
    status, _, body = app.post("user", {"username": "typed.2"}, content_type=None)
    assert (status, json.loads(body)) == (415, {"detail": 'Unsupported media type "" in request.'})


def test_a_body_that_is_not_utf8_is_a_parse_error(app):
    status, _, body = app.post("user", b'{"username": "\xff"}')
    assert (status, json.loads(body)) == (400, {
        "detail": "JSON parse error - 'utf-8' codec can't decode byte 0xff in position 14: invalid start byte"})


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity"])
def test_out_of_range_floats_are_refused(app, constant):
    status, _, body = app.post("user", b'{"username": "x", "bio": %s}' % constant.encode())
    assert (status, json.loads(body)) == (400, {
        "detail": f"JSON parse error - Out of range float values are not JSON compliant: '{constant}'"})


@pytest.mark.parametrize("chunked", [False, True])
def test_the_body_limit_is_the_last_byte_allowed(data_dir, tmp_path, chunked):
    """A body of max_body bytes is read; one more byte is 413, declared or streamed."""
    app = App(data_dir, tmp_path / "site", max_body=100)
    body = json.dumps({"username": "limit.1", "bio": ""}).encode()
    body = body[:-2] + b"x" * (100 - len(body)) + b'"}'
    assert len(body) == 100
    status, _, answer = app.post("user", body, chunked=chunked)
    assert status == 201, answer
    status, _, answer = app.post("user", body[:-2] + b'x"}', chunked=chunked)
    assert (status, answer) == (413, meta.TOO_LARGE)
    # A declared length over the limit is refused before the body is read.
    status, _, answer = app.post("user", b"{}", headers={"Content-Length": "101"})
    assert (status, answer) == (413, meta.TOO_LARGE)


def test_other_methods_and_paths(app):
    for method in ("PUT", "PATCH", "DELETE", "GET"):
        status, headers, body = app.post("user", {"username": "x"}, method=method)
        assert (status, json.loads(body)) == (405, {"detail": f'Method "{method}" not allowed.'})
        assert headers["content-type"] == "application/json"
        status, _, body = app.post("books", {}, method=method)
        assert (status, body) == (404, meta.NOT_FOUND)
    assert app.post("books", {})[:3:2] == (404, meta.NOT_FOUND)
    assert app.post("user", {}, path="/elsewhere")[:3:2] == (404, meta.NOT_FOUND)


def test_a_site_under_a_path_takes_writes_there(data_dir, tmp_path):
    app = App(data_dir, tmp_path / "site", base_url="https://example.org/catalogue")
    status, headers, body = app.post("user", {"username": "under.path"}, path="/catalogue/api/v1/user/")
    assert status == 201, body
    assert headers["location"].startswith("https://example.org/catalogue/api/v1/user/")
    assert app.post("user", {"username": "elsewhere"})[:3:2] == (404, meta.NOT_FOUND)


def test_data_that_does_not_load_is_503_and_logged(app, caplog):
    path = app.data / "bookshelves.csv"
    path.write_bytes(path.read_bytes() + b"not,a,uuid\n")
    with caplog.at_level(logging.ERROR, logger="catalogue.write"):
        status, _, body = app.post("bookshelf", {"user": OWNER, "title": "t"})
    assert (status, body) == (503, meta.DATA_UNAVAILABLE)
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage().startswith("cannot write: data/bookshelves.csv:14: ")
    assert app.published == []


def test_a_record_not_kept_for_reading_is_still_created(app, caplog):
    """The accepted folder cannot be written (a file is in its way): the record is written,
    answered and published all the same, and the reason logged."""
    (app.out / ACCEPTED).write_bytes(b"")
    with caplog.at_level(logging.ERROR, logger="catalogue.write"):
        status, _, body = app.post("user", {"username": "not.kept"})
    assert status == 201, body
    assert app.published == [None]
    assert len(caplog.records) == 1 and re.fullmatch(
        r"the new record will be served once published: \[Errno \d+\] .+", caplog.records[0].getMessage())


def test_an_unexpected_failure_is_a_drf_500(app, monkeypatch, caplog):
    def broken(resource, body):
        raise RuntimeError("a bug")
    monkeypatch.setattr(app.catalogue, "create", broken)
    with caplog.at_level(logging.ERROR, logger="catalogue.write"):
        status, headers, body = app.post("user", {"username": "x"})
    assert (status, body, headers["content-type"]) == (500, meta.SERVER_ERROR, "application/json")
    assert [r.getMessage() for r in caplog.records] == ["a write failed"]
    assert caplog.records[0].exc_info[1].args == ("a bug",)  # (with its traceback)
    assert app.published == []


def test_the_supervised_service_is_started_as_configured(tmp_path):
    config = service.Config(tmp_path / "data", tmp_path / "site", tmp_path / "tokens", host="127.0.0.2", port=9001,
                            base_url="https://example.org", listen="127.0.0.1:9000", links="paths")
    supervised = service.supervised(config)
    assert supervised.command[3:] == ["write-service", "--data", str(tmp_path / "data"), "--out",
                                      str(tmp_path / "site"), "--tokens", str(tmp_path / "tokens"), "--host",
                                      "127.0.0.2", "--port", "9001", "--listen", "127.0.0.1:9000", "--links", "paths",
                                      "--base-url", "https://example.org"]
    assert supervised.name == "the write service"


# ---- the checks of create.py, field by field -------------------------------------------------

def shelf_row(app) -> str:
    return (app.data / "bookshelves.csv").read_text(encoding="utf-8").splitlines()[-1]


@pytest.mark.parametrize("title, written", [(5, "5"), (5.5, "5.5"), ("  قفسه  ", "قفسه"), (-0, "0")])
def test_numbers_become_text_and_white_space_goes(app, title, written):
    status, _, body = app.post("bookshelf", {"user": OWNER, "title": title})
    assert status == 201, body
    assert json.loads(body)["title"] == written and shelf_row(app).endswith(f",{OWNER},{written}")


def test_a_lone_carriage_return_is_written_quoted_and_read_back(app):
    """(The sample's CSV files end their lines with "\\n"; a lone "\\r" was answered 503.)"""
    status, _, body = app.post("bookshelf", {"user": OWNER, "title": "یک\rدو"})
    assert status == 201, body
    assert json.loads(body)["title"] == "یک\rدو"
    assert (app.data / "bookshelves.csv").read_bytes().endswith(f',{OWNER},"یک\rدو"\n'.encode())
    assert app.post("bookshelf", {"user": OWNER, "title": "یک\rدو"})[0] == 201  # (the data, read again, loads)


@pytest.mark.parametrize("owner", [OWNER.upper(), "{%s}" % OWNER, f"{BASE}/api/v1/user/{OWNER.upper()}/",
                                   f"/api/v1/user/{OWNER}/"])
def test_an_owner_is_written_in_its_canonical_form(app, owner):
    status, _, body = app.post("bookshelf", {"user": owner, "title": "t"})
    assert status == 201, body
    assert shelf_row(app).split(",")[1] == OWNER


@pytest.mark.parametrize("owner", [f"{BASE}/api/v1/user/{OWNER}", f"{BASE}/api/v1/user/x/{OWNER}/",
                                   f"{BASE}/api/v1/users/{OWNER}/", f"{BASE}/v1/user/{OWNER}/"])
def test_a_hyperlink_must_be_a_users_detail_url(app, owner):
    status, _, body = app.post("bookshelf", {"user": owner, "title": "t"})
    assert (status, json.loads(body)) == (400, {"user": ["Invalid hyperlink - No URL match."]})


@pytest.mark.parametrize("body, errors", [
    ({"username": True}, {"username": ["Not a valid string."]}),
    ({"username": 1403}, None),
    ({"username": "no.bio", "bio": None}, {"bio": ["This field may not be null."]}),
    ({"username": "blank.bio", "bio": "  "}, None),  # (a TextField may be blank)
    ({"username": "x" * 150}, None),  # (the longest allowed)
    ({"username": "a.b", "id": OWNER}, {"id": ["This field is read-only."]}),
    ({"user": OWNER, "title": None}, {"title": ["This field may not be null."]}),
])
def test_user_fields(app, body, errors):
    status, _, answer = app.post("user" if "username" in body else "bookshelf", body)
    if errors is None:
        assert status == 201, answer
        assert json.loads(answer)["username"] == str(body["username"])
    else:
        assert (status, json.loads(answer)) == (400, errors)


def test_a_name_taken_by_a_record_just_written_is_taken(app):
    assert app.post("user", {"username": "twice"})[0] == 201
    status, _, body = app.post("user", {"username": "twice"})
    assert (status, json.loads(body)) == (400, {"username": ["A user with that username already exists."]})


def test_a_hand_edit_of_the_data_is_seen(app):
    with (app.data / "users.yaml").open("a", encoding="utf-8") as f:
        f.write("- username: hand.made\n")
    status, _, body = app.post("user", {"username": "hand.made"})
    assert (status, json.loads(body)) == (400, {"username": ["A user with that username already exists."]})


def test_a_data_file_without_ids_gets_the_id_the_build_derives(data_dir, tmp_path):
    """A bookshelves.csv without an id column: the row is written without one, the answer
    names the id the build will derive from its user and title, and a second shelf of the
    same user and title is refused as DRF's unique_together refused it."""
    path = data_dir / "bookshelves.csv"
    path.write_text("".join(line.split(",", 1)[1] + "\n" for line in path.read_text(encoding="utf-8").splitlines()),
                    encoding="utf-8")
    app = App(data_dir, tmp_path / "site")
    status, _, body = app.post("bookshelf", {"user": OWNER, "title": "تازه"})
    assert status == 201, body
    assert json.loads(body)["url"] == f"{BASE}/api/v1/bookshelf/{derived_id('bookshelves', f'{OWNER}/تازه')}/"
    assert shelf_row(app) == f"{OWNER},تازه"
    status, _, body = app.post("bookshelf", {"user": OWNER, "title": "تازه"})
    assert (status, json.loads(body)) == (400, {"title": ["This user already has a bookshelf with this title."]})


def test_data_that_does_not_load_says_why(data_dir, tmp_path):
    (data_dir / "bookshelves.csv").write_bytes((data_dir / "bookshelves.csv").read_bytes() + b"not,a,uuid\n")
    with pytest.raises(Unavailable) as caught:
        Catalogue(data_dir, None, tmp_path / "journal").refresh()
    assert str(caught.value) == ("data/bookshelves.csv:14: field 'id': 'not' is not a UUID "
                                 "(like 'a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b')")  # (the first of its problems)


@pytest.mark.parametrize("crashed", [True, False])
def test_run_recovers_then_serves_what_it_was_configured_with(data_dir, tmp_path, monkeypatch, capsys, crashed):
    """`catalogue write-service`: a crashed append is settled first (else the output folder
    may not exist yet), the data must load, the application is served by uvicorn as configured
    (no Server or Date header of its own, an access log), a write made through it is published
    by a rebuild, a token file that breaks is logged, and the log goes to stderr with the time
    and the logger's name. (uvicorn's serving loop is replaced by requests sent to the
    application it was given.)"""
    import uvicorn
    monkeypatch.setattr(logging.root, "handlers", [])  # (the service configures logging itself)
    monkeypatch.setattr(logging.root, "level", logging.WARNING)
    out = tmp_path / "out" / "site"
    users = data_dir / "users.yaml"
    original = users.read_bytes()
    if crashed:
        journal = out / service.STATE_DIR / "append.journal"
        journal.parent.mkdir(parents=True)
        with users.open("ab") as f:
            f.write(b"- id: 0b7e5d8c")  # (an append cut short by a crash)
        journal.write_text(json.dumps({"path": str(users), "size": len(original), "length": 40, "sha256": "0" * 64}))
    token_file = tmp_path / "tokens"
    token = tokens.add(token_file, "librarian")
    served: dict = {}

    def serve(self):
        served["config"] = self.config
        app = App.__new__(App)
        app.app, app.token = self.config.app, token
        served["answer"] = status, _, body = app.post("user", {"username": "through.run"},
                                                      path="/catalogue/api/v1/user/")
        if status == 201:  # (served until the rebuild it asked for has published the record)
            id = json.loads(body)["id"]
            published = out / "current/api/v1/user" / id[:2] / f"{id}.json"
            deadline = time.monotonic() + 120
            while not published.is_file() and time.monotonic() < deadline:
                time.sleep(0.05)
        token_file.write_text("broken\n")
        served["broken"] = app.post("user", {"username": "after.break"}, path="/catalogue/api/v1/user/")

    monkeypatch.setattr(uvicorn.Server, "run", serve)
    links = "api" if crashed else "paths"  # (a `--links paths` site: its records answered and rebuilt so)
    config = service.Config(data_dir, out, token_file, port=18001, listen="127.0.0.1:18000",
                            base_url="https://example.org/catalogue", links=links)
    service.run(config)
    after = users.read_bytes()  # (the partial record cut off, the new one after the file's bytes)
    assert after.startswith(original) and b"0b7e5d8c" not in after and b"through.run" in after
    logged = capsys.readouterr().err.splitlines()
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} catalogue\.write: .+", line) for line in logged), logged
    messages = [line.split(" catalogue.write: ", 1)[1] for line in logged]
    first = (["after a crash: removed a partly written record from the end of users.yaml"] if crashed else []) + [
        f"writes to {data_dir} accepted at http://127.0.0.1:18001"]
    assert messages[:len(first)] == first
    assert any(m.startswith("rebuilt and published in ") for m in messages), messages
    assert f"no token is valid until the token file is mended: {token_file}:1: expected `<name> <sha256 hex of " \
           "the token>`" in messages
    settings = served["config"]
    assert (settings.host, settings.port, settings.log_level, settings.server_header, settings.date_header,
            settings.access_log) == ("127.0.0.1", 18001, "info", False, False, True)
    status, headers, body = served["answer"]
    assert status == 201, body
    created = json.loads(body)
    id = created["id"]
    assert headers["location"] == created["url"] == (f"https://example.org/catalogue/api/v1/user/{id}/" if crashed
                                                     else f"https://example.org/catalogue/api/v1/user/{id[:2]}/{id}.json")
    published = out / "current/api/v1/user" / created["id"][:2] / f"{created['id']}.json"
    assert published.read_bytes() == body
    assert served["broken"][0] == 401


def test_the_supervised_service_says_why_it_starts_again_on_stderr(tmp_path, capsys):
    supervised = service.supervised(service.Config(tmp_path / "data", tmp_path / "site", tmp_path / "tokens"))
    supervised._log("the write service exited with status 1; starting it again")
    assert capsys.readouterr() == ("", "the write service exited with status 1; starting it again\n")


def test_a_paths_site_answers_the_links_it_publishes(data_dir, tmp_path):
    app = App(data_dir, tmp_path / "site", links="paths")
    status, headers, body = app.post("user", {"username": "paths.user"})
    assert status == 201, body
    id = json.loads(body)["id"]
    assert headers["location"] == f"{BASE}/api/v1/user/{id[:2]}/{id}.json"


def test_a_catalogue_links_as_the_api_unless_told(data_dir, tmp_path):
    created = Catalogue(data_dir, None, tmp_path / "journal").create("user", {"username": "default.links"})
    assert created.url == f"{BASE}/api/v1/user/{json.loads(created.body)['id']}/"


def test_a_missing_data_file_stops_writes_and_says_which(data_dir, tmp_path):
    (data_dir / "bookshelves.csv").unlink()
    with pytest.raises(Unavailable) as caught:
        Catalogue(data_dir, None, tmp_path / "journal").refresh()
    assert str(caught.value) == ("data/: collection 'bookshelves' has no data file: add bookshelves.yaml or "
                                 "bookshelves.csv")


def test_a_hand_edit_of_a_yml_file_is_seen(data_dir, tmp_path):
    (data_dir / "users.yaml").rename(data_dir / "users.yml")
    app = App(data_dir, tmp_path / "site")
    assert app.post("user", {"username": "first.yml"})[0] == 201
    with (data_dir / "users.yml").open("a", encoding="utf-8") as f:
        f.write("- username: hand.made.yml\n")
    status, _, body = app.post("user", {"username": "hand.made.yml"})
    assert (status, json.loads(body)) == (400, {"username": ["A user with that username already exists."]})


def test_an_appended_record_is_on_disk_before_its_201(app, monkeypatch):
    """The append's durability, seen in the calls it makes (as SQLite's and LMDB's tests watch
    theirs): the journal and its folder synced before the data file is written; the data file
    synced after its last write; the journal's removal synced; all before the answer. (The data
    file is not created, only written: its folder's entries do not change, its size is synced
    with it.)"""
    import os

    events: list[tuple[str, object]] = []
    paths: dict[int, Path] = {}
    real = {name: getattr(os, name) for name in ("open", "pwrite", "write", "fsync", "unlink")}

    def opened(path, flags, *args, **kwargs):
        fd = real["open"](path, flags, *args, **kwargs)
        paths[fd] = Path(path).resolve()
        return fd

    def watched(name):
        def call(first, *args, **kwargs):
            events.append((name, paths.get(first) if isinstance(first, int) else Path(first).resolve()))
            return real[name](first, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "open", opened)
    for name in ("pwrite", "write", "fsync", "unlink"):
        monkeypatch.setattr(os, name, watched(name))
    served = app.app

    async def answering(scope, receive, send):
        async def sent(message):
            if message["type"] == "http.response.start":
                events.append(("answer", message["status"]))
            await send(message)
        await served(scope, receive, sent)

    app.app = answering
    status, _, body = app.post("user", {"username": "durable.reader"})
    monkeypatch.undo()
    assert status == 201, body
    data = (app.data / "users.yaml").resolve()
    journal = (app.out / service.STATE_DIR / "append.journal").resolve()
    answered = events.index(("answer", 201))
    writes = [at for at, event in enumerate(events) if event == ("pwrite", data)]
    assert writes and writes[-1] < answered, events
    first, last = writes[0], writes[-1]
    assert ("fsync", journal) in events[:first] and ("fsync", journal.parent) in events[:first], events
    assert ("fsync", data) in events[last:answered], events
    removed = events.index(("unlink", journal))
    assert last < removed < answered and ("fsync", journal.parent) in events[removed:answered], events
