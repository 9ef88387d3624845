"""Incremental builds: after any edit, the site is byte for byte what a clean build
makes, only changed files are written, and unchanged files keep their inode and mtime."""
from __future__ import annotations

import csv
import os
import random
import re
import uuid
from pathlib import Path

import pytest

from generator.api.urls import PAGE_INDEX
from generator.sitebuild import build, state
from generator.sitebuild.spool import spool_files
from generator.catalogue import synth
from conftest import served
from golden_files import served_files

ID = "0b9f6a52-3d4e-4f1a-9c2b-7e8d9f0a1b2c"


class Catalogue:
    """A synthetic CSV catalogue edited in place, row by row."""

    def __init__(self, directory: Path, rng: random.Random) -> None:
        self.dir, self.rng = directory, rng

    def rows(self, collection: str) -> tuple[list[str], list[list[str]]]:
        table = list(csv.reader((self.dir / f"{collection}.csv").open(encoding="utf-8", newline="")))
        return table[0], table[1:]

    def save(self, collection: str, header: list[str], rows: list[list[str]]) -> None:
        with (self.dir / f"{collection}.csv").open("w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([header] + rows)

    def change(self, collection: str, column: str, value: str) -> None:
        header, rows = self.rows(collection)
        self.rng.choice(rows)[header.index(column)] = value
        self.save(collection, header, rows)

    def add(self, collection: str, **values: str) -> None:
        header, rows = self.rows(collection)
        row = list(self.rng.choice(rows))
        row[0] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        for column, value in values.items():
            row[header.index(column)] = value
        rows.insert(self.rng.randrange(len(rows) + 1), row)
        self.save(collection, header, rows)

    def remove(self, collection: str, unreferenced_by: tuple[str, tuple[str, ...]] | None = None) -> None:
        header, rows = self.rows(collection)
        used = set()
        if unreferenced_by:
            other, columns = unreferenced_by
            other_header, other_rows = self.rows(other)
            for row in other_rows:
                for column in columns:
                    used.update(row[other_header.index(column)].split("|"))
        candidates = [r for r in rows if r[0] not in used]
        rows.remove(self.rng.choice(candidates))
        self.save(collection, header, rows)

    def move(self, collection: str) -> None:
        header, rows = self.rows(collection)
        rows.insert(self.rng.randrange(len(rows)), rows.pop(self.rng.randrange(len(rows))))
        self.save(collection, header, rows)

    def site(self, text: str) -> None:
        (self.dir / "site.yaml").write_text(text, encoding="utf-8")


EDITS = {
    "book title": lambda c: c.change("books", "title", "عنوانی تازه"),
    "book price": lambda c: c.change("books", "price", "1234000"),
    "book disabled": lambda c: c.change("books", "enable", "false"),
    "book added": lambda c: c.add("books", isbn=str(9790000000000 + c.rng.randrange(10**9))),
    "book removed": lambda c: c.remove("books"),
    "book moved": lambda c: c.move("books"),
    "author renamed": lambda c: c.change("authors", "fullName", "نامی دیگر "),
    "author added": lambda c: c.add("authors", slug=f"تازه-{c.rng.randrange(10**6)}"),
    "author removed": lambda c: c.remove("authors", unreferenced_by=("books", ("authors", "translators"))),
    "publisher renamed": lambda c: c.change("publishers", "company", "نشر تازه"),
    "category renamed": lambda c: c.change("categories", "name", "دسته‌ای دیگر"),
    "user renamed": lambda c: c.change("users", "first_name", "نام"),
    "user added": lambda c: c.add("users", username=f"new.{c.rng.randrange(10**6)}"),
    "shelf retitled": lambda c: c.change("bookshelves", "title", "قفسه‌ی تازه"),
    "shelf removed": lambda c: c.remove("bookshelves"),
    "base_url": lambda c: c.site("base_url: https://new.example/catalogue\npage_sizes: [12, 24]\n"),
    "page sizes": lambda c: c.site("base_url: https://ketab.example.ir\npage_sizes: [24, 5]\n"),
    "time zone": lambda c: c.site("base_url: https://ketab.example.ir\npage_sizes: [12, 24]\ntime_zone: UTC\n"),
}


@pytest.fixture
def catalogue(tmp_path: Path) -> Catalogue:
    synth.write(tmp_path / "data", 400, seed=11)
    return Catalogue(tmp_path / "data", random.Random(5))


def assert_same_as_clean_build(catalogue: Catalogue, site: Path, tmp_path: Path, name: str) -> None:
    clean = tmp_path / f"clean-{name.replace(' ', '-')}"
    build(catalogue.dir, clean)  # (in one process: any number builds the same site, tests/sitebuild/test_team.py)
    got, expected = served(site), served(clean)
    assert got.keys() == expected.keys(), name
    assert [p for p in got if got[p] != expected[p]] == [], name
    gz = {str(p.relative_to(site)) for p in served_files(site, gz=True)}
    assert gz == {str(p.relative_to(clean)) for p in served_files(clean, gz=True)}, name
    indexes = [{str(p.relative_to(out)): p.read_bytes() for p in served_files(out, suffix=PAGE_INDEX)}
               for out in (site, clean)]
    assert indexes[0] == indexes[1], name  # (the page indexes, which the hosts read)


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_each_edit_rebuilds_to_a_clean_build(catalogue: Catalogue, tmp_path: Path, edit: str):
    site = tmp_path / "site"
    build(catalogue.dir, site)
    EDITS[edit](catalogue)
    summary = build(catalogue.dir, site, processes=2)
    assert summary.written > 0
    assert_same_as_clean_build(catalogue, site, tmp_path, edit)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_sequences_of_edits(tmp_path: Path, seed: int):
    synth.write(tmp_path / "data", 300, seed=seed)
    catalogue = Catalogue(tmp_path / "data", random.Random(seed))
    site = tmp_path / "site"
    build(catalogue.dir, site, processes=2)
    for step in range(6):
        names = catalogue.rng.sample(sorted(EDITS), catalogue.rng.choice((1, 2, 3)))
        for name in names:
            EDITS[name](catalogue)
        build(catalogue.dir, site, processes=catalogue.rng.choice((1, 2, 3)))
        assert_same_as_clean_build(catalogue, site, tmp_path, f"{seed}-{step}-{'+'.join(names)}")


def files_with_identity(site: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(site)): (os.stat(p).st_ino, os.stat(p).st_mtime_ns)
            for p in served_files(site) + served_files(site, gz=True)}


