"""The term index (api/backends/search_index.py) answers every search exactly as DRF does:
checked against a brute-force reference on the documents (DRF's join written as SQL runs
it: some choice of one related record per relation, or none, on which every term matches
in some field), alone and through the registry's select(), with random and adversarial
terms, on synthetic catalogues with and without a vocabulary, folded plainly and with
search_normalise: persian; whatever the plan chooses (postings, or checks on documents)."""
from __future__ import annotations

import csv
import itertools
import random
import zlib
from array import array
from pathlib import Path

import numpy
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from generator.api.backends import index_files, select, search_index as ti
from generator.api.backends.common import fold
from generator.api.backends.search import smart_terms
from generator.catalogue import synth
from index_holds import holds

SPECS = ["title", "=isbn", "^title", "authors__fullName", "^authors__slug", "publishers__company"]
MATCH = {"contains": lambda v, t: t in v, "startswith": lambda v, t: v.startswith(t), "exact": lambda v, t: v == t}


def books(data: Path) -> list[dict]:
    """The books of a synthetic catalogue as their documents embed what a search reads."""
    def rows(name: str) -> list[dict]:
        with (data / f"{name}.csv").open(encoding="utf-8") as f:
            return list(csv.DictReader(f))
    authors = {r["id"]: {"fullName": r["fullName"], "slug": r["slug"]} for r in rows("authors")}
    publishers = {r["id"]: {"company": r["company"]} for r in rows("publishers")}
    return [{"title": r["title"], "isbn": r["isbn"] or None,
             "authors": [authors[a] for a in r["authors"].split("|") if a],
             "publishers": [publishers[p] for p in r["publishers"].split("|") if p]} for r in rows("books")]


def reference(documents: list[dict], specs: list[str], terms: list[str], normalise: str | None) -> list[int]:
    """DRF's answer by brute force: a record is selected when, for some choice of one related
    record per relation (None where it has none), every term matches in some field."""
    fields = [ti.search_field(spec) for spec in specs]
    relations = sorted({f.relation for f in fields if f.relation})
    folded = [fold(term, normalise) for term in terms]
    found = []
    for position, document in enumerate(documents):
        options = [document.get(r) or [None] for r in relations]
        for choice in itertools.product(*options):
            row = dict(zip(relations, choice))

            def value(field):
                holder = document if field.relation is None else row[field.relation]
                raw = None if holder is None else holder.get(field.field)
                return None if raw is None else fold(str(raw), normalise)
            if all(any((v := value(f)) is not None and MATCH[f.lookup](v, t) for f in fields) for t in folded):
                found.append(position)
                break
    return found


class Built:
    """An index in memory, with the reads it serves counted."""

    def __init__(self, documents: list[dict], specs: list[str], normalise: str | None = None,
                 inline_max: int = ti.INLINE_MAX, processes: int = 1) -> None:
        self.documents, self.specs, self.normalise = documents, specs, normalise
        writer = ti.TermIndexWriter(specs, len(documents), inline_max)
        for first in range(0, len(documents), 7):  # (runs, as the build's pages come)
            writer.add_documents(first, documents[first:first + 7], self.fold)
        self.files: dict[str, bytes] = {}
        writer.finish(self.files.__setitem__, processes)
        self.readers = writer.readers
        self.checked: list[int] = []

    def fold(self, text: str) -> str:
        return fold(text, self.normalise)

    def values(self, positions: list[int]) -> dict[int, dict]:
        self.checked.extend(positions)
        return {p: ti.document_values(self.documents[p], self.readers, self.fold) for p in positions}

    def search(self, terms: list[str], **plan) -> ti.Found:
        return ti.search(self.files.get, [self.fold(t) for t in terms], self.values, **plan)


PLANS = [{}, {"check_at": 0, "page_size": 1}, {"check_at": 10 ** 9}]  # as it chooses; sets first; documents first
INLINE = [ti.INLINE_MAX, 0]  # (0: every set in a postings file, so that the plan has a choice)


