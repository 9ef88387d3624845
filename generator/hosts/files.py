"""What every host's generated file shares: the templates they are rendered from, and
writing one so that an unchanged file keeps its mtime and a reader never sees half of it."""
from __future__ import annotations

import os
from pathlib import Path

import jinja2

templates = jinja2.Environment(
    loader=jinja2.PackageLoader("generator.hosts", "templates"), autoescape=False,
    undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def replace(path: Path, text: str) -> None:
    """Write text to path atomically, unless the file already holds it."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return  # unchanged: keep its mtime
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def replace_bytes(path: Path, data: bytes) -> None:
    """replace() for a binary file."""
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".new")
    temporary.write_bytes(data)
    os.replace(temporary, path)
