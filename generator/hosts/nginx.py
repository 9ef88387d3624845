"""The nginx configuration of a built site, and nginx run in the foreground with it.

The server block maps DRF-style URLs onto the files that api/urls.py names, with
nginx's own maps and try_files; no program of ours runs per request. It is
rendered from templates/ by jinja2; everything it says about the data (the
default page size, the 400 body) lives in the published generation instead.
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

from ..api import meta, routes
from ..api.serving import DEFAULT_WRITE_SERVICE, LOCAL, MAX_BODY, SiteInfo, headers
from ..api.urls import (ACCEPTED, API, BUCKET_DIGITS, CURRENT, HOSTS, META, OPENAPI_FILE, PAGE_BUCKET,
                        PAGE_NOT_BUILT, RESOURCES, VIEWER, detail_file, page_file, root_path)
from ..errors import CatalogueError
from ..system import foreground
from .files import replace, templates

CONFIG_DIR = f"{HOSTS}/nginx"  # <site>/hosts/nginx/: what the build writes for deployment
RUN_DIR = ".run"  # <site>/.run/: what `catalogue serve` writes: config, pid, logs, temp files
SAFE_PATH = re.compile(r"[A-Za-z0-9._~/-]*")
INSTALL_HINT = ("nginx is not installed (or not on PATH): install it with the system's package manager, "
                "for example `apt-get install nginx-light` on Debian or Ubuntu, `dnf install nginx` on "
                "Fedora, or `brew install nginx` on macOS")

def quoted(body: bytes, variables: tuple[str, ...] = ()) -> str:
    """A body as the inside of an nginx single-quoted string; nginx has no escape for `$`."""
    text = body.decode("utf-8").replace("\\", "\\\\").replace("'", "\\'")
    for name in variables:
        text = text.replace(f"@{name}@", f"${name}")
    if "$" in text.replace("$request_method", ""):
        raise CatalogueError(f"cannot write {text!r} into the nginx configuration: it contains '$'")
    return text


def server_config(site: Path, serving: SiteInfo, listen: str, write_service: str = DEFAULT_WRITE_SERVICE) -> str:
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
        "page_file": page_file(r.name, "$catalogue_limit", "$catalogue_bucket", "$catalogue_offset"),
        "list_path_file": page_file(r.name, "", "", "").split("/pages/")[0] + "/",
        "detail_file": detail_file(r.name, "$catalogue_shard", "$catalogue_shard$catalogue_rest"),
    } for r in RESOURCES]
    query = {
        "last_limit": routes.last("limit"), "last_offset": routes.last("offset"),
        "escaped_name": routes.ESCAPED_NAME, "limit": routes.LIMIT, "offset": routes.OFFSET,
        "canonical": routes.CANONICAL.replace("(?P<", "(?<"),
        "canonical_page": page_file("", "$cl", "0", "$co").split("//", 1)[1],
        "plain": routes.PLAIN, "bucket": routes.BUCKET, "invalid": routes.INVALID,
        "default_limit": routes.LIMIT_SPELLING.otherwise, "default_offset": routes.OFFSET_SPELLING.otherwise,
    }
    return templates.get_template("server.conf.j2").render(
        base_url=serving.base_url, listen=listen, server_name=parts.hostname, root=root,
        prefix=prefix, prefix_re=re.escape(prefix), resources=resources, q=query,
        api_root=table["root", None], root_file=root_path(), redirect=routes.REDIRECT,
        schema=table["schema", None], schema_file=OPENAPI_FILE, options_schema=quoted(meta.options_schema()),
        uri_safe="A-Za-z0-9" + re.escape(routes.URI_SAFE), accept=routes.ACCEPT, viewer=f"/{VIEWER}",
        accepted=site.absolute() / ACCEPTED,
        allow_routes=[route for route in routes.ROUTES if route.kind in ("root", "schema", "list", "other")],
        bucket_size=PAGE_BUCKET, bucket_digits=BUCKET_DIGITS, meta=META, page_not_built=f"/{PAGE_NOT_BUILT}",
        headers=headers(serving.cache_control), write_service=check_address(write_service), max_body=MAX_BODY,
        options_root=quoted(meta.options_root()), method_not_allowed=method,
        not_found=quoted(meta.NOT_FOUND), write_unavailable=quoted(meta.WRITE_UNAVAILABLE),
        too_large=quoted(meta.TOO_LARGE),
        uri_too_long=quoted(meta.detail("Request URI is too long.")),
        server_error=quoted(meta.SERVER_ERROR),
    )


def check_address(address: str) -> str:
    """The write service's host:port, checked so that nothing else reaches the configuration."""
    if not re.fullmatch(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}", address):
        raise CatalogueError(f"write service address {address!r}: give it as host:port, "
                             f"for example {DEFAULT_WRITE_SERVICE}")
    return address


def standalone_config(server_conf: Path, run: Path, user: str | None) -> str:
    return templates.get_template("nginx.conf.j2").render(
        server_conf=server_conf.absolute(), run=run.absolute(), user=user)


def write_configs(site: Path, listen: str, write_service: str = DEFAULT_WRITE_SERVICE,
                  directory: Path | None = None) -> Path:
    """The server block and a standalone nginx.conf using it, for the site as its published
    build records it to be served, in directory (default: <site>/hosts/nginx/); returns nginx.conf."""
    serving = SiteInfo.of_site(site)
    directory = directory if directory is not None else site / CONFIG_DIR
    directory.mkdir(parents=True, exist_ok=True)
    server = directory / "catalogue.conf"
    replace(server, server_config(site, serving, listen, write_service))
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


def serve(site: Path, port: int, host: str = LOCAL, write_service: str = DEFAULT_WRITE_SERVICE) -> int:
    """Run nginx in the foreground for the built site until Ctrl-C or SIGTERM; its exit status."""
    nginx = find_nginx()
    site = site.absolute()
    serving = SiteInfo.of_site(site)
    run = site / RUN_DIR
    (run / "tmp").mkdir(parents=True, exist_ok=True)
    config = write_configs(site, f"{host}:{port}", write_service, run)
    command = [nginx, "-p", str(run), "-c", str(config), "-e", str(run / "error.log"), "-g", "daemon off;"]
    print(f"serving {site} with nginx at http://{host}:{port}{urlsplit(serving.base_url).path}/{API}/ "
          "(Ctrl-C stops)", file=sys.stderr, flush=True)
    return foreground(command)  # (SIGTERM: nginx's fast shutdown)