def terms_from(documents: list[dict], rng: random.Random, count: int) -> list[list[str]]:
    """Random requests' terms: words, pieces of words (letters, pairs), prefixes, whole
    values, phrases, white space, empty, several at once (some from two authors of a book)."""
    texts = [t for d in documents for t in [d["title"], d["isbn"] or ""] + [a["fullName"] for a in d["authors"]]
             + [a["slug"] for a in d["authors"]] + [p["company"] for p in d["publishers"]]]

    def one() -> str:
        text = rng.choice(texts)
        words = text.split() or [text]
        word = rng.choice(words)
        pick = rng.randrange(10)
        if pick == 0:
            return word[:rng.randint(1, 4)]
        if pick == 1:
            start = rng.randrange(len(word) or 1)
            return word[start:start + rng.randint(1, 4)]
        if pick == 2:
            return text
        if pick == 3:
            start = rng.randrange(len(text) or 1)
            return text[start:start + rng.randint(2, 12)]
        if pick == 4:
            return rng.choice(["", " ", "ی", "ا", "0", "97", "-", "x", "زz", " آ", "ا "])
        return word
    requests = []
    for _ in range(count):
        requests.append([one() for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 5)))])
    for document in documents[:40]:  # (two authors' words: the join decides)
        if len(document["authors"]) > 1:
            first, second = document["authors"][:2]
            requests.append([first["fullName"].split()[0], second["fullName"].split()[-1]])
    return requests


@pytest.fixture(scope="module", params=[None, 3000], ids=["few-words", "vocabulary"])
def catalogue(request, tmp_path_factory) -> list[dict]:
    data = tmp_path_factory.mktemp("synth") / "data"
    synth.write(data, 300, seed=7, vocabulary=request.param)
    return books(data)


# The index as the writer's constants cut it, and cut small: leaves of about two keys, about
# every other one starting a branch (lookups across leaves and branches, a root of branches);
# postings files of a few sets, ended by every rule (a tag, the most bytes, a set alone).
SHAPES = {"as-built": {}, "branches": {"LEAF_MASK": 1, "BRANCH_MASK": 1},
          "postings": {"CHUNK_MIN": 48, "CHUNK_MAX": 160, "CHUNK_ALONE": 96, "CHUNK_MASK": 1}}


@pytest.fixture(params=list(SHAPES))
def shape(request, monkeypatch) -> str:
    for name, value in SHAPES[request.param].items():
        monkeypatch.setattr(ti, name, value)
    return request.param


@pytest.mark.parametrize("normalise", [None, "persian"])
def test_random_terms_answer_as_drf(catalogue, normalise, shape):
    """And each answer says how many records it checked on their documents: those it read."""
    built = [Built(catalogue, SPECS, normalise, inline) for inline in INLINE]
    assert ti.Root.decode(built[0].files[ti.ROOT]).levels == (shape == "branches")
    rng = random.Random(11)
    for terms in terms_from(catalogue, rng, 100):
        expected = reference(catalogue, SPECS, terms, normalise)
        for plan, index in itertools.product(PLANS, built):
            index.checked.clear()
            found = index.search(terms, **plan)
            assert list(found.records) == expected, (terms, plan)
            assert found.checked == len(index.checked), (terms, plan)


def test_the_registry_s_select_answers_as_drf(catalogue):
    """select() over the files the build's backends write, with the documents it checks on."""
    specs = ["title", "=isbn", "authors__fullName", "publishers__company"]
    settings_ = {"search": {"books": specs}}
    files = index_files("books", settings_, catalogue, {}.__getitem__)
    for terms in terms_from(catalogue, random.Random(5), 120):
        raw = " ".join('"' + t.replace('"', "") + '"' for t in terms)
        quoted = smart_terms(raw)
        if not quoted:
            continue
        selection = select(files.get, "books", [("search", raw)], settings_, len(catalogue),
                           lambda positions: {p: catalogue[p] for p in positions})
        assert list(selection.positions) == reference(catalogue, specs, quoted, None), quoted


VALUE_CHARS = "abAB ک كيیa\u200c\u00a0\u2003\t-0۰\x00\x01"  # (Persian folding, ZWNJ, white space of several kinds, NUL)
values = st.text(VALUE_CHARS, max_size=9)


