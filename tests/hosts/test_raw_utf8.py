"""Raw UTF-8 in a request line (`curl '.../books/?search=هدایت'`, as people type it) is read
as if the client had %-escaped it, as Django's servers read it (docs/serving.md: Raw UTF-8
in a request line): on nginx and the built-in server, the same answer as the escaped
request's, byte for byte but the Date; sent over a raw socket, since every HTTP client
library escapes."""
from __future__ import annotations

import shutil
import socket
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import SAMPLE
from generator.sitebuild import build
from servers import Server, server_params

SEARCH = "search:\n  books: [title, authors__fullName, publishers__company]\n"
# (raw, as people type them; the escaped form is what every client library sends)
TARGETS = ["/api/v1/books/?search=هدایت", "/api/v1/books/?limit=2&offset=1&search=بوف",
           "/api/v1/books/?search=%D9%87دایت",  # (escaped and raw in one query string)
           "/api/v1/category/ادبیات",  # (the slash added: a 301 whose Location is escaped, as Django's)
           "/api/v1/category/ادبیات/", "/api/v1/کتاب/"]
INVALID = "/api/v1/books/?search=\xff\xfe"  # (not UTF-8: as %FF%FE)


@pytest.fixture(scope="module", params=[p for p in server_params() if p.id in ("builtin", "nginx")])
def server(request, tmp_path_factory):
    data = tmp_path_factory.mktemp("raw") / "data"
    shutil.copytree(SAMPLE, data)
    with (data / "site.yaml").open("a", encoding="utf-8") as settings:
        settings.write(SEARCH)
    site = data.parent / "site"
    build(data, site)
    running = Server(site, kind=request.param)
    yield running
    running.stop()


def exchange(port: int, *requests: bytes, pieces: int = 1) -> list[bytes]:
    """The answers to requests sent one after another on one connection, each request line
    sent in `pieces` writes."""
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        for request in requests:
            step = -(-len(request) // pieces)
            for start in range(0, len(request), step):
                connection.sendall(request[start:start + step])
            answers.append(read_answer(connection))
    return answers


def read_answer(connection: socket.socket) -> tuple[bytes, list[bytes], bytes]:
    """Its status line, its header lines but Date in order of name (nginx adds those of its
    page service's answers after its own), its body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
                  None)
    assert length is not None, head  # (these answers all have a length)
    while len(body) < length:
        body += connection.recv(65536)
    status, *fields = head.split(b"\r\n")
    return status, sorted(field for field in fields if not field.lower().startswith(b"date:")), body


def get(target: bytes) -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def escaped(target: str) -> bytes:
    return quote(target, safe="/?&=%").encode("ascii")


@pytest.mark.parametrize("target", TARGETS)
def test_raw_utf8_answers_as_escaped(server: Server, target: str):
    raw, = exchange(server.port, get(target.encode("utf-8")))
    expected, = exchange(server.port, get(escaped(target)))
    assert raw == expected
    assert b"Content-Type: application/json" in raw[1]


def test_a_search_in_raw_utf8_finds_what_the_escaped_one_does(server: Server):
    raw, = exchange(server.port, get("/api/v1/books/?limit=1&search=هدایت".encode("utf-8")))
    status, _, body = raw
    assert status.startswith(b"HTTP/1.1 200 ")
    assert b'"count":5,' in body  # (Sadegh Hedayat's books, and not all 42)
    assert b"search=%D9%87%D8%AF%D8%A7%DB%8C%D8%AA" in body  # (the next link escaped, as for an escaped request)


def test_bytes_that_are_not_utf8_answer_as_their_escapes(server: Server):
    raw, = exchange(server.port, get(INVALID.encode("latin-1")))
    expected, = exchange(server.port, get(b"/api/v1/books/?search=%FF%FE"))
    assert raw == expected and raw[0].startswith(b"HTTP/1.1 200 ")


def test_raw_utf8_after_another_request_and_in_pieces(server: Server):
    """On a kept-alive connection, after a first answer; and a request line that arrives in
    several writes (held until it is whole)."""
    first, second = get(b"/api/v1/books/?limit=1"), get("/api/v1/books/?limit=1&search=هدایت".encode("utf-8"))
    expected = exchange(server.port, first, get(escaped("/api/v1/books/?limit=1&search=هدایت")))
    assert exchange(server.port, first, second) == expected
    assert exchange(server.port, first, second, pieces=7) == expected
