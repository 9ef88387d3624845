"""The build's query indexes (sitebuild/queries.py): made with the pages, exact after every
kind of edit, and rewritten only where they changed: a one-book edit rewrites a few index
files, not the index; an unchanged catalogue rewrites none."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import yaml

from generator.api.backends import BACKENDS, common, search_index
from generator.api.urls import QUERY_DIR
from generator.api.urls import CURRENT, STATE
from generator.catalogue import synth
from generator.sitebuild import build, stretches
from golden_files import put_together
from index_holds import holds
from query_probes import SETTINGS, with_settings


def index_inodes(site: Path) -> dict[str, int]:
    root = (site / CURRENT).resolve()
    found = {}
    for directory, _dirs, names in os.walk(root / "api"):
        if f"/{QUERY_DIR}" in directory:
            for name in names:
                path = Path(directory, name)
                found[str(path.relative_to(root))] = path.stat().st_ino
    return found


@pytest.fixture
def catalogue(tmp_path):
    synth.write(tmp_path / "plain", 400, seed=2, fmt="csv")
    return with_settings(tmp_path / "plain", tmp_path / "data")


def test_a_one_book_edit_rewrites_a_few_index_files(catalogue, tmp_path):
    site = tmp_path / "site"
    build(catalogue, site)
    before = index_inodes(site)
    assert len(before) > 100
    build(catalogue, site)  # (nothing changed: nothing rewritten)
    assert index_inodes(site) == before
    books = catalogue / "books.csv"
    with books.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    column = rows[0].index("title")
    old, new = rows[201][column], "یک عنوان تازه"  # (the 201st book: the row after the header)
    rows[201][column] = new
    with books.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    build(catalogue, site)
    after = index_inodes(site)
    rewritten = sorted(path for path in after if before.get(path) != after[path])
    # The title's ranks, orders and ties, and a few of the term index's files (the leaves and
    # postings files of the words and pieces of words it lost or gained, the root where a
    # leaf's first key changed), and nothing else (issue 40: at most 30 index files).
    search = {path for path in rewritten if path.startswith(search_index.index_dir("books") + "/")}
    assert set(rewritten) - search == {"api/v1/books/_query/rank/title/0.u32", "api/v1/books/_query/sorted/title/asc/0.u32",
                                       "api/v1/books/_query/sorted/title/desc/0.u32",
                                       "api/v1/books/_query/ties/title/0.bits"}, (old, rewritten)
    assert 0 < len(search) <= 30, search
    assert set(before) ^ set(after) <= search
    generation = (site / CURRENT).resolve()
    found = put_together(generation, "books", "search=%DB%8C%DA%A9+%D8%B9%D9%86%D9%88%D8%A7%D9%86+%D8%AA%D8%A7%D8%B2%D9%87")
    assert found[0] == 200 and b'"count":1,' in found[1]


def test_settings_taken_away_take_their_indexes_away(catalogue, tmp_path):
    site = tmp_path / "site"
    build(catalogue, site)
    assert any("/search/" in path for path in index_inodes(site))
    site_yaml = yaml.safe_load((catalogue / "site.yaml").read_text(encoding="utf-8"))
    site_yaml.pop("search"), site_yaml.pop("filters")
    site_yaml["ordering"] = {"books": ["title"]}
    (catalogue / "site.yaml").write_text(yaml.safe_dump(site_yaml, allow_unicode=True), encoding="utf-8")
    build(catalogue, site)
    left = index_inodes(site)
    assert {tuple(p.split("/")[4:6]) for p in left} == {("rank", "title"), ("sorted", "title"), ("ties", "title")}


def test_blocks_read_by_several_processes_give_the_same_files_and_answers(catalogue, tmp_path, monkeypatch):
    """Records in many blocks (64 records a block here), read by two processes or one: the
    same index files; and the same answers as with the whole collection in one block."""
    import json

    from query_probes import Probes

    whole = tmp_path / "whole"
    build(catalogue, whole)
    monkeypatch.setattr(common, "BLOCK", 64)
    two, one = tmp_path / "two", tmp_path / "one"
    build(catalogue, two, processes=2)
    build(catalogue, one, processes=1)
    files = {p: (one / CURRENT / p).read_bytes() for p in index_inodes(one)}
    assert {p: (two / CURRENT / p).read_bytes() for p in index_inodes(two)} == files
    assert sum("/_query/search/" in p for p in files) > 2
    blocked, single = (two / CURRENT).resolve(), (whole / CURRENT).resolve()
    documents = {name: json.loads(put_together(blocked, name, "limit=1000")[1])["results"]
                 for name in ("books", "author", "bookshelf", "category")}
    probes = Probes(documents, seed=5)
    for name in ("books", "author", "bookshelf"):
        for _ in range(40):
            query = probes.query(name)
            got = put_together(blocked, name, query)
            monkeypatch.setattr(common, "BLOCK", 65536)
            assert got == put_together(single, name, query), query
            monkeypatch.setattr(common, "BLOCK", 64)


def test_a_paths_site_filters_as_an_api_site_does(tmp_path: Path):
    """A site built with --links paths links an embedded record by its file (…/ab/<id>.json),
    an embedded author or publisher by nothing else: its filter indexes read the ids from
    those links (queryindex.related_id), and select what an API site's do."""
    from conftest import SAMPLE
    from query_probes import SETTINGS, ident

    data = with_settings(SAMPLE, tmp_path / "data")
    build(data, tmp_path / "api")
    build(data, tmp_path / "paths", links="paths")
    api, paths = ((tmp_path / name / CURRENT).resolve() for name in ("api", "paths"))
    books = json.loads(put_together(api, "books", "limit=100")[1])["results"]
    asked = 0
    for relation in SETTINGS["filters"]["books"]:
        for id in sorted({ident(r) for book in books for r in book[relation]})[:3]:
            query = f"{relation}={id}&limit=100"
            selected = [[book["id"] for book in json.loads(put_together(site, "books", query)[1])["results"]]
                        for site in (api, paths)]
            assert selected[0] == selected[1] and selected[0], query
            asked += 1
    assert asked >= 9


