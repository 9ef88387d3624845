"""The built-in server: the published site over HTTP, as nginx serves it, with Python alone.

An ASGI application run by uvicorn. Each request is routed by api/routes.py, the same
route table the nginx configuration is rendered from; this module only carries out
the answer: a file of the published generation (streamed, its `.gz` twin to clients
that accept gzip, ETag and Last-Modified with 304), a fixed JSON body, a redirect, or
a POST forwarded to the write service. The published generation is looked up on
every request, so a rebuild is served as soon as it is published.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import itertools
import logging
import os
import re
import signal
import sys
import threading
import time
from collections import OrderedDict
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING

from isal import isal_zlib

from ..api import assemble, meta
from ..api.backends import PAGINATION, Rejected
from ..api.querystring import TooManyFields
from ..api.routes import Answer, Bodies, resolve
from ..api.serving import (ACCEPTS_GZIP, DEFAULT_WRITE_SERVICE, FORWARDED, GZIP_MIN, MAX_BODY, SiteInfo,
                           content_type, headers, write_timeout)
from ..api.urls import ACCEPTED, QUERY_DIR, API, CURRENT, PAGE_INDEX, PAGE_NOT_BUILT
from .contract import Host, Local

if TYPE_CHECKING:
    from starlette.responses import Response

# uvicorn, starlette and asyncio beneath them are imported when a server is made, not with
# this module: every `catalogue build` and every other host's `catalogue serve` imports each
# host (registry.py), and they took a tenth of a second of each such process.
asyncio = FileResponse = Response = StreamingResponse = None


def _import_asgi() -> None:
    global asyncio, FileResponse, Response, StreamingResponse
    import asyncio
    from starlette.responses import FileResponse, Response, StreamingResponse

JSON = "application/json"
SERVER = "catalogue"  # the Server header: no version, as nginx with server_tokens off
STREAM_FROM = 256 * 1024  # bytes: larger files are streamed in chunks
# Seconds a request in flight is given to finish once the server is asked to stop (a POST
# waiting for a write service that does not answer held it up to a minute).
SHUTDOWN_GRACE = 3
GZIP_LEVEL = 1  # a page put together is compressed as fast as the build compresses its twins
_GZIP = re.compile(ACCEPTS_GZIP, re.I)


class Generation:
    """The published generation as one request sees it: its root and how it is served."""

    def __init__(self, root: Path, info: SiteInfo) -> None:
        self.root = root
        self.info = info
        self.headers = {**headers(info.cache_control), "Server": SERVER}


class Indexes:
    """The index files last read (api/backends/, api/pageindex.py), kept in memory up to
    a bound: a search of a million records reads tens of megabytes of them, and every query
    the first span's page index (its count)."""

    def __init__(self, bound: int = 256 << 20) -> None:
        self.bound = bound
        self.held: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self.size = 0

    @staticmethod
    def holds(path: str) -> bool:
        return QUERY_DIR in path or path.endswith(PAGE_INDEX)

    def get(self, path: str) -> tuple[bytes, float] | None:
        found = self.held.get(path)
        if found is not None:
            self.held.move_to_end(path)
        return found

    def put(self, path: str, data: bytes, modified: float) -> None:
        self.held[path] = (data, modified)
        self.size += len(data)
        while self.size > self.bound and len(self.held) > 1:
            self.size -= len(self.held.popitem(last=False)[1][0])


class Reads:
    """A generation's files as a page put together reads them: each whole, and the newest
    modification time among them (the page's Last-Modified)."""

    def __init__(self, root: Path, indexes: Indexes) -> None:
        self.root = os.path.join(root, "")  # (a string: pathlib's joins cost more than the reads)
        self.indexes = indexes
        self.newest = 0.0

    def __call__(self, path: str) -> bytes | None:
        key = self.root + path  # (the generation's root is in the key: a new build, new keys)
        kept = self.indexes.holds(path)
        held = self.indexes.get(key) if kept else None
        if held is None:
            try:
                with open(key, "rb") as f:
                    held = (f.read(), os.fstat(f.fileno()).st_mtime)
            except FileNotFoundError:
                return None
            if kept:
                self.indexes.put(key, *held)
        self.newest = max(self.newest, held[1])
        return held[0]


