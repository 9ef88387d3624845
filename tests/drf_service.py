"""The DRF service (tests/drf) in a process of its own, for tests: on a free loopback
port, started so that it dies with the tests, ready once it answers; and `Pair`, which
asks it and another server the same requests and compares their answers."""
from __future__ import annotations

import contextlib
import http.client
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from conftest import ROOT
from generator.system import dying_with_parent
from servers import GUARD, Answer, Server, free_port

STARTUP = 60  # seconds: migrating and loading a catalogue of a few hundred records takes one or two


class DrfService:
    """`python -m tests.drf.serve DATA WORK PORT`: a fresh database in WORK loaded from DATA."""

    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, data_dir: Path, work: Path) -> "DrfService":
        service = cls.launch(data_dir, work)
        service.wait()
        return service

    @classmethod
    def launch(cls, data_dir: Path, work: Path) -> "DrfService":
        """Started, on its port, not yet answering (wait())."""
        work.mkdir(parents=True, exist_ok=True)
        port = free_port()
        log = work / f"drf-{port}.log"  # (a pipe nobody reads would fill and block it)
        process = subprocess.Popen(
            **dying_with_parent([sys.executable, "-m", "tests.drf.serve", str(data_dir), str(work), str(port)]),
            cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)
        return cls(process, port, log)

    def wait(self) -> None:
        """Until the API root answers (the port opens only once the catalogue is loaded)."""
        deadline = time.monotonic() + STARTUP
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/api/v1/")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            finally:
                connection.close()
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the DRF service did not start:\n{self.log.read_text(errors='replace')}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=GUARD)


# ---- the DRF service beside another server, asked the same ----------------------------------

# The headers docs/spec/http.md lists for every answer, compared one by one (Vary: both carry Accept).
HEADERS = ("Content-Type", "Allow", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy",
           "Access-Control-Allow-Origin")


class Pair:
    """The two services, asked the same requests."""

    def __init__(self, drf: DrfService, static: Server) -> None:
        self.drf, self.static = drf, static

    def both(self, method: str, path: str) -> tuple[Answer, Answer]:
        return ask(self.drf.port, method, path), ask(self.static.port, method, path)

    def same(self, path: str, method: str = "GET") -> Answer:
        """Asks both; asserts the same status, body and headers: DRF's answer."""
        drf, static = self.both(method, path)
        request = f"{method} {path}"
        assert (static.status, static.body) == (drf.status, drf.body), request
        for name in HEADERS:
            assert static.header(name) == drf.header(name), f"{request}: {name}"
        assert "Accept" in drf.vary() and "Accept" in static.vary(), request
        return drf

    def first(self, name: str) -> dict:
        """The first record of a collection."""
        return json.loads(ask(self.drf.port, "GET", f"/api/v1/{name}/").body)["results"][0]

    def local(self, url: str | None) -> str | None:
        """A link of the API as the path of a request to either service."""
        if url is None:
            return None
        assert url.startswith(self.drf.url + "/"), url
        parts = urlsplit(url)
        return parts.path + (f"?{parts.query}" if parts.query else "")


@contextlib.contextmanager
def compared(data: Path, work: Path):
    """The DRF service of a catalogue beside the built-in server over the catalogue's build
    (its base_url the service's own), as a Pair; both stopped at the end."""
    from generator.compose import build

    drf = DrfService.launch(data, work / "drf")  # (loading its database while the site is built)
    try:
        build(data, work / "site", base_url=drf.url)
        drf.wait()
        static = Server(work / "site")
        try:
            yield Pair(drf, static)
        finally:
            static.stop()
    finally:
        drf.stop()


def ask(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> Answer:
    # (a guard against a hang, not a measure of speed: on a loaded machine DRF took over 10 s to answer)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def walk(pair: Pair, first: str) -> list[dict]:
    """Every page from `first` to the end by `next`, each compared: their records."""
    found, path = [], first
    while path is not None:
        page = json.loads(pair.same(path).body)
        found += page["results"]
        path = pair.local(page["next"])
    return found
