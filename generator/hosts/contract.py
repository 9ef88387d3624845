"""What a host is, for the registry (registry.py) that the CLI, compose and the tests
loop over: a name, what it writes into a built site (`<site>/hosts/<name>/`), and
optionally how it serves a site here, whether its runtime is installed, the parts it
shares with other hosts (the JavaScript router), and the options of `catalogue build`
it reads, each with its check, as Sphinx's builders or Datasette's publish hooks each
declare theirs.

The end of this module is `catalogue serve`'s word that it is ready, said once every
part of it answers.
"""
from __future__ import annotations

import http.client
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..api.serving import DEFAULT_WRITE_SERVICE, LOCAL, PORT, SiteInfo
from ..api.urls import API, RESOURCES, WRITABLE
from ..errors import CatalogueError


@dataclass(frozen=True)
class Local:
    """How `catalogue serve` runs a host here: where it listens and where writes go."""
    port: int = PORT
    host: str = LOCAL
    write_service: str = DEFAULT_WRITE_SERVICE
    socket: Path | None = None  # a Unix socket instead of the port (the built-in server, as nginx's page service)


def _always() -> bool:
    return True


def _any(value: str) -> None:
    """Every value will do."""


@dataclass(frozen=True)
class Option:
    """An option of `catalogue build` a host reads (`--write-service` for `write_service`):
    its value is given to the host's `write` by that name."""
    name: str
    default: str
    help: str
    check: Callable[[str], object] = _any  # raises CatalogueError, naming the fix, for a value it cannot use
    local: Callable[[Local], str] | None = None  # its value for a build served here (serve --data); None: default


@dataclass(frozen=True)
class Limits:
    """What an edge platform lets one request read and hold, as the page `source` documents
    them. The read plan (api/backends/search_index.py) picks the fewest reads for a request
    whatever the host; these are where the platform itself would fail it (a subrequest
    refused, memory exhausted, the time up), so a request the hosts' pages.js.j2 sees about
    to pass one answers 400 (meta.TOO_MANY_READS) instead: with the limits declared here,
    none that DRF answers does, at the sizes `make bench` measures."""
    objects: float  # files one request may read (math.inf: none documented)
    memory: int  # bytes of memory a request's code has
    source: str  # the platform's documentation stating them

    BEFORE = 2  # files a request reads before a page is put together: site.json, the page's own file
    HELD_SHARE = 2  # the files a request holds take at most 1/HELD_SHARE of the memory (the rest:
    # the runtime, the decoded index, the answer)

    @property
    def reads(self) -> float:
        """The files a page put together may read."""
        return self.objects - self.BEFORE

    @property
    def held(self) -> int:
        """The bytes of files a page put together may hold."""
        return self.memory // self.HELD_SHARE

    def javascript(self) -> dict[str, str]:
        """`reads` and `held` as a host's template writes them (JavaScript numbers)."""
        return {"reads": "Infinity" if math.isinf(self.reads) else str(int(self.reads)), "held": str(self.held)}


@dataclass(frozen=True)
class Host:
    name: str
    summary: str  # one line, for --help and the docs
    write: Callable[..., object] | None = None  # write(site, **its options): what it needs in the built site
    serve: Callable[[Path, Local], int] | None = None  # serves the site in the foreground; the exit status
    installed: Callable[[], bool] = _always  # whether serve() can run here
    takes_writes: bool = True  # whether it passes POSTs to a write service (else answers each 503)
    options: tuple[Option, ...] = ()
    parts: tuple[Callable[[Path], object], ...] = ()  # shared files it uses, written into the site before it


# ---- ready -------------------------------------------------------------------------------
# A server listening is not yet a site that answers: nginx needs its page service, a
# request for a page no file holds needs whatever puts pages together, and writes need
# the write service, which starts in a process of its own and may take longer than the
# server on a loaded machine. So the word waits for answers, over HTTP, from each part
# that is meant to run: the API root, a page no build writes (limit=1), and, when
# `serve --data` started one, the write service. Whether writes are off is said plainly
# too: a host that takes none, or no write service at the address POSTs go to.

READY_WITHIN = 120.0  # seconds before serve says which part does not answer
POLL = 0.1  # seconds between rounds of asking


def status_of(host: str, port: int, method: str, path: str, timeout: float = 5.0) -> int | None:
    """The status a server answers a request with; None while nothing answers there."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        response.read()
        return response.status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()


@dataclass(frozen=True)
class Parts:
    """What one `catalogue serve` runs, for the checks of readiness."""
    host: Host
    local: Local
    site: Path
    write_service_started: bool  # serve --data started one

    def write_address(self) -> tuple[str, int]:
        host, _, port = self.local.write_service.rpartition(":")
        return host, int(port)

    def waiting(self, prefix: str) -> list[str]:
        """The parts that do not answer yet, as a sentence's subjects."""
        api = f"{prefix}/{API}/"
        server, port = self.local.host, self.local.port
        missing = []
        if status_of(server, port, "GET", api) != 200:
            missing.append(f"the server at http://{server}:{port}{api}")
        # (a page no build writes: nginx's page service, a Worker's or a handler's page code)
        elif status_of(server, port, "GET", f"{api}{RESOURCES[0].name}/?limit=1") != 200:
            missing.append("the pages no file holds (the page service)")
        if self.write_service_started and self.writes_answer(prefix) is None:
            missing.append(f"the write service at {self.local.write_service}")
        return missing

    def writes_answer(self, prefix: str) -> int | None:
        """What the write service answers a GET of a collection it takes (405), if it answers."""
        host, port = self.write_address()
        return status_of(host, port, "GET", f"{prefix}/{API}/{next(iter(WRITABLE))}/")

    def writes(self, prefix: str) -> str:
        if not self.host.takes_writes:
            return f"writes are off: {self.host.name} takes none here, every POST answers 503"
        if self.writes_answer(prefix) is None:
            return (f"writes are off: no write service answers at {self.local.write_service}, so every POST "
                    "answers 503 (serve with --data and --tokens, or run `catalogue write-service` there)")
        return f"writes go to the write service at {self.local.write_service}"


def watch(parts: Parts, say: Callable[[str], None], stop: threading.Event,
          within: float = READY_WITHIN) -> bool:
    """Until every part answers (then say so, and whether writes are on) or `within` seconds
    pass (then say which does not), or `stop` is set; whether it was ready."""
    try:
        prefix = SiteInfo.of_site(parts.site).prefix
    except CatalogueError:
        return False  # (serve itself stops and says why)
    deadline = time.monotonic() + within
    while not stop.is_set():
        missing = parts.waiting(prefix)
        if not missing:
            local = parts.local
            say(f"ready: http://{local.host}:{local.port}{prefix}/{API}/ answers; {parts.writes(prefix)} "
                "(Ctrl-C stops)")
            return True
        if time.monotonic() > deadline:
            say(f"not ready after {within:g} s: {' and '.join(missing)} does not answer")
            return False
        stop.wait(POLL)
    return False
