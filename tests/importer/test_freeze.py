"""`catalogue import`: a served catalogue read back into a data directory that builds the
same API, byte for byte; and a service that fails, changes or lies, told clearly."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from conftest import SAMPLE
from generator.sitebuild import build
from generator.cli import main
from generator.importer import Options, freeze
from generator.importer.convert import Frozen, _time_zone
from generator.importer.crawl import Progress
from servers import Server

FAST = 0.01  # seconds before a second try, in these tests


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    site = tmp_path_factory.mktemp("served") / "site"
    build(SAMPLE, site)
    server = Server(site)
    yield server
    server.stop()


def same_api(one: Path, other: Path) -> None:
    """Two built sites publish the same files with the same bytes."""
    def walk(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    left, right = walk(one / "current" / "api"), walk(other / "current" / "api")
    assert sorted(left) == sorted(right)
    assert [name for name in left if left[name] != right[name]] == []


def quiet() -> Progress:
    return Progress(open("/dev/null", "w"))


@pytest.mark.parametrize("fmt", ["yaml", "csv"])
def test_a_served_catalogue_imports_into_data_that_builds_the_same_api(served, tmp_path, fmt):
    summary = freeze(f"http://127.0.0.1:{served.port}/api/v1/", Options(tmp_path / "data", fmt), quiet())
    assert summary.records == {"authors": 19, "books": 42, "publishers": 7, "categories": 14, "users": 8,
                               "bookshelves": 12}
    assert set(summary.formats.values()) == {fmt}
    build(tmp_path / "data", tmp_path / "site")
    same_api(served.site, tmp_path / "site")
    assert not list(tmp_path.glob(".data.import*"))  # (nothing left beside it)


def test_the_command_says_what_it_inferred(served, tmp_path):
    result = CliRunner().invoke(main, ["import", f"http://127.0.0.1:{served.port}/api/v1", "--out",
                                       str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"imported http://127.0.0.1:{served.port}/api/v1 into {tmp_path / 'data'} in ")
    assert lines[1] == "records: authors 19, books 42, publishers 7, categories 14, users 8, bookshelves 12"
    assert "     books: 42 records read" in result.stderr.splitlines()  # (progress, on standard error)
    # (the site answers every page as DRF does: its page size is read off the next links)
    assert "  page size: 12 (from the next links); the service answers any limit, only this one will be " \
           "pre-built: add others to site.yaml's page_sizes" in lines
    assert "  max_limit: none (the service answered a page of a billion records; site.yaml can set one: without " \
           "it a client may ask for every record in one answer)" in lines
    assert any(line.startswith("  time zone: Asia/Tehran (inferred from the offsets of 42 created_time") for line in lines)
    assert "  books: only enabled books are in the API; disabled ones could not be seen and are not in the data" in lines
    assert not [line for line in lines if line.startswith("  category ")]  # (every path the build's own)
    assert (tmp_path / "data" / "site.yaml").read_text(encoding="utf-8").splitlines()[1:] == [
        "base_url: https://ketab.example.ir", "page_sizes: [12]", "time_zone: Asia/Tehran"]


AWKWARD = {  # docs/spec/data.md's awkward cases, in one more book
    "title": "کتاب\u200cها ", "about": "line one\r\nline two\u2028after a separator\r\n", "code_qoq": "",
    "comment_for_develop": "تاریخ انتشار: ۱۳۹۹\r\nنوبت چاپ: ۲۷  ", "price": "123456789012345678901234567890",
    "created_time": "2019-07-01T08:00:00.000001+04:30", "images": "/media/a%20b.jpg|https://cdn.example/x.jpg",
    "isbn": "9780000000001", "enable": "true",
}


@pytest.mark.parametrize("fmt", ["yaml", "csv"])
def test_awkward_values_survive_the_round_trip(tmp_path, fmt):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    books = data / "books.csv"
    header, first = list(csv.reader(io.StringIO(books.read_text(encoding="utf-8"))))[:2]
    row = dict(zip(header, first), id="0e3e0d2a-8a5c-4f6e-9d3e-2d8f7a1b9c01", **AWKWARD)
    with books.open("a", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow([row[h] for h in header])
    build(data, tmp_path / "site")
    server = Server(tmp_path / "site")
    try:
        summary = freeze(f"http://127.0.0.1:{server.port}/api/v1/", Options(tmp_path / "imported", fmt), quiet())
    finally:
        server.stop()
    assert summary.formats["books"] == fmt
    build(tmp_path / "imported", tmp_path / "again")
    same_api(tmp_path / "site", tmp_path / "again")


def test_a_larger_catalogue_is_read_in_large_pages(tmp_path):
    """Three hundred books: many pages of the largest the service gives (its max_limit, 50),
    four at a time."""
    data = tmp_path / "synth"
    assert CliRunner().invoke(main, ["synth", str(data), "--books", "300", "--seed", "3"]).exit_code == 0
    with (data / "site.yaml").open("a", encoding="utf-8") as f:
        f.write("\nmax_limit: 50\n")
    site = tmp_path / "site"
    build(data, site)
    server = Server(site)
    try:
        freeze(f"http://127.0.0.1:{server.port}/api/v1/", Options(tmp_path / "data", "csv"), quiet())
    finally:
        server.stop()
    assert yaml.safe_load((tmp_path / "data" / "site.yaml").read_text(encoding="utf-8"))["max_limit"] == 50
    build(tmp_path / "data", tmp_path / "again")
    same_api(site, tmp_path / "again")


# ---- a service that fails --------------------------------------------------------------------

class Faulty:
    """A proxy in front of a served site that answers some requests itself: `rule(path,
    seen)` returns None to pass the request on, or (status, headers, body), or "drop" to
    close the connection without an answer, or "garbage" to answer what is not HTTP and close
    it; `seen` counts earlier requests of the path."""

    def __init__(self, upstream: Server, rule) -> None:
        self.rule, self.seen, self.upstream = rule, {}, upstream
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with proxy.lock:
                    seen = proxy.seen.get(self.path, 0)
                    proxy.seen[self.path] = seen + 1
                answer = proxy.rule(self.path, seen)
                if answer in ("drop", "garbage"):
                    if answer == "garbage":
                        self.wfile.write(b"NOT HTTP\r\n\r\n")
                    self.close_connection = True
                    self.connection.close()
                    return
                if answer is None:
                    got = proxy.upstream.get(self.path)
                    answer = (got.status, {"Content-Type": got.header("Content-Type") or ""}, got.body)
                status, headers, body = answer
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self) -> "Faulty":
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def run(url: str, out: Path, *extra: str):
    return CliRunner().invoke(main, ["import", url, "--out", str(out), *extra], env={"CATALOGUE_IMPORT_BACKOFF": str(FAST)})


def test_errors_then_success_and_dropped_connections_are_tried_again(served, tmp_path):
    def rule(path, seen):
        if path == "/api/v1/books/" and seen < 2:
            return 500, {"Content-Type": "text/html"}, b"<h1>Server Error</h1>"
        if path.startswith("/api/v1/author/") and seen == 0:
            return "drop"
        return None

    with Faulty(served, rule) as faulty:
        result = run(faulty.url, tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert f"{faulty.url}books/: status 500; trying again in" in result.output
    assert f"{faulty.url}author/: RemoteDisconnected" in result.output
    build(tmp_path / "data", tmp_path / "site")
    same_api(served.site, tmp_path / "site")


def test_an_answer_that_is_not_http_is_tried_again_on_a_new_connection(served, tmp_path):
    """(The connection it came on cannot send another request: the next try opens one.)"""
    def rule(path, seen):
        return "garbage" if path.startswith("/api/v1/publisher/") and seen == 0 else None

    with Faulty(served, rule) as faulty:
        result = run(faulty.url, tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert f"{faulty.url}publisher/: BadStatusLine: NOT HTTP" in result.output


def test_a_url_whose_port_is_not_a_number_is_named_not_a_traceback(tmp_path):
    result = run("http://127.0.0.1:abc/api/v1/", tmp_path / "data")
    assert result.exit_code != 0
    assert "http://127.0.0.1:abc/api/v1/: InvalidURL: nonnumeric port: 'abc', 6 times: giving up" in result.output


def test_429_waits_as_long_as_retry_after_says(served, tmp_path):
    def rule(path, seen):
        return (429, {"Retry-After": "1"}, b"") if path == "/api/v1/user/" and seen == 0 else None

    with Faulty(served, rule) as faulty:
        started = time.monotonic()
        result = run(faulty.url, tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert f"{faulty.url}user/: 429 Too Many Requests; trying again in 1.0 s" in result.output
    assert time.monotonic() - started >= 1


def test_a_service_that_keeps_failing_is_given_up_and_the_import_resumes(served, tmp_path):
    def failing(path, seen):
        return (503, {}, b"") if path.startswith("/api/v1/user/") else None

    with Faulty(served, failing) as faulty:
        result = run(faulty.url, tmp_path / "data")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"{faulty.url}user/: status 503, 6 times: giving up (the service may be down; run again with "
        "--resume to go on from here)")
    assert not (tmp_path / "data").exists()  # nothing written

    with Faulty(served, lambda path, seen: None) as healthy:
        # (the same URL: the proxy listens elsewhere, so the pages kept are taken from a copy)
        state = tmp_path / ".data.import-state"
        (state / "source.json").write_text(json.dumps({"url": healthy.url}), encoding="utf-8")
        result = run(healthy.url, tmp_path / "data", "--resume")
        assert result.exit_code == 0, result.output
        assert "/api/v1/books/" not in healthy.seen  # read before the interruption: not again
        assert "/api/v1/user/" in healthy.seen
    build(tmp_path / "data", tmp_path / "site")
    same_api(served.site, tmp_path / "site")


@pytest.mark.parametrize("rule, message", [
    (lambda path, seen: (200, {"Content-Type": "text/html"}, b"<html>maintenance</html>")
     if path == "/api/v1/publisher/" else None,
     "{url}publisher/: the answer is not JSON (text/html): b'<html>maintenance</html>'"),
    (lambda path, seen: (404, {"Content-Type": "application/json"}, b'{"detail":"Not found."}')
     if path == "/api/v1/" else None, "{url}: status 404: Not found."),
    (lambda path, seen: (403, {"Content-Type": "text/html"}, b"<h1>Forbidden</h1>")  # (no detail to add)
     if path == "/api/v1/" else None, "{url}: status 403"),
])
def test_answers_that_are_not_the_catalogue_api_are_refused(served, tmp_path, rule, message):
    with Faulty(served, rule) as faulty:
        result = run(faulty.url, tmp_path / "data")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == message.format(url=faulty.url)
    assert not (tmp_path / "data").exists()


def test_a_url_whose_host_has_a_bracket_unmatched_is_named_not_a_traceback(tmp_path):
    result = run("http://[ketab/api/v1/", tmp_path / "data")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == ("'http://[ketab/api/v1/' is not an http(s) URL: give the API root, "
                                              "like https://host/api/v1/")
    assert not (tmp_path / "data").exists()


def test_a_url_that_is_not_an_api_root(served, tmp_path):
    result = run(f"http://127.0.0.1:{served.port}/api/v1/books/", tmp_path / "data")
    assert result.exit_code == 1
    assert result.output.startswith(f"http://127.0.0.1:{served.port}/api/v1/books/: not the root of a catalogue API")


def _edited(path: str, seen: int, upstream: Server, edit) -> tuple | None:
    got = upstream.get(path)
    document = json.loads(got.body)
    edit(path, document)
    return got.status, {"Content-Type": "application/json"}, json.dumps(document, ensure_ascii=False).encode()


def test_a_count_that_changes_and_a_record_that_breaks_the_contract_are_reported(served, tmp_path):
    def edit(path, document):
        if path.startswith("/api/v1/books/?limit=1000&offset=0"):
            document["count"] = 43
        if path.startswith("/api/v1/user/") and "results" in document:
            document["results"][1]["username"] = "has space"

    with Faulty(served, lambda path, seen: _edited(path, seen, served, edit)) as faulty:
        result = run(faulty.url, tmp_path / "data")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "  books page at offset 0: field 'count': 43 where the first page said 42: the collection changed " \
           "during the import; import again when it is quiet" in lines
    assert any(line.startswith("  https://ketab.example.ir/api/v1/user/") and "field 'username':" in line
               for line in lines), lines
    assert not (tmp_path / "data").exists()


def test_an_existing_data_directory_is_replaced_only_when_asked(served, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "books.csv").write_text("mine\n", encoding="utf-8")
    result = run(f"http://127.0.0.1:{served.port}/api/v1/", data)
    assert result.exit_code == 1 and "already exists and is not empty" in result.output
    assert (data / "books.csv").read_text(encoding="utf-8") == "mine\n"
    result = run(f"http://127.0.0.1:{served.port}/api/v1/", data, "--replace")
    assert result.exit_code == 0, result.output
    kept = next(tmp_path.glob("data.replaced-*"))
    assert (kept / "books.csv").read_text(encoding="utf-8") == "mine\n"
    assert f"the directory that was there is kept as {kept}" in result.output


# ---- the data directory written (output.write, without a service) ----------------------------

BOOK_ID = "0e3e0d2a-8a5c-4f6e-9d3e-2d8f7a1b9c01"
SARA, REZA = "8162a4c5-73aa-444d-8a00-7877dd6972d1", "21b9776e-be74-49af-a67b-085a53ff5a10"
ROOT_CATEGORY = "a8d8fe68-8d59-49ba-842d-8c9cc0e7e29c"
USERS_CSV = ("id,username,first_name,last_name,bio,following_count,followers_count,followed\n"
             f"{SARA},sara,سارا,,📚,1,2,true\n{REZA},reza,رضا,,,0,0,false\n")
BOOK_YAML = (f"- id: {BOOK_ID}\n  title: بوف کور\n  isbn: '9786004381185'\n  code: ''\n  code_qoq: ''\n"
             "  ddc: ''\n  price: '680000'\n  price_currency: IRR\n  pages: 96\n  weight: 0\n"
             f"  about: {'word ' * 29}word\n  comment_for_develop: ''\n  enable: true\n"
             "  created_time: '2019-07-01T08:00:00+04:30'\n  authors: []\n  translators: []\n  publishers: []\n"
             f"  categories:\n  - {ROOT_CATEGORY}\n  images:\n  - id: 4f5c6227-8086-5681-ae86-90e1b5395dc3\n"
             "    image: https://cdn.example/x.jpg\n    type_image_book: null\n")
SITE_YAML = ("# Imported with `catalogue import`: the settings of the service it was read from.\n"
             "base_url: https://ketab.example.ir\npage_sizes: [12]\nmax_limit: 50\ntime_zone: Asia/Tehran\n")
# (libyaml, PyYAML's CSafeDumper, escapes a character beyond the BMP; PyYAML's own emitter does not)
BEYOND_BMP = '"\\U0001F4DA"' if hasattr(yaml, "CSafeDumper") else "📚"
MOVED = (f"category {ROOT_CATEGORY}: its path on the service was 0002, the build will give 0001 (paths follow the "
         "order of siblings, without gaps)")
USERS_YAML = (f"- id: {SARA}\n  username: sara\n  first_name: سارا\n  last_name: ''\n  bio: {BEYOND_BMP}\n"
              "  following_count: 1\n  followers_count: 2\n  followed: true\n"
              f"- id: {REZA}\n  username: reza\n  first_name: رضا\n  last_name: ''\n"  # (a null bio left out)
              "  following_count: 0\n  followers_count: 0\n  followed: false\n")
# Every file of the small catalogue below, as each format writes it (formats and notes first).
WRITTEN = {
    "csv": ({"categories": "csv", "publishers": "csv", "authors": "csv", "books": "yaml", "users": "csv",
             "bookshelves": "csv"},
            ["books: written as YAML, since CSV cannot hold what they have (image ids that are not derived from "
             "the URL, a type_image_book, or a code_qoq that is empty rather than null)", MOVED],
            {"authors.csv": "id,slug,fullName,bio\n", "books.yaml": BOOK_YAML, "bookshelves.csv": "id,user,title\n",
             "categories.csv": f"id,slug,name,code,parent\n{ROOT_CATEGORY},ادبیات,ادبیات,100,\n",
             "publishers.csv": "id,slug,company,info\n", "site.yaml": SITE_YAML, "users.csv": USERS_CSV}),
    "yaml": (dict.fromkeys(["categories", "publishers", "authors", "books", "users", "bookshelves"], "yaml"), [MOVED],
             {"authors.yaml": "[]\n", "books.yaml": BOOK_YAML, "bookshelves.yaml": "[]\n",
              "categories.yaml": f"- id: {ROOT_CATEGORY}\n  slug: ادبیات\n  name: ادبیات\n  code: '100'\n",
              "publishers.yaml": "[]\n", "site.yaml": SITE_YAML,
              "users.yaml": USERS_YAML}),
}


def small_catalogue(**user) -> Frozen:
    """Two users (one followed, one not; a character beyond the BMP, a null text), a root
    category whose path on the service (0002: its first sibling deleted) the build will not
    give, and a book whose code_qoq is empty rather than null (which a CSV cell cannot say: an
    empty cell is null), with a line longer than YAML folds by default; the other collections
    empty. `user` changes the first user."""
    from generator.catalogue.fields import derived_id

    image = "https://cdn.example/x.jpg"
    users = [{"id": SARA, "username": "sara", "first_name": "سارا", "last_name": "",
              "bio": "📚", "following_count": 1, "followers_count": 2, "followed": True, **user},
             {"id": REZA, "username": "reza", "first_name": "رضا", "last_name": "",
              "bio": None, "following_count": 0, "followers_count": 0, "followed": False}]
    book = {"id": BOOK_ID, "title": "بوف کور", "isbn": "9786004381185", "code": "", "code_qoq": "", "ddc": "",
            "price": "680000", "price_currency": "IRR", "pages": 96, "weight": 0, "about": "word " * 29 + "word",
            "comment_for_develop": "", "enable": True, "created_time": "2019-07-01T08:00:00+04:30", "authors": [],
            "translators": [], "publishers": [], "categories": [ROOT_CATEGORY],
            "images": [{"id": derived_id("images", f"{BOOK_ID}/{image}"), "image": image, "type_image_book": None}]}
    category = {"id": ROOT_CATEGORY, "slug": "ادبیات", "name": "ادبیات", "code": "100", "parent": None}
    rows = {"categories": [category], "publishers": [], "authors": [], "books": [book], "users": users,
            "bookshelves": []}
    site = {"base_url": "https://ketab.example.ir", "page_sizes": [12], "max_limit": 50, "time_zone": "Asia/Tehran"}
    return Frozen(site, rows, {ROOT_CATEGORY: "0002"})


def written(folder: Path) -> dict[str, str]:
    return {p.name: p.read_bytes().decode() for p in sorted(folder.iterdir())}  # (line ends as written)


@pytest.mark.parametrize("fmt", ["csv", "yaml"])
def test_the_files_written_word_for_word(tmp_path, fmt):
    """What the user finds in the data directory: CSV with `\\n` line ends and `true`/`false`,
    YAML in blocks, in the fields' order, unescaped and unfolded, `[]` for an empty collection;
    a collection CSV cannot hold written as YAML, and a note saying why."""
    from generator.importer.output import write

    frozen = small_catalogue()
    formats, kept = write(frozen, tmp_path / "data", fmt, False)
    assert (formats, frozen.notes, written(tmp_path / "data")) == WRITTEN[fmt]
    assert kept is None  # (nothing was there to keep)


def test_the_data_directory_is_written_in_utf_8_whatever_the_locale(tmp_path):
    """A user whose locale is not UTF-8 (C, with Python's UTF-8 mode off) gets the same files:
    the Persian text is not written in the locale's encoding."""
    import pickle
    import subprocess
    import sys

    from generator.importer import output

    script = ("import pickle, sys; from pathlib import Path; from generator.importer.output import write; "
              "frozen = pickle.load(sys.stdin.buffer); "
              "[write(frozen[f], Path(sys.argv[1]) / f, f, False) for f in ('csv', 'yaml')]")
    env = {**os.environ, "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
           "PYTHONPATH": str(Path(output.__file__).parents[2])}  # (this generator/, as mutation tests change it)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "c")], env=env, capture_output=True,
                          input=pickle.dumps({f: small_catalogue() for f in ("csv", "yaml")}))
    assert done.returncode == 0, done.stderr.decode()
    for fmt in ("csv", "yaml"):
        # (written here too, so that mutmut's statistics see this test reach the writing)
        output.write(small_catalogue(), tmp_path / "here" / fmt, fmt, False)
        assert written(tmp_path / "c" / fmt) == written(tmp_path / "here" / fmt) == WRITTEN[fmt][2]


