"""Read a live catalogue API to its end, politely: every page of every collection.

`Crawl` reads the API root, then each collection in pages of the largest size the
service answers (DRF's LimitOffsetPagination answers any `limit`; a static catalogue
only its pre-built sizes, which its 400 names), `concurrency` requests at a time. A
request that times out, loses its connection or gets a 5xx is tried again after a
growing pause; a 429 waits as long as its Retry-After says. Every page is kept in the
state directory as it arrives, so an interrupted crawl resumes where it stopped
(`--resume`), and nothing but the state directory is written while crawling.
"""
from __future__ import annotations

import email.utils
import http.client
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from ..api import meta
from ..api.urls import API, RESOURCES
from ..errors import CatalogueError

PROBE_LIMIT = 1000  # records asked for per page: DRF caps it at its max_limit, if it has one
MAX_LIMIT_PROBE = 10 ** 9  # a limit no max_limit is as large as (asked for past the end: no records)
TIMEOUT = 30  # seconds a request may take
MAX_WAIT = 60  # seconds: the longest pause between two tries, Retry-After included


class ImportError_(CatalogueError):  # (ImportError is Python's own)
    """The service cannot be read as a catalogue API."""


@dataclass(frozen=True)
class Settings:
    """How to crawl: the API root's URL, and how hard to press the service."""
    root: str  # http(s)://host/api/v1/ (with its slash)
    concurrency: int = 4
    token: str | None = None
    attempts: int = 6  # tries of one request before giving up
    backoff: float = 0.5  # seconds before the second try; doubled each time


@dataclass
class Collection:
    """What a collection's first page said, and the pages the crawl reads."""
    name: str
    count: int
    default_limit: int | None  # the `limit` of the first page's next link (None: one page)
    limit: int | None  # the page size the crawl reads with (None: the first page holds them all)

    def offsets(self) -> range:
        return range(0, self.count, self.limit) if self.limit else range(1)


