"""Cloudflare: a Worker in front of the published files, and workerd to run it here.

Every build writes <site>/hosts/cloudflare/: `worker.js` (the route table's router with the
Worker's file access around it), `wrangler.toml` (the published generation as the Worker's
static assets), `assets/` (the directory wrangler uploads: a link to each directory the
site serves of the published generation, so never the build's `.state/`) and
`wrangler-r2.toml` (the same Worker over an R2 bucket that `catalogue deploy` filled, for
sites past the assets' file limit). `catalogue serve --server cloudflare` runs that same
worker.js in workerd, from the `miniflare` npm package (the checkout's `make node_modules`,
else installed into the user's cache on first use: npm.py), over that same assets/
directory (workerd.mjs).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from email.utils import formatdate
from pathlib import Path
from urllib.parse import urlsplit

from ..api.serving import SiteInfo, write_timeout
from ..api.urls import ACCEPTED, API, CURRENT, HOSTS
from ..errors import CatalogueError
from ..system import foreground
from . import npm, router
from .contract import Host, Limits, Local
from .files import link_published, replace, templates

CONFIG_DIR = f"{HOSTS}/cloudflare"
ASSETS_DIR = "assets"  # <site>/hosts/cloudflare/assets/: the static assets wrangler uploads
COMPATIBILITY_DATE = "2025-09-01"
ASSET_LIMIT = "20,000 files (100,000 on a paid plan)"
BUCKET = "catalogue"  # the R2 bucket wrangler-r2.toml names until you change it
RUNNER = Path(__file__).with_name("workerd.mjs")
WORKERD = "miniflare"  # the npm package that carries workerd
INSTALL_HINT = "workerd runs in Node.js: install Node.js and npm (npm installs workerd on first use)"

# A Worker's invocation (the free plan's figures; a paid plan's are larger): 50 subrequests
# by fetch() to the internet, but 1,000 operations on Cloudflare's own services, which an R2
# binding's get() and a static asset's fetch() are (the Worker reads nothing else); 128 MB of
# memory; 10 ms of CPU time (what the read plan's few small files are for).
LIMITS = Limits(objects=1000, memory=128 << 20, source="https://developers.cloudflare.com/workers/platform/limits/")

def write(site: Path) -> Path:
    """The Worker and its wrangler configurations for the published site; returns worker.js."""
    directory = site / CONFIG_DIR
    replace(directory / "worker.js", worker(SiteInfo.of_site(site)))
    link_published(directory / ASSETS_DIR, site)
    published = formatdate(os.lstat(site / CURRENT).st_mtime, usegmt=True)  # (each publication swaps the link)
    settings = {"compatibility_date": COMPATIBILITY_DATE, "published": published, "asset_limit": ASSET_LIMIT,
                "bucket": BUCKET, "config_dir": f"<site>/{CONFIG_DIR}", "assets": ASSETS_DIR}
    for name in ("wrangler.toml", "wrangler-r2.toml"):
        replace(directory / name, templates().get_template(f"{name}.j2").render(settings))
    return directory / "worker.js"


def worker(info: SiteInfo) -> str:
    """The Worker module for a site served as `info` says."""
    return templates().get_template("worker.js.j2").render(
        router=router.javascript(info.prefix), **LIMITS.javascript(), **router.answer_values(info.cache_control))


def installed() -> bool:
    return shutil.which("node") is not None and npm.find(WORKERD) is not None


def serve(site: Path, local: Local) -> int:
    """Run the site's Worker in workerd in the foreground until Ctrl-C or SIGTERM; its exit status."""
    node = shutil.which("node")
    if node is None:
        raise CatalogueError(INSTALL_HINT)
    packages = npm.ensure(WORKERD, lambda line: print(line, file=sys.stderr, flush=True))
    site = site.absolute()
    serving = SiteInfo.of_site(site)
    host, port, write_service = local.host, local.port, local.write_service
    write(site)  # (a site built before this version has no Worker yet)
    (site / ACCEPTED).mkdir(exist_ok=True)  # (workerd's disk service wants it there from the start)
    options = {"packages": str(packages), "site": str(site), "worker": str(site / CONFIG_DIR / "worker.js"),
               "assets": f"{CONFIG_DIR}/{ASSETS_DIR}", "accepted": ACCEPTED,
               "host": host, "port": port, "writeService": f"http://{write_service}",
               "writeTimeout": str(write_timeout()),
               "compatibilityDate": COMPATIBILITY_DATE}
    print(f"starting the Cloudflare Worker in workerd for {site} at "
          f"http://{host}:{port}{urlsplit(serving.base_url).path}/{API}/", file=sys.stderr, flush=True)
    # miniflare's scratch folder, which its dispose() deletes without waiting (so a stopped
    # server left one behind each time): one of ours, deleted once workerd has gone.
    with tempfile.TemporaryDirectory(prefix="catalogue-workerd-") as scratch:
        return foreground([node, str(RUNNER), json.dumps(options)], env={**os.environ, "TMPDIR": scratch})


HOST = Host("cloudflare", "a Cloudflare Worker in front of static assets or R2 (hosts/cloudflare/), run here in workerd",
            write, serve, installed, parts=(router.write,))