@st.composite
def documents(draw) -> list[dict]:
    people = draw(st.lists(st.one_of(st.none(), values), min_size=1, max_size=5))
    made = []
    for _ in range(draw(st.integers(1, 30))):
        chosen = draw(st.lists(st.integers(0, len(people) - 1), max_size=3))
        made.append({"title": draw(st.one_of(st.none(), values)), "isbn": draw(st.one_of(st.none(), values)),
                     "authors": [{"fullName": people[i], "slug": people[-1 - i]} for i in chosen],
                     "publishers": [{"company": draw(values)} for _ in range(draw(st.integers(0, 2)))]})
    return made


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.lists(st.text(VALUE_CHARS, max_size=4), min_size=1, max_size=4),
       st.sampled_from([None, "persian"]), st.sampled_from(PLANS), st.sampled_from(INLINE))
def test_adversarial_values_and_terms(made, terms, normalise, plan, inline):
    built = Built(made, SPECS, normalise, inline)
    assert list(built.search(terms, **plan).records) == reference(made, SPECS, terms, normalise)


SPACED_TITLES = ["a  w", "a w", "xa\tw y", " w z", "w  ", "ab  wq", "q \u00a0w", "a\u2003 w  b"]
SPACED_TERMS = ["  w", " w", "a  w", "a w", "a ", "w  ", "\tw", "a\tw", "  w ", " \u00a0w", "\u2003 w  ", "w  b"]


@pytest.mark.parametrize("term", SPACED_TERMS)
def test_terms_with_runs_of_white_space_as_quotes_keep_them(term):
    """A phrase's white space first, last, several characters long or of several kinds."""
    made = [{"title": title, "isbn": None, "authors": [], "publishers": []} for title in SPACED_TITLES]
    expected = reference(made, ["title"], [term], None)
    for index, plan in itertools.product([Built(made, ["title"], None, inline) for inline in INLINE], PLANS):
        assert list(index.search([term], **plan).records) == expected, plan


def test_a_rare_word_reads_the_root_a_branch_and_a_leaf(monkeypatch):
    made = [{"title": f"w{n} common", "isbn": None, "authors": [], "publishers": []} for n in range(3000)]
    for branch_mask, objects in ((0xFFFFFFFF, 2), (1, 3)):  # (one branch: the root lists the leaves; several)
        monkeypatch.setattr(ti, "BRANCH_MASK", branch_mask)
        built = Built(made, ["title"])
        read: dict[str, int] = {}

        def reader(path: str) -> bytes | None:
            data = built.files.get(path)
            read[path] = len(data or b"")
            return data
        found = ti.search(reader, ["w1234"], built.values)
        assert list(found.records) == [1234]
        assert found.index_objects == len(read) == objects and found.checked == 0
        assert found.index_bytes == sum(read.values()) < 8000 * objects  # (no file lists every leaf)


def test_a_term_is_not_looked_up_in_a_field_whose_values_lack_one_of_its_characters(monkeypatch):
    """A word (letters) reads no key of the `=isbn` field (digits), an ISBN none of the title's
    (letters): each field's alphabet is in the root. A letter some ISBN holds (X) is looked up."""
    monkeypatch.setattr(ti, "LEAF_MASK", 0)  # (every key a leaf of its own: a leaf read is a key read)
    made = [{"title": "w" + "".join("abcdefghij"[int(d)] for d in str(n)) + " common",
             "isbn": f"97800{n:05d}" + ("X" if n == 7 else ""), "authors": [], "publishers": []} for n in range(300)]
    built = Built(made, SPECS)
    assert ti.Root.decode(built.files[ti.ROOT]).alphabets == [" abcdefghijmnow", "0123456789x", " abcdefghijmnow", "", "", ""]

    def kinds_read(term: str) -> set[str]:
        read: list[str] = []

        def reader(path: str) -> bytes | None:
            read.append(path)
            return built.files.get(path)
        found = ti.search(reader, [term], built.values)
        assert list(found.records) == reference(made, SPECS, [term], None)
        return {key[:1].decode() for path in read if path.startswith(ti.LEAF_DIR)
                for key, _ in ti._key_list(built.files[path], len(ti.LEAF_MAGIC), ti._stored_pieces)}
    assert kinds_read("wbcd") == {ti.SUFFIX, ti.HEAD}  # (title and ^title)
    assert kinds_read("9780000123") == {ti.EXACT}
    assert kinds_read("x") == {ti.EXACT}
    assert kinds_read("a") == {ti.GRAM}


