"""Real servers for tests and benchmarks, on free loopback ports (each held from the moment
it is chosen until its server listens), stopped with SIGTERM:
`catalogue serve` with every server of the host registry (generator/hosts/registry.py)
and the write service (`catalogue write-service`). Each is started so that it dies with the process that
started it: an interrupted test run leaves nothing behind."""
from __future__ import annotations

import gzip
import importlib.util
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from generator.hosts import npm
from generator.hosts.netlify import find_deno
from generator.hosts.nginx import find_nginx
from generator.hosts.registry import servers
from generator.system import dying_with_parent

SERVERS = tuple(servers())  # every host that serves here, in the registry's order
READ_ONLY = {name for name, host in servers().items() if not host.takes_writes}  # every POST answers 503
WRANGLER = (npm.find("wrangler") or npm.CHECKOUT) / "node_modules/wrangler/bin/wrangler.js"  # (make node_modules)
# Programs the tests need beyond Python; CI (.ci/run) installs them and names them in
# CATALOGUE_REQUIRE, and then a test that needs one never skips.
REQUIRED = set(filter(None, os.environ.get("CATALOGUE_REQUIRE", "").split(",")))
# (the servers' runtimes, as the registry says; then the programs some tests need of their own)
INSTALLED = {**{name: host.installed for name, host in servers().items()},
             "node": lambda: shutil.which("node") is not None,
             "deno": lambda: find_deno() is not None,
             "wrangler": lambda: shutil.which("node") is not None and WRANGLER.is_file(),
             "rsync": lambda: shutil.which("rsync") is not None,
             "moto": lambda: importlib.util.find_spec("moto") is not None and importlib.util.find_spec("boto3"),
             "chromium": lambda: shutil.which("chromium") is not None and importlib.util.find_spec("playwright")}


def missing_required() -> list[str]:
    """The programs CATALOGUE_REQUIRE names that are not installed here."""
    return sorted(kind for kind in REQUIRED if kind in INSTALLED and not INSTALLED[kind]())


def runnable(kind: str) -> bool:
    """Whether tests against this server run here (if required, they run and fail loudly)."""
    return kind in REQUIRED or INSTALLED[kind]()


def server_params(writes: bool = False) -> list:
    """Every server (with `writes`, every one that takes writes), as parameters of a
    fixture: those not installed here are skipped."""
    return [pytest.param(kind, id=kind, marks=() if runnable(kind) else
                         pytest.mark.skip(reason=f"{kind} is not installed"))
            for kind in SERVERS if not (writes and kind in READ_ONLY)]


_held: dict[int, socket.socket] = {}  # ports handed out, still held: bound, not listening
_handed: set[int] = set()  # every port this process handed out
# Seconds a server is given to listen once started, or to end once told to (SIGTERM) or killed,
# before the test fails: a guard against a hang only, not a measure (a start builds or publishes
# first, a stop waits for nginx's workers or a rebuild under way; on a loaded machine, the tests
# niced, 60 s to start and 15 s to stop were not enough).
GUARD = 300


def free_port() -> int:
    """A loopback port for a server this process starts, held until the server listens
    (wait_for_port lets it go): bound, without listening, with SO_REUSEADDR, which every
    server here sets too, so the server binds it while no one else (this process included)
    is handed it; and never handed out twice by this process. (A port probed and let go at
    once, as before, could come back for the next server of the same test.)"""
    skipped = []
    while True:
        probe = socket.socket()
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        if port not in _handed:
            break
        skipped.append(probe)  # (held meanwhile, so that the kernel offers another)
    for other in skipped:
        other.close()
    _handed.add(port)
    _held[port] = probe
    return port


def release(port: int) -> None:
    """Let a held port go: its server listens on it, or is gone."""
    held = _held.pop(port, None)
    if held is not None:
        held.close()


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def vary(self) -> set[str]:
        return {v.strip() for value in self.headers.get_all("Vary", []) for v in value.split(",")}