def test_an_edit_takes_over_the_unchanged_stretches_and_writes_what_a_fresh_build_writes(catalogue, tmp_path,
                                                                                          monkeypatch):
    """Build, edit a title and a price, build again: the parts of the stretches that did not
    change are taken over from the previous state (the same files), the others made again,
    and every index file is the one a fresh build of the edited data writes (the term index
    is edited: its postings files may lie otherwise than a fresh build's where a set moves
    between a leaf and a file, search_index.py's edit; here none does)."""
    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch: a dozen of them)
    monkeypatch.setattr(common, "BLOCK", 128)  # (runs of whole blocks: stretches cut by runs too)
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    build(catalogue, site, processes=2)
    edited = []
    for backend in BACKENDS:
        def spied(*args, edit=backend.edit, name=backend.name):
            made = edit(*args)
            if made is not None and args[0] == "books":
                edited.append(name)
            return made
        monkeypatch.setattr(backend, "edit", spied)
    before = parts_files(site)
    assert len(before) > 12

    def edit(rows: list[list[str]]) -> None:
        rows[201][rows[0].index("title")] += " (ویرایش)"
        rows[40][rows[0].index("price")] = "1"
        rows[41][rows[0].index("authors")] = rows[300][rows[0].index("authors")]  # (the authors filter's lists)
    edit_rows(catalogue / "books.csv", edit)
    build(catalogue, site, processes=2)
    build(catalogue, fresh, processes=1)
    after = parts_files(site)
    made = [name for name in after if before.get(name) != after[name]]
    assert sorted(name.split("-")[2] for name in made) == ["books", "books"], made  # (the two edited stretches)
    assert index_files(site) == index_files(fresh)
    assert sorted(edited) == ["ordering", "relations", "search"]  # (each edited, side by side)


