"""A term index edited (api/backends/search_index.py's edit) holds what a fresh build's holds: every
key's set in every field, the same leaves cut at the same keys under the same names, the
same root; searches answer as DRF does; and it writes only the files that changed."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings, strategies as st

from generator.api.backends import search_index as ti
from generator.catalogue import synth
from index_holds import holds
from test_search_index import SPECS, Built, books, documents, reference, shape, terms_from  # noqa: F401 (a fixture)


def edited(before: Built, now: list[dict]) -> dict[str, bytes]:
    """`before`'s files edited into those of `now` (its records, some changed, and maybe
    some added after them: their values before, none's), as a build does (an index without
    a key is made again)."""
    none = ti.document_values({}, before.readers, before.fold)
    changes = [(p, before.values([p])[p] if p < len(before.documents) else none,
                ti.document_values(d, before.readers, before.fold))
               for p, d in enumerate(now) if p >= len(before.documents) or d != before.documents[p]]
    files = ti.edit(before.files.get, before.specs, len(now), changes, lambda: alphabets(now, before))
    if files is None:
        assert not holds(before.files, before.specs), "only an index without a key is made again"
        return Built(now, before.specs).files
    made = {**before.files, **files}
    return {path: data for path, data in made.items() if data is not None}


def alphabets(documents: list[dict], like: Built) -> list[str]:
    """The fields' alphabets a fresh build of `documents` writes (as `like` folds them)."""
    writer = ti.TermIndexWriter(like.specs, len(documents))
    writer.add_documents(0, documents, like.fold)
    return ti.alphabets(writer.fields, [writer.columns])


def same_index(edited_files: dict[str, bytes], fresh: Built) -> None:
    assert edited_files[ti.ROOT] == fresh.files[ti.ROOT]  # (the same leaves, first keys and names)
    leaves = {path for path in edited_files if path.startswith(ti.LEAF_DIR)}
    assert leaves == {path for path in fresh.files if path.startswith(ti.LEAF_DIR)}
    branches = {path: data for path, data in edited_files.items() if path.startswith(ti.BRANCH_DIR)}
    assert branches == {path: data for path, data in fresh.files.items() if path.startswith(ti.BRANCH_DIR)}
    assert holds(edited_files, fresh.specs) == holds(fresh.files, fresh.specs)


