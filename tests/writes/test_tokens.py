"""The token file: hashes only, read again when it changes, a broken one lets no one write."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from generator.errors import CatalogueError
from generator.writes import tokens


def test_a_token_is_shown_once_and_only_its_hash_is_kept(tmp_path: Path):
    path = tmp_path / "new" / "folder" / "tokens"
    first = tokens.add(path, "librarian")
    second = tokens.add(path, "a.b_c@d-1")
    assert len(first) == len(second) == 43 and first != second  # (32 random bytes, URL-safe base64)
    assert tokens.digest(first) == hashlib.sha256(first.encode()).hexdigest()
    assert path.read_text(encoding="utf-8") == f"librarian {tokens.digest(first)}\na.b_c@d-1 {tokens.digest(second)}\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert tokens.read(path) == {tokens.digest(first): "librarian", tokens.digest(second): "a.b_c@d-1"}


@pytest.mark.parametrize("name", ["", "two words", "x" * 65, "ketab/admin"])
def test_a_token_name_must_be_plain(tmp_path: Path, name: str):
    with pytest.raises(CatalogueError, match=r"^token name .*: use 1 to 64 letters, digits and \. _ @ -$"):
        tokens.add(tmp_path / "tokens", name)
    assert not (tmp_path / "tokens").exists()


def test_comments_and_blank_lines_are_skipped_and_a_bad_line_is_named(tmp_path: Path):
    path = tmp_path / "tokens"
    hashed = "ab" * 32
    path.write_text(f"# the librarians\n\n   \n  librarian   {hashed}  \n", encoding="utf-8")
    assert tokens.read(path) == {hashed: "librarian"}
    path.write_text(f"# the librarians\nlibrarian {hashed}\nlibrarian plain-token\n", encoding="utf-8")
    with pytest.raises(CatalogueError) as caught:
        tokens.read(path)
    assert str(caught.value) == f"{path}:3: expected `<name> <sha256 hex of the token>`"


def test_the_service_reads_the_file_again_when_it_changes(tmp_path: Path):
    path = tmp_path / "tokens"
    logged: list[str] = []
    first = tokens.add(path, "first")
    holders = tokens.Tokens(path, logged.append)
    assert holders.holder(first) == "first"
    assert holders.holder("not-a-token") is None
    second = tokens.add(path, "second")  # (seen without a restart)
    assert holders.holder(second) == "second"
    path.write_text(f"second {tokens.digest(second)}\n", encoding="utf-8")  # first revoked
    assert holders.holder(first) is None and holders.holder(second) == "second"
    path.write_text("a broken line\n", encoding="utf-8")  # no one, until it is mended
    assert holders.holder(second) is None
    assert logged == [f"no token is valid until the token file is mended: {path}:1: "
                      "expected `<name> <sha256 hex of the token>`"]
    path.unlink()  # (gone: no one either, and it is said)
    assert holders.holder(second) is None
    assert len(logged) == 2 and logged[1].startswith(f"no token is valid until the token file is mended: token file "
                                                     f"{path} does not exist")
    path.write_text(f"second {tokens.digest(second)}\n", encoding="utf-8")
    assert holders.holder(second) == "second"
    assert len(logged) == 2


def test_an_unchanged_file_is_not_read_again(tmp_path: Path, monkeypatch):
    path = tmp_path / "tokens"
    token = tokens.add(path, "librarian")
    holders = tokens.Tokens(path)
    reads: list[Path] = []
    real = tokens.read
    monkeypatch.setattr(tokens, "read", lambda p: reads.append(p) or real(p))
    for _ in range(3):
        assert holders.holder(token) == "librarian"
    assert reads == []
    os.utime(path, ns=(0, 0))
    assert holders.holder(token) == "librarian"
    assert reads == [path]