@pytest.mark.parametrize("beyond", [0, 1])
def test_the_indexes_are_edited_where_up_to_edit_stretches_stretches_changed(catalogue, tmp_path, monkeypatch,
                                                                              beyond):
    """Titles edited in EDIT_STRETCHES stretches: the books' indexes are edited; in one more,
    made again from the parts (records moved or changed all over: as quick as an edit, made
    whole). Both times, what a fresh build writes."""
    from generator.sitebuild import queries

    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch: rows 10, 60, .. each in one of its own)
    finished = finishes(monkeypatch)
    site = tmp_path / "site"
    build(catalogue, site)
    rows = [10 + 50 * at for at in range(queries.EDIT_STRETCHES + beyond)]
    edit_rows(catalogue / "books.csv", lambda found: [found[row].__setitem__(found[0].index("title"), f"عنوان {row}")
                                                      for row in rows])
    finished.clear()
    build(catalogue, site)
    assert sorted(backend for name, backend in finished if name == "books") == \
        ([] if not beyond else ["ordering", "relations", "search"])
    same_indexes(site, build_fresh(catalogue, tmp_path))


def test_a_stretch_whose_pages_were_written_again_with_the_same_bytes_is_taken_over(catalogue, tmp_path, monkeypatch):
    """Where a stretch's pages are new files (not the previous generation's: as if written
    again), its parts are taken over where its pages hold the bytes they held, made again
    where one differs; every index file what a fresh build writes."""
    from generator.sitebuild import queries

    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch: a dozen of them)
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    build(catalogue, site, processes=2)
    before = parts_files(site)
    monkeypatch.setattr(queries, "_pages_kept", lambda *args: False)

    def edit(rows: list[list[str]]) -> None:
        rows[201][rows[0].index("title")] += " (ویرایش)"
    edit_rows(catalogue / "books.csv", edit)
    build(catalogue, site, processes=2)
    build(catalogue, fresh, processes=1)
    after = parts_files(site)
    made = [name for name in after if before.get(name) != after[name]]
    assert [name.split("-")[2] for name in made] == ["books"], made  # (the edited stretch)
    assert len(after) > 12 and index_files(site) == index_files(fresh)


def parts_files(site: Path, collection: str = "*") -> dict[str, int]:
    """The published generation's query parts files (its state's, of one collection or all),
    by name: their inodes."""
    state = (site / CURRENT).resolve() / STATE
    return {path.name: path.stat().st_ino for path in state.glob(f"query-parts-{collection}-*")}


def index_files(site: Path) -> dict[str, bytes]:
    return {p: (site / CURRENT / p).read_bytes() for p in index_inodes(site)}


