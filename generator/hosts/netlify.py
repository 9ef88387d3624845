"""The Netlify host: an Edge Function that wraps the JavaScript router, and its netlify.toml.

Every build writes, into OUT/hosts/netlify/ (the directory `netlify deploy` runs in):

    netlify.toml                    the publish directory (`public/`, a plain copy of what
                                    the site serves of the published generation, never its
                                    .state/, made by the command it names), the edge
                                    functions directory, and the one function declared on
                                    every path ("/*")
    edge-functions/catalogue.js     the function: router.js (api/routes.py as JavaScript)
                                    and the Netlify wrapper that carries out its answers
    file-key                        the secret that marks the function's own reads of files

`catalogue serve --server netlify` runs that same function in Deno, Netlify's runtime
(netlify.mjs), with the published generation's files standing in for the deploy's.

Netlify's `_redirects` cannot tell `?limit=12&offset=24` from `?offset=24&limit=12` (its
query matching is by named parameters, none of DRF's rules), so every request goes
through the function. It reads a published file the documented way, `fetch()` of the
file's URL on the same site; Netlify runs the edge functions declared on that URL for
such a request too, so the function marks its own reads with a header carrying the key
and steps aside for them (returns undefined: Netlify serves the static file). Any other
request for a file's path is routed like every request and gets the JSON 404.
"""
from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import sys
from pathlib import Path

from ..api.serving import ACCEPTS_GZIP, WRITE_TIMEOUT_VARIABLE, SiteInfo, write_timeout
from ..api.urls import ACCEPTED, API, CURRENT, HOSTS, PUBLISHED
from ..errors import CatalogueError
from ..system import foreground
from .contract import Host, Limits, Local
from .files import made_once, replace, templates
from . import router
from .router import answer_values, javascript, js_regex

NETLIFY = f"{HOSTS}/netlify"  # <site>/hosts/netlify/: the Netlify base directory
FUNCTION = "catalogue"  # edge-functions/catalogue.js, as netlify.toml names it
FUNCTIONS_DIR = "edge-functions"
PUBLISH_DIR = "public"  # filled by fill() from <site>/current (see docs/deploying.md: Netlify)
KEY_FILE = "file-key"
FILE_HEADER = "x-catalogue-file"  # on the function's own reads of files: the key
WRITE_SERVICE = "CATALOGUE_WRITE_SERVICE"  # the environment variable naming the write service's URL
# An Edge Function: its reads are fetch()es of the site's own URLs, of which Netlify documents
# no count; 512 MB of memory; 50 ms of CPU time a request (a fetch's waiting not counted); an
# answer's headers within 40 s.
LIMITS = Limits(objects=math.inf, memory=512 << 20, source="https://docs.netlify.com/edge-functions/limits/")
RUNNER = Path(__file__).with_name("netlify.mjs")
INSTALL_HINT = ("deno is not installed: `catalogue serve --server netlify` runs the Edge Function in it "
                "(install Deno, or `pip install deno` into this Python's environment)")


def write(site: Path) -> Path:
    """The function and netlify.toml for the published site; the directory holding them."""
    info = SiteInfo.of_site(site)
    root = site / NETLIFY
    key = file_key(root / KEY_FILE)
    replace(root / FUNCTIONS_DIR / f"{FUNCTION}.js",
            edge_function(info, key))
    replace(root / "netlify.toml", templates().get_template("netlify.toml.j2").render(
        publish=PUBLISH_DIR, functions=FUNCTIONS_DIR, function=FUNCTION, fill=fill_command()))
    return root


def fill_command(site: str = "SITE") -> str:
    """The command that fills the publish directory (`fill`), for netlify.toml and the docs."""
    return f"python -m generator.hosts.netlify {site}"