def test_one_title_writes_only_its_documents(catalogue: Catalogue, tmp_path: Path):
    site = tmp_path / "site"
    build(catalogue.dir, site, processes=2)
    before = files_with_identity(site)
    header, rows = catalogue.rows("books")
    published = [r for r in rows if r[header.index("enable")] != "false"]
    row = published[30]  # on page 3 of 12 and page 2 of 24: not on a first page
    row[header.index("title")] += " (ویرایش)"
    catalogue.save("books", header, rows)
    summary = build(catalogue.dir, site, processes=2)
    after = files_with_identity(site)
    changed = sorted(p for p in after if after[p] != before.get(p))
    book = f"api/v1/books/{row[0][:2]}/{row[0]}.json"
    pages = ["api/v1/books/pages/12/0/24.json", "api/v1/books/pages/24/0/24.json",
             "api/v1/books/pages/default/0/24.json"]  # (the default size's page, seen through its link)
    expected = sorted([book] + pages + [p + ".gz" for p in pages])
    assert changed == expected
    # the book, two pages and their .gz twins, and the index of the pages of 12 (the title's
    # length moved the records after it within their page)
    assert summary.written == 6
    assert_same_as_clean_build(catalogue, site, tmp_path, "title")


def page_indexes_with_identity(site: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(site)): (os.stat(p).st_ino, os.stat(p).st_mtime_ns)
            for p in served_files(site, suffix=PAGE_INDEX)}


@pytest.fixture
def spans(tmp_path: Path) -> Catalogue:
    """A catalogue whose books' pages lie in three spans of page offsets (api/pageindex.py)."""
    synth.write(tmp_path / "data", 2600, seed=11)
    return Catalogue(tmp_path / "data", random.Random(5))


def test_an_edit_rewrites_the_page_index_of_its_span_alone(spans: Catalogue, tmp_path: Path):
    """A title made longer moves the records after it in its page: the index of the span of
    1,000 offsets holding that page is written again, the others are linked as they were; a
    title edited to as many bytes moves none, and no index is written again."""
    site = tmp_path / "site"
    build(spans.dir, site, processes=2)
    header, rows = spans.rows("books")
    row = [r for r in rows if r[header.index("enable")] != "false"][1500]  # (page 1500 of 12, of span 1)
    for edit, indexes in ((lambda title: title + " (ویرایش)", ["1008"]),
                          (lambda title: title.replace("ویرایش", "ویرایس"), [])):  # (both two bytes in UTF-8)
        before = page_indexes_with_identity(site)
        title = row[header.index("title")]
        row[header.index("title")] = edit(title)
        spans.save("books", header, rows)
        build(spans.dir, site, processes=2)
        after = page_indexes_with_identity(site)
        assert after.keys() == before.keys()
        assert sorted(p for p in after if after[p] != before[p]) == [
            f"api/v1/books/pages/{size}/0/{first}{PAGE_INDEX}" for size in ("12", "default") for first in indexes]
    assert_same_as_clean_build(spans, site, tmp_path, "spans")


