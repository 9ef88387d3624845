"""What the query backends share: the protocol a backend follows (`Backend`), a request as
they read it (`Request`, whose `read` is the host's one way to read a published file),
their 400 (`Rejected`), the white space DRF strips, the case folding a search compares by
(`fold`, with the table of str.lower() the JavaScript carries), the blocks of records
their index files are cut in, and little-endian uint32 lists. common.js.j2 beside it is
its JavaScript twin, with `qySelect`, the registry's select().

Records are named by their position in the collection's own order (the position of
their bytes in the pre-built pages, api/pageindex.py); a backend's index files lie under
`api/v1/<name>/_query/<its part>/`, written by a build only when their bytes change.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy

from ..pageindex import read_u32, u32
from ..render import encode
from ..urls import API, QUERY_DIR

Reader = Callable[[str], "bytes | None"]  # a host's way to read a published file (None: there is none)
Flush = Callable[[str, bytes], None]  # the build's way to write an index file
# The documents of the records at these positions, from the pages that hold them (the pages
# an answer reads anyway: api/assemble.py), by position.
Documents = Callable[[Sequence[int]], "dict[int, dict]"]
Change = tuple[int, dict, dict]  # a record whose fields indexers read changed since the previous build: position, then, now
# A field of a document an indexer reads: (field,), or (relation, field) of each related record
DocumentField = tuple[str, ...]
SPACES = "".join(chr(c) for c in range(0x10000) if chr(c).isspace())  # what Python's \s and strip() take
NUL = "\x00"
NUL_MESSAGE = "Null characters are not allowed."  # Django's
BLOCK = 65536  # records (or positions in an order) of one index file of a block
UUID_IN_URL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

__all__ = ["Reader", "Flush", "Documents", "Change", "DocumentField", "Edit", "SPACES", "NUL", "NUL_MESSAGE", "BLOCK", "Backend", "Rejected", "Missing", "Request", "Records",
           "need", "blocks", "query_dir", "u32", "read_u32", "related_id", "related_records", "fold", "folding"]


class Edit(NamedTuple):
    """What a backend's edit of its index files gives: the folders every file of which stays
    but those named in `files`, and the files it writes (paths from the site's root; None: the
    file goes)."""
    folders: list[str]
    files: dict[str, "bytes | None"]


class Rejected(Exception):
    """A parameter's value DRF answers with 400: `body` is the JSON body."""

    def __init__(self, body: object) -> None:
        super().__init__(body)
        self.body = body

    def encoded(self) -> bytes:
        """The body as DRF's JSONRenderer writes it."""
        return encode(self.body)


class Missing(FileNotFoundError):
    """A query index file the generation should hold and does not."""


@dataclass(frozen=True)
class Request:
    """A request to a collection's list as the backends read it: its query string's pairs
    (as request.GET holds them), the site's query settings, the collection's count, and
    the host's `read`, the one way a backend reads a file, and `documents`, its way to
    read records' documents."""
    read: Reader
    name: str  # the collection's URL segment
    pairs: Sequence[tuple[str, str]]
    query: dict  # site.yaml's search, ordering, filters (catalogue/querying.py)
    count: int
    documents: "Documents | None" = None  # the records' documents, where a backend checks some on them

    def values(self, key: str) -> list[str]:
        """Every value of a parameter, in order (request.GET.getlist)."""
        return [value for name, value in self.pairs if name == key]

    def last(self, key: str) -> str | None:
        """A parameter's last value, or None (request.GET.get)."""
        found = self.values(key)
        return found[-1] if found else None

    def settings(self, key: str) -> list[str]:
        """What site.yaml's `key` lists for this collection ([]: nothing)."""
        return self.query.get(key, {}).get(self.name, [])


