"""A bucket for the write service's publishing, in tests and benchmarks: moto's S3 server
(with its CloudFront API) on a free loopback port, in this process, behind an endpoint of
the caller's own that fails as a bucket fails, on demand."""
from __future__ import annotations

import http.client
import re
import secrets
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

from servers import free_port, release

# The environment the write service reads its credentials and CloudFront's address from, as
# boto3 does anywhere (AWS_ENDPOINT_URL_CLOUDFRONT is boto3's own setting): the endpoint's URL.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}
CLOUDFRONT_ENDPOINT = "AWS_ENDPOINT_URL_CLOUDFRONT"


@contextmanager
def moto() -> Iterator[int]:
    """moto's server on a free loopback port: its port."""
    import logging

    import moto.server as moto_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # (a line a request otherwise)
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    release(port)
    try:
        yield port
    finally:
        server.stop()


def clients(port: int):
    """S3 and CloudFront clients of moto's server itself (not through an endpoint that fails)."""
    import boto3

    direct = f"http://127.0.0.1:{port}"
    return boto3.client("s3", endpoint_url=direct), boto3.client("cloudfront", endpoint_url=direct)


def distribution(cloudfront) -> str:
    """A new distribution's id."""
    return cloudfront.create_distribution(DistributionConfig={
        "CallerReference": secrets.token_hex(8), "Comment": "", "Enabled": True,
        "Origins": {"Quantity": 1, "Items": [{"Id": "bucket", "DomainName": "catalogue.s3.amazonaws.com",
                                              "S3OriginConfig": {"OriginAccessIdentity": ""}}]},
        "DefaultCacheBehavior": {"TargetOriginId": "bucket", "ViewerProtocolPolicy": "allow-all", "MinTTL": 0,
                                 "ForwardedValues": {"QueryString": True, "Cookies": {"Forward": "none"}},
                                 "TrustedSigners": {"Enabled": False, "Quantity": 0}}})["Distribution"]["Id"]


def invalidations(cloudfront, distribution_id: str) -> list[list[str]]:
    """The paths of each invalidation the distribution was given, oldest first."""
    listed = cloudfront.list_invalidations(DistributionId=distribution_id)["InvalidationList"].get("Items", [])
    made = [cloudfront.get_invalidation(DistributionId=distribution_id, Id=item["Id"])["Invalidation"]
            for item in listed]
    return [item["InvalidationBatch"]["Paths"]["Items"] for item in sorted(made, key=lambda i: i["CreateTime"])]


class Server(ThreadingHTTPServer):
    allow_reuse_address = True  # (as every server of the tests: its port was held, then comes back after down())
    daemon_threads = True

class Endpoint:
    """An S3 and CloudFront endpoint passing each request on to moto's, unless told to fail:
    `down()` closes its port (unreachable) until `up()`; `answer` makes it answer every request
    with an error of S3's (SlowDown, ExpiredToken); `hold_after(n)` lets n uploads pass and then
    holds the rest (`holding` is set) until `release()`; `hold_at(part)` holds the first
    upload of a key holding `part`, and every upload after it (`held` of them at a time). It writes
    down every change it passed on (method and key), in order, and when each invalidation was made.
    Uploads are counted and held under `prefix` alone."""

    ERRORS = {"SlowDown": (503, "Please reduce your request rate."),
              "ExpiredToken": (400, "The provided token has expired.")}

    def __init__(self, upstream: int, prefix: str) -> None:
        self.upstream = upstream
        self.prefix = prefix
        self.port = free_port()
        self.answer: str | None = None
        self.changes: list[tuple[str, str]] = []
        self.times: list[float] = []  # (when each change was answered: time.monotonic())
        self.holding, self._released = threading.Event(), threading.Event()
        self.held = 0  # uploads waiting for release() now
        self.invalidations: dict[str, float] = {}  # CloudFront's id of each invalidation made -> when it was answered
        self._passing: int | None = None
        self._held_key: str | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._connections: set[socket.socket] = set()  # (open: a server that stops closes them too)
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with endpoint._lock:
                    endpoint._connections.add(self.connection)

            def finish(self) -> None:
                with endpoint._lock:
                    endpoint._connections.discard(self.connection)
                super().finish()

            def handle_one_request(self) -> None:
                try:
                    super().handle_one_request()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # (the service was killed while it waited)

            def do(self) -> None:
                endpoint.handle(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do

            def log_message(self, format, *args) -> None:
                pass

        self._server = Server(("127.0.0.1", self.port), Handler)
        release(self.port)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def down(self) -> None:
        """Unreachable: the port closed, and the connections a client keeps open to it too."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            for connection in self._connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # (closed by the client meanwhile)

    def hold_after(self, uploads: int) -> None:
        self._passing, self._released = uploads, threading.Event()
        self.holding.clear()

    def hold_at(self, part: str) -> None:
        self._held_key, self._released = part, threading.Event()
        self.holding.clear()

    def release(self) -> None:
        self._passing = self._held_key = None
        self._released.set()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        if self.answer is not None:
            status, message = self.ERRORS[self.answer]
            error = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{self.answer}</Code>"
                     f"<Message>{message}</Message></Error>").encode()
            return self.reply(request, status, {"Content-Type": "application/xml"}, error)
        key = request.path.split("?")[0]
        if request.command == "PUT" and f"/{self.prefix}/api/" in key:
            with self._lock:
                if self._held_key is not None:
                    wait = self.holding.is_set() or self._held_key in key
                    if wait:
                        self.holding.set()
                elif self._passing is not None:
                    if self._passing == 0:
                        self.holding.set()
                        wait = True
                    else:
                        self._passing -= 1
                        wait = False
                else:
                    wait = False
            if wait:
                with self._lock:
                    self.held += 1
                self._released.wait()
                with self._lock:
                    self.held -= 1
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=60)
        try:
            upstream.request(request.command, request.path, body=body,
                             headers={k: v for k, v in request.headers.items() if k.lower() != "connection"})
            answer = upstream.getresponse()
            data = answer.read()
            if request.command in ("PUT", "DELETE") or (request.command == "POST" and "delete" in request.path):
                with self._lock:
                    self.changes.append((request.command, key))
                    self.times.append(time.monotonic())
            made = re.search(rb"<Invalidation\b[^>]*>.*?<Id>([^<]+)</Id>", data, re.S) \
                if request.command == "POST" else None
            if made is not None and answer.status < 300:
                with self._lock:
                    self.invalidations[made.group(1).decode()] = time.monotonic()
            headers = {k: v for k, v in answer.getheaders() if k.lower() not in ("transfer-encoding", "connection")}
            self.reply(request, answer.status, headers, data)
        finally:
            upstream.close()

    @staticmethod
    def reply(request: BaseHTTPRequestHandler, status: int, headers: dict, body: bytes) -> None:
        request.send_response(status)
        for name, value in headers.items():
            if name.lower() != "content-length":
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(body)