def test_a_site_whose_page_indexes_were_laid_out_otherwise_is_made_again_whole(catalogue: Catalogue,
                                                                               tmp_path: Path):
    """A site built when an index covered another stretch of offsets (the paging backend's
    index_format, as the previous build's fingerprint records it) takes over none of its
    pages: the next build, its data unchanged, writes every page, index and detail again."""
    from generator.api.backends import PAGINATION

    site = tmp_path / "site"
    build(catalogue.dir, site, processes=2)
    generation = (site / "current").resolve()
    fingerprint = state.Fingerprint.load(generation)
    assert fingerprint.formats[PAGINATION.name] == PAGINATION.index_format
    fingerprint.formats[PAGINATION.name] = "1"  # (as the builds of an index a block of 10,000 offsets recorded it)
    fingerprint.save(generation)
    before = files_with_identity(site) | page_indexes_with_identity(site)
    build(catalogue.dir, site, processes=2)
    after = files_with_identity(site) | page_indexes_with_identity(site)
    assert [p for p in after if after[p] == before[p]] == ["api/v1/index.json"]  # (linked by the skeleton's writer
    # wherever its bytes are the same)
    assert_same_as_clean_build(catalogue, site, tmp_path, "laid out otherwise")


def book_data_files(site: Path) -> dict[str, int]:
    """The files holding the book records the published build keeps, with their sizes."""
    directory = state.state_dir((site / "current").resolve())
    return {p.name: p.stat().st_size for p in directory.glob("records-books.*.*")}


def test_an_edit_refers_to_the_records_it_keeps_and_compacts_them(catalogue: Catalogue, tmp_path: Path,
                                                                 monkeypatch):
    monkeypatch.setattr(state, "MAX_DATA_FILES", 3)
    site = tmp_path / "site"
    build(catalogue.dir, site, processes=2)
    before = book_data_files(site)
    assert len(before) == 2  # one a part
    header, rows = catalogue.rows("books")
    for step in range(4):
        rows[step * 7][header.index("title")] += " (ویرایش)"
        catalogue.save("books", header, rows)
        build(catalogue.dir, site, processes=2)
        files = book_data_files(site)
        if step in (0, 1, 3):
            # the files kept as they are, and one new file holding the changed book
            assert len(files) == len(before) + 1 and files.items() >= before.items()
            assert sum(files.values()) < sum(before.values()) + 4096
        else:  # over three files: all copied, into one file a part
            assert len(files) == 2 and not files.keys() & before.keys()
        before = files
        assert_same_as_clean_build(catalogue, site, tmp_path, f"edit {step}")


STATE_FILE = re.compile(r"fingerprint\.json|records\.json|(keys|records)-[a-z]+\.[0-9]+|records-[a-z]+\.[0-9]+\.data-[0-9]{6}"
                        r"|segments-(publishers|authors|books|users|bookshelves)\.json")


def test_a_published_generation_keeps_only_what_the_next_build_takes_over(catalogue: Catalogue, tmp_path: Path):
    site = tmp_path / "site"
    build(catalogue.dir, site, processes=2)
    for edit in ("book title", "user added", "book removed"):
        EDITS[edit](catalogue)
        build(catalogue.dir, site, processes=2)
        directory = state.state_dir((site / "current").resolve())
        names = {p.name for p in directory.iterdir()}
        assert {n for n in names if not STATE_FILE.fullmatch(n)} == set()
        # every record data file is one an index refers to, and every one referred to is there
        referred = {name for index in directory.glob("records-*.*") if STATE_FILE.fullmatch(index.name)
                    and index.suffix[1:].isdigit() for name in spool_files(index)}
        assert referred == {n for n in names if ".data-" in n}
        left = [path for path in _walk_except(site, "trash") if "scratch" in path.name]
        assert left == []


def test_unchanged_collections_are_not_read_again(catalogue: Catalogue, tmp_path: Path, monkeypatch):
    site = tmp_path / "site"
    build(catalogue.dir, site, processes=1)
    catalogue.change("bookshelves", "title", "تازه")
    from generator.catalogue import load
    read = []
    original = load.Source.rows
    monkeypatch.setattr(load.Source, "rows", lambda self, problems: read.append(self.collection) or original(self, problems))
    build(catalogue.dir, site, processes=1)
    assert read == ["bookshelves"]


