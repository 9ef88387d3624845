"""The synthetic catalogue: every declared collection, the same files for the same seed,
and rows of a collection no maker knows that its own checks take."""
from __future__ import annotations

from pathlib import Path

import pytest

from generator.catalogue import synth
from generator.catalogue.fields import F, R, Field, id_list, nonempty_text, slug, text, timestamp, uuid_id, whole
from generator.catalogue.resources import COLLECTIONS, URL, Resource


def test_every_declared_collection_is_written(tmp_path: Path):
    counts = synth.write(tmp_path, 30, seed=2)
    assert set(counts) == set(COLLECTIONS)
    assert {p.stem for p in tmp_path.glob("*.csv")} == set(COLLECTIONS)


@pytest.mark.parametrize("fmt", ["csv", "yaml"])
def test_a_seed_writes_the_same_files(tmp_path: Path, fmt: str):
    synth.write(tmp_path / "a", 40, seed=3, fmt=fmt)
    synth.write(tmp_path / "b", 40, seed=3, fmt=fmt)
    for path in sorted((tmp_path / "a").iterdir()):
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name


def test_a_collection_no_maker_knows_is_made_from_its_fields_kinds():
    reviews = Resource(
        "review", "reviews", "Review",
        fields=(F("id", uuid_id), R("book", uuid_id, to="books"), F("tags", id_list, (), to="categories"),
                R("slug", slug), R("title", nonempty_text), F("text", text, ""), F("stars", whole, 0),
                R("created_time", timestamp)),
        id_key=("book", "slug"), document=(URL, "id"), heading="نقدها", shown_by="title")
    made = synth._Synth(20, seed=1)
    books, categories = [made.uuid() for _ in range(2)], [made.uuid() for _ in range(3)]
    made.ids = {"books": books, "categories": categories}
    rows = list(made.from_kinds(reviews))
    assert len(rows) == 10
    for row in rows:
        for field, value in zip(reviews.fields, row, strict=True):
            _takes(field, value)
        assert row[1] in books and set(row[2]) <= set(categories)


def _takes(field: Field, value) -> None:
    """The value is one the field's own check takes (an empty cell: its default)."""
    if value in ("", []) and not field.required:
        return
    field.coerce(value)


def test_a_vocabulary_is_large_and_zipfian(tmp_path: Path):
    """With --vocabulary, the titles' words are many and skewed as real text's: the most common
    word in a large share of the titles, most words in one or two; the same seed, the same files."""
    import csv
    from collections import Counter

    synth.write(tmp_path / "a", 3000, seed=5, vocabulary=20_000)
    synth.write(tmp_path / "b", 3000, seed=5, vocabulary=20_000)
    assert (tmp_path / "a" / "books.csv").read_bytes() == (tmp_path / "b" / "books.csv").read_bytes()
    with (tmp_path / "a" / "books.csv").open(encoding="utf-8") as f:
        titles = [row["title"] for row in csv.DictReader(f)]
    words = Counter(word for title in titles for word in title.split())
    assert len(words) > 2_500
    assert words.most_common(1)[0][1] > 0.05 * sum(words.values())
    assert sum(1 for n in words.values() if n <= 2) > 0.6 * len(words)
    with (tmp_path / "a" / "authors.csv").open(encoding="utf-8") as f:
        names = {row["fullName"].split()[-1] for row in csv.DictReader(f)}
    assert len(names) > 200  # (the names draw from it too, not from a list of thirty)
