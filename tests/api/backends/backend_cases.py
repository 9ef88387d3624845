"""What the search and ordering backends' tests share: small catalogues drawn by hypothesis,
the settings they are indexed with, and a collection's index files made in memory."""
from __future__ import annotations

import uuid
from contextlib import contextmanager

from hypothesis import strategies as st

from generator.api.backends import common, index_files, search_index

WORDS = ["کتاب", "كتاب", "ab", "Ab", "b", "", "x y", "ی", " b", "x  y", "b\u200cکتاب", "\u3000", "ي ", "ab\x1cb"]
QUERY = {"search": {"books": ["title", "=isbn", "authors__fullName", "^publishers__company"]},
         "ordering": {"books": ["title", "pages"]}}
# Every lookup on a field of the record and on a related one.
EVERY_LOOKUP = {"search": {"books": ["title", "^title", "=title", "isbn", "authors__fullName", "=authors__fullName",
                                     "^publishers__company", "publishers__company"]}}
TERM = st.text(st.sampled_from("abx yکتابيی\u200c\u3000\t"), max_size=6)


@st.composite
def catalogues(draw) -> list[dict]:
    def person():
        return {"url": f"https://x/{uuid.UUID(int=draw(st.integers(0, 5)))}/", "fullName": draw(st.sampled_from(WORDS)),
                "company": draw(st.sampled_from(WORDS))}
    books = []
    for _ in range(draw(st.integers(0, 12))):
        books.append({"title": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=3))),
                      "isbn": draw(st.sampled_from(["1", "12", "ab"])), "pages": draw(st.integers(0, 3)),
                      "authors": draw(st.lists(st.builds(person), max_size=3)),
                      "publishers": draw(st.lists(st.builds(person), max_size=2))})
    return books



def files_of(books: list[dict], query: dict) -> dict[str, bytes]:
    """The index files of the books, made in memory (no filters: no related ids)."""
    return index_files("books", query, books, {}.__getitem__)


def documents_of(books: list[dict]):
    """The way a request reads the books' documents (a search checks candidates on them)."""
    return lambda positions: {p: books[p] for p in positions}


@contextmanager
def blocks_of(block: int, inline_max: int = search_index.INLINE_MAX, leaf_bits: int = search_index.LEAF_BITS,
              restart: int = search_index.RESTART):
    """Index files cut in blocks of `block` records (and the term index's sets inline up to
    `inline_max` bytes, its leaves of 2**leaf_bits keys on average, a restart of their key
    lists every `restart` keys) meanwhile."""
    before, common.BLOCK = common.BLOCK, block
    kept = search_index.INLINE_MAX, search_index.LEAF_BITS, search_index.RESTART
    search_index.INLINE_MAX, search_index.LEAF_BITS, search_index.RESTART = inline_max, leaf_bits, restart
    try:
        yield
    finally:
        common.BLOCK, (search_index.INLINE_MAX, search_index.LEAF_BITS, search_index.RESTART) = before, kept
