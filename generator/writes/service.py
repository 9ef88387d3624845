"""The write service: POST /api/v1/user/ and /api/v1/bookshelf/, answered as DRF did.

A Starlette application served by uvicorn on loopback, behind nginx (which adds the
headers every answer of the site carries). A request goes through the checks in
DRF's order: method (405), token (401), size (413), media type (415), JSON (400),
fields (400); then create.py appends the record, the answer is 201 with the record
as it will be published, and the rebuilder is asked to publish it.

Tokens are compared by their hashes and never written anywhere: the access log has
the request line only, and no error message repeats a header.

With a destination (--publish), each rebuild is published beyond this machine too, by
what the service is given to do it (Publishing: hosts/publish.py, composed by the CLI).
GET STATUS_PATH on the service's own address answers what waits for a rebuild and for the
publish, and since when (never forwarded by a host: only POSTs of the writable
collections are).
"""
from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import anyio
from starlette.applications import Starlette
from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..api import meta
from ..api.render import encode
from ..api.serving import DEFAULT_LISTEN, LOCAL, MAX_BODY, WRITE_PORT
from ..api.urls import API, WRITABLE
from ..errors import CatalogueError
from ..system import Supervised, command
from . import append
from .accepted import Accepted
from .create import Catalogue, Invalid
from .rebuild import Publishing, Rebuilder
from .tokens import Tokens

STATE_DIR = ".write-service"  # <out>/.write-service/: the append journal
STATUS_PATH = "/_status"  # GET: the service's status document
JSON_TYPE = "application/json"
log = logging.getLogger("catalogue.write")


@dataclass(frozen=True)
class Destination:
    """Where rebuilds are published beyond this machine: a bucket (s3://BUCKET[/PREFIX]), its
    S3-compatible endpoint (R2, MinIO; None: AWS), the CloudFront distribution in front."""
    url: str
    endpoint: str | None = None
    distribution: str | None = None

    def options(self) -> list[str]:
        """As `catalogue write-service` takes it."""
        given = {"--publish": self.url, "--endpoint-url": self.endpoint, "--invalidate": self.distribution}
        return [part for option, value in given.items() if value is not None for part in (option, value)]


@dataclass
class Config:
    data: Path
    out: Path
    tokens: Path
    host: str = LOCAL
    port: int = WRITE_PORT
    base_url: str | None = None
    listen: str = DEFAULT_LISTEN  # of the nginx server block the rebuilds write
    max_body: int = MAX_BODY
    links: str = "api"  # the site's link style (catalogue build --links), kept by its rebuilds
    destination: Destination | None = None


def _json(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status, headers, media_type=JSON_TYPE)


def _detail(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return _json(status, meta.detail(message), headers)


class TooLarge(Exception):
    pass


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _authenticate(header: str | None, tokens: Tokens) -> str | None:
    """DRF's TokenAuthentication with the keyword Bearer: None when the token is good,
    else the 401 message."""
    parts = (header or "").split()
    if not parts or parts[0].lower() != "bearer":
        return "Authentication credentials were not provided."
    if len(parts) == 1:
        return "Invalid token header. No credentials provided."
    if len(parts) > 2:
        return "Invalid token header. Token string should not contain spaces."
    if tokens.holder(parts[1]) is None:
        return "Invalid token."
    return None


def _strict_constant(value: str):
    raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")


class ParseError(Exception):
    pass


def _parse(body: bytes) -> object:
    """DRF's JSONParser: an empty body is no data; otherwise UTF-8 JSON, strictly."""
    if not body:
        return {}
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_strict_constant)
    except ValueError as exc:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        raise ParseError(f"JSON parse error - {exc}") from None