class Server:
    """The ASGI application serving the site directory `site`."""

    def __init__(self, site: Path, write_service: str = DEFAULT_WRITE_SERVICE) -> None:
        _import_asgi()
        self.site = site.absolute()
        self.write_service = write_service
        self.write_timeout = write_timeout()
        self.bodies = Bodies()
        self.indexes = Indexes()
        self._published: tuple[str, Generation] | None = None

    def generation(self) -> Generation:
        target = os.readlink(self.site / CURRENT)  # (a rebuild swaps this link)
        if self._published is None or self._published[0] != target:
            root = self.site / target
            self._published = (target, Generation(root, SiteInfo.of_generation(root)))
        return self._published[1]

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        generation = self.generation()
        method = scope["method"]
        path = normalise(scope["path"])
        query = scope["query_string"].decode("latin-1")
        request = _request_headers(scope)
        answer = resolve(method, path, query, generation.info.prefix, self.bodies, request.get("accept", ""))
        headers = {"Date": _now(), **generation.headers}
        if answer.allow:
            headers["Allow"] = answer.allow
        if answer.forward:
            response = await self._forward(scope, receive, headers)
        elif answer.location is not None:
            headers["Location"] = answer.location
            response = Response(b"", answer.status, headers, media_type=JSON)
        elif answer.page is not None:
            response = self._page(generation, answer, query, headers, request)
        elif answer.file is not None:
            response = self._file(generation, answer, headers, request)
        else:
            response = Response(answer.body, answer.status, headers, media_type=JSON)
        await response(scope, receive, _cased(send))  # (HEAD: uvicorn sends the headers only)

    def _file(self, generation: Generation, answer: Answer, headers: dict, request: dict) -> Response:
        path = generation.root / answer.file
        try:
            stat = path.stat()
        except OSError:
            path, stat = self._accepted(answer)
            if stat is None:  # not built: the answer for a missing file
                body = (generation.root / answer.missing_file).read_bytes() if answer.missing_file else answer.body
                return Response(body, answer.missing_status, headers, media_type=JSON)
        zipped = Path(f"{path}.gz")
        if zipped.exists():
            if _accepts_gzip(request.get("accept-encoding", "")):
                path, stat = zipped, zipped.stat()
                headers["Content-Encoding"] = "gzip"
        etag = f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'
        headers["ETag"] = etag
        headers["Last-Modified"] = formatdate(stat.st_mtime, usegmt=True)
        if _not_modified(request, etag, stat.st_mtime):
            headers.pop("Content-Encoding", None)
            return Response(b"", 304, headers)
        kind = content_type(answer.file)
        if stat.st_size > STREAM_FROM:
            return FileResponse(path, headers=headers, media_type=kind, stat_result=stat)
        # A page or a document: read at once (it is in the page cache), cheaper than a stream.
        return Response(path.read_bytes(), 200, headers, media_type=kind)

    def _page(self, generation: Generation, answer: Answer, query: str, headers: dict, request: dict) -> Response:
        """A collection's page: its file when the build wrote it, else put together."""
        if answer.file is not None and (generation.root / answer.file).is_file():
            return self._file(generation, answer, headers, request)
        info = generation.info
        try:
            paging = PAGINATION.read(answer.page, query, info)
        except TooManyFields:
            return Response(meta.TOO_MANY_FIELDS, 400, headers, media_type=JSON)
        reads = Reads(generation.root, self.indexes)
        pieces = assemble.answer(reads, paging, info, f"{info.base_url}/{API}/{answer.page}/")
        body = bytearray()
        try:
            for piece in pieces:
                body += piece
                if len(body) > STREAM_FROM:  # (a page of thousands of records: never held whole)
                    return StreamingResponse(itertools.chain((bytes(body),), pieces), 200, headers, media_type=JSON)
        except Rejected as rejected:
            return Response(rejected.encoded(), 400, headers, media_type=JSON)
        except FileNotFoundError:  # (a generation built before pages had indexes)
            return Response((generation.root / PAGE_NOT_BUILT).read_bytes(), 400, headers, media_type=JSON)
        return self._made(bytes(body), reads.newest, headers, request)

    def _made(self, body: bytes, modified: float, headers: dict, request: dict) -> Response:
        """A document put together: a strong ETag from its bytes (the same bytes, the same tag,
        whichever build made them), gzip for the clients that take it, 304."""
        tag = hashlib.sha1(body).hexdigest()[:32]
        if len(body) >= GZIP_MIN and _accepts_gzip(request.get("accept-encoding", "")):
            body, tag = isal_zlib.compress(body, GZIP_LEVEL, 31), tag + "-gzip"
            headers["Content-Encoding"] = "gzip"
        headers["ETag"] = f'"{tag}"'
        headers["Last-Modified"] = formatdate(modified, usegmt=True)
        if _not_modified(request, headers["ETag"], modified):
            headers.pop("Content-Encoding", None)
            return Response(b"", 304, headers)
        return Response(body, 200, headers, media_type=JSON)

    def _accepted(self, answer: Answer) -> tuple[Path | None, os.stat_result | None]:
        """A detail the write service accepted and no build has published yet (pages never are)."""
        if answer.missing_file is not None:
            return None, None
        path = self.site / ACCEPTED / answer.file
        try:
            return path, path.stat()
        except OSError:  # (none, or just published and taken away)
            return None, None

    async def _forward(self, scope, receive, headers: dict) -> Response:
        """A write, to the write service; 413 over the size limit, 503 while none runs."""
        request = _request_headers(scope)
        declared = request.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            return Response(meta.TOO_LARGE, 413, headers, media_type=JSON)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_BODY:
                return Response(meta.TOO_LARGE, 413, headers, media_type=JSON)
        target = scope["raw_path"].decode("latin-1") + (f"?{scope['query_string'].decode('latin-1')}"
                                                         if scope["query_string"] else "")
        forwarded = {name: value for name, value in request.items() if name in FORWARDED}
        forwarded["content-length"] = str(len(body))
        try:
            status, reply, answered = await _in_daemon_thread(_post, self.write_service, target, body, forwarded,
                                                              self.write_timeout)
        except OSError:
            return Response(meta.WRITE_UNAVAILABLE, 503, headers, media_type=JSON)
        for name in ("Location", "WWW-Authenticate"):  # (named as Django names them)
            if answered.get(name.lower()):
                headers[name] = answered[name.lower()]
        return Response(reply, status, headers, media_type=answered.get("content-type", JSON))