def edit_rows(path: Path, change) -> None:
    """A CSV file changed in place: `change(rows)`, the header rows[0]."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    change(rows)
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def test_a_collection_made_from_the_same_parts_and_ids_keeps_its_index_files(catalogue, tmp_path, monkeypatch):
    """An edit of bookshelves alone: only the bookshelves' indexes are made again, the others
    linked as they were; an author added (no book refers to it): the books' filter by author
    is made again too (it holds every author's id), and of the books' indexes it alone (their
    term index and orderings as they were); an author's name edited: every index edited
    (the ids as they were), none made again. Each time: what a fresh build writes."""
    from generator.sitebuild import queries

    made, finished = [], finishes(monkeypatch)
    finish = queries._finish
    monkeypatch.setattr(queries, "_finish", lambda job, name, *rest: (made.append(name), finish(job, name, *rest)))
    site = tmp_path / "site"
    build(catalogue, site)
    every = list(made)
    assert sorted(every) == ["author", "books", "bookshelf", "category"]

    def edited(file: str, change) -> list[tuple[str, str]]:
        """The (collection, backend) of each backend's index made again by the edit's build."""
        edit_rows(catalogue / file, change)
        made.clear()
        finished.clear()
        build(catalogue, site)
        again = list(finished)
        assert index_files(site) == index_files(build_fresh(catalogue, tmp_path))
        return again

    edited("bookshelves.csv", lambda rows: rows[3].__setitem__(rows[0].index("title"), "قفسهٔ تازه"))
    assert sorted(made) == sorted(["bookshelf", *every])  # (then the fresh build's; finished side by side)
    again = edited("authors.csv", lambda rows: rows.append(
        ["00000000-0000-4000-8000-0000000000aa", "نویسنده-تازه", "نویسنده تازه", ""]))
    assert sorted(made) == sorted(["author", "books", *every])
    assert [backend for name, backend in again if name == "books"] == ["relations"]
    again = edited("authors.csv", lambda rows: rows[1].__setitem__(rows[0].index("fullName"), "نامی دیگر"))
    assert again == [], again  # (an author's name, not its id: the filters by author are edited too)


def test_an_index_format_changed_makes_the_files_again(catalogue, tmp_path, monkeypatch):
    """A build by a generator whose search writes another layout (its index_format) makes
    every search index again, though no record changed: linked as they were, the old files
    would meet a reader of the new layout."""
    from generator.api.backends import search
    from generator.sitebuild import queries

    site = tmp_path / "site"
    build(catalogue, site)
    made = []
    finish = queries._finish
    monkeypatch.setattr(queries, "_finish", lambda job, name, *rest: (made.append(name), finish(job, name, *rest)))
    build(catalogue, site)
    assert made == []
    monkeypatch.setattr(search.BACKEND, "index_format", "term index 0")
    build(catalogue, site)
    assert sorted(made) == sorted(SETTINGS["search"])  # (the collections with a search)


def test_an_edit_reads_only_the_pages_of_the_stretch_it_changed(catalogue, tmp_path, monkeypatch):
    """A title edited: the build reads the default pages of the one stretch that holds it (the
    new generation's and the previous one's, to find the records that changed), no other
    stretch's (their pages are the previous generation's files), and no page of the
    collections whose ids the filters take (the same: their ids are known unread)."""
    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch)
    site = tmp_path / "site"
    build(catalogue, site, processes=1)
    read = pages_read(monkeypatch)
    edit_rows(catalogue / "books.csv", lambda rows: rows[201].__setitem__(rows[0].index("title"), "یک عنوان تازه"))
    build(catalogue, site, processes=1)
    assert read and all(name == "books" and start <= 200 < stop for name, start, stop in read), read


def test_a_set_that_leaves_its_leaf_in_an_edit_is_read_from_its_new_file(catalogue, tmp_path):
    """A word given to forty books in one edit: its set, in no file before, goes to a postings
    file of its own (new: none of the previous build's), and a search finds them all."""
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    build(catalogue, site)

    def edit(rows: list[list[str]]) -> None:
        for row in rows[1::10]:
            row[rows[0].index("title")] += " یگانه"
    edit_rows(catalogue / "books.csv", edit)
    build(catalogue, site)
    build(catalogue, fresh)
    for query in ("search=%DB%8C%DA%AF%D8%A7%D9%86%D9%87", "search=%DA%AF%D8%A7%D9%86%D9%87&ordering=-title"):
        found = put_together((site / CURRENT).resolve(), "books", query)
        assert found == put_together((fresh / CURRENT).resolve(), "books", query) and b'"count":40' in found[1]


def test_settings_given_more_fields_make_their_indexes(catalogue, tmp_path):
    """An ordering field and a filter added to site.yaml (no record changed): their files are
    made, as a fresh build makes them, not the previous build's folders kept."""
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    site_yaml = yaml.safe_load((catalogue / "site.yaml").read_text(encoding="utf-8"))
    site_yaml["ordering"]["books"].remove("pages")
    site_yaml["filters"]["books"].remove("categories")
    (catalogue / "site.yaml").write_text(yaml.safe_dump(site_yaml, allow_unicode=True), encoding="utf-8")
    build(catalogue, site)
    site_yaml["ordering"]["books"].append("pages")
    site_yaml["filters"]["books"].append("categories")
    (catalogue / "site.yaml").write_text(yaml.safe_dump(site_yaml, allow_unicode=True), encoding="utf-8")
    build(catalogue, site)
    build(catalogue, fresh)
    assert index_files(site) == index_files(fresh)


def test_a_build_with_other_processes_makes_again_only_the_stretches_the_runs_cut_otherwise(catalogue, tmp_path,
                                                                                            monkeypatch):
    """A stretch is cut where the collection's records of PART_PAGES pages end, not where its
    run starts: a build in one run after a build in two takes over every stretch's parts from
    the previous state but the edited one's and the one the two runs' seam cut in two."""
    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch)
    monkeypatch.setattr(common, "BLOCK", 128)  # (400 books: two runs of two blocks, their seam at 256, in a stretch)
    monkeypatch.setattr(stretches, "RUNS_EACH", 1)
    site = tmp_path / "site"
    build(catalogue, site, processes=2)
    before = parts_files(site, "books")
    edit_rows(catalogue / "books.csv", lambda rows: rows[10].__setitem__(rows[0].index("title"), "یک عنوان تازه"))
    build(catalogue, site, processes=1)
    after = parts_files(site, "books")
    assert len(after) == len(before) - 1  # (the seam's two stretches are one)
    assert len([name for name in after if before.get(name) != after[name]]) == 2  # (records 0..36 and 252..288)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_backend_that_fails_fails_the_build_and_the_backends_not_begun_do_not_begin(catalogue, tmp_path,
                                                                                     monkeypatch, processes):
    """A backend's finish that raises: the build raises it and publishes nothing; in one
    process the backends after it are not begun (in two they all began together)."""
    relations, search = BACKENDS[0], BACKENDS[1]
    begun = []

    def failing(name, *args):
        raise RuntimeError(f"the filters of {name} failed")

    def spied(name, *args, finish=search.finish):
        begun.append(name)
        return finish(name, *args)
    monkeypatch.setattr(relations, "finish", failing)
    monkeypatch.setattr(search, "finish", spied)
    site = tmp_path / "site"
    with pytest.raises(RuntimeError, match="the filters of books failed"):
        build(catalogue, site, processes=processes)
    assert not (site / CURRENT).exists()
    assert ("books" in begun) == (processes > 1)  # (the authors' term index came before)


