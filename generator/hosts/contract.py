"""What a host is, for the registry (registry.py) that the CLI, compose and the tests
loop over: a name, what it writes into a built site (`<site>/hosts/<name>/`), and
optionally how it serves a site here and whether its runtime is installed, as Sphinx's
builders or Datasette's publish hooks each declare theirs.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..api.serving import DEFAULT_WRITE_SERVICE, LOCAL, PORT, Hosting


@dataclass(frozen=True)
class Local:
    """How `catalogue serve` runs a host here: where it listens and where writes go."""
    port: int = PORT
    host: str = LOCAL
    write_service: str = DEFAULT_WRITE_SERVICE
    socket: Path | None = None  # a Unix socket instead of the port (the built-in server, as nginx's page service)


def _always() -> bool:
    return True


@dataclass(frozen=True)
class Host:
    name: str
    summary: str  # one line, for --help and the docs
    write: Callable[[Path, Hosting], object] | None = None  # what it needs in the built site
    serve: Callable[[Path, Local], int] | None = None  # serves the site in the foreground; the exit status
    installed: Callable[[], bool] = _always  # whether serve() can run here
    takes_writes: bool = True  # whether its POSTs reach a write service (False: every POST answers 503)
