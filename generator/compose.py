"""Build the site, then write what its hosts need to serve it.

The one place where the pipeline and the hosts meet: the build makes and publishes
a site and knows nothing of hosts; a host reads the published site (what its build
recorded of how it is served) and knows nothing of the pipeline.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from .sitebuild import Summary
from .sitebuild import build as build_site
from .sitebuild.team import Progress
from .hosts import registry


def build(data_dir: Path, out_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          host_options: Mapping[str, str] = MappingProxyType({}), links: str = "api",
          announce: Callable[[str, str], None] | None = None) -> Summary:
    """Build and publish the site, then write what each host of hosts/registry.py needs into
    OUT/hosts/<host>/, with the options the hosts declare (`host_options`, by name; the
    others their defaults). `announce`: the pipeline's (the few details written, at once)."""
    options = registry.checked(host_options)  # (before anything is published)
    summary = build_site(data_dir, out_dir, base_url, progress, links=links, announce=announce)
    registry.write(Path(out_dir), options)
    return summary