class Client:
    """GETs of JSON with retries; one kept-alive connection per thread."""

    def __init__(self, settings: Settings, log=None) -> None:
        self.settings = settings
        self.origin = urlsplit(settings.root)
        self.local = threading.local()
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))

    def get(self, target: str) -> tuple[int, dict, bytes]:
        """Status, headers (lower-case names) and body of GET target (a path and query),
        after the tries that timeouts, dropped connections, 5xx and 429 call for."""
        url = self.url(target)
        for attempt in range(1, self.settings.attempts + 1):
            wait = self.settings.backoff * 2 ** (attempt - 1)
            try:
                status, headers, body = self._once(target)
            except (OSError, http.client.HTTPException) as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self._drop()
            else:
                if status == 429:
                    problem, wait = "429 Too Many Requests", _retry_after(headers.get("retry-after"), wait)
                elif status >= 500:
                    problem = f"status {status}"
                else:
                    return status, headers, body
            if attempt == self.settings.attempts:
                raise ImportError_(f"{url}: {problem}, {attempt} times: giving up (the service may be down; "
                                   "run again with --resume to go on from here)")
            self.log(f"{url}: {problem}; trying again in {min(wait, MAX_WAIT):.1f} s")
            time.sleep(min(wait, MAX_WAIT))
        raise AssertionError("unreachable")

    def get_json(self, target: str):
        """The JSON document at target; an error naming the URL for anything else."""
        status, headers, body = self.get(target)
        url = self.url(target)
        if status != 200:
            raise ImportError_(f"{url}: status {status}{_detail(body)}")
        try:
            return json.loads(body)
        except ValueError:
            kind = headers.get("content-type", "no Content-Type")
            raise ImportError_(f"{url}: the answer is not JSON ({kind}): {body[:80]!r}") from None

    def url(self, target: str) -> str:
        return f"{self.origin.scheme}://{self.origin.netloc}{target}"

    def _once(self, target: str) -> tuple[int, dict, bytes]:
        connection = getattr(self.local, "connection", None)
        if connection is None:
            kind = http.client.HTTPSConnection if self.origin.scheme == "https" else http.client.HTTPConnection
            connection = self.local.connection = kind(self.origin.netloc, timeout=TIMEOUT)
        headers = {"Accept": "application/json", "User-Agent": "catalogue-import"}
        if self.settings.token:
            headers["Authorization"] = f"Token {self.settings.token}"
        connection.request("GET", target, headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.will_close:
            self._drop()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body

    def _drop(self) -> None:
        connection = getattr(self.local, "connection", None)
        if connection is not None:
            connection.close()
            self.local.connection = None


def _retry_after(value: str | None, otherwise: float) -> float:
    """Seconds to wait, from Retry-After's seconds or HTTP date."""
    if value is None:
        return otherwise
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return otherwise


def _json(body: bytes):
    try:
        return json.loads(body)
    except ValueError:
        return None


def _is_page(document) -> bool:
    """Whether a document is a page of DRF's LimitOffsetPagination."""
    return (isinstance(document, dict) and isinstance(document.get("count"), int)
            and isinstance(document.get("results"), list) and "next" in document and "previous" in document)


def _detail(body: bytes) -> str:
    try:
        return f": {json.loads(body)['detail']}"
    except (ValueError, KeyError, TypeError):
        return ""


class Crawl:
    """The pages of every collection, read once and kept in the state directory."""

    def __init__(self, settings: Settings, state: Path, progress: "Progress") -> None:
        self.settings = settings
        self.client = Client(settings, progress.say)
        self.state = state
        self.progress = progress
        self.path = urlsplit(settings.root).path

    def root(self) -> dict[str, str]:
        """The API root: a link per collection, as DRF's router lists them."""
        document = self._kept("root", self.path)
        names = [r.name for r in RESOURCES]
        if not isinstance(document, dict) or set(document) != set(names) or not all(
                isinstance(document[n], str) and document[n].endswith(f"/{API}/{n}/") for n in names):
            raise ImportError_(f"{self.client.url(self.path)}: not the root of a catalogue API: it should be a "
                               f"JSON object linking {', '.join(names)} at .../{API}/<name>/ (give the URL "
                               f"ending in /{API}/)")
        return document

    def collection(self, name: str, sizes: list[int] | None) -> Collection:
        """The collection's first page, and the page size to read it with."""
        first = self._page(name, None, 0)
        next_link = first["next"]
        if next_link is None:
            return Collection(name, first["count"], None, None)
        default = limit = int(parse_qs(urlsplit(next_link).query)["limit"][0])
        if first["count"] > limit:  # more than one page: the largest the service will give
            status, _, body = self.client.get(self._target(name, PROBE_LIMIT, 0))
            probed = _json(body) if status == 200 else None
            if _is_page(probed):
                limit = len(probed["results"]) if probed["next"] else PROBE_LIMIT
            elif sizes:
                limit = max(sizes)
        return Collection(name, first["count"], default, limit)

    def max_limit(self, name: str, count: int) -> int | None:
        """DRF's max_limit, read off the previous link of a page past the end asked for with a
        huge limit (one record at most comes back): the limit it carries is the clamped one.
        None: the service clamps nothing."""
        page = self._page(name, MAX_LIMIT_PROBE, max(count, 1))
        limit = parse_qs(urlsplit(page["previous"] or "").query).get("limit", [""])[-1]
        return int(limit) if limit.isdigit() and int(limit) < MAX_LIMIT_PROBE else None

    def page_sizes(self, name: str) -> list[int] | None:
        """The pre-built page sizes of a static catalogue, which its 400 lists; None for a
        service that answers any page (DRF)."""
        status, _, body = self.client.get(self._target(name, PROBE_LIMIT + 1, 1))
        if status != 400:
            return None
        document = _json(body)
        return meta.page_sizes_of(document["detail"]) if isinstance(document, dict) and isinstance(
            document.get("detail"), str) else None

    def pages(self, collection: Collection) -> list[dict]:
        """Every page of the collection in order, `concurrency` requests at a time."""
        offsets = collection.offsets()
        done = [0]
        lock = threading.Lock()
        self.progress.start(collection.name, collection.count)

        def read(offset: int) -> dict:
            page = self._page(collection.name, collection.limit, offset)
            with lock:
                done[0] += len(page["results"])
                self.progress.advance(collection.name, done[0])
            return page

        with ThreadPoolExecutor(self.settings.concurrency) as pool:
            pages = list(pool.map(read, offsets))
        self.progress.finish(collection.name)
        return pages

    def _page(self, name: str, limit: int | None, offset: int) -> dict:
        page = self._kept(f"{name}-{limit or 'first'}-{offset}", self._target(name, limit, offset))
        if not _is_page(page):
            raise ImportError_(f"{self.client.url(self._target(name, limit, offset))}: not a page of DRF's "
                               "LimitOffsetPagination ({count, next, previous, results})")
        return page

    def _target(self, name: str, limit: int | None, offset: int) -> str:
        query = urlencode({"limit": limit, "offset": offset}) if limit else ""
        return f"{self.path}{name}/" + (f"?{query}" if query else "")

    def _kept(self, key: str, target: str):
        """The document at target, from the state directory when an earlier run kept it."""
        kept = self.state / f"{key}.json"
        if kept.is_file():
            return json.loads(kept.read_bytes())
        document = self.client.get_json(target)
        temporary = kept.with_suffix(".new")
        temporary.write_bytes(json.dumps(document, ensure_ascii=False).encode("utf-8"))
        temporary.replace(kept)
        return document


class Progress:
    """A line per collection on standard error: counts as pages arrive."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.totals: dict[str, int] = {}
        self.shown = 0.0

    def say(self, message: str) -> None:
        print(("\n" if self.tty else "") + message, file=self.stream, flush=True)

    def start(self, name: str, total: int) -> None:
        self.totals[name] = total
        self.advance(name, 0)

    def advance(self, name: str, done: int) -> None:
        now = time.monotonic()
        if self.tty and (now - self.shown > 0.1 or done == self.totals[name]):
            total = self.totals[name]
            width = 30
            filled = width * done // total if total else width
            print(f"\r{name:>10} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}", end="",
                  file=self.stream, flush=True)
            self.shown = now

    def finish(self, name: str) -> None:
        total = self.totals[name]
        line = f"{name:>10}: {total:,} records read"
        print(f"\r{line:<60}" if self.tty else line, file=self.stream, flush=True)

