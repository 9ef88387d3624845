"""Real servers for tests and benchmarks, on free loopback ports, stopped with SIGTERM:
nginx (`catalogue serve`) and the write service (`catalogue write-service`)."""
from __future__ import annotations

import gzip
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from generator.hosts.nginx import RUN_DIR, find_nginx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def vary(self) -> set[str]:
        return {v.strip() for value in self.headers.get_all("Vary", []) for v in value.split(",")}


def wait_for_port(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start: {process.communicate()}")
            time.sleep(0.05)


class Server:
    """nginx serving a built site; POSTs go to the write service on write_port (by default
    a free port where nothing listens)."""

    def __init__(self, site: Path, write_port: int | None = None, *extra: str) -> None:
        find_nginx()  # fails with the install hint: these tests never skip
        self.site = site
        self.port = free_port()
        self.write_port = write_port or free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "generator", "serve", "--site", str(site), "--port", str(self.port),
             "--write-port", str(self.write_port), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for_port(self.port, self.process, "nginx")

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

    def nginx_pid(self) -> int | None:
        pid_file = self.site / RUN_DIR / "nginx.pid"
        return int(pid_file.read_text()) if pid_file.exists() else None

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=15)


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class WriteService:
    """`catalogue write-service` in a process of its own, its log kept in a file."""

    def __init__(self, data: Path, site: Path, token_file: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.log = site.parent / f"write-service-{self.port}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "generator", "write-service", "--data", str(data), "--out", str(site),
             "--tokens", str(token_file), "--port", str(self.port)],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.process, "the write service")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=15)


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
    def start(cls, data: Path, work: Path) -> "WriteStack":
        from generator.writes import tokens
        from generator.build import build

        site = work / "site"
        build(data, site)
        token_file = work / "tokens"
        token = tokens.add(token_file, "librarian")
        service = WriteService(data, site, token_file)
        return cls(data, site, token_file, token, service, Server(site, service.port))

    def stop(self) -> None:
        self.server.stop()
        self.service.stop()
