"""The nginx configuration of a built site, and nginx run in the foreground with it.

The server block maps DRF-style URLs onto the files that api/urls.py names, with
nginx's own maps and try_files; no program of ours runs per request. It is
rendered from templates/ by jinja2; everything it says about the data (the
default page size, the 400 body) lives in the published generation instead.
"""
from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from ..api import meta, routes
from ..api.backends import PAGINATION
from ..api.serving import (DEFAULT_LISTEN, DEFAULT_PAGE_SERVICE, DEFAULT_WRITE_SERVICE, LOCAL, MAX_BODY, SiteInfo,
                           headers, write_timeout)
from ..api.urls import (ACCEPTED, API, CURRENT, HOSTS, META, OPENAPI_FILE, PAGE_NOT_BUILT, RESOURCES, VIEWER,
                        detail_file, page_file, root_path)
from ..errors import CatalogueError
from ..system import Supervised, command, foreground
from .contract import Host, Local, Option
from .files import replace, templates

CONFIG_DIR = f"{HOSTS}/nginx"  # <site>/hosts/nginx/: what the build writes for deployment
RUN_DIR = ".run"  # <site>/.run/: what `catalogue serve` writes: config, pid, logs, temp files
PAGES_CACHE = "pages-cache"  # <site>/.run/pages-cache/: the pages put together, kept by nginx
SAFE_PATH = re.compile(r"[A-Za-z0-9._~/-]*")
INSTALL_HINT = ("nginx is not installed (or not on PATH): install it with the system's package manager, "
                "for example `apt-get install nginx-light` on Debian or Ubuntu, `dnf install nginx` on "
                "Fedora, or `brew install nginx` on macOS")


@dataclass(frozen=True)
class Hosting:
    """Where nginx listens, and the services it passes requests to: writes (POST) and the
    pages no file holds. An address is host:port, or unix:<path> for a Unix socket."""
    listen: str = DEFAULT_LISTEN
    write_service: str = DEFAULT_WRITE_SERVICE
    page_service: str = DEFAULT_PAGE_SERVICE


def quoted(body: bytes, variables: tuple[str, ...] = ()) -> str:
    """A body as the inside of an nginx single-quoted string; nginx has no escape for `$`."""
    text = body.decode("utf-8").replace("\\", "\\\\").replace("'", "\\'")
    for name in variables:
        text = text.replace(f"@{name}@", f"${name}")
    if "$" in text.replace("$request_method", ""):
        raise CatalogueError(f"cannot write {text!r} into the nginx configuration: it contains '$'")
    return text


def server_config(site: Path, serving: SiteInfo, hosting: Hosting) -> str:
    """The server block: the route table (api/routes.py) as nginx maps and locations."""
    parts = urlsplit(serving.base_url)
    prefix = parts.path
    root = str((site / CURRENT).absolute())
    if not SAFE_PATH.fullmatch(prefix):
        raise CatalogueError(f"the base_url's path {prefix!r} has characters the nginx configuration cannot hold")
    if re.search(r'["$\\\x00-\x1f]', root):
        raise CatalogueError(f"the site directory {root!r} has characters the nginx configuration cannot hold")
    method = quoted(meta.detail('Method "@request_method@" not allowed.'), ("request_method",))
    table = {(route.kind, route.resource.name if route.resource else None): route for route in routes.ROUTES}
    resources = [{
        "name": r.name,
        "writable": r.writable,
        "list_path": table["list", r.name].pattern,
        "detail_pattern": table["detail", r.name].pattern,
        "other_pattern": table["other", r.name].pattern,
        "allow_list": table["list", r.name].allow, "allow_detail": table["detail", r.name].allow,
        "options_list": quoted(meta.options_list(r)),
        "options_detail": quoted(meta.options_detail(r)),
        "no_match": quoted(meta.no_match(r)),
        "pages_dir": page_file(r.name, "", "", "").split("/pages/")[0] + "/pages/",
        "detail_file": detail_file(r.name, "$catalogue_shard", "$catalogue_shard$catalogue_rest"),
    } for r in RESOURCES]
    # A map's key: nginx tries its regular expressions only on a value that is not empty, so
    # the empty query string (a collection's first page) is an exact key.
    plain = [{"key": f'"~^{spelling.pattern.replace("(?P<", "(?<")}$"' if spelling.pattern else '""',
              "file": "/".join(f"${part}" if part.startswith("catalogue_") else part
                               for part in (spelling.limit, spelling.bucket, spelling.offset))}
             for spelling in PAGINATION.plain_spellings()]
    return templates().get_template("server.conf.j2").render(
        base_url=serving.base_url, listen=hosting.listen, server_name=parts.hostname, root=root,
        prefix=prefix, prefix_re=re.escape(prefix), resources=resources, plain=plain,
        page_service=_upstream(hosting.page_service), pages_cache=site.absolute() / RUN_DIR / PAGES_CACHE,
        pages_unavailable=quoted(meta.SERVICE_UNAVAILABLE),
        api_root=table["root", None], root_file=root_path(), redirect=routes.REDIRECT,
        schema=table["schema", None], schema_file=OPENAPI_FILE, options_schema=quoted(meta.options_schema()),
        uri_safe="A-Za-z0-9" + re.escape(routes.URI_SAFE), accept=routes.ACCEPT, viewer=f"/{VIEWER}",
        accepted=site.absolute() / ACCEPTED,
        allow_routes=[route for route in routes.ROUTES if route.kind in ("root", "schema", "list", "other")],
        meta=META, page_not_built=f"/{PAGE_NOT_BUILT}",
        headers=headers(serving.cache_control), write_service=check_address(hosting.write_service), max_body=MAX_BODY,
        write_timeout=f"{round(write_timeout() * 1000)}ms",
        options_root=quoted(meta.options_root()), method_not_allowed=method,
        not_found=quoted(meta.NOT_FOUND), write_unavailable=quoted(meta.WRITE_UNAVAILABLE),
        too_large=quoted(meta.TOO_LARGE),
        server_error=quoted(meta.SERVER_ERROR),
        own_errors_list=[{"code": code, "status": status, "body": quoted(body), "early": early,
                          "uri": f"/{META}/errors/{code}"} for code, (status, body, early) in OWN_ERRORS.items()],
    )