def test_the_pages_are_read_back_with_just_the_fields_each_indexer_reads(catalogue, tmp_path):
    """The index step reads a page's documents with only the fields its backends' indexers
    read (Backend.reads): each indexer makes of them, page by page, what it makes of the
    whole documents (a field an indexer reads and does not declare fails this), and of
    the related records nothing else is made (a book's authors' bios, urls kept)."""
    import pickle

    import orjson

    from generator.api.backends import indexing
    from generator.sitebuild import queries
    from generator.sitebuild.pipeline import Job as BuildJob
    from generator.sitebuild.publish import Site
    from generator.sitebuild.state import counts

    site = tmp_path / "site"
    build(catalogue, site)
    root, settings = Site(site).published(), BuildJob.read(catalogue, None, 1, None).settings
    job = queries.Job(Site(site), None, None, settings, counts(root))
    query = settings.query
    for name in queries.configured(query):
        count, read = job.counts[name], job.documents(name)
        pages = list(job.page_bytes(name, 0, count, root))
        assert pages, name
        for backend in indexing(name, query):
            made = []
            for documents in ([orjson.loads(page)["results"] for _, page in pages],
                              [read(page, offset, 0, count) for offset, page in pages]):
                indexer = backend.indexer(name, query, 0)
                for page in documents:
                    indexer.add(page)
                made.append(pickle.dumps(indexer.close()))
            assert made[0] == made[1], (name, backend.name)
    book = job.documents("books")(dict(job.page_bytes("books", 0, 1, root))[0], 0, 0, 1)[0]
    assert set(book) == {"title", "isbn", "price", "pages", "created_time", "authors", "translators", "publishers",
                         "categories"}
    assert set(book["authors"][0]) == {"fullName", "url"}  # (its filter's id, taken from the url; no id given)


