"""Build the site, then write what its hosts need to serve it.

The one place where the pipeline and the hosts meet: the build makes and publishes
a site and knows nothing of hosts; a host reads the published site (what its build
recorded of how it is served) and knows nothing of the pipeline.
"""
from __future__ import annotations

from pathlib import Path

from .api.serving import Hosting
from .sitebuild import Summary
from .sitebuild import build as build_site
from .sitebuild.team import Progress
from .hosts import nginx
from .hosts.registry import HOSTS


def build(data_dir: Path, out_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          hosting: Hosting = Hosting(), links: str = "api") -> Summary:
    """Build and publish the site, then write what each host of hosts/registry.py needs into
    OUT/hosts/<host>/."""
    nginx.check_hosting(hosting)  # (before anything is published)
    summary = build_site(data_dir, out_dir, base_url, progress, links=links)
    for host in HOSTS:
        if host.write is not None:
            host.write(Path(out_dir), hosting)
    return summary
