"""What every host and the write service agree on about serving the site: the
methods each resource allows, the size of a write, the local addresses, and what
a build records of how its site is served.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import orjson

from ..errors import CatalogueError
from .urls import CURRENT, SITE_INFO, Resource

ALLOW_READ = "GET, HEAD, OPTIONS"
ALLOW_WRITE = "GET, POST, HEAD, OPTIONS"
MAX_BODY = 64 * 1024  # bytes of a write's body, in every host and in the write service
LOCAL = "127.0.0.1"  # where `catalogue serve` and the write service listen by default
PORT = 8000  # of the site
WRITE_PORT = 8001  # of the write service
PAGE_PORT = 8002  # of the page service, which puts together the pages no file holds (nginx's)
DEFAULT_LISTEN = f"{LOCAL}:{PORT}"
DEFAULT_WRITE_SERVICE = f"{LOCAL}:{WRITE_PORT}"
DEFAULT_PAGE_SERVICE = f"{LOCAL}:{PAGE_PORT}"
# Answers of this many bytes or more have a gzip twin (build) and `Vary: Accept-Encoding`
# (every host). Measured: a 1.5 KB book costs ~70 us to gzip (zlib's set-up) and shrinks
# by under half, so smaller answers are served as they are.
GZIP_MIN = 4096
# An Accept-Encoding that takes gzip: named, with no q or a q above 0 (group q), the way every
# host that serves the twins reads it.
ACCEPTS_GZIP = r"(?:^|,)\s*gzip\s*(?:;\s*q\s*=\s*(?P<q>[0-9.]+))?\s*(?:,|$)"
# The request headers a write takes from a host to the write service (Content-Length is set anew).
FORWARDED = ("authorization", "content-type", "accept", "user-agent")
# Seconds a host waits for the write service's answer to a write before it answers 503: a
# service that took the connection and never answers must not hold the client for ever. The
# environment variable sets another for the servers `catalogue serve` runs (the Worker's
# binding of the same name, the Edge Function's variable; nginx's proxy_read_timeout).
WRITE_TIMEOUT = 60
WRITE_TIMEOUT_VARIABLE = "CATALOGUE_WRITE_TIMEOUT"


def write_timeout() -> float:
    """The seconds a host waits for the write service here (WRITE_TIMEOUT unless set)."""
    value = os.environ.get(WRITE_TIMEOUT_VARIABLE, "")
    try:
        seconds = float(value) if value else WRITE_TIMEOUT
    except ValueError:
        seconds = 0
    if not seconds > 0:
        raise CatalogueError(f"{WRITE_TIMEOUT_VARIABLE}={value!r}: give the seconds to wait for the write "
                             f"service, a number above 0 (unset: {WRITE_TIMEOUT})")
    return seconds


JSON_TYPE = "application/json"
HTML_TYPE = "text/html; charset=utf-8"  # the HTML view's, as DRF's browsable API sends it


def content_type(file: str) -> str:
    """The Content-Type of a published file: JSON, but for the HTML view."""
    return HTML_TYPE if file.endswith(".html") else JSON_TYPE


def headers(cache_control: str) -> dict[str, str]:
    """The headers every answer of the site carries, errors included (docs/spec/http.md), besides
    Content-Type and Allow: every host sends exactly these. One Vary for all: the answer
    depends on Accept (JSON or the HTML view) and, where a gzip twin or a CDN compresses
    it, on Accept-Encoding; saying so of every answer costs a cache nothing."""
    return {"Vary": "Accept, Accept-Encoding", "Access-Control-Allow-Origin": "*", "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin", "Cache-Control": cache_control}


def allow(resource: Resource) -> str:
    """The Allow header of a resource's list."""
    return ALLOW_WRITE if resource.writable else ALLOW_READ


@dataclass(frozen=True)
class SiteInfo:
    """How the site is served; what the build records of it in each generation."""
    base_url: str
    cache_control: str
    page_size: int = 12  # the default page size (DRF's PAGE_SIZE)
    max_limit: int | None = None  # DRF's max_limit: None, no clamp
    query: dict = field(default_factory=dict)  # search, ordering, filters (catalogue/querying.py)
    page_sizes: tuple[int, ...] = ()  # the sizes of the pages the build wrote (the default's among them)

    @property
    def prefix(self) -> str:
        """The base_url's path: where the API's paths start ("" for none)."""
        return urlsplit(self.base_url).path

    def encode(self) -> bytes:
        return orjson.dumps({"base_url": self.base_url, "cache_control": self.cache_control,
                             "page_size": self.page_size, "max_limit": self.max_limit, "query": self.query,
                             "page_sizes": self.page_sizes})

    @classmethod
    def of_site(cls, site: Path) -> "SiteInfo":
        """What the published build of a site directory recorded."""
        if not (site / CURRENT / SITE_INFO).is_file():
            raise CatalogueError(f"there is no built site in {site}: run `catalogue build` (make build) first")
        return cls.of_generation(site / CURRENT)

    @classmethod
    def of_generation(cls, root: Path) -> "SiteInfo":
        recorded = orjson.loads((root / SITE_INFO).read_bytes())
        return cls(**recorded | {"page_sizes": tuple(recorded.get("page_sizes", ()))})