# The other answers nginx makes by itself, as (status, body, early): a malformed or too
# large request, a failed condition or range of a file, a timeout; in DRF's shape too, never
# nginx's HTML page. (403, 404, 405, 413 and 5xx have their own, in the template.) `early`:
# made while nginx reads the request line or headers, before any location (so with no Allow).
OWN_ERRORS = {
    400: (400, meta.detail("Bad request."), True),
    408: (408, meta.detail("Request timeout."), True),
    411: (411, meta.detail("Length required."), False),
    412: (412, meta.detail("Precondition failed."), False),
    414: (414, meta.detail("Request URI is too long."), True),
    416: (416, meta.detail("Requested range not satisfiable."), False),
    494: (400, meta.detail("Request header or cookie too large."), True),  # (nginx's own code for a 400)
    501: (501, meta.detail("Not implemented."), True),
    503: (503, meta.SERVICE_UNAVAILABLE, False),
    505: (505, meta.detail("HTTP version not supported."), True),
}


HOST_PORT = r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}"
UNIX_SOCKET = r"unix:/[A-Za-z0-9._~/-]+"


def check_address(address: str, service: str = "write service", socket: bool = False) -> str:
    """A service's host:port (or, with `socket`, unix:<path>), checked so that nothing else
    reaches the configuration."""
    if not re.fullmatch(HOST_PORT + (f"|{UNIX_SOCKET}" if socket else ""), address):
        example = DEFAULT_WRITE_SERVICE if service == "write service" else DEFAULT_PAGE_SERVICE
        raise CatalogueError(f"{service} address {address!r}: give it as host:port, for example {example}"
                             + (", or as unix:/path/to/socket" if socket else ""))
    return address


def _upstream(address: str) -> str:
    """The page service's address as an upstream block names it (host:port, or unix:<path>)."""
    return check_address(address, "page service", socket=True)


def standalone_config(server_conf: Path, run: Path, user: str | None) -> str:
    return templates().get_template("nginx.conf.j2").render(
        server_conf=server_conf.absolute(), run=run.absolute(), user=user)


def write_configs(site: Path, hosting: Hosting, directory: Path | None = None) -> Path:
    """The server block and a standalone nginx.conf using it, for the site as its published
    build records it to be served, in directory (default: <site>/hosts/nginx/); returns nginx.conf.
    The run directory the standalone file names is made too: nginx (`nginx -t` included)
    opens its pid file, logs and temporary directories there, and fails where it is missing."""
    serving = SiteInfo.of_site(site)
    (site / RUN_DIR / "tmp").mkdir(parents=True, exist_ok=True)
    directory = directory if directory is not None else site / CONFIG_DIR
    directory.mkdir(parents=True, exist_ok=True)
    server = directory / "catalogue.conf"
    replace(server, server_config(site, serving, hosting))
    standalone = directory / "nginx.conf"
    replace(standalone, standalone_config(server, site / RUN_DIR, _worker_user(site)))
    return standalone