def test_a_missing_folder_is_made_and_a_stale_staging_folder_cleared(tmp_path):
    """The target's missing parents are made; a staging folder left by an import that had this
    process's id (killed, then the id reused) is replaced, not written into or refused."""
    from generator.importer.output import write

    out = tmp_path / "new" / "deeper" / "data"
    write(small_catalogue(), out, "yaml", False)
    assert written(out) == WRITTEN["yaml"][2]
    stale = out.parent / f".again.import-{os.getpid()}"
    stale.mkdir()
    (stale / "users.csv").write_text("left over\n", encoding="utf-8")
    write(small_catalogue(), out.parent / "again", "yaml", False)
    assert written(out.parent / "again") == WRITTEN["yaml"][2]
    assert sorted(p.name for p in out.parent.iterdir()) == ["again", "data"]


def test_the_directory_replaced_is_kept_under_the_time_it_was_replaced(tmp_path):
    """(`data.replaced-YYYYmmdd-HHMMSS`, beside the new one, and nothing else.)"""
    from generator.importer.output import write

    out = tmp_path / "data"
    write(small_catalogue(), out, "yaml", False)
    before = time.time()
    _, kept = write(small_catalogue(), out, "csv", True)
    after = time.time()
    assert kept is not None and kept.startswith(f"{out}.replaced-")
    stamp = time.mktime(time.strptime(kept.removeprefix(f"{out}.replaced-"), "%Y%m%d-%H%M%S"))
    assert int(before) - 1 <= stamp <= after
    assert written(Path(kept)) == WRITTEN["yaml"][2] and written(out) == WRITTEN["csv"][2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", Path(kept).name]


@pytest.mark.parametrize("user, shelves, problems", [
    ({"following_count": "many"}, [], [
        "users.csv:2: field 'following_count': 'many' is not a whole number: write digits only, like 680000 or ۶۸۰۰۰۰",
        "users.csv:2: field 'following_count': reads back as None, not as 'many'"]),
    # (a record read back twice is one: the count differs, and the collections after it are still
    # checked, their references too)
    ({"id": REZA}, [{"id": "0b6f2c1d-3e4f-4a5b-9c6d-7e8f9a0b1c2d", "user": SARA, "title": ""}], [
        f"users.csv:3: field 'id': {REZA} is used twice in users: first on line 2",
        "users.csv: reads back 1 records where 2 were written",
        "bookshelves.csv:2: field 'title': is missing: it is required",
        f"bookshelves.csv:2: field 'user': refers to user {SARA}, which does not exist",
        "bookshelves.csv:2: field 'title': reads back as None, not as ''"]),
])
def test_data_that_does_not_read_back_is_not_put_in_place_nor_left_behind(tmp_path, user, shelves, problems):
    """Data the build reads otherwise (a bug of the importer, were it let through) stops the
    import with every difference; nothing is left beside the target."""
    from generator.errors import CatalogueError
    from generator.importer.output import write

    frozen = small_catalogue(**user)
    frozen.rows["bookshelves"] = shelves
    with pytest.raises(CatalogueError) as raised:
        write(frozen, tmp_path / "data", "csv", False)
    staging = f".data.import-{os.getpid()}"
    assert str(raised.value).splitlines() == [
        "the imported data does not read back as it was written (a bug of the importer):",
        f"{len(problems)} problems in the catalogue data:", *(f"  {staging}/{line}" for line in problems)]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("there, replace, refused", [
    (None, False, False), ("folder", False, False), ("folder", True, False),
    ("file in a folder", False, True), ("file in a folder", True, False), ("file", False, True), ("file", True, False),
])
def test_a_target_that_holds_anything_is_replaced_only_when_asked(tmp_path, there, replace, refused):
    """(Checked before anything is read: an empty folder is imported into, a file or a folder
    that holds one only with --replace.)"""
    from generator.errors import CatalogueError
    from generator.importer.output import check_target

    out = tmp_path / "data"
    if there == "file":
        out.write_text("mine\n", encoding="utf-8")
    elif there is not None:
        out.mkdir()
        if there == "file in a folder":
            (out / "books.csv").write_text("mine\n", encoding="utf-8")
    if not refused:
        check_target(out, replace)
        return
    with pytest.raises(CatalogueError) as raised:
        check_target(out, replace)
    assert str(raised.value) == (f"{out} already exists and is not empty: import into a new directory, or give "
                                 "--replace to put the import in its place (the old one is kept beside it)")


def hourly(zone: str, start: str, hours: int) -> list[str]:
    """A created_time every hour from `start` (UTC), as a service in that zone writes it."""
    from datetime import datetime, timedelta, timezone
    from zoneinfo import ZoneInfo

    first = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
    return [(first + timedelta(hours=n)).astimezone(ZoneInfo(zone)).isoformat() for n in range(hours)]


def inferred(zone: str, count: int, others: int = 0, such_as: str = "") -> str:
    return (f"time zone: {zone} (inferred from the offsets of {count} created_time"
            + (f"; {others} other zones fit them too, such as {such_as}: --time-zone chooses" if others else "") + ")")


@pytest.mark.parametrize("stamps, zone, said", [
    (["2021-03-04T10:20:30+03:30", "2019-07-01T08:00:00+04:30"], "Asia/Tehran", inferred("Asia/Tehran", 2, 1, "Iran")),
    # (what has no offset is passed over, not the end of the stamps; the count is of every one given)
    (["not a time", None, "2021-03-04T10:20:30", "2021-03-04T10:20:30+03:30"], "Asia/Tehran",
     inferred("Asia/Tehran", 4, 1, "Iran")),
    (["not a time", None, "2021-03-04T10:20:30"], "Asia/Tehran",
     "time zone: Asia/Tehran, the default (no created_time to tell)"),
    (["2021-03-04T10:20:30Z", "2021-07-04T10:20:30+00:00"], "UTC",
     inferred("UTC", 2, 37, "Africa/Abidjan, Africa/Accra, Africa/Bamako")),
    # (neither the default nor UTC: the first, the areas' zones before the old names without one)
    (["2021-01-04T10:20:30+01:00", "2021-07-04T10:20:30+02:00"], "Africa/Ceuta",
     inferred("Africa/Ceuta", 2, 36, "Arctic/Longyearbyen, Atlantic/Jan_Mayen, Europe/Amsterdam")),
    # (the zones of places first, then the old names: Etc/GMT+10 before US/Hawaii)
    (["1969-01-15T02:00:00-10:00", "1969-07-15T02:00:00-10:00"], "Pacific/Honolulu",
     inferred("Pacific/Honolulu", 2, 5, "Pacific/Johnston, Pacific/Tahiti, Etc/GMT+10")),
    # (the default wherever it fits, though others come before it: Iran was +04:00 in 1978)
    (["1978-01-15T16:00:00+04:00"], "Asia/Tehran",
     inferred("Asia/Tehran", 1, 16, "Asia/Baku, Asia/Dubai, Asia/Muscat")),
    (["2021-01-15T16:30:00+04:30", "2021-07-15T16:30:00+04:30"], "Asia/Kabul", inferred("Asia/Kabul", 2)),
    # (Lord Howe Island is +11:00 from 02:30 that day: it fits the first stamp, not the second)
    (["2021-10-03T02:50:00+11:00", "2021-10-03T02:10:00+11:00"], "Asia/Magadan",
     inferred("Asia/Magadan", 2, 10, "Asia/Sakhalin, Asia/Srednekolymsk, Pacific/Bougainville")),
    # (more than a sample's worth: the one winter time, left out of the sample, still rules out
    # the zones that are +02:00 all year)
    (hourly("Europe/Berlin", "2021-06-01T00:00", 199) + ["2021-01-04T10:20:30+01:00"], "Africa/Ceuta",
     inferred("Africa/Ceuta", 200, 36, "Arctic/Longyearbyen, Atlantic/Jan_Mayen, Europe/Amsterdam")),
    (["2021-01-04T10:20:30+01:23", "2021-01-04T10:20:30-10:00", "2021-01-04T10:20:30+00:00"], None,
     "created_time: field 'time_zone': no time zone has the offsets seen (-10:00, +00:00, +01:23): give one with "
     "--time-zone"),
], ids=["tehran", "tehran-after-no-offsets", "none", "utc", "ceuta", "honolulu", "tehran-1978", "kabul", "lord-howe",
        "beyond-a-sample", "no-zone"])
def test_the_time_zone_is_the_one_every_offset_fits(stamps, zone, said):
    """The zone written, and the note (or the problem) that says how it was found."""
    frozen = Frozen({}, {}, {})
    _time_zone(frozen, stamps, None)
    assert frozen.site.get("time_zone") == zone
    assert [*frozen.notes, *map(str, frozen.problems.items)] == [said]


def test_csv_holds_an_image_only_when_its_id_is_derived_from_its_url():
    from generator.catalogue.fields import derived_id
    from generator.importer.convert import image_csv_form

    book = "0e3e0d2a-8a5c-4f6e-9d3e-2d8f7a1b9c01"
    base = "https://ketab.example.ir"

    def image(url: str, key: str, kind=None) -> dict:
        return {"id": derived_id("images", f"{book}/{key}"), "image": url, "type_image_book": kind}

    assert image_csv_form(book, image("https://cdn.example/x.jpg", "https://cdn.example/x.jpg"), base) == \
        "https://cdn.example/x.jpg"
    assert image_csv_form(book, image(f"{base}/media/x.jpg", "/media/x.jpg"), base) == "/media/x.jpg"
    assert image_csv_form(book, image(f"{base}/media/x.jpg", "something else"), base) is None
    # (another host's URL, its origin as long as the site's: its id derived from the path alone
    # is not the one its URL would derive, so it cannot be written root-relative)
    assert image_csv_form(book, image("https://cdn-x.example.ir/media/x.jpg", "/media/x.jpg"), base) is None
    assert image_csv_form(book, image("https://cdn.example/x.jpg", "https://cdn.example/x.jpg", "cover"), base) is None


@pytest.mark.parametrize("value, seconds", [
    (None, 2.5), ("7", 7.0), (" 7 ", 7.0), ("soon", 2.5), ("", 2.5),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # (a date gone by: no wait at all)
])
def test_retry_after_in_seconds_or_as_a_date(value, seconds):
    """How long a 429 makes the import wait: Retry-After's seconds, or until its HTTP date;
    without one, or with one that is neither, the backoff it was going to wait anyway."""
    from generator.importer.crawl import _retry_after

    assert _retry_after(value, 2.5) == seconds


def test_retry_after_a_date_to_come_waits_until_then():
    from email.utils import formatdate
    from generator.importer.crawl import _retry_after

    assert 28 <= _retry_after(formatdate(time.time() + 30, usegmt=True), 2.5) <= 30


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_and_elsewhere():
    """On a terminal, a bar redrawn in place, a message on a line of its own below it, and the
    collection's line at the end; elsewhere (a log), the messages and those lines alone."""
    terminal, log = _Terminal(), io.StringIO()
    for stream in (terminal, log):
        progress = Progress(stream)
        progress.start("books", 4)
        progress.say("books: trying again")
        progress.advance("books", 4)
        progress.finish("books")
    bar = "\r{:>10} [{}] {}/4".format("books", "{}", "{}")
    assert terminal.getvalue() == (bar.format("." * 30, 0) + "\nbooks: trying again\n" + bar.format("#" * 30, 4)
                                   + "\r" + f"{'     books: 4 records read':<60}" + "\n")
    assert log.getvalue() == "books: trying again\n     books: 4 records read\n"


def test_a_relation_given_by_its_url_is_the_id_in_it(monkeypatch):
    """A related record linked to by its URL (DRF's hyperlinked field) rather than embedded
    becomes the id its URL ends with, which its collection must list. No collection of the
    sample's service links one (all embed), so a bookshelf's owner is declared linked here."""
    import dataclasses

    from generator.api.urls import BY_NAME, RESOURCES
    from generator.catalogue.resources import BOOKSHELVES
    from generator.errors import Problems
    from generator.importer.convert import _Converter

    linked = dataclasses.replace(BOOKSHELVES, fields=tuple(
        dataclasses.replace(f, embedded=False) if f.name == "user" else f for f in BOOKSHELVES.fields))
    monkeypatch.setitem(BY_NAME, BOOKSHELVES.name, linked)
    api = "https://ketab.example.ir/api/v1"
    owner, stranger = "5c3b1a52-2a4e-4f0e-8a51-6f1a9b0d2c11", "9d1e2f30-4b5c-4d6e-8f70-8192a3b4c5d6"
    shelf = "0b6f2c1d-3e4f-4a5b-9c6d-7e8f9a0b1c2d"
    documents = {r.name: {} for r in RESOURCES}
    documents["user"] = {owner: {"url": f"{api}/user/{owner}/"}}
    problems = Problems()
    converter = _Converter(documents, problems)
    where = f"{api}/bookshelves/{shelf}/"
    document = {"url": where, "user": f"{api}/user/{owner}/", "title": "Reading list"}
    assert converter.row(BOOKSHELVES.name, document) == {"id": shelf, "user": owner, "title": "Reading list"}
    assert not problems
    assert converter.row(BOOKSHELVES.name, {**document, "user": f"{api}/user/{stranger}/"})["user"] == stranger
    assert [(p.file, p.line, p.field, p.message) for p in problems.items] == [
        (where, 0, "user", f"refers to {stranger}, which the user collection does not list")]


def test_the_page_sizes_and_time_zone_given_are_kept():
    """The pre-built page sizes a static catalogue names (its 400) and the --time-zone given
    go to site.yaml as they are, rather than what the pages would tell."""
    from generator.api.urls import RESOURCES
    from generator.importer.convert import convert
    from generator.importer.crawl import Collection

    links = {r.name: f"https://ketab.example.ir/api/v1/{r.name}/" for r in RESOURCES}
    collections = {r.name: Collection(r.name, 0, 12, 12) for r in RESOURCES}
    pages = {r.name: [{"count": 0, "results": []}] for r in RESOURCES}
    frozen = convert(links, collections, pages, [24, 5], "Europe/Berlin")
    assert frozen.site == {"base_url": "https://ketab.example.ir", "page_sizes": [24, 5], "time_zone": "Europe/Berlin"}
    assert frozen.notes[:2] == ["page sizes: 24, 5 (the pre-built sizes the service names)",
                                "max_limit: none (the service answered a page of a billion records; site.yaml can "
                                "set one: without it a client may ask for every record in one answer)"]
    assert "time zone: Europe/Berlin (given)" in frozen.notes


NO_MAX_LIMIT = ("max_limit: none (the service answered a page of a billion records; site.yaml can set one: without "
                "it a client may ask for every record in one answer)")


@pytest.mark.parametrize("limits, sizes, max_limit, site, notes", [
    ([12, None, 12], [24, 5], None, {"page_sizes": [24, 5]},
     ["page sizes: 24, 5 (the pre-built sizes the service names)", NO_MAX_LIMIT]),
    ([12, None, 12], None, None, {"page_sizes": [12]},
     ["page size: 12 (from the next links); the service answers any limit, only this one will be pre-built: add "
      "others to site.yaml's page_sizes", NO_MAX_LIMIT]),
    ([None, None], None, None, {}, ["page size: 12, the default (no collection has a second page to tell)",
                                    NO_MAX_LIMIT]),
    ([24, 12, None], None, None, {}, ["page size: the next links disagree ([12, 24]): check site.yaml", NO_MAX_LIMIT]),
    # (a size above the max_limit could not be served: dropped, the max_limit itself kept)
    ([None], [24, 5, 20], 20, {"page_sizes": [5, 20], "max_limit": 20},
     ["page sizes: 24, 5, 20 (the pre-built sizes the service names)",
      "max_limit: 20 (the service clamps a larger limit to it)"]),
    ([None], [24], 10, {"page_sizes": [10], "max_limit": 10},
     ["page sizes: 24 (the pre-built sizes the service names)",
      "max_limit: 10 (the service clamps a larger limit to it)"]),
    ([None], None, 50, {"page_sizes": [50], "max_limit": 50},
     ["page size: 12, the default (no collection has a second page to tell)",
      "max_limit: 50 (the service clamps a larger limit to it)"]),
])
def test_the_page_sizes_and_max_limit_inferred(limits, sizes, max_limit, site, notes):
    """The page sizes: those the service names, or the one every collection's next link gives
    (none when they disagree or no collection has a second page); a max_limit drops the larger."""
    from generator.importer.convert import _max_limit, _page_sizes
    from generator.importer.crawl import Collection

    frozen = Frozen({}, {}, {})
    _page_sizes(frozen, {f"c{n}": Collection(f"c{n}", 30, limit, limit) for n, limit in enumerate(limits)}, sizes)
    _max_limit(frozen, max_limit)
    assert (frozen.site, frozen.notes) == (site, notes)


LONG = {"title": "not a record of the API: no url, and longer than a problem quotes"}


@pytest.mark.parametrize("document, key", [
    ({"url": "https://ketab.example.ir/api/v1/books/abc/"}, "abc"),
    ({"url": "https://ketab.example.ir/api/v1/books/abc//?format=json"}, "abc"),
    ({"url": "abc"}, "abc"),  # (a path without a slash)
    ({"url": "https://[ketab/api/v1/books/abc/"}, "abc"),  # (a host urlsplit refuses: its text's last segment)
    ({"url": "https://ketab.example.ir/api/v1/author/malcolm-X/"}, "malcolm-X"),  # (a slug, say, as DRF may look up)
    ({"url": "https://ketab.example.ir/api/v1/books/abc/", "id": "xyz"}, "xyz"),  # (the id, where one is given)
    ({"url": 5, "id": "xyz"}, "{'url': 5, 'id': 'xyz'}"),
    ("a string", "'a string'"),
    (LONG, repr(LONG)[:60]),
], ids=["url", "url-query", "no-slash", "unmatched-bracket", "slug", "id", "url-not-text", "not-a-mapping", "long"])
def test_a_record_s_key_is_its_id_or_its_url_s_last_segment(document, key):
    """(What is no record of the API is named by what it is, cut to 60 characters.)"""
    from generator.importer.convert import _id

    assert _id(document) == key


def test_a_count_that_changes_on_a_later_page_names_its_offset():
    from generator.errors import Problems
    from generator.importer.convert import _documents
    from generator.importer.crawl import Collection

    api = "https://ketab.example.ir/api/v1/books"
    pages = [{"count": 3, "results": [{"url": f"{api}/a/"}, {"url": f"{api}/b/"}]},
             {"count": 4, "results": [{"url": f"{api}/c/"}, {"url": f"{api}/d/"}]}]
    problems = Problems()
    assert list(_documents(Collection("books", 3, 2, 2), pages, problems)) == ["a", "b", "c", "d"]
    assert [str(p) for p in problems.items] == [
        "books page at offset 2: field 'count': 4 where the first page said 3: the collection changed during "
        "the import; import again when it is quiet"]


def test_a_record_listed_twice_is_named_by_its_url_or_its_collection():
    from generator.errors import Problems
    from generator.importer.convert import _documents
    from generator.importer.crawl import Collection

    url = "https://ketab.example.ir/api/v1/books/a/"
    pages = [{"count": 4, "results": [{"url": url}, {"title": "no url"}]},
             {"count": 4, "results": [{"url": url}, {"title": "no url"}]}]
    problems = Problems()
    _documents(Collection("books", 4, 2, 2), pages, problems)
    assert [str(p) for p in problems.items] == [
        f"{url}: field 'id': a is listed twice: the collection changed during the import; import again",
        "books: field 'id': {'title': 'no url'} is listed twice: the collection changed during the import; "
        "import again"]


def test_pages_that_hold_fewer_records_than_their_count_are_named():
    from generator.errors import Problems
    from generator.importer.convert import _documents
    from generator.importer.crawl import Collection

    problems = Problems()
    _documents(Collection("books", 2, None, None), [{"count": 2, "results": [{"url": "https://k.example/b/a/"}]}],
               problems)
    assert [str(p) for p in problems.items] == ["books: field 'count': the pages held 1 records where the count is 2"]


def test_a_category_s_parent_comes_from_its_path():
    """Four digits a level: the parent is the category whose path is this one's less its last
    four; a path of another length or not all digits, or whose parent is not listed, is named."""
    import uuid

    from generator.api.urls import RESOURCES
    from generator.errors import Problems
    from generator.importer.convert import _Converter

    api = "https://ketab.example.ir/api/v1/category"
    paths = {"root": ("0001", 1), "child": ("00010001", 2), "orphan": ("000100020001", 3), "stray": ("00020001", 2), "short": ("001", 1),
             "letters": ("00a1", 1)}
    ids = {name: str(uuid.uuid5(uuid.NAMESPACE_URL, name)) for name in paths}
    documents = {r.name: {} for r in RESOURCES}
    documents["category"] = {ids[name]: {
        "url": f"{api}/{ids[name]}/", "id": ids[name], "no_child": True, "slug": name, "path": path, "depth": depth,
        "numchild": 0, "name": name, "code": ""} for name, (path, depth) in paths.items()}
    problems = Problems()
    converter = _Converter(documents, problems)
    rows = {row["slug"]: row for row in map(lambda d: converter.row("category", d), documents["category"].values())
            if row is not None}
    assert {name: rows[name].get("parent", "none") for name in rows} == {
        "root": None, "child": ids["root"], "orphan": None, "stray": None, "short": "none", "letters": "none"}
    assert converter.paths == {ids[name]: path for name, (path, _) in paths.items()}
    assert [str(p) for p in problems.items] == [
        f"{api}/{ids['orphan']}/: field 'path': 000100020001: no category has the parent's path 00010002",
        f"{api}/{ids['stray']}/: field 'path': 00020001: no category has the parent's path 0002",
        f"{api}/{ids['short']}/: field 'path': '001' does not have four digits per level of its depth 1",
        f"{api}/{ids['letters']}/: field 'path': '00a1' does not have four digits per level of its depth 1"]


AUTHOR, STRANGER = "5c3b1a52-2a4e-4f0e-8a51-6f1a9b0d2c11", "9d1e2f30-4b5c-4d6e-8f70-8192a3b4c5d6"
API = "https://ketab.example.ir/api/v1"
# A book as the API gives it, the author it embeds (listed), and a user.
AN_AUTHOR = {"url": f"{API}/author/{AUTHOR}/", "slug": "hedayat", "user": None, "fullName": "صادق هدایت",
             "image_author": None, "bio": ""}
COVER = "4f5c6227-8086-5681-ae86-90e1b5395dc3"  # (derived from the book's id and the URL)
AN_IMAGE = {"id": COVER, "image": "https://cdn.example/x.jpg", "type_image_book": "cover", "book": BOOK_ID,
            "alt": "the book's cover"}
A_BOOK = {"url": f"{API}/books/{BOOK_ID}/", "id": BOOK_ID, "publishers": [], "authors": [AN_AUTHOR],
          "translators": [], "categories": [], "images": [AN_IMAGE], "title": "بوف کور", "isbn": "9786004381185",
          "code": "", "code_qoq": None, "ddc": "", "price_currency": "IRR", "price": "680000", "pages": 96, "weight": 0,
          "about": "", "comment_for_develop": "", "enable": True, "created_time": "2019-07-01T08:00:00+04:30"}
A_USER = {"url": f"{API}/user/{SARA}/", "id": SARA, "username": "sara", "first_name": "", "last_name": "", "bio": "",
          "following_count": 1, "followers_count": 2, "followed": False}
BOOK_ROW = {**{k: v for k, v in A_BOOK.items() if k != "url"}, "authors": [AUTHOR],
            "images": [{"id": COVER, "image": "https://cdn.example/x.jpg", "type_image_book": "cover"}]}
USER_ROW = {k: v for k, v in A_USER.items() if k != "url"}
AT_BOOK, AT_AUTHOR, AT_USER = (f"{API}/books/{BOOK_ID}/: field", f"{API}/author/{AUTHOR}/: field",
                               f"{API}/user/{SARA}/: field")


@pytest.mark.parametrize("name, document, row, problems", [
    ("books", A_BOOK, BOOK_ROW, []),
    ("books", {**A_BOOK, "authors": [{**AN_AUTHOR, "bio": "changed"}, {**AN_AUTHOR, "url": f"{STRANGER}/"}],
               "images": [{**AN_IMAGE, "book": STRANGER}], "enable": False},
     {**BOOK_ROW, "authors": [AUTHOR, STRANGER]}, [
        f"{AT_BOOK} 'enable': is not true, yet the book is listed",
        f"{AT_BOOK} 'authors': embeds {AUTHOR} otherwise than the author collection lists it (changed during the "
        "import?)",
        f"{AT_BOOK} 'authors': refers to {STRANGER}, which the author collection does not list",
        f"{AT_BOOK} 'images': image {COVER} belongs to book {STRANGER}"]),
    ("author", {**AN_AUTHOR, "user": "someone", "image_author": "x.jpg"},
     {"id": AUTHOR, "slug": "hedayat", "fullName": "صادق هدایت", "bio": ""}, [
        f"{AT_AUTHOR} 'user': is 'someone': the data contract writes it as null, so it cannot be kept",
        f"{AT_AUTHOR} 'image_author': is 'x.jpg': the data contract writes it as null, so it cannot be kept"]),
    ("user", A_USER, USER_ROW, []),
    # (an id not given is the URL's; what is null is checked if required, and what follows it either way)
    ("user", {**A_USER, "id": None, "username": None, "first_name": None, "following_count": "many"},
     {**USER_ROW, "username": None, "first_name": None, "following_count": "many"}, [
        f"{AT_USER} 'username': must be text, not NoneType",
        f"{AT_USER} 'following_count': 'many' is not a whole number: write digits only, like 680000 or ۶۸۰۰۰۰"]),
    ("user", "a string", None, [f"user: field '{name}': is missing: not a record of the catalogue API" for name in (
        "bio", "first_name", "followed", "followers_count", "following_count", "id", "last_name", "url", "username")]),
    ("bookshelf", {"user": A_USER, "title": "t", "owner": 1}, None, [
        "bookshelf: field 'url': is missing: not a record of the catalogue API",
        "bookshelf: field 'owner': is not a field of the catalogue API: it cannot be kept"]),
])
def test_a_document_becomes_a_row_or_is_named(name, document, row, problems):
    """A document of the API as a row of the data (the relations it embeds as ids, its images
    as the data gives them), or what keeps it from being one, named by its URL and field (by
    its collection when it has no URL)."""
    from generator.api.urls import RESOURCES
    from generator.errors import Problems
    from generator.importer.convert import _Converter

    found = Problems()
    documents = {r.name: {} for r in RESOURCES}
    documents["author"] = {AUTHOR: AN_AUTHOR}
    assert _Converter(documents, found).row(name, document) == row
    assert [str(p) for p in found.items] == problems


def test_a_listed_book_that_is_not_enabled_is_named():
    """Only enabled books are listed: one listed with `enable` anything but true is named (its
    row keeps it enabled, as it was served)."""
    from generator.api.urls import RESOURCES
    from generator.catalogue.resources import BOOKS
    from generator.errors import Problems
    from generator.importer.convert import _Converter

    problems = Problems()
    converter = _Converter({r.name: {} for r in RESOURCES}, problems)
    for value in (True, False, None, "true"):
        row: dict = {}
        converter._published(BOOKS, row, {"enable": value}, f"u/{value}")
        assert row == {"enable": True}
    assert [str(p) for p in problems.items] == [
        f"u/{value}: field 'enable': is not true, yet the book is listed" for value in (False, None, "true")]
