"""Build the site, then write what its hosts need to serve it.

The one place where the pipeline and the hosts meet: the build makes and publishes
a site and knows nothing of hosts; a host reads the published site (what its build
recorded of how it is served) and knows nothing of the pipeline.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .api.serving import DEFAULT_LISTEN, DEFAULT_WRITE_SERVICE
from .sitebuild import Summary
from .sitebuild import build as build_site
from .sitebuild.team import Progress
from .hosts import cloudflare, cloudfront, netlify, nginx, router


@dataclass(frozen=True)
class Hosting:
    """Where the generated nginx configuration listens, and where it forwards writes."""
    listen: str = DEFAULT_LISTEN
    write_service: str = DEFAULT_WRITE_SERVICE


def build(data_dir: Path, out_dir: Path, base_url: str | None = None, progress: Progress | None = None,
          hosting: Hosting = Hosting(), links: str = "api") -> Summary:
    """Build and publish the site, then write what its hosts need into OUT/hosts/: nginx's
    configuration, the JavaScript router, the Cloudflare Worker, the CloudFront function and
    stack, and the Netlify Edge Function."""
    nginx.check_address(hosting.write_service)  # (before anything is published)
    summary = build_site(data_dir, out_dir, base_url, progress, links=links)
    nginx.write_configs(Path(out_dir), hosting.listen, hosting.write_service)
    router.write(Path(out_dir))
    cloudflare.write(Path(out_dir))
    cloudfront.write(Path(out_dir))
    netlify.write(Path(out_dir))
    return summary
