"""The site's settings: site.yaml checked against docs/spec/data.md, with the defaults it names."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import Problems
from .fields import is_http_url, is_uri, shown
from .querying import query_settings

DEFAULT_TIME_ZONE = "Asia/Tehran"  # docs/spec/data.md: when site.yaml names none

@dataclass(frozen=True)
class Settings:
    base_url: str
    page_sizes: tuple[int, ...]
    time_zone: str
    cache_control: str = "no-cache"
    # "api": links are the API's URLs, as DRF wrote them; "paths": each link is the URL of
    # the file itself (for hosts that serve files and nothing else). A build option.
    links: str = "api"
    # The largest page a request may ask for (DRF's max_limit; docs/spec/query.md §1): a larger limit
    # is clamped to it. None: no clamp, as DRF's default.
    max_limit: int | None = None
    # search, ordering, filters and search_normalise (docs/spec/query.md §2), as a plain document:
    # what each collection's `?search=`, `?ordering=` and filters by related id take.
    query: dict = field(default_factory=dict)

    @property
    def default_page_size(self) -> int:
        return self.page_sizes[0]

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


QUERY_KEYS = ("search", "ordering", "filters")  # per collection, each a list (docs/spec/query.md §2)
NORMALISE = ("persian",)  # the values of search_normalise
SITE_KEYS = {"base_url", "page_sizes", "time_zone", "cache_control", "max_limit", *QUERY_KEYS, "search_normalise"}


LINKS = ("api", "paths")


def settings(name: str, raw: dict, problems: Problems, base_url: str | None = None,
             links: str = "api") -> Settings | None:
    before = len(problems)
    for key in set(raw) - SITE_KEYS:
        problems.add(name, 0, key, f"is not a setting; known settings: {', '.join(sorted(SITE_KEYS))}")
    url = base_url if base_url is not None else raw.get("base_url")
    if url is None:
        problems.add(name, 0, "base_url", "is missing: set it to the site's address, like https://ketab.example.ir")
    elif not isinstance(url, str) or not is_http_url(url) or urlsplit(url).query or urlsplit(url).fragment:
        problems.add(name, 0, "base_url", f"{shown(url)} is not an absolute http(s) URL")
    elif not is_uri(url):
        problems.add(name, 0, "base_url", f"{shown(url)} is not a valid URL: write a non-ASCII host in its "
                                          "xn-- form, and spaces, quotes or non-ASCII letters of the path "
                                          "percent-escaped (%20, %22, %D8%AA...)")
    elif url.endswith("/"):
        problems.add(name, 0, "base_url", f"{url!r} must not end with '/': write {url.rstrip('/')!r}")
    sizes = raw.get("page_sizes", [12])
    if (not isinstance(sizes, list) or not sizes
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes)):
        problems.add(name, 0, "page_sizes", f"{shown(sizes)} must be a list of positive whole numbers")
    elif len(set(sizes)) != len(sizes):
        problems.add(name, 0, "page_sizes", f"{sizes} lists a page size twice")
    max_limit = _max_limit(name, raw, sizes, problems)
    zone = raw.get("time_zone", DEFAULT_TIME_ZONE)
    try:
        ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError):
        problems.add(name, 0, "time_zone", f"{shown(zone)} is not an IANA time zone like 'Asia/Tehran'")
    cache = raw.get("cache_control", Settings.cache_control)
    if not isinstance(cache, str) or not re.fullmatch(r"[!#%&*+,\-./0-9=A-Z^_`a-z|~ ]+", cache):
        problems.add(name, 0, "cache_control", f"{shown(cache)} is not a Cache-Control value like 'public, max-age=60'")
    query = query_settings(name, raw, problems)
    if len(problems) > before:
        return None
    return Settings(url, tuple(sizes), str(zone), cache, links, max_limit, query)


def _max_limit(name: str, raw: dict, sizes, problems: Problems) -> int | None:
    """max_limit, checked against the page sizes: a pre-built page larger than it could
    never be asked for (DRF would clamp the request)."""
    value = raw.get("max_limit")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        problems.add(name, 0, "max_limit", f"{shown(value)} must be a positive whole number, like 100")
        return None
    larger = [s for s in sizes if isinstance(s, int) and s > value] if isinstance(sizes, list) else []
    if larger:
        problems.add(name, 0, "max_limit", f"{value} is smaller than the page size {larger[0]}: no request could "
                                           f"ask for that page; raise max_limit or drop the page size")
    return value