def test_thirty_words_read_few_files():
    """Thirty words: a few leaves and postings files, then (candidates few) their documents."""
    made = [{"title": " ".join(f"w{(n * 7 + k) % 500}" for k in range(30)), "isbn": None, "authors": [],
             "publishers": []} for n in range(5000)]
    built = Built(made, SPECS, inline_max=0)
    terms = made[77]["title"].split()
    found = built.search(terms)
    assert list(found.records) == reference(made, SPECS, terms, None)
    assert found.index_objects <= 12 and found.checked <= 12


def test_an_edit_rewrites_few_files(tmp_path):
    data = tmp_path / "data"
    synth.write(data, 3000, seed=7, vocabulary=20000)
    made = books(data)
    before = Built(made, SPECS).files
    made[1500] = dict(made[1500], title=made[42]["title"] + " " + made[7]["title"])
    after = Built(made, SPECS).files
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    # (issue 40 asks for 30 at most; the pair keys a phrase is answered from, each suffix of a token with
    # the white space and the token after it, about double a title's keys: 42 files here, 21 without them)
    assert 0 < len(changed) <= 45, sorted(changed)


def test_an_empty_collection():
    built = Built([], SPECS)
    assert not built.search(["x"]).records and not built.search([""]).records


def test_keys_sharing_a_long_start_with_the_key_before_them():
    """A key list writes what a key shares with the one before it, and the rest, in one byte
    each below 0x80, as varints from there: words of long runs of one letter, their suffixes'
    keys sharing every length from 3 bytes to past 128 with their neighbours."""
    made = [{"title": "q" * n + end, "isbn": None, "authors": [], "publishers": []}
            for n in range(120, 140) for end in "ab"]
    built = Built(made, SPECS)
    for terms in (["q" * 127 + "a"], ["q" * 128 + "b"], ["q" * 129], ["q" * 126 + "ab"]):
        assert list(built.search(terms).records) == reference(made, SPECS, terms, None), terms


@pytest.mark.parametrize("inline", INLINE)
def test_a_piece_s_bound_is_the_least_one_less_than_a_power_of_two_at_or_above_its_records(catalogue, inline):
    """What the plan ranks terms by before reading a set: each piece a leaf tells of holds at
    most `records` records, the least 2**k - 1 that many or more (the set's size class)."""
    files = Built(catalogue, SPECS, inline_max=inline).files
    held, fields = holds(files, SPECS), ti.index_fields(SPECS)
    for _, leaf in ti._all_leaves(files.get, ti.Root.decode(files[ti.ROOT]))[0]:
        for key, pieces in ti._key_list(files[ti.leaf_file(leaf)], len(ti.LEAF_MAGIC), ti._pieces):
            for piece in pieces:
                codes = held[key, piece.field][1]
                relation = fields[piece.field].relation is not None
                records = len({code >> ti.ELEMENT_BITS for code in codes}) if relation else len(codes)
                assert piece.records == (1 << records.bit_length()) - 1, (key, piece)