@pytest.mark.parametrize("processes", [1, 2])
def test_the_parts_that_cut_the_pages_make_every_stretch_s_parts_as_the_pages_would(catalogue, tmp_path,
                                                                                    monkeypatch, processes):
    """A fresh build: the build's parts make every stretch's parts from the records they
    spooled, and the index step reads no default page (seen in one process); they are the
    bytes the index step makes from the pages where the parts make none (two processes: each
    part the stretches that begin in its pages, the seam's too), and so are the index files."""
    from generator.api.backends import configured
    from generator.sitebuild.part import Part
    from generator.sitebuild.pipeline import Job as BuildJob

    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch)
    monkeypatch.setattr(common, "BLOCK", 128)  # (runs of whole blocks: stretches cut by runs too)
    read = pages_read(monkeypatch)
    site, from_pages = tmp_path / "site", tmp_path / "from-pages"
    build(catalogue, site, processes=processes)
    assert read == []
    monkeypatch.setattr(Part, "_index_parts", lambda *args: None)
    build(catalogue, from_pages, processes=processes)
    if processes == 1:
        query = BuildJob.read(catalogue, None, 1, None).settings.query
        assert {name for name, _, _ in read} == set(configured(query)), read
    made = parts_bytes(site)
    assert len(made) > 12 and made == parts_bytes(from_pages)
    assert index_files(site) == index_files(from_pages)


def parts_bytes(site: Path) -> dict[str, bytes]:
    return {name: ((site / CURRENT).resolve() / STATE / name).read_bytes() for name in parts_files(site)}


def test_an_edit_of_fields_no_index_reads_writes_no_index_file(catalogue, tmp_path):
    """A book's `about` and an author's bio edited: their pages change, the stretches' parts
    are made again, and no index file is written (each linked as it was: the documents read
    back differ in nothing an indexer reads), as a fresh build makes them."""
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    build(catalogue, site)
    before = index_inodes(site)
    edit_rows(catalogue / "books.csv", lambda rows: rows[7].__setitem__(rows[0].index("about"), "دربارهٔ تازه"))
    edit_rows(catalogue / "authors.csv", lambda rows: rows[2].__setitem__(rows[0].index("bio"), "زندگی تازه"))
    build(catalogue, site)
    build(catalogue, fresh)
    assert index_inodes(site) == before
    assert index_files(site) == index_files(fresh)


def test_a_parts_file_gone_from_the_state_is_made_again(catalogue, tmp_path, monkeypatch):
    """A stretch's parts file missing from the published state (deleted by hand, a disk
    repaired): the next build makes that stretch's parts again instead of failing, and
    writes what a fresh build writes."""
    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch: a dozen of them)
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    build(catalogue, site, processes=2)
    gone = sorted(parts_files(site, "books"))[4]
    ((site / CURRENT).resolve() / STATE / gone).unlink()
    edit_rows(catalogue / "books.csv", lambda rows: rows[201].__setitem__(rows[0].index("title"), "عنوان تازه"))
    build(catalogue, site, processes=2)
    build(catalogue, fresh, processes=1)
    assert gone not in parts_files(site, "books")
    assert index_files(site) == index_files(fresh)


def test_books_added_at_the_end_edit_every_index_as_a_fresh_build_writes_it(catalogue, tmp_path, monkeypatch):
    """Books added at the end of books.csv (as a POST adds them: one, then forty, the last
    stretch longer and one more after it): every backend of the books edits its files (none
    is made again from every part: a million books' term index takes half a minute), the
    stretches before the last are taken over without a page of theirs read (each page
    written again, its count changed: the build's parts say their records are as they
    were), and the files are those a fresh build writes."""
    import uuid


    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch)
    read = pages_read(monkeypatch)
    finished = finishes(monkeypatch)
    site = tmp_path / "site"
    build(catalogue, site, processes=2)

    def added(count: int):
        def add(rows: list[list[str]]) -> None:
            header = rows[0]
            for n in range(count):
                row = list(rows[1 + n * 7 % 300])
                row[header.index("id")] = str(uuid.uuid4())
                row[header.index("isbn")] = str(9790000000000 + len(rows))
                row[header.index("title")] += f" تازه {len(rows)}"
                rows.append(row)
        return add
    for count in (1, 40):
        before = parts_files(site, "books")
        edit_rows(catalogue / "books.csv", added(count))
        finished.clear()
        read.clear()
        build(catalogue, site, processes=2)
        assert [backend for name, backend in finished if name == "books"] == []
        assert read and all(name == "books" and start >= 360 for name, start, _ in read), read  # (the last two stretches)
        after = parts_files(site, "books")
        assert 1 <= len([name for name in after if before.get(name) != after[name]]) <= 2
        same_indexes(site, build_fresh(catalogue, tmp_path))