class Records:
    """Some of a collection's records, what a backend narrows to: a bitmap of the collection's
    `count` records (bit p % 8 of byte p // 8, least significant first: the search index's
    dense set form, read as it lies), which is also the sequence of their positions in
    order (len, slices, iteration). A set of most of a million books is joined, counted and
    listed in milliseconds, where a set of Python ints took a second. Changed in place only
    while it is made (`none`, then sets added to its bits: search_index.add_set), before it
    is counted or listed. QyRecords (common.js.j2) is its twin."""

    __slots__ = ("bits", "count", "_size", "_positions")

    def __init__(self, bits: numpy.ndarray, count: int) -> None:
        self.bits, self.count = bits, count
        self._size: int | None = None
        self._positions: numpy.ndarray | None = None

    @classmethod
    def none(cls, count: int) -> "Records":
        return cls(numpy.zeros((count + 7) // 8, dtype=numpy.uint8), count)

    @classmethod
    def of(cls, positions: Iterable[int], count: int) -> "Records":
        """The records at these positions (any order, repeats allowed)."""
        where = numpy.fromiter(positions, dtype=numpy.int64) if positions.__class__ is not numpy.ndarray \
            else positions.astype(numpy.int64, copy=False)
        # (a mask packed at once: for many positions far quicker than setting bits one by one; for a few
        # among a million records some 60 us slower, a request's few calls a fraction of a millisecond)
        present = numpy.zeros(count, dtype=bool)
        present[where] = True
        return cls(numpy.packbits(present, bitorder="little"), count)

    def set(self, where: numpy.ndarray) -> None:
        """Adds the records at these positions (while it is made)."""
        numpy.bitwise_or.at(self.bits, where >> 3, numpy.left_shift(1, where & 7).astype(numpy.uint8))

    def __and__(self, other: "Records") -> "Records":
        return Records(self.bits & other.bits, self.count)

    def __or__(self, other: "Records") -> "Records":
        return Records(self.bits | other.bits, self.count)

    def __len__(self) -> int:
        if self._size is None:
            self._size = int(numpy.bitwise_count(self.bits).sum(dtype=numpy.int64))
        return self._size

    def __contains__(self, position: int) -> bool:
        return bool(self.bits[position >> 3] >> (position & 7) & 1)

    def positions(self) -> numpy.ndarray:
        """The positions, in order."""
        if self._positions is None:
            self._positions = numpy.flatnonzero(numpy.unpackbits(self.bits, count=self.count, bitorder="little"))
        return self._positions

    def __iter__(self):
        return iter(self.positions().tolist())

    def __getitem__(self, part: slice) -> list[int]:
        return self.positions()[part].tolist()


def need(read: Reader, path: str) -> bytes:
    """A file a backend cannot answer without: Missing when the generation lacks it."""
    data = read(path)
    if data is None:
        raise Missing(path)
    return data


def query_dir(name: str) -> str:
    return f"{API}/{name}/{QUERY_DIR}"


def blocks(count: int) -> range:
    """The blocks of a collection of `count` records (an empty one has its one, empty, block)."""
    return range(max(-(-count // BLOCK), 1))


def related_records(document: dict, relation: str) -> list[dict]:
    """The records a document embeds in a relation, a to-one's as a list of one or none."""
    related = document.get(relation)
    return [] if related is None else related if isinstance(related, list) else [related]


def joined_texts(texts: list[str]) -> bytes:
    """Texts kept for a build's later step as one run: NUL between them, in UTF-8 (the
    catalogue's texts hold no NUL), cut apart again by texts_apart."""
    return NUL.join(texts).encode()


def texts_apart(pl, runs: list[bytes]) -> Any:
    """Runs of joined_texts (each of one text or more), their texts in order as one polars
    String series: cut apart by polars, never made Python strings again."""
    return pl.Series(runs, dtype=pl.Binary).cast(pl.String).str.split(NUL).explode()


def related_id(document: dict) -> str:
    """The id of an embedded record: its `id`, else the last UUID in its `url`."""
    if "id" in document:
        return document["id"]
    url = document["url"]
    # (a url ending with its id, and "/": that one; UUIDs cannot overlap, so it is the last)
    ending = UUID_IN_URL.match(url, max(len(url) - 37, 0))
    return ending.group() if ending else UUID_IN_URL.findall(url)[-1]


# search_normalise: persian (docs/spec/query.md §3): letters and digits folded, marks dropped, ZWNJ a space.
PERSIAN = {ord("ي"): "ی", ord("ك"): "ک", ord("ة"): "ه", ord("ۀ"): "ه", 0x0640: None, 0x0670: None, 0x200C: " ",
           **{c: None for c in range(0x064B, 0x0660)},
           **{0x06F0 + d: str(d) for d in range(10)}, **{0x0660 + d: str(d) for d in range(10)}}


_PERSIAN_FOLDED = re.compile("[" + "".join(map(chr, PERSIAN)) + "]")  # (the characters PERSIAN changes)


def fold(text: str, normalise: str | None) -> str:
    """A value or a term as a search compares it: lower-cased as str.lower() does, then
    folded when search_normalise says so (the build folds values, a request its terms)."""
    return folding(normalise)(text)


def folding(normalise: str | None) -> Callable[[str], str]:
    """fold(·, normalise) as one call (the build folds millions of values): str.lower
    itself, or _persian."""
    return _persian if normalise == "persian" else str.lower


def _persian(text: str) -> str:
    """Lower-cased and PERSIAN's characters changed; a text holding none of them (most Persian
    text: its ی and ک are Persian's own) not passed through str.translate, a dictionary lookup
    a character."""
    text = text.lower()
    return text.translate(PERSIAN) if _PERSIAN_FOLDED.search(text) else text


class Backend:
    """The protocol of a query backend (the registry, backends/__init__.py, lists them); each
    step's default is to do nothing (`indexer` and `constants` have none: a backend that
    indexes has its own indexer, and every backend a twin).

    - `name`: its module's name (its twin is `<name>.js.j2` beside it); `index_format`:
      what its index files' layout is called (a build that finds another makes them again).
    - request time: `narrow(request, matched)` gives the records it keeps of `matched`,
      those the backends before it kept (Records; None: all; it may give more, the
      registry joins them); None: it keeps all. `arrange(request, matched)` gives the
      records, of `matched` (None: all), in the order it asks for, as a sequence that
      slices (None: it asks for no order). Both raise Rejected with DRF's 400 body.
    - build: `indexes(name, query)` says whether it writes files for a collection; then
      `indexer(name, query, first)` is fed the documents of a stretch of records from
      `first` (`add(documents)`, then `close()`, whose value is picklable), of
      which the build reads only the fields `reads(name, query)` names (DocumentField), and
      `finish(name, query, flush, parts, ids, processes)` writes what needs every stretch's part
      (`ids` gives the ids of every record of a collection, by its URL segment), with up to
      `processes` processes; `given_ids(name, query)` names the collections whose ids it
      asks `ids` for. Where only some records' documents changed since the previous
      build, and those collections' ids did not, `edit(name, query, previous, changes, count,
      parts)` is asked first: an Edit of the files `previous` reads (`parts()` gives the
      runs' parts as `finish` takes them), or None (it cannot; then `finish` makes them).
    - OpenAPI: `openapi(resource, settings)`, the parameters of a collection's list;
      `shared_openapi(settings)`, parameters every list refers to (components);
      `rejects(name, query)`, whether it may answer 400 there.
    - JavaScript: `constants()`, what its twin is rendered with.
    - `probes(resource, documents)`: queries for the importer's check of the settings.
    """
    name = ""
    index_format = "1"

    def narrow(self, request: Request, matched: Records | None) -> Records | None:
        return None

    def arrange(self, request: Request, matched: Records | None) -> Sequence[int] | None:
        return None

    def indexes(self, name: str, query: dict) -> bool:
        return False

    def indexer(self, name: str, query: dict, first: int) -> Any:
        raise NotImplementedError

    def reads(self, name: str, query: dict) -> list[DocumentField]:
        raise NotImplementedError

    def finish(self, name: str, query: dict, flush: Flush, parts: list, ids: Callable[[str], Iterable[str]],
               processes: int) -> None:
        pass

    def edit(self, name: str, query: dict, previous: Reader, changes: list[Change], count: int,
             parts: Callable[[], list]) -> Edit | None:
        return None

    def given_ids(self, name: str, query: dict) -> list[str]:
        return []

    def openapi(self, resource: Any, settings: Any) -> list[dict]:
        return []

    def shared_openapi(self, settings: Any) -> list[dict]:
        return []

    def rejects(self, name: str, query: dict) -> bool:
        return False

    def constants(self) -> dict:
        raise NotImplementedError

    def probes(self, resource: Any, documents: list[dict]) -> list[dict[str, str]]:
        """Queries a client might send, drawn from a collection's records: what `catalogue
        import --query` asks the live service and this backend alike, to check the settings."""
        return []


SIGMA = "\u03a3"  # lower-cased by its context (final or not): the JavaScript decides it as Python does
# Every character with a lower case lies in the first two planes (the last, U+1E921, an Adlam
# capital): drawn from them alone, the table costs each build a hundredth of a second, not a
# tenth (tests/hosts/test_querystring_js.py draws it from every code point and compares).
CASED_BELOW = 0x20000


def lower_table(below: int = CASED_BELOW) -> dict[str, str]:
    """Every character str.lower() changes, but the capital sigma, and what it makes of it."""
    table = {}
    for code in range(below):
        char = chr(code)
        lowered = char.lower()
        if lowered != char and char != SIGMA:
            table[char] = lowered
    return table


def constants() -> dict:
    """What the JavaScript twin is rendered with."""
    return {"spaces": SPACES, "spaceClass": "".join(f"\\u{ord(c):04x}" for c in SPACES), "block": BLOCK,
            "nul": [NUL_MESSAGE], "lower": lower_table(), "persian": {chr(k): v or "" for k, v in PERSIAN.items()}}
