"""The sample catalogue builds to the golden files, byte for byte (refresh: make golden)."""
from __future__ import annotations

import gzip
import shutil
import json
import os
from pathlib import Path

import pytest

from generator.sitebuild import build
from golden_files import FILES, GOLDEN, MANIFEST, manifest, served_files
from conftest import SAMPLE


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("golden") / "site"
    build(SAMPLE, out)
    return out


@pytest.mark.parametrize("name", FILES)
def test_golden_file(sample_site: Path, name: str):
    assert (sample_site / name).read_bytes() == (GOLDEN / name).read_bytes()


def test_whole_tree_matches_golden_manifest(sample_site: Path):
    assert manifest(sample_site) == (GOLDEN / MANIFEST).read_text(encoding="utf-8")


def test_disabled_book_is_not_published(sample_site: Path):
    books = sample_site / "api/v1/books"
    titles = b"".join(p.read_bytes() for p in books.glob("??/*.json"))
    assert "شازده احتجاب".encode() not in titles  # enable: false in data/books.csv
    assert b'"count":42,' in (books / "index.json").read_bytes()


def test_every_file_is_exactly_drf_json(sample_site: Path):
    """Re-encoding what was written, DRF-style, gives the same bytes: compact,
    unescaped UTF-8, U+2028 escaped, no trailing newline; and Python's json agrees."""
    files = served_files(sample_site)
    assert len(files) == 138
    for path in files:
        data = path.read_bytes()
        document = json.loads(data)
        drf = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        drf = drf.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        assert data == drf.encode("utf-8"), path


def test_large_files_have_a_gzip_twin(sample_site: Path):
    plain = served_files(sample_site)
    twins = {p.with_name(p.name[:-len(".gz")]) for p in served_files(sample_site, gz=True)}
    assert twins == {p for p in plain if p.stat().st_size >= 4096}  # docs/architecture.md: 4 KiB or more
    assert 0 < len(twins) < len(plain)
    for path in twins:
        assert gzip.decompress(path.with_name(path.name + ".gz").read_bytes()) == path.read_bytes()


def test_requests_without_a_limit_find_the_default_size(sample_site: Path):
    pages = sample_site / "api/v1/books/pages"
    assert os.readlink(pages / "default") == "12"
    assert (pages / "default/0/24.json").read_bytes() == (pages / "12/0/24.json").read_bytes()


@pytest.mark.parametrize("processes", [1, 2])
def test_a_rebuild_tells_of_the_few_details_it_writes_as_it_writes_them(tmp_path: Path, processes: int, monkeypatch):
    """`announce` hears of the new user's detail document (with its path in the generation and
    the file the generation then publishes) from whichever process wrote it; of nothing after a
    change of settings (its objects' headers may change) nor of more than ANNOUNCED_MAX."""
    from generator.sitebuild import part
    from generator.writes.create import Catalogue

    data, site, told = tmp_path / "data", tmp_path / "site", tmp_path / "told"
    shutil.copytree(SAMPLE, data)

    def announce(path: str, file: str) -> None:  # (a line a call, from every process of the build)
        with open(told, "a", encoding="utf-8") as f:
            f.write(f"{path}\t{file}\n")

    def heard() -> list[tuple[str, str]]:
        lines = told.read_text(encoding="utf-8").splitlines() if told.exists() else []
        told.unlink(missing_ok=True)
        return [tuple(line.split("\t")) for line in lines]

    build(data, site, processes=processes, announce=announce)
    assert heard() == []  # (nothing published before it)
    catalogue = Catalogue(data, None, tmp_path / "journal")
    created = catalogue.create("user", {"username": "tazeh.karbar"})
    build(data, site, processes=processes, announce=announce)
    told_of = heard()
    assert [path for path, _ in told_of] == [created.file]
    assert os.stat(told_of[0][1]).st_ino == os.stat(site / "current" / created.file).st_ino
    assert (site / "current" / created.file).read_bytes() == created.body
    monkeypatch.setattr(part, "ANNOUNCED_MAX", 1)
    catalogue.create("user", {"username": "tazeh.do"})
    catalogue.create("user", {"username": "tazeh.seh"})
    build(data, site, processes=processes, announce=announce)
    assert heard() == []
    catalogue.create("user", {"username": "tazeh.chahar"})
    with (data / "site.yaml").open("a", encoding="utf-8") as f:
        f.write("cache_control: public, max-age=60\n")
    build(data, site, processes=processes, announce=announce)
    assert heard() == []