def test_files_found_as_hashed_are_not_read_again(catalogue: Catalogue, tmp_path: Path, monkeypatch):
    """A file whose size, mtime, ctime and inode are those the last build hashed keeps its
    hash unread; any change to it (even one restoring size and mtime) is read again."""
    from generator.catalogue import load
    monkeypatch.setattr(load, "SETTLED_NS", -10**12)  # (files here are seconds old: settled at once)
    site = tmp_path / "site"
    build(catalogue.dir, site, processes=1)
    hashed = []
    file_hash, table = state.file_hash, state.segments.table  # (books are hashed by segment)
    monkeypatch.setattr(state, "file_hash", lambda source: hashed.append(source.collection) or file_hash(source))
    monkeypatch.setattr(state.segments, "table", lambda path, *rest: hashed.append(path.stem) or table(path, *rest))
    assert build(catalogue.dir, site, processes=1).written == 0
    assert hashed == []
    books = catalogue.dir / "books.csv"
    before = books.stat()
    text = books.read_bytes()
    books.write_bytes(text.replace(b"\n", b"\r", 1).replace(b"\r", b"\n", 1))  # same bytes: no change
    os.utime(books, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert build(catalogue.dir, site, processes=1).written == 0
    assert hashed == ["books"]
    header, rows = catalogue.rows("books")
    title = rows[0][header.index("title")]
    other = title[:-1] + ("ب" if title[-1] != "ب" else "پ")  # (both two bytes in UTF-8)
    assert len(other.encode()) == len(title.encode())
    books.write_bytes(text.replace(title.encode(), other.encode(), 1))
    os.utime(books, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert books.stat().st_size == before.st_size and books.stat().st_mtime_ns == before.st_mtime_ns
    assert build(catalogue.dir, site, processes=1).written > 0


KILL_IN = """
import os, signal, sys
from generator.sitebuild import publish as write
from generator.sitebuild import build
what, limit, count = sys.argv[3], int(sys.argv[4]), [0]

def dying(original):
    def call(*args, **kwargs):
        count[0] += 1
        if count[0] > limit:  # the whole build, all its processes, no cleanup: as if killed
            os.killpg(0, signal.SIGKILL)
        return original(*args, **kwargs)
    return call

if what == "write":
    write.Generation._write = dying(write.Generation._write)
else:
    write.os.link = dying(os.link)
build(sys.argv[1], sys.argv[2], processes=2)
"""


@pytest.mark.parametrize("what, after", [("write", 0), ("write", 2), ("write", 30), ("link", 0), ("link", 20), ("link", 50)])
def test_incremental_build_killed_anywhere(catalogue: Catalogue, tmp_path: Path, what: str, after: int):
    import signal
    import subprocess
    import sys
    from conftest import ROOT
    site = tmp_path / "site"
    build(catalogue.dir, site, processes=2)
    published = served(site)
    for name in ("book title", "author renamed", "book added"):
        EDITS[name](catalogue)
    killed = subprocess.run([sys.executable, "-c", KILL_IN, str(catalogue.dir), str(site), what, str(after)],
                            cwd=ROOT, capture_output=True, start_new_session=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert served(site) == published
    build(catalogue.dir, site, processes=2)
    assert_same_as_clean_build(catalogue, site, tmp_path, f"killed-{what}-{after}")


def test_row_hash_tells_rows_apart():
    from generator.catalogue.records import row_hash
    assert row_hash({"x": "a\x1fb", "y": "c"}) != row_hash({"x": "a", "y": "b\x1fc"})  # separator in a cell
    assert row_hash({"x": "1", "y": "2"}) != row_hash({"y": "1", "x": "2"})  # columns swapped
    assert row_hash({"x": "1", "y": "2"}) == row_hash(dict([("x", "1"), ("y", "2")]))
    assert row_hash({"pages": 12}) != row_hash({"pages": "12"})  # YAML types count
    assert row_hash({"isbn": 10**30}) != row_hash({"isbn": 10**30 + 1})  # (beyond JSON's integers)


def _walk_except(root: Path, skipped: str) -> list[Path]:
    """Everything under root but the directories named `skipped` (the build's trash, which
    is emptied in the background while a test looks)."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != skipped]
        found += [Path(directory) / name for name in dirs + files]
    return found


@pytest.mark.parametrize("where", ["end", "start"])
def test_an_id_used_again_among_records_taken_over_is_reported_as_by_a_clean_build(
        catalogue: Catalogue, tmp_path: Path, where: str):
    """Books are read by segment: a new row that reuses the id of a row in a segment taken
    over unread is found all the same, with both lines, as a clean build reports it."""
    from generator.errors import DataError
    build(catalogue.dir, tmp_path / "site", processes=2)
    header, rows = catalogue.rows("books")
    copy = list(rows[len(rows) // 2])
    copy[header.index("isbn")] = "9780000000019"
    rows.insert(len(rows) if where == "end" else 0, copy)
    catalogue.save("books", header, rows)
    with pytest.raises(DataError) as incremental:
        build(catalogue.dir, tmp_path / "site", processes=2)
    with pytest.raises(DataError) as clean:
        build(catalogue.dir, tmp_path / "clean", processes=2)
    assert "is used twice in books" in str(clean.value)
    assert str(incremental.value) == str(clean.value)