def test_a_fresh_index_s_postings_files_end_where_the_format_says(catalogue, monkeypatch):
    """Every set in a postings file (no set inline), the files cut small: each file holds a
    run of sets in key order, numbered from 0, and ends after the first set where the
    module's docstring says a file ends (a set over CHUNK_ALONE bytes alone; once it holds
    CHUNK_MIN bytes, after a set whose tag's CRC-32 has its low CHUNK_BITS bits zero; once
    it holds CHUNK_MAX bytes; after the sets of a key whose CRC-32 has its low SPLIT_BITS
    bits zero), never before; the same where a file is filled across the writer's batches."""
    for name, value in SHAPES["postings"].items():
        monkeypatch.setattr(ti, name, value)
    monkeypatch.setattr(ti, "SPLIT_MASK", 0x3F)  # (a split every 64 keys or so: some among these)
    monkeypatch.setattr(ti, "KEY_BATCH", 5)  # (files filled across the writer's batches of keys)
    files = Built(catalogue, SPECS, inline_max=0).files
    keys, sets = [], []  # (every key; each set's key, tag, file and ordinal, in key order)
    for _, leaf in ti._all_leaves(files.get, ti.Root.decode(files[ti.ROOT]))[0]:
        for key, pieces in ti._key_list(files[ti.leaf_file(leaf)], len(ti.LEAF_MAGIC), ti._stored_pieces):
            keys.append(key)
            sets += [(key, key + b"\x00" + bytes(ti._varint(p.field)), p.name, p.ordinal) for p in pieces]
    runs = [list(run) for _, run in itertools.groupby(sets, key=lambda held: held[2])]
    assert len({run[0][2] for run in runs}) == len(runs), "a postings file's sets are one run of keys"
    splits = [key for key in keys if zlib.crc32(key) & ti.SPLIT_MASK == 0]
    assert splits, "no key ends a range: the test cannot see that rule"

    def sizes(name: int) -> list[int]:
        data = files[ti.postings_file(name)]
        assert data[:4] == ti.POSTINGS_MAGIC
        sets = ti._sets(data)
        assert data.endswith(b"".join(sets))  # (the sets fill the file to its end)
        return [len(held) for held in sets]

    size_of = {}
    for run in runs:
        size = sizes(run[0][2])
        assert [ordinal for *_, ordinal in run] == list(range(len(size)))
        size_of.update(zip(run, size))

    def ends_after(run: list, at: int, size: list[int], following: tuple | None) -> bool:
        held, (key, tag, _, _) = sum(size[:at + 1]), run[at]
        next_key = following[0] if following else None
        return (size[at] > ti.CHUNK_ALONE or held >= ti.CHUNK_MAX
                or held >= ti.CHUNK_MIN and zlib.crc32(tag) & ti.CHUNK_MASK == 0
                or next_key is not None and next_key != key and any(key <= split < next_key for split in splits)
                or following is not None and size_of[following] > ti.CHUNK_ALONE)

    for number, run in enumerate(runs):
        size = [size_of[held] for held in run]
        following = runs[number + 1][0] if number + 1 < len(runs) else None
        for at in range(len(run) - 1):
            assert not ends_after(run, at, size, run[at + 1]), (number, at, size)
        assert following is None or ends_after(run, len(run) - 1, size, following), (number, size)
    assert any(len(run) > 1 for run in runs) and any(size_of[run[0]] > ti.CHUNK_ALONE for run in runs)


def test_processes_cut_the_keys_where_one_writer_ends_a_leaf_with_the_writer_s_constants(monkeypatch):
    """The keys are cut in ranges at keys whose CRC-32 has its low SPLIT_BITS bits zero, where
    a leaf ends too (LEAF_BITS fewer): the ranges written apart are one writer's files, with
    the constants as they are. The CRC-32 of "Szzagdi" (the suffix key of every record's first
    word, so the first token, which the writer's sample of the keys holds; late in key order)
    ends in the twelve bits 0x001: no leaf, and no range, ends there."""
    assert zlib.crc32(b"Szzagdi") & 0xFFF == 1
    monkeypatch.setattr(ti, "PARALLEL_MIN", 1)
    made = [{"title": f"zzagdi w{n} zzz{n}", "isbn": None, "authors": [], "publishers": []} for n in range(300)]
    assert Built(made, ["title"], processes=3).files == Built(made, ["title"]).files


