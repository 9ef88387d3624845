"""Search, ordering and filter requests a client of the old service might send (docs/spec/query.md
§3–5), drawn at random from a catalogue's own records: words and pieces of titles and
names, whole ISBNs and slug beginnings, quoted phrases, commas, several terms at once
(some served by two different authors of one book), orderings valid and not, filters by
ids spelled every way Django reads a UUID, ids of no record and no UUID at all, two and
three filters together and two values of one, all mixed with limit, offset and unknown
parameters. The DRF comparison and the JavaScript
hosts' golden table both draw from here.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path
from urllib.parse import urlencode

import yaml

SETTINGS = {
    "max_limit": 100,
    "search": {"books": ["title", "=isbn", "authors__fullName", "publishers__company"],
               "author": ["fullName", "^slug"], "bookshelf": ["title", "user__username"]},
    "ordering": {"books": ["title", "price", "pages", "created_time"], "author": ["fullName", "slug"],
                 "category": ["name", "path"]},
    "filters": {"books": ["authors", "translators", "publishers", "categories"], "bookshelf": ["user"]},
}
UNKNOWN = "00000000-0000-4000-8000-000000000000"


def with_settings(data: Path, out: Path, **more) -> Path:
    """A copy of a data directory whose site.yaml has SETTINGS (and `more`)."""
    shutil.copytree(data, out)
    site = yaml.safe_load((out / "site.yaml").read_text())
    site.update(SETTINGS, **more)
    (out / "site.yaml").write_text(yaml.safe_dump(site, allow_unicode=True))
    return out


def query_catalogue(kind: str, work: Path, books: int, seed: int) -> Path:
    """A data directory with SETTINGS: the sample ("sample"), the sample with
    search_normalise: persian ("persian"), or a synthetic catalogue ("synthetic")."""
    from conftest import SAMPLE
    from generator.catalogue import synth

    if kind == "synthetic":
        synth.write(work / "plain", books, seed=seed)
        return with_settings(work / "plain", work / "data")
    return with_settings(SAMPLE, work / "data", **({"search_normalise": "persian"} if kind == "persian" else {}))


def ident(related: dict) -> str:
    """The id of a related record, as its link ends."""
    return related["url"].rstrip("/").rsplit("/", 1)[-1]


class Probes:
    """Random queries for one catalogue, from its published documents."""

    def __init__(self, documents: dict[str, list[dict]], seed: int) -> None:
        self.docs = documents
        self.rng = random.Random(seed)

    def words(self, name: str, field: str, related: str | None = None) -> list[str]:
        found = []
        for doc in self.docs[name]:
            values = doc.get(related) if related else [doc]
            values = values if isinstance(values, list) else [values] if values else []
            found += [str(v[field]) for v in values if v and v.get(field) is not None]
        return found or ["x"]

    def term(self) -> str:
        rng = self.rng
        source = rng.choice([("title", None), ("fullName", "authors"), ("company", "publishers"), ("isbn", None)])
        text = rng.choice(self.words("books", *source))
        words = text.split() or [text]
        choice = rng.random()
        if choice < 0.35:
            return rng.choice(words)
        if choice < 0.55:
            word = rng.choice(words)
            start = rng.randrange(len(word))
            return word[start:start + rng.randint(1, 3)]
        if choice < 0.7:
            return '"' + " ".join(words[:2]) + '"'
        if choice < 0.8:
            return text
        return rng.choice(["کتاب", "ی", "ي", "ك", "zzz", "'", '"', ",", "ا,ب", "9786", "  ", "\u200c"])

    def search(self) -> str:
        rng = self.rng
        terms = [self.term() for _ in range(rng.choice([1, 1, 1, 2, 2, 3]))]
        if rng.random() < 0.15:  # two authors of one book, one word each: DRF joins one author row
            books = [d for d in self.docs["books"] if len(d["authors"]) > 1]
            if books:
                book = rng.choice(books)
                terms = [a["fullName"].split()[0] for a in book["authors"][:2]]
        return rng.choice([" ", ",", " , "]).join(terms)

    def ordering(self, allowed: list[str]) -> str:
        rng = self.rng
        names = [rng.choice(["", "-"]) + rng.choice(allowed + ["isbn", "nope", "-"]) for _ in range(rng.randint(1, 3))]
        return ",".join(names)

    def id_spelling(self, id: str) -> str:
        rng = self.rng
        choice = rng.random()
        if choice < 0.6:
            return id
        return rng.choice([id.upper(), id.replace("-", ""), "{" + id + "}", "urn:uuid:" + id, UNKNOWN, "nope", "",
                           id[:-1], " " + id])

    def filter_value(self, relation: str, canonical: bool = False) -> str:
        related = [r for d in self.docs["books"] for r in d.get(relation) or []]
        if not related:
            return UNKNOWN if canonical else self.id_spelling(UNKNOWN)
        id = ident(self.rng.choice(related))
        return id if canonical else self.id_spelling(id)

    def query(self, name: str) -> str:
        rng = self.rng
        params: list[tuple[str, str]] = []
        if name in SETTINGS["search"] and rng.random() < 0.7:
            params.append(("search", self.search() if name == "books" else self._other_search(name)))
        if name in SETTINGS["ordering"] and rng.random() < 0.5:
            params.append(("ordering", self.ordering(SETTINGS["ordering"][name])))
        if name == "books" and rng.random() < 0.6:
            params += self.filters()
        if name == "bookshelf" and rng.random() < 0.4:
            users = [d["user"]["id"] for d in self.docs["bookshelf"]] or [UNKNOWN]
            params.append(("user", self.id_spelling(rng.choice(users))))
        if rng.random() < 0.5:
            params.append(("limit", str(rng.choice([1, 2, 5, 12, 30, 1000]))))
        if rng.random() < 0.3:
            params.append(("offset", str(rng.choice([0, 1, 3, 12, 40]))))
        if rng.random() < 0.15:
            params.append(("utm_source", "x y"))
        rng.shuffle(params)
        return urlencode(params)

    def filters(self) -> list[tuple[str, str]]:
        """One, two or three of the books' relation filters, often ids of one book's related
        records (so that their intersection is neither empty nor the union of their records),
        some relations given two values (django-filter keeps the records of either); one value
        at most in an odd spelling (with two refused, Django's message names whichever a
        frozenset happens to give first)."""
        rng = self.rng
        book = rng.choice(self.docs["books"])
        params = []
        for relation in rng.sample(SETTINGS["filters"]["books"], rng.choice([1, 2, 2, 3, 3])):
            own = [ident(r) for r in book.get(relation) or []]
            for _ in range(rng.choice([1, 1, 2])):
                value = rng.choice(own) if own and rng.random() < 0.75 else self.filter_value(relation, canonical=True)
                params.append((relation, value))
        if rng.random() < 0.3:
            at = rng.randrange(len(params))
            params[at] = (params[at][0], self.id_spelling(params[at][1]))
        return params

    def combined(self) -> str:
        """A books query with everything DRF combines: filters (Probes.filters), a search
        for a word of a record they keep or of any, an ordering, a page off the grid."""
        rng = self.rng
        params = self.filters()
        kept = [d for d in self.docs["books"] if any(ident(r) == value for key, value in params
                                                      for r in d.get(key) or [])]
        if rng.random() < 0.6:
            words = (rng.choice(kept)["title"].split() if kept and rng.random() < 0.7 else []) or [self.term()]
            params.append(("search", rng.choice(words)))
        params.append(("ordering", self.ordering(SETTINGS["ordering"]["books"])))
        params += [("limit", str(rng.choice([1, 2, 5, 7]))), ("offset", str(rng.choice([0, 1, 3, 5])))]
        rng.shuffle(params)
        return urlencode(params)

    def _other_search(self, name: str) -> str:
        field = {"author": "fullName", "bookshelf": "title"}[name]
        text = self.rng.choice(self.words(name, field))
        if name == "author" and self.rng.random() < 0.3:
            return self.rng.choice(self.words(name, "slug"))[:3]
        return self.rng.choice(text.split() or [text])
