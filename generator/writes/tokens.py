"""The tokens that may write, kept outside the data directory.

A token file holds one line per token, `<name> <sha256 of the token>`, and `#`
comments: it never holds a token itself, so reading it (or a backup of it) gives no
one the right to write. `add()` makes a token, records its hash and returns it, the
only time it is shown. The service reads the file again whenever it changes, so a
token is revoked by deleting its line.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path
from typing import Callable

from ..errors import CatalogueError

NAME_RE = re.compile(r"[A-Za-z0-9._@-]{1,64}")
LINE_RE = re.compile(r"([A-Za-z0-9._@-]{1,64})\s+([0-9a-f]{64})")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def read(path: Path) -> dict[str, str]:
    """hash -> name; a line that is neither a comment nor `<name> <hash>` is an error."""
    found: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogueError(f"token file {path} does not exist: create a token with "
                             f"`catalogue token add NAME --tokens {path}`") from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = LINE_RE.fullmatch(line)
        if match is None:
            raise CatalogueError(f"{path}:{number}: expected `<name> <sha256 hex of the token>`")
        found[match[2]] = match[1]
    return found


def add(path: Path, name: str) -> str:
    """A new token for `name`, its hash appended to the file (made readable by its owner only)."""
    if not NAME_RE.fullmatch(name):
        raise CatalogueError(f"token name {name!r}: use 1 to 64 letters, digits and . _ @ -")
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(f"{name} {digest(token)}\n")
    return token


class Tokens:
    """The token file as the service sees it: read again when it changes. A file that
    goes missing or breaks lets no one write until it is mended (the service logs why)."""

    def __init__(self, path: Path, log: Callable[[str], None] = lambda message: None) -> None:
        self.path = path
        self._log = log
        self._hashes = read(path)
        self._seen = self._stat()

    def _stat(self) -> tuple | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def holder(self, token: str) -> str | None:
        """The name a token was given, or None when it is not one of them."""
        seen = self._stat()
        if seen != self._seen:
            try:
                self._hashes = read(self.path)
            except CatalogueError as exc:
                self._log(f"no token is valid until the token file is mended: {exc}")
                self._hashes = {}
            self._seen = seen
        presented = digest(token)
        for known, name in self._hashes.items():
            if hmac.compare_digest(known, presented):
                return name
        return None
