"""The site's settings: site.yaml checked against docs/spec/data.md, with the defaults it names.

Each problem names the line of the setting it is about: the checks name the setting
("search.books"), and the line of its key in the file is filled in once they are done.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import Problems, meant
from .fields import FieldError, is_http_url, is_uri, shown, url_parts, whole
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


@dataclass(frozen=True)
class SiteFile:
    """site.yaml as read: its name in reports, its settings, and the line of each key, nested
    ones named by their path ("search.books": the line of `books:` under `search:`)."""
    name: str
    raw: dict[str, Any]
    lines: dict[str, int]

    def line(self, setting: str) -> int:
        """The line of a setting's key, or of the nearest key above it; 0 when it is not in the file."""
        while setting not in self.lines and "." in setting:
            setting = setting.rpartition(".")[0]
        return self.lines.get(setting, 0)

    def locate(self, problems: Problems, since: int, besides: tuple[str, ...] = ()) -> None:
        """Give each problem of the file's settings found since the first `since` the line of
        its setting's key (those of the settings `besides` came from elsewhere)."""
        for n, problem in enumerate(problems.items[since:], since):
            if problem.file == self.name and not problem.line and problem.field not in besides:
                problems.items[n] = replace(problem, line=self.line(problem.field))


def settings(site: SiteFile, problems: Problems, base_url: str | None = None,
             links: str = "api") -> Settings | None:
    """The settings, or None with every problem of them reported, each at its key's line."""
    before = len(problems)
    found = _checked(site.name, site.raw, problems, base_url, links)
    site.locate(problems, before, besides=("base_url",) if base_url is not None else ())
    return found if len(problems) == before else None


def _checked(name: str, raw: dict, problems: Problems, base_url: str | None, links: str) -> Settings | None:
    for key in sorted(set(raw) - SITE_KEYS, key=str):
        problems.add(name, 0, str(key), f"is not a setting{meant(str(key), sorted(SITE_KEYS), 'known settings')}")
    url = base_url if base_url is not None else raw.get("base_url")
    if url is None:
        problems.add(name, 0, "base_url", "is missing: set it to the site's address, like https://ketab.example.ir")
    elif not isinstance(url, str) or not is_http_url(url) or (parts := url_parts(url)) is None or parts.query \
            or parts.fragment:
        problems.add(name, 0, "base_url", f"{shown(url)} is not an absolute http(s) URL")
    elif not is_uri(url):
        problems.add(name, 0, "base_url", f"{shown(url)} is not a valid URL: write a non-ASCII host in its "
                                          "xn-- form, and spaces, quotes or non-ASCII letters of the path "
                                          "percent-escaped (%20, %22, %D8%AA...)")
    elif url.endswith("/"):
        problems.add(name, 0, "base_url", f"{url!r} must not end with '/': write {url.rstrip('/')!r}")
    given = raw.get("page_sizes", [12])
    sizes = [_positive(s) for s in given] if isinstance(given, list) else []
    if not sizes or None in sizes:
        problems.add(name, 0, "page_sizes", f"{shown(given)} must be a list of positive whole numbers, like [12, 24]")
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
    return Settings(url, tuple(sizes), str(zone), cache, links, max_limit, query)


def _max_limit(name: str, raw: dict, sizes, problems: Problems) -> int | None:
    """max_limit, checked against the page sizes: a pre-built page larger than it could
    never be asked for (DRF would clamp the request)."""
    given = raw.get("max_limit")
    if given is None:
        return None
    value = _positive(given)
    if value is None:
        problems.add(name, 0, "max_limit", f"{shown(given)} must be a positive whole number, like 100")
        return None
    larger = [s for s in sizes if s is not None and s > value]
    if larger:
        problems.add(name, 0, "max_limit", f"{value} is smaller than the page size {larger[0]}: no request could "
                                           f"ask for that page; raise max_limit or drop the page size")
    return value


def _positive(value: Any) -> int | None:
    """A positive whole number, read as the data files' numbers are (in any script's digits:
    `[۱۲, ۲۴]`); None when the value is not one."""
    try:
        number = whole(value)
    except FieldError:
        return None
    return number if number > 0 else None