CASES = {b"etag": b"ETag", b"www-authenticate": b"WWW-Authenticate", b"x-content-type-options": b"X-Content-Type-Options",
         b"x-frame-options": b"X-Frame-Options"}


def _cased(send):
    """Header names as nginx and Django write them (Starlette lower-cases them; HTTP/1.1
    clients should not care, but the old service's clients may)."""
    async def cased(message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [(CASES.get(name) or name.title(), value) for name, value in message["headers"]]
        await send(message)
    return cased


async def _in_daemon_thread(call, *args):
    """call(*args)'s result, from a daemon thread. A POST waits there for the write service,
    up to its timeout (a minute): stopping the server abandons it, as nginx's fast shutdown drops what is
    in flight (a worker thread of the event loop's kind would be waited for at exit, and a
    stop asked for would have waited that minute)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def settle(outcome: tuple) -> None:
        if not done.done():  # (cancelled: the server is stopping)
            done.set_result(outcome)

    def run() -> None:
        try:
            outcome = (call(*args), None)
        except BaseException as exc:  # (handed to the awaiting task, which raises it)
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # (the loop has closed meanwhile)
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=run, name="write service request", daemon=True).start()
    result, error = await done
    if error is not None:
        raise error
    return result


def _post(address: str, target: str, body: bytes, headers: dict, timeout: float) -> tuple[int, bytes, dict]:
    host, _, port = address.rpartition(":")
    connection = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=timeout)
    try:
        connection.request("POST", target, body, headers)
        response = connection.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()


def normalise(path: str) -> str:
    """A decoded path as nginx matches it: slashes merged, `.` and `..` resolved."""
    if "//" not in path and "/." not in path:
        return path
    segments: list[str] = []
    parts = path.split("/")
    for segment in parts[1:]:
        if segment == "..":
            if segments:
                segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    trailing = parts[-1] in ("", ".", "..") and segments
    return "/" + "/".join(segments) + ("/" if trailing else "")


_clock: list = [0, ""]


def _now() -> str:
    """The Date header, formatted once a second."""
    second = int(time.time())
    if _clock[0] != second:
        _clock[:] = [second, formatdate(second, usegmt=True)]
    return _clock[1]


def _request_headers(scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


def _accepts_gzip(accept_encoding: str) -> bool:
    found = _GZIP.search(accept_encoding)
    if found is None:
        return False
    try:
        return found["q"] is None or float(found["q"]) > 0
    except ValueError:
        return False


def _not_modified(request: dict, etag: str, mtime: float) -> bool:
    """RFC 9110: If-None-Match first (weak comparison); else If-Modified-Since."""
    match = request.get("if-none-match")
    if match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in match.split(",")}
        return "*" in tags or etag in tags
    since = request.get("if-modified-since")
    if since is None:
        return False
    try:
        return int(mtime) <= parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError):
        return False


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _uvicorn(config: dict):
    """uvicorn, stopping on SIGINT, SIGTERM or SIGHUP with status 0 as nginx does (uvicorn
    itself raises the signal again once it has stopped)."""
    import uvicorn

    class Stopping(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            def stop(signum, frame) -> None:
                self.force_exit = self.should_exit  # (a second signal: at once)
                self.should_exit = True

            previous = {signum: signal.signal(signum, stop)
                        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
            try:
                yield
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)

    server = Stopping(uvicorn.Config(**config))
    logging.getLogger("uvicorn.error").addFilter(_not_cancelled)
    return server


def _not_cancelled(record: logging.LogRecord) -> bool:
    """A request cut off by a stop (a second signal, or its grace run out) is no error,
    though uvicorn logs its CancelledError with a traceback of a dozen lines."""
    return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


_NOT_ASCII = re.compile(rb"[\x80-\xff]")
LINE_MAX = 64 * 1024  # bytes of a request line held back (h11 refuses a longer head anyway)


def percent_encoded(request_line: bytes) -> bytes:
    """A request line with every byte outside ASCII %-escaped: what a client that escapes sends."""
    return _NOT_ASCII.sub(lambda byte: b"%%%02X" % byte[0][0], request_line)


def _protocol():
    """uvicorn's h11 protocol, taking raw UTF-8 in a request line as a client's %-escapes
    (`curl '.../books/?search=هدایت'`, as people type it): h11 refuses any byte outside ASCII
    there with a plain-text 400, while Django's servers (its own and gunicorn, through WSGI)
    read such a path and query string as their UTF-8, as nginx reads the path and passes
    the rest on to this server. Each request line is held until it is whole, escaped, and
    handed on; a request pipelined behind another reaches h11 as sent."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Escaping(H11Protocol):
        line = b""  # the start of a request line, held until it is whole

        def data_received(self, data: bytes) -> None:
            if self.line or (self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]):
                data, self.line = self.line + data, b""
                end = data.find(b"\n")
                if end < 0 and len(data) < LINE_MAX:
                    self._unset_keepalive_if_required()
                    self.line = data
                    return
                data = percent_encoded(data[:end]) + data[end:] if end >= 0 else data
            super().data_received(data)

    return Escaping