def test_two_indexes_written_side_by_side_by_processes_are_each_one_writer_s(monkeypatch):
    """Two collections' term indexes finished at once, by threads of one process (the build
    finishes a collection while the next is read), each forking its writer's processes: each
    process writes its own index's ranges, as one writer alone would (what a process reads is
    given to it as it is forked, not left where the other's would replace it)."""
    import threading

    monkeypatch.setattr(ti, "PARALLEL_MIN", 1)
    monkeypatch.setattr(ti, "LEAF_MASK", 3)  # (many ranges, each ending where a leaf does)
    monkeypatch.setattr(ti, "SPLIT_MASK", 7)
    indexes = [[{"title": f"{word}{n} w{n % 7}", "isbn": None, "authors": [], "publishers": []} for n in range(400)]
               for word in ("alpha", "beta")]
    together = threading.Barrier(2)
    cut = ti._ranges

    def ranges(*args):  # (both threads about to fork their processes at once)
        found = cut(*args)
        together.wait(timeout=60)
        return found

    def writer(made: list[dict]) -> ti.TermIndexWriter:
        made_by = ti.TermIndexWriter(SPECS, len(made))
        made_by.add_documents(0, made, str.lower)
        return made_by
    alone: list[dict[str, bytes]] = [{}, {}]
    for made, files in zip(indexes, alone):
        writer(made).finish(files.__setitem__, processes=1)
    monkeypatch.setattr(ti, "_ranges", ranges)
    for _ in range(3):
        written: list[dict[str, bytes]] = [{}, {}]
        threads = [threading.Thread(target=writer(made).finish, args=(files.__setitem__, 2))
                   for made, files in zip(indexes, written)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert written == alone


def test_runs_merged_and_ranges_written_by_processes_give_the_same_files(catalogue, monkeypatch):
    """The build's way (runs of records read by writers of their own, merged; the keys cut
    in ranges made and written by processes, front-coded a batch at a time; every set encoded
    with vector operations) writes the bytes of one writer given every record, its sets
    encoded in a loop; so it does where the ranges' names collide (a range named again)."""
    specs = SPECS
    monkeypatch.setattr(ti, "LEAF_MASK", 3)  # (shares end at keys that end a leaf: small ones, many)
    monkeypatch.setattr(ti, "SPLIT_MASK", 7)
    whole = Built(catalogue, specs).files
    monkeypatch.setattr(ti, "VECTOR_MIN", 0)
    monkeypatch.setattr(ti, "UNION_ALONE", 2)  # (most keys of several codes united alone, in bitmaps)
    monkeypatch.setattr(ti, "PARALLEL_MIN", 1)
    monkeypatch.setattr(ti, "KEY_BATCH", 3)  # (keys front-coded a few at once: a batch starts within a leaf)

    def merged() -> ti.TermIndexWriter:
        writer = ti.TermIndexWriter(specs, len(catalogue))
        for first, stop in ((0, 100), (100, 101), (101, len(catalogue))):
            run = ti.TermIndexWriter(specs, 0, first=first)
            run.add_documents(first, catalogue[first:stop], str.lower)
            writer.merge(first, run.added, run.columns)
        return writer
    files: dict[str, bytes] = {}
    forms = []
    encode = ti._encode_long_set

    def noted(positions, out):
        start = len(out)
        encode(positions, out)
        forms.append(out[start] == ti.BITMAP)
    monkeypatch.setattr(ti, "_encode_long_set", noted)
    merged().finish(files.__setitem__, processes=1)
    assert files == whole
    assert any(forms) and not all(forms)  # (both forms made with vector operations)
    writer = merged()
    assert len(ti._ranges(ti._KeyTable.of(writer.fields, writer.columns), 3)) == 3
    files.clear()
    writer.finish(files.__setitem__, processes=3)
    assert files == whole
    name = ti._name
    for tags in (b"", b"\x00"):  # (every name from 2 values up; only postings files' names, their tags NUL's)
        monkeypatch.setattr(ti, "_name", lambda taken, data: name(taken, bytes([data[0] % 2]) if tags in data else data))
        whole = Built(catalogue, specs).files
        files.clear()
        merged().finish(files.__setitem__, processes=3)
        assert files == whole


@pytest.mark.parametrize("share", [ti.UNION_SHARE, 0])
def test_a_keys_sources_united_alone_give_its_codes(catalogue, monkeypatch, share):
    """_KeyTable.encoded_union (the sources of a key of many codes united alone: in a bitmap,
    or sorted where a bitmap would be mostly empty; share 0: always sorted) encodes each code
    of the entry's sources once, in order, a relation field's too, as encode_postings does."""
    monkeypatch.setattr(ti, "UNION_SHARE", share)
    writer = ti.TermIndexWriter(SPECS, len(catalogue))
    writer.add_documents(0, catalogue, str.lower)
    table = ti._KeyTable.of(writer.fields, writer.columns)
    several = numpy.flatnonzero(numpy.diff(table.via) > 1).tolist()
    assert several and any(writer.relations[table.numbers[at]] for at in several)
    for at in several:
        relation = writer.relations[table.numbers[at]]
        assert table.encoded_union(at, relation) == ti.encode_postings(sorted(table.codes_of(at)), relation)


def python_cut(value: str) -> dict[str, set[str]]:
    """What _split makes of one value, as plain Python says it (the index's module docstring)."""
    parts = ti.WHITE.split(value)  # (tokens at even places: "" before or after white space at an end)
    return {"any": {""}, "wholes": {value}, "tokens": set(value.split()),
            "heads": {value.split(None, 1)[0]} if value and not value[0].isspace() else set(),
            "pairs": {"".join(parts[at:at + 4]) for at in range(0, len(parts) - 2, 2) if parts[at] or parts[at + 2]}}


@settings(max_examples=200)
@given(st.lists(st.text("ab\u06a9 \t\n\u00a0\u2003\u3000\x1c\x85\u200b", max_size=12), max_size=8))
def test_values_cut_by_columns_as_python_cuts_each(texts):
    """_split's tokens, pairs and heads of a column's values (regular expressions over the
    whole column) are each value's as str.split() and the pairs' definition make them, each
    once: white space of eight kinds (and U+200B, which is not), first, last, alone, in runs."""
    import polars as pl
    values = pl.DataFrame({"v": texts, "code": range(len(texts))}, schema={"v": pl.String, "code": pl.Int64}).lazy()
    for kind in python_cut("").keys():
        found = ti._split(pl, values, kind).collect()
        pairs = list(zip(found["code"].to_list(), found["t"].to_list()))
        assert len(pairs) == len(set(pairs)), kind
        assert set(pairs) == {(code, text) for code, value in enumerate(texts) for text in python_cut(value)[kind]}, kind


@settings(max_examples=200)
@given(st.binary(max_size=200), st.lists(st.binary(max_size=4).map(lambda b: b.replace(b"\x01", b"\x00")),
                                         min_size=1, unique=True))
def test_keys_front_coded_together_share_what_each_pair_shares(prefix, tails):
    """The writer's shared prefixes (vector operations, a batch of keys) are each key's with
    the one before it, NUL bytes and prefixes longer than a word (8 bytes) included."""
    keys = sorted(prefix + tail for tail in tails)
    sizes = numpy.array([len(key) for key in keys])
    words = ti._words(b"".join([*keys, bytes(ti.WORD)]))
    shared = ti._shared_prefixes(words, numpy.cumsum(sizes) - sizes, sizes)
    assert shared.tolist() == [ti._shared(a, b) for a, b in zip(keys, keys[1:])]


@settings(max_examples=150)
@given(st.sampled_from([5, 50, 3000, 200000, 9_000_000]), st.booleans(), st.data())
def test_many_sets_encoded_together_as_each_alone(count, relation, data):
    """encode_many's bytes and record counts are encode_postings' of each set: lists, bitmaps
    (a collection of a few records, a dense run), positions past 2**23, elements past 126,
    empty elements; groups of 128 records or more, 128 groups or more (varints of two bytes)."""
    spread = st.builds(lambda first, size, step: sorted({min(first + n * step, count - 1) for n in range(size)}),
                       st.integers(0, count - 1), st.integers(1, 300), st.sampled_from([1, 3, 65536]))
    sets = []
    for _ in range(data.draw(st.integers(1, 12))):
        records = data.draw(st.one_of(st.lists(st.integers(0, count - 1), min_size=1, max_size=20, unique=True),
                                      spread))
        elements = st.sampled_from([0, 0, 1, 2, 5, 130])
        codes = sorted({record << ti.ELEMENT_BITS | data.draw(elements) for record in records for _ in range(2)}
                       if relation else records)
        sets.append(data.draw(st.sampled_from([codes, array("Q" if relation else "I", codes)])))
    flat = numpy.array([code for codes in sets for code in codes], dtype=numpy.int64)
    sizes = numpy.array([len(codes) for codes in sets], dtype=numpy.int64)
    encoded = ti.encode_many(flat, sizes, relation)
    assert [(encoded.data[start:start + size].tobytes(), held) for start, size, held
            in zip(encoded.starts.tolist(), encoded.sizes.tolist(), encoded.records.tolist())] == \
        [ti.encode_postings(codes, relation) for codes in sets]
    assert encoded.starts.tolist() == numpy.cumsum([0, *encoded.sizes.tolist()])[:-1].tolist()  # (one after another)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 16_000_000), st.sampled_from([0, 1, 5, 130]), st.booleans()),
                min_size=1, max_size=20),
       st.sampled_from([1, 50, 72, 73, 100, 70_000, 8_388_609, 16_000_001]))