@settings(max_examples=60,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # (shape: one a test)
@given(documents(), st.data())
def test_any_edit_holds_what_a_fresh_build_holds(shape, made, data):
    before = Built(made, SPECS)
    now = list(made)
    for position in data.draw(st.lists(st.integers(0, len(made) - 1), max_size=4)):
        now[position] = data.draw(documents())[0]
    now += data.draw(documents())[:data.draw(st.integers(0, 2))]  # (records added)
    files = edited(before, now)
    fresh = Built(now, SPECS)
    same_index(files, fresh)
    for terms in data.draw(st.lists(st.lists(st.sampled_from(["a", "ab", "A b", "ک", "ی", "", " ", "0", "ba"]),
                                             min_size=1, max_size=2), max_size=4)):
        assert list(ti.search(files.get, [before.fold(t) for t in terms], fresh.values).records) == \
            reference(now, SPECS, terms, None), terms


def test_an_edit_of_one_title_writes_a_few_dozen_files(tmp_path):
    """A title edited in a catalogue with a vocabulary: its keys' leaves and postings files (as
    many as a fresh build changes: 42), the root; every other file kept as it was."""
    synth.write(tmp_path / "data", 3000, seed=7, vocabulary=20000)
    made = books(tmp_path / "data")
    before = Built(made, SPECS)
    now = list(made)
    now[1500] = dict(made[1500], title=made[42]["title"] + " " + made[7]["title"])
    files = edited(before, now)
    same_index(files, Built(now, SPECS))
    changed = {p for p in files.keys() | before.files.keys() if files.get(p) != before.files.get(p)}
    assert 0 < len(changed) <= 45, sorted(changed)


def test_a_set_that_outgrows_its_leaf_gets_a_file_and_comes_back(shape):
    """A word of one book, given to forty more: its set leaves the leaf for a postings file of
    its own; taken away again, the file goes and the index is as it was."""
    rng = random.Random(3)
    made = [{"title": f"w{rng.randrange(400)} w{rng.randrange(400)}", "isbn": None, "authors": [], "publishers": []}
            for _ in range(2000)]
    made[5] = dict(made[5], title="یگانه")
    before = Built(made, SPECS)
    now = [dict(d, title=d["title"] + " یگانه") if p % 50 == 7 else d for p, d in enumerate(made)]
    grown = edited(before, now)
    same_index(grown, Built(now, SPECS))
    posted = set(grown) - set(before.files)
    assert any(path.startswith(ti.POSTINGS_DIR) for path in posted), posted
    back = Built(now, SPECS)
    back.files = grown
    assert edited(back, made) == before.files
    for terms in terms_from(made, random.Random(1), 30):
        assert list(ti.search(grown.get, [before.fold(t) for t in terms], back.values).records) == \
            reference(now, SPECS, terms, None)


def test_another_count_or_fields_or_format_is_made_again():
    made = [{"title": "a b", "isbn": None, "authors": [], "publishers": []}] * 3
    before = Built(made, SPECS)
    held = lambda: alphabets(made, before)  # noqa: E731
    assert ti.edit(before.files.get, SPECS, 2, [], held) is None
    assert ti.edit(before.files.get, SPECS[:2], 3, [], lambda: held()[:2]) is None
    assert ti.edit({}.get, SPECS, 3, [], held) is None
    old = dict(before.files, **{ti.ROOT: before.files[ti.ROOT].replace(b"TIR1" + bytes([ti.VERSION]), b"TIR1\x03", 1)})
    assert ti.edit(old.get, SPECS, 3, [], held) is None
    assert ti.edit(before.files.get, SPECS, 3, [], held) == {}
    now = before.values([0])[0] | {"title": ["a c"]}
    leafless = {path: data for path, data in before.files.items() if not path.startswith(ti.LEAF_DIR)}
    assert ti.edit(leafless.get, SPECS, 3, [(0, before.values([0])[0], now)], held) is None  # (a file missing)


def test_an_edit_of_a_small_collection_writes_a_fresh_build_s_bytes():
    """A set of one record among the first 72 is a bitmap (shorter than its list): an edit
    writes it as a fresh build does, every file the same bytes."""
    made = [{"title": f"w{n} common", "isbn": None, "authors": [], "publishers": []} for n in range(50)]
    now = [dict(document) for document in made]
    now[10]["title"] = "zz common"
    assert edited(Built(made, SPECS), now) == Built(now, SPECS).files


def test_a_missing_branch_is_made_again(monkeypatch):
    monkeypatch.setattr(ti, "LEAF_MASK", 0)  # (every key a leaf of its own, every leaf a branch)
    monkeypatch.setattr(ti, "BRANCH_MASK", 0)
    made = [{"title": "a b", "isbn": None, "authors": [], "publishers": []}] * 3
    before = Built(made, SPECS)
    now = before.values([0])[0] | {"title": ["a c"]}
    change = [(0, before.values([0])[0], now)]
    assert ti.edit(before.files.get, SPECS, 3, change, lambda: alphabets(made, before))
    branchless = {path: data for path, data in before.files.items() if not path.startswith(ti.BRANCH_DIR)}
    assert len(branchless) < len(before.files)
    assert ti.edit(branchless.get, SPECS, 3, change, lambda: alphabets(made, before)) is None


def test_an_edited_set_of_inline_max_bytes_stays_in_its_leaf_as_a_fresh_build_s():
    """A set of exactly INLINE_MAX bytes is in its leaf, edited as built: here a word's
    bitmap that an edit grows by a record, the 236th (30 bytes; with its form and size, 32)."""
    made = [{"title": f"w{n} " + ("common" if n < 19 else "rare"), "isbn": None, "authors": [], "publishers": []}
            for n in range(248)]
    before = Built(made, ["title"])
    now = [*made[:235], dict(made[235], title="w235 common"), *made[236:]]
    fresh = Built(now, ["title"])
    key = (b"Scommon", 0)  # (the word's suffix key in the title, field 0)
    assert len(ti.encode_postings(list(range(19)) + [235], False)[0]) \
        == ti.INLINE_MAX and holds(fresh.files, ["title"])[key][2]
    same_index(edited(before, now), fresh)


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 1 << 20)), st.sets(st.integers(0, 1 << 20), max_size=4),
       st.sets(st.integers(0, 1 << 20), max_size=4), st.data())
def test_a_set_s_codes_moved_are_numpy_s_union_and_difference(codes, lost, gained, data):
    """moved_codes (bisection) gives what setdiff1d then union1d give, codes lost or gained
    that the set holds or not, at its ends too."""
    import numpy

    held = sorted(codes)
    lost |= set(data.draw(st.sets(st.sampled_from(held), max_size=3))) if held else set()
    gained |= set(data.draw(st.sets(st.sampled_from(held), max_size=2))) if held else set()
    array = numpy.array(held, numpy.int64)
    want = numpy.union1d(numpy.setdiff1d(array, list(lost)), numpy.fromiter(gained, numpy.int64, len(gained)))
    got = ti.moved_codes(array, lost, gained)
    assert got.dtype == numpy.int64 and got.tolist() == want.tolist()


def test_every_record_s_alphabets_are_asked_only_where_a_changed_value_lost_a_character():
    """A word added keeps every character the values held: the root's alphabets, with the new
    characters, are a fresh build's, every record's not read. A character taken away (here
    the only "q"): every record's alphabets are asked, and are the fresh build's."""
    made = [{"title": f"w{n} common", "isbn": None, "authors": [], "publishers": []} for n in range(20)]
    made[3]["title"] = "quiet w3"
    before = Built(made, SPECS)
    for title, asked in (("quiet w3 ژرف", False), ("w3 huge", True)):
        now = [dict(document) for document in made]
        now[3]["title"] = title
        told = []
        change = [(3, before.values([3])[3], ti.document_values(now[3], before.readers, before.fold))]
        files = ti.edit(before.files.get, SPECS, 20, change, lambda: told.append(1) or alphabets(now, before))
        assert bool(told) == asked
        assert files[ti.ROOT] == Built(now, SPECS).files[ti.ROOT]