def application(config: Config, catalogue: Catalogue, tokens: Tokens, published: Callable[[], None],
                status: Callable[[], dict] = lambda: {}) -> Starlette:
    accepted = Accepted(config.out)

    class Collection(HTTPEndpoint):
        async def post(self, request: Request) -> Response:
            resource = request.path_params["resource"]
            if resource not in WRITABLE:
                return _json(404, meta.NOT_FOUND)
            refused = _authenticate(request.headers.get("authorization"), tokens)
            if refused is not None:
                return _detail(401, refused, {"WWW-Authenticate": 'Bearer realm="api"'})
            try:
                body = await _read_body(request, config.max_body)
            except TooLarge:
                return _json(413, meta.TOO_LARGE)
            media = request.headers.get("content-type", "")
            if media.split(";")[0].strip().lower() != JSON_TYPE and body:
                return _detail(415, f'Unsupported media type "{media}" in request.')
            try:
                created = await anyio.to_thread.run_sync(catalogue.create, resource, _parse(body))
            except ParseError as exc:
                return _detail(400, str(exc))
            except Invalid as exc:
                return _json(400, encode(exc.errors))
            except CatalogueError as exc:  # (the data, not the request: someone must fix it)
                log.error("cannot write: %s", exc)
                return _json(503, meta.DATA_UNAVAILABLE)
            try:
                accepted.keep(created.file, created.body)  # (read your writes until it is published)
            except OSError as exc:
                log.error("the new record will be served once published: %s", exc)
            published()
            return _json(201, created.body, {"Location": created.url})

        async def method_not_allowed(self, request: Request) -> Response:
            if request.path_params["resource"] not in WRITABLE:
                return _json(404, meta.NOT_FOUND)
            return _detail(405, f'Method "{request.method}" not allowed.')

    async def status_document(request: Request) -> Response:
        return Response(json.dumps(status(), ensure_ascii=False, indent=2) + "\n", 200,
                        {"Cache-Control": "no-store"}, media_type=JSON_TYPE)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _json(404, meta.NOT_FOUND)

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("a write failed", exc_info=exc)
        return _json(500, meta.SERVER_ERROR)

    # (the API's own path: the root link is its index.json file's in a `--links paths` site)
    routes = [Route(urlsplit(catalogue.urls.base).path + f"/{API}/" + "{resource}/", Collection),
              Route(STATUS_PATH, status_document, methods=["GET"])]
    return Starlette(routes=routes, exception_handlers={404: not_found, 500: server_error})


def supervised(config: Config) -> Supervised:
    """The service in a process of its own, started again whenever it dies, that ends with
    ours (for `catalogue serve --data`)."""
    return Supervised(command("write-service", "--data", str(config.data), "--out", str(config.out),
                              "--tokens", str(config.tokens), "--host", config.host, "--port", str(config.port),
                              "--listen", config.listen, "--links", config.links,
                              *(config.destination.options() if config.destination else ()), base_url=config.base_url),
                      "the write service", lambda message: print(message, file=sys.stderr, flush=True))


def run(config: Config, publishing: Publishing | None = None) -> None:
    """Serve writes until SIGINT or SIGTERM; publishes what the data holds first (and, with
    publishing, brings the destination up to it)."""
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    state = config.out / STATE_DIR
    state.mkdir(parents=True, exist_ok=True)
    journal = state / append.JOURNAL
    recovered = append.recover(journal)
    if recovered:
        log.warning("after a crash: %s", recovered)
    tokens = Tokens(config.tokens, log.error)
    catalogue = Catalogue(config.data, config.base_url, journal, config.links)
    catalogue.refresh()  # (refuses to start on data that does not load)
    rebuilder = Rebuilder.of(config.data, config.out, config.base_url, config.listen,
                             f"{config.host}:{config.port}", log.info, config.links, publishing)
    if publishing:
        publishing.start()
    rebuilder.start()
    rebuilder.request()  # records written before a crash, or while the service was down

    def status() -> dict:
        return {"rebuild": rebuilder.status(), "publish": publishing.status() if publishing else None}

    app = application(config, catalogue, tokens, rebuilder.request, status)
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port, log_level="info",
                                           server_header=False, date_header=False, access_log=True))
    # (uvicorn's own account of starting and stopping, eight lines, says nothing the line
    # below and the exit do not: its warnings and errors only; the access log stays)
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    log.info("writes to %s accepted at http://%s:%d", config.data, config.host, config.port)
    try:
        server.run()
    finally:
        rebuilder.stop()
        if publishing:
            publishing.stop()