def test_sets_of_one_record_written_at_once_are_encode_postings_bytes(ones, count):
    """The writer's sets of one code written at once (_encode_ones) are encode_postings' bytes,
    and _listed_one gives it exactly those that are a list of one group with a high of one
    byte, at element 0 in a relation field (not a bitmap, shorter for a record among the first
    72; not a position past 2**23; not an element past the first)."""
    codes = numpy.array([(at % count) << ti.ELEMENT_BITS | element if relation else at % count
                         for at, element, relation in ones], dtype=numpy.int64)
    relations = numpy.array([relation for _, _, relation in ones])
    picked = ti._listed_one(codes, relations)
    encoded = ti._encode_ones(codes[picked], relations[picked])
    assert [(encoded.data[start:start + size].tobytes(), held) for start, size, held
            in zip(encoded.starts.tolist(), encoded.sizes.tolist(), encoded.records.tolist())] == \
        [ti.encode_postings([code], relation) for code, relation in
         zip(codes[picked].tolist(), relations[picked].tolist())]
    for code, relation, chosen in zip(codes.tolist(), relations.tolist(), picked.tolist()):
        data = ti.encode_postings([code], relation)[0]
        assert chosen == (len(data) == 6 + relation and data[relation] == ti.LIST and (not relation or data[0] == 1))


