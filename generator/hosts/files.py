"""What every host's generated file shares: the templates they are rendered from, writing
one so that an unchanged file keeps its mtime and a reader never sees half of it, a
directory that holds only what a host serves of the published generation, and a file made
once and kept."""
from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Callable

from ..api.urls import CURRENT, PUBLISHED

def templates():
    """The hosts' templates (hosts/templates/)."""
    return package_templates("generator.hosts", "templates")


@functools.cache
def package_templates(package: str, folder: str):
    """The templates in a package's folder as a host's files are rendered from them (StrictUndefined:
    a value a template names and its caller does not give fails the build), loaded when one is first
    rendered: a server or a write service, which renders none, does not load Jinja."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader(package, folder), autoescape=False,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              bytecode_cache=_compiled(jinja2))


def _compiled(jinja2):
    """Templates compiled by an earlier build, kept in the user's cache directory (each under its
    source's checksum: an edited template is compiled again; not the temporary directory, where a
    server would leave it behind): an edit's build renders the hosts' files in half the time
    (0.1 s of a million books' edit). None where that directory cannot be made."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "catalogue-generator" / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


def replace(path: Path, text: str) -> None:
    """Write text to path atomically (UTF-8), unless the file already holds it."""
    replace_bytes(path, text.encode("utf-8"))


def _temporary(path: Path) -> Path:
    """A name beside `path` that no other writer of it uses: a server writes its host's files
    as it starts, while a build (a write service's) may be writing them too."""
    return path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.new")


def link_published(directory: Path, site: Path) -> None:
    """Make directory hold a link to each published directory of <site>/current and nothing
    else: an upload that walks it never meets the build's private state. The links are
    relative and go through `current`, so each publication is followed and the site may move."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in PUBLISHED:
        target = os.path.relpath(site / CURRENT / name, directory)
        link = directory / name
        if link.is_symlink() and os.readlink(link) == target:
            continue  # unchanged: keep it
        temporary = _temporary(link)
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(target)
        try:
            os.replace(temporary, link)
        except FileNotFoundError:  # (another writer's clean-up below took it: it made the same link)
            if not (link.is_symlink() and os.readlink(link) == target):
                raise
    for entry in directory.iterdir():
        if entry.name not in PUBLISHED and (entry.is_symlink() or entry.is_file()):
            entry.unlink(missing_ok=True)  # (what an older version linked: never upload it)


def made_once(path: Path, make: Callable[[], bytes], mode: int = 0o600) -> bytes:
    """The file's bytes; where there is none yet, make()'s, written whole under a temporary name
    and linked into place (a link never replaces a file): of writers at once (a server writing
    its host's files as it starts, a write service's build) each gets the first one's bytes,
    and no reader sees a file half-written."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as out:
        out.write(make())
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass  # (another writer's came first: theirs is the file)
    finally:
        temporary.unlink()
    return path.read_bytes()


def replace_bytes(path: Path, data: bytes) -> None:
    """Write data to path atomically, unless the file already holds it."""
    if path.is_file() and path.read_bytes() == data:
        return  # unchanged: keep its mtime
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    temporary.write_bytes(data)
    os.replace(temporary, path)