def fill(site: Path) -> int:
    """<site>/hosts/netlify/public/ made a plain copy of the directories the site serves (their
    links followed: the shards and pages/default are links), each file hard-linked from the
    published generation (copied across file systems), anything else taken out: a .state/
    an older copy held included, so that `netlify deploy` never uploads the build's state.
    No program but Python is needed. Returns the number of files it holds."""
    source = (site / CURRENT).resolve()
    public = site / NETLIFY / PUBLISH_DIR
    wanted: set[Path] = set()
    for name in PUBLISHED:
        for directory, _dirs, names in os.walk(source / name, followlinks=True):
            here = public / Path(directory).relative_to(source)
            if here.is_symlink() or here.is_file():
                here.unlink()
            here.mkdir(parents=True, exist_ok=True)
            for file in names:
                origin, copy = Path(directory, file).resolve(), here / file
                wanted.add(copy)
                if copy.is_symlink() or not (copy.exists() and os.path.samefile(origin, copy)):
                    copy.unlink(missing_ok=True)
                    try:
                        os.link(origin, copy)
                    except OSError:  # (another file system)
                        shutil.copy2(origin, copy)
    for directory, dirs, names in os.walk(public, topdown=False):
        for name in names:
            if Path(directory, name) not in wanted:
                Path(directory, name).unlink()
        for name in dirs:
            path = Path(directory, name)
            if path.is_symlink():
                path.unlink()
            elif not any(path.iterdir()):
                path.rmdir()
    return len(wanted)


def file_key(path: Path) -> str:
    """The site's key, made once and kept (rebuilds leave the function unchanged); readable by
    its owner only."""
    return made_once(path, lambda: (secrets.token_hex(16) + "\n").encode("ascii")).decode("ascii").strip()


def edge_function(info: SiteInfo, key: str) -> str:
    """The Edge Function (an ES module) for a site served as `info` says."""
    return templates().get_template("netlify.js.j2").render(
        router=javascript(info.prefix), **LIMITS.javascript(), file_header=json.dumps(FILE_HEADER), key=json.dumps(key),
        write_service=json.dumps(WRITE_SERVICE), write_timeout_variable=json.dumps(WRITE_TIMEOUT_VARIABLE),
        accepts_gzip=js_regex(ACCEPTS_GZIP, whole=False)[0],
        **answer_values(info.cache_control))


def find_deno() -> str | None:
    """deno on the PATH, or the one `pip install deno` put beside this Python."""
    beside = Path(sys.executable).parent / "deno"
    return shutil.which("deno") or (str(beside) if beside.is_file() else None)


def installed() -> bool:
    return find_deno() is not None


def serve(site: Path, local: Local) -> int:
    """Run the site's Edge Function in Deno in the foreground until Ctrl-C or SIGTERM, in
    front of the published files; its exit status. POSTs go to the write service."""
    top = site.resolve().parts[1:2]
    if top in (("dev",), ("proc",), ("sys",)):  # (or every answer is a 500)
        raise CatalogueError(f"{site} is under /{top[0]}, where Deno, which runs the Netlify Edge "
                             "Function here, reads nothing without every permission: build the site elsewhere, "
                             "or serve it with another --server")
    deno = find_deno()
    if deno is None:
        raise CatalogueError(INSTALL_HINT)
    if local.socket is not None:
        raise CatalogueError("--socket: only the built-in server listens on a Unix socket")
    site = site.absolute()
    info = SiteInfo.of_site(site)
    function = write(site) / FUNCTIONS_DIR / f"{FUNCTION}.js"  # (a site built before this version has none)
    (site / ACCEPTED).mkdir(exist_ok=True)
    write_service = local.write_service.rsplit(":", 1)[0]
    options = {"site": str(site), "current": CURRENT, "accepted": ACCEPTED, "function": function.as_uri(),
               "host": local.host, "port": local.port, "env": {WRITE_SERVICE: f"http://{local.write_service}",
                                                               WRITE_TIMEOUT_VARIABLE: str(write_timeout())}}
    # Deno may listen here, read the site, and reach this server (the function's reads) and the write service.
    command = [deno, "run", "--quiet", "--no-prompt", "--no-config", f"--allow-read={site}",
               f"--allow-net={local.host}:{local.port},127.0.0.1:{local.port},{write_service}",
               str(RUNNER), json.dumps(options)]
    print(f"starting the Netlify Edge Function in Deno for {site} at "
          f"http://{local.host}:{local.port}{info.prefix}/{API}/", file=sys.stderr, flush=True)
    return foreground(command)


HOST = Host("netlify", "a Netlify Edge Function in front of the files (hosts/netlify/), run here in Deno",
            write, serve, installed, parts=(router.write,))


if __name__ == "__main__":  # python -m generator.hosts.netlify SITE: fill its publish directory
    if len(sys.argv) != 2:
        sys.exit("usage: python -m generator.hosts.netlify SITE")
    print(f"{fill(Path(sys.argv[1])):,} files in {Path(sys.argv[1]) / NETLIFY / PUBLISH_DIR}")