def serve(site: Path, local: Local) -> int:
    """Serve the built site in the foreground until Ctrl-C or SIGTERM (on a Unix socket
    instead of the port with `local.socket`: as nginx's page service); the exit status."""
    site = site.absolute()
    serving = SiteInfo.of_site(site)  # (fails when nothing is built)
    app = Server(site, local.write_service)
    socket, host, port = local.socket, local.host, local.port
    where = {"uds": str(socket)} if socket else {"host": host, "port": port}
    # (no lifespan: the application has nothing to start or stop, and a forced exit left
    # uvicorn's lifespan task waiting, its cancellation logged with a traceback)
    server = _uvicorn(dict(app=app, **where, log_level="warning", lifespan="off",
                           timeout_graceful_shutdown=SHUTDOWN_GRACE,
                           server_header=False, date_header=False, access_log=False,
                           http=_protocol()))  # (h11 keeps the case of header names; httptools does not)
    address = f"unix:{socket}" if socket else f"http://{host}:{port}{serving.prefix}/{API}/"
    print(f"starting the built-in server for {site} at {address}", file=sys.stderr, flush=True)
    server.run()
    return 0 if server.started else 1


HOST = Host("builtin", "the built-in server (Python alone): what nginx does, and the pages no file holds",
            serve=serve)