def test_books_taken_away_at_the_end_with_their_stretch_make_the_indexes_a_fresh_build_writes(catalogue, tmp_path,
                                                                                                monkeypatch):
    """The last books of books.csv taken away, and with them the last stretch, the others as
    they were: not records added at the end, so the indexes are made again from the parts,
    and they are a fresh build's."""
    monkeypatch.setattr(stretches, "PART_PAGES", 3)  # (36 records a stretch)
    site = tmp_path / "site"
    build(catalogue, site)
    books = (site / CURRENT / "api/v1/books").resolve()
    count = json.loads((books / "index.json").read_bytes())["count"]
    last = (count - 1) // 36 * 36  # (where the last stretch starts)

    def take_away(rows: list[list[str]]) -> None:
        kept, at = count, rows[0].index("id")
        while kept > last:  # (rows from the end, until the published books are those before it)
            id = rows.pop()[at]
            kept -= (books / id[:2] / f"{id}.json").exists()
    edit_rows(catalogue / "books.csv", take_away)
    build(catalogue, site)
    assert json.loads((site / CURRENT / "api/v1/books/index.json").read_bytes())["count"] == last
    assert max(int(name.split("-")[-2]) for name in parts_files(site, "books")) == last - 36
    same_indexes(site, build_fresh(catalogue, tmp_path))


def same_indexes(site: Path, fresh: Path) -> None:
    """The index files of an edited site are a fresh build's, but a term index's postings
    files (and the leaves naming them), which an edit lays out by history: there, every key
    holds the same set in every field, the root and the leaves are the same."""
    got, want = index_files(site), index_files(fresh)
    term = "/_query/search/"
    assert {p: d for p, d in got.items() if term not in p} == {p: d for p, d in want.items() if term not in p}
    for folder in {path.split(term)[0] for path in want if term in path}:
        index = [{path[len(folder + term):]: data for path, data in files.items() if path.startswith(folder + term)}
                 for files in (got, want)]
        assert index[0][search_index.ROOT] == index[1][search_index.ROOT]
        assert {p for p in index[0] if p.startswith(search_index.LEAF_DIR)} == \
            {p for p in index[1] if p.startswith(search_index.LEAF_DIR)}
        specs = [field.spec for field in search_index.Root.decode(index[1][search_index.ROOT]).fields]
        assert holds(index[0], specs) == holds(index[1], specs)


def pages_read(monkeypatch) -> list[tuple[str, int, int]]:
    """The default pages the index step reads from now on: (collection, start, stop) a read."""
    from generator.sitebuild import queries

    read: list[tuple[str, int, int]] = []
    page_bytes = queries.Job.page_bytes

    def spied(job, name, start, stop, generation=None):
        read.append((name, start, stop))
        return page_bytes(job, name, start, stop, generation)
    monkeypatch.setattr(queries.Job, "page_bytes", spied)
    return read


def finishes(monkeypatch) -> list[tuple[str, str]]:
    """What every backend's finish makes from now on (collection, backend), in order."""
    finished: list[tuple[str, str]] = []
    for backend in BACKENDS:
        monkeypatch.setattr(backend, "finish", lambda name, *rest, finish=backend.finish, backend=backend.name: (
            finished.append((name, backend)), finish(name, *rest)))
    return finished


def build_fresh(catalogue: Path, tmp_path: Path) -> Path:
    fresh = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}"
    build(catalogue, fresh)
    return fresh