@settings(max_examples=100)
@given(st.lists(st.lists(st.lists(st.integers(0, 5000), min_size=1, max_size=40), min_size=1, max_size=4),
                min_size=1, max_size=8), st.data())
def test_entries_codes_united_are_each_code_once_in_order(entries, data):
    """_KeyTable.united (a suffix's or letter's codes from its sources') gives each entry of a
    run of them that it is asked for its sources' every code once, sorted, and how many;
    `encoded_union` (one entry's, in a bitmap) the same, encoded; `totals` the codes of their sources."""
    runs = [sorted(set(run)) for sources in entries for run in sources]
    sizes = [len(sources) for sources in entries]
    held = numpy.cumsum([0, *map(len, runs)])
    table = ti._KeyTable(b"", numpy.zeros(len(entries) + 1, numpy.int64), numpy.ones(len(entries), bool),
                         numpy.zeros(len(entries), numpy.int64), numpy.cumsum([0, *sizes]),
                         numpy.arange(len(runs)), numpy.array([c for run in runs for c in run], numpy.int64), held)
    start = data.draw(st.integers(0, len(entries) - 1))
    stop = data.draw(st.integers(start + 1, len(entries)))
    kept = numpy.array(data.draw(st.lists(st.booleans(), min_size=stop - start, max_size=stop - start)))
    codes, counts = table.united(start, stop, kept)
    want = [sorted({code for run in sources for code in run}) if keep else []
            for sources, keep in zip(entries[start:stop], kept)]
    assert counts.tolist() == [len(codes) for codes in want]
    assert codes.tolist() == [code for codes in want for code in codes]
    assert table.totals(start, stop).tolist() == [sum(map(len, sources)) for sources in [
        [sorted(set(run)) for run in sources] for sources in entries[start:stop]]]
    for at, sources in enumerate(entries[start:stop], start):
        assert table.encoded_union(at, False) == ti.encode_postings(sorted({code for run in sources for code in run}),
                                                                    False)


def test_a_term_is_checked_on_documents_where_that_reads_fewer_files():
    """The plan's rule (_check_instead): a term is checked on the candidates' documents when
    they are a page's worth or fewer, or lie on no more pages than the term has files to read;
    read from its sets otherwise, and never when it has nothing left to read."""
    unread = {"post/00000001.bin", "post/00000002.bin"}
    assert ti._check_instead(unread, ti.Records.of(range(12), 1000), 12, 12)  # (a page's worth)
    assert ti._check_instead(unread, ti.Records.of(range(24), 1000), 12, 12)  # (two pages: two files)
    assert not ti._check_instead(unread, ti.Records.of(range(0, 36), 1000), 12, 12)  # (three pages)
    assert not ti._check_instead(set(), ti.Records.of(range(3), 1000), 12, 12)