def _worker_user(site: Path) -> str | None:
    """Run as root, nginx's workers would become `nobody`, who may not read the site."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwuid(site.stat().st_uid).pw_name


# Where packages put nginx when sbin is not on a normal user's PATH.
NGINX_ELSEWHERE = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/opt/homebrew/bin/nginx")


def installed() -> bool:
    return shutil.which("nginx") is not None or any(os.access(p, os.X_OK) for p in NGINX_ELSEWHERE)


def find_nginx() -> str:
    found = shutil.which("nginx") or next((p for p in NGINX_ELSEWHERE if os.access(p, os.X_OK)), None)
    if found is None:
        raise CatalogueError(INSTALL_HINT)
    return found


def serve(site: Path, local: Local) -> int:
    """Run nginx in the foreground for the built site until Ctrl-C or SIGTERM, and beside it the
    page service it passes the pages no file holds to; nginx's exit status."""
    nginx = find_nginx()
    site = site.absolute()
    serving = SiteInfo.of_site(site)
    run = site / RUN_DIR
    (run / "tmp").mkdir(parents=True, exist_ok=True)
    pages = PageService.beside(run)
    config = write_configs(site, Hosting(f"{local.host}:{local.port}", local.write_service, pages.address), run)
    command = [nginx, "-p", str(run), "-c", str(config), "-e", str(run / "error.log"), "-g", "daemon off;"]
    with pages.running(site):
        print(f"starting nginx for {site} at http://{local.host}:{local.port}{serving.prefix}/{API}/",
              file=sys.stderr, flush=True)
        return foreground(command)  # (SIGTERM: nginx's fast shutdown)


class PageService:
    """The built-in server as nginx's page service, on a Unix socket of the run directory (a
    loopback port where the socket's path would be too long), kept running while nginx runs."""

    SOCKET_PATH_MAX = 100  # bytes (sun_path holds 108 on Linux, 104 on macOS)
    READY_WITHIN = 20.0  # seconds

    def __init__(self, socket: Path | None, port: int | None, held: "socket.socket | None" = None) -> None:
        self.socket, self.port, self._held = socket, port, held

    @classmethod
    def beside(cls, run: Path) -> "PageService":
        path = run / "pages.sock"
        if len(os.fsencode(path)) <= cls.SOCKET_PATH_MAX:
            return cls(path, None)
        held = hold_port()
        return cls(None, held.getsockname()[1], held)

    @property
    def address(self) -> str:
        return f"unix:{self.socket}" if self.socket else f"{LOCAL}:{self.port}"

    @contextlib.contextmanager
    def running(self, site: Path) -> Iterator[None]:
        where = ("--socket", str(self.socket)) if self.socket else ("--port", str(self.port))
        if self.socket:
            self.socket.unlink(missing_ok=True)
        child = Supervised(command("serve", "--server", "builtin", "--site", str(site), "--page-service", *where),
                           "the page service",
                           lambda message: print(message, file=sys.stderr, flush=True)).start()
        try:
            self._wait()
            self.release()
            yield
        finally:
            child.stop()
            self.release()

    def release(self) -> None:
        """Let the held port go: the service listens on it (or is gone)."""
        if self._held is not None:
            self._held.close()
            self._held = None

    def _wait(self) -> None:
        """Until the service takes connections: nginx answers no page before it can."""
        deadline = time.monotonic() + self.READY_WITHIN
        while time.monotonic() < deadline:
            try:
                with (socket.socket(socket.AF_UNIX) if self.socket else socket.socket()) as probe:
                    probe.connect(str(self.socket) if self.socket else (LOCAL, self.port))
                    return
            except OSError:
                time.sleep(0.05)
        raise CatalogueError(f"the page service did not start within {self.READY_WITHIN:g} s")


def hold_port() -> socket.socket:
    """A loopback port, bound (with SO_REUSEADDR, as uvicorn binds, and not listening) until
    the page service listens there: meanwhile the kernel hands it to no one else, which a
    port probed and let go at once would not ensure."""
    probe = socket.socket()
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    probe.bind((LOCAL, 0))
    return probe


def write(site: Path, listen: str, write_service: str, page_service: str) -> Path:
    return write_configs(site, Hosting(listen, write_service, page_service))


# `catalogue build`'s options of the server block (what `serve` runs here names its own).
OPTIONS = (
    Option("listen", DEFAULT_LISTEN, "Address of the server block written to OUT/hosts/nginx/.",
           local=lambda local: f"{local.host}:{local.port}"),
    Option("write_service", DEFAULT_WRITE_SERVICE, "host:port of the write service, where nginx forwards POSTs.",
           check_address, local=lambda local: local.write_service),
    Option("page_service", DEFAULT_PAGE_SERVICE,
           "host:port (or unix:/path) of the page service, where nginx passes the pages no file holds: "
           "`catalogue serve --server builtin` on that address.", _upstream),
)
HOST = Host("nginx", "nginx in front of the files (hosts/nginx/: a server block and a standalone nginx.conf), "
                     "with the built-in server as its page service", write, serve, installed, options=OPTIONS)