def wait_for_port(port: int, process: subprocess.Popen, what: str, seconds: float = GUARD,
                  log: Path | None = None) -> None:
    """Until the process listens on the port (then the port is no longer held for it). One
    that neither listens nor ends in time is killed, so that the test fails, not hangs, saying
    what it wrote (its pipes, or the end of the log its output goes to)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            release(port)
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                ended = process.poll()
                if ended is None:
                    process.kill()
                said = process.communicate(timeout=GUARD)
                if log is not None:
                    said = log.read_bytes()[-4000:].decode("utf-8", "replace")
                how = f"ended (exit code {ended}) before listening" if ended is not None else \
                    f"did not start in {seconds:.0f} s"
                raise RuntimeError(f"{what} {how} on port {port}: {said}")
            time.sleep(0.02)


class Server:
    """`catalogue serve` serving a built site with the server `kind`; POSTs go to the write
    service on write_port (by default a free port where nothing listens); its temporary files go
    to `scratch` when one is given; `env`: more environment variables for it."""

    def __init__(self, site: Path, write_port: int | None = None, *extra: str, kind: str = "builtin",
                 scratch: Path | None = None, env: dict[str, str] | None = None) -> None:
        if kind == "nginx":
            find_nginx()  # fails with the install hint
        self.kind = kind
        self.site = site
        self.port = free_port()
        self.write_port = write_port or free_port()
        self.log = site.parent / f"serve-{self.port}.log"  # (a pipe nobody reads would fill and block it)
        self.process = subprocess.Popen(
            **dying_with_parent([sys.executable, "-m", "generator", "serve", "--server", kind, "--site", str(site),
                                 "--port", str(self.port), "--write-port", str(self.write_port), *extra]),
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
            env={**os.environ, **({"TMPDIR": str(scratch)} if scratch else {}), **(env or {})})
        wait_for_port(self.port, self.process, kind, log=self.log)

    def request(self, method: str, path: str, headers: dict | None = None, body: bytes | None = None) -> Answer:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read()
            if response.getheader("Content-Encoding") == "gzip":
                data = gzip.decompress(data)
            return Answer(response.status, response.headers, data)
        finally:
            connection.close()

    def get(self, path: str, **headers: str) -> Answer:
        return self.request("GET", path, {k.replace("_", "-"): v for k, v in headers.items()})

    def children(self) -> list[int]:
        """The processes `catalogue serve` started (nginx, the write service)."""
        return children(self.process.pid)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(timeout=GUARD)
        release(self.write_port)  # (held while nothing listened there, or while serve's own service did)
        return status


def children(pid: int) -> list[int]:
    """The processes pid started, found through each of its threads (a thread that ends
    between the listing and the reading, as the built-in server's POSTs' do, had none)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return found


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class WriteService:
    """`catalogue write-service` in a process of its own, its log kept in a file."""

    def __init__(self, data: Path, site: Path, token_file: Path, port: int | None = None, *extra: str) -> None:
        self.port = port or free_port()
        self.log = site.parent / f"write-service-{self.port}.log"
        self.process = subprocess.Popen(
            **dying_with_parent([sys.executable, "-m", "generator", "write-service", "--data", str(data),
                                 "--out", str(site), "--tokens", str(token_file), "--port", str(self.port), *extra]),
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.process, "the write service", log=self.log)

    def create_user(self, token: str, username: str) -> bytes:
        """POST a user to the service itself: the 201's body."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request("POST", "/api/v1/user/", json.dumps({"username": username}).encode(),
                               {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            answer = connection.getresponse()
            body = answer.read()
        finally:
            connection.close()
        assert answer.status == 201, body
        return body

    def status(self) -> dict:
        """Its status document (GET /_status on its own address)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request("GET", "/_status")
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=GUARD)


@dataclass
class WriteStack:
    """A built site served by nginx, with the write service for its data behind it."""
    data: Path
    site: Path
    token_file: Path
    token: str
    service: WriteService
    server: Server

    @classmethod
    def start(cls, data: Path, work: Path, kind: str = "builtin") -> "WriteStack":
        from generator.writes import tokens
        from generator.sitebuild import build

        site = work / "site"
        build(data, site)
        token_file = work / "tokens"
        token = tokens.add(token_file, "librarian")
        service = WriteService(data, site, token_file)
        return cls(data, site, token_file, token, service, Server(site, service.port, kind=kind))

    def stop(self) -> None:
        self.server.stop()
        self.service.stop()
