"""The JavaScript hosts' search, ordering and filters (each backend's twin beside it in
api/backends/, inside templates/pages.js.j2) answer as the Python hosts' (api/backends/), byte for byte: random
probes drawn from the records (tests/query_probes.py), on the sample with and without
search_normalise and on a synthetic catalogue, run in Node against the built files. Also
what each answer read: the files and bytes an edge host fetches for it."""
from __future__ import annotations

import collections
import csv
import json
import os
import random
import subprocess
from urllib.parse import urlencode

import pytest

from generator import compose
from generator.api.backends import search_index
from generator.api.backends.common import related_records
from generator.api.urls import CURRENT
from generator.catalogue import synth
from generator.hosts.router import answer_values
from golden_files import FILTERS, put_together
from query_probes import SETTINGS, Probes, ident, query_catalogue, with_settings
from test_pages_js import module, run_node, run_node_reads

from servers import runnable

pytestmark = pytest.mark.skipif(not runnable("node"), reason="node is not installed")
COLLECTIONS = sorted({name for key in ("search", "ordering", "filters") for name in SETTINGS[key]})


@pytest.fixture(scope="module", params=["sample", "persian", "synthetic"])
def built(request, tmp_path_factory):
    work = tmp_path_factory.mktemp("query-js")
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "synthetic":  # (its term index's leaves in branches, as a large catalogue's are)
            patch.setattr(search_index, "BRANCH_MASK", 7)
        compose.build(query_catalogue(request.param, work, 2000, seed=11), work / "site")
    generation = (work / "site" / CURRENT).resolve()
    root = search_index.Root.decode((generation / search_index.index_dir("books") / search_index.ROOT).read_bytes())
    assert root.levels == (request.param == "synthetic")
    return generation


def documents(generation) -> dict[str, list[dict]]:
    found = {}
    for name in COLLECTIONS:
        status, body = put_together(generation, name, "limit=100000")
        found[name] = json.loads(body)["results"]
    return found


def python_reads(generation, name: str, query: str) -> list[str]:
    """The files the Python hosts read to put a page together (each once, in the order
    first read; none for a page served as its file): what the read counter counts."""
    from generator.api import assemble
    from generator.api.backends import PAGINATION, Rejected
    from generator.api.serving import SiteInfo

    file = PAGINATION.plain_page(name, query)
    if file is not None and (generation / file).is_file():
        return []
    info = SiteInfo.of_generation(generation)
    keys: list[str] = []

    def read(path: str) -> bytes | None:
        if path not in keys:
            keys.append(path)
        return (generation / path).read_bytes() if (generation / path).is_file() else None
    try:
        b"".join(assemble.answer(read, PAGINATION.read(name, query, info), info, ""))
    except Rejected:
        pass
    return keys


def test_javascript_answers_queries_as_python_does(built, tmp_path):
    """The same bytes, and the same files read in the same order (the page indexes that
    say the count aside: the Python reads the first block's as well)."""
    found = documents(built)
    probes = Probes(found, seed=3)
    requests = [(name, probes.query(name)) for name in COLLECTIONS for _ in range(80)]
    requests += [("books", probes.combined()) for _ in range(80)]
    requests += [("books", query) for query in later_value_first(found["books"])]
    requests += [("books", query) for query in inside_a_first_run_of_ties(found["books"])]
    requests += [("books", query) for query in inside_a_last_run_of_ties(found["books"])]
    requests += [("books", query) for query in an_equal_search_within_a_filter(found["books"])]
    requests += [("books", query) for query in phrases_with_white_space_at_an_end(found["books"])]
    requests += [("books", query) for query in pieces_across_leaves(built)]
    requests += [("books", q) for q in ("search=%00", "authors=nope", "authors=", "search=" + "x" * 1001,
                                        "search=%22%22", "ordering=-", "search=%E2%80%A8&authors=%E2%80%A8")]
    # (the longest search DRF takes, 1000 characters: of one UTF-16 unit each, and of two)
    requests += [("books", "search=" + "x" * 1000), ("books", "search=" + "%F0%9D%94%AB" * 1000)]
    assert_as_python(built, requests, run_node_reads(module(tmp_path), built, requests))


def assert_as_python(generation, requests: list[tuple[str, str]], got: list[tuple[int, bytes, list[str]]]) -> None:
    """Each answer the Python's, read from the same files in the same order (the page indexes
    that say the count aside: the Python reads the first block's as well)."""
    for (name, query), (status, body, keys) in zip(requests, got, strict=True):
        assert (status, body) == put_together(generation, name, query), (name, query)
        expected = python_reads(generation, name, query)
        if expected:
            assert [k for k in keys if not k.startswith("_meta/")] == expected, (name, query)


def later_value_first(books: list[dict]) -> list[str]:
    """Two values of each to-many filter of books, no ordering: the first value a later
    record's related id, the second the first record's. The records either keeps come in the
    collection's order (the first record first), not in the order of the values given."""
    queries = []
    for relation in SETTINGS["filters"]["books"]:
        first = {ident(r) for r in related_records(books[0], relation)}
        later = next((ident(r) for book in books[1:] for r in related_records(book, relation) if ident(r) not in first),
                     None)
        if first and later is not None:
            queries.append(urlencode([(relation, later), (relation, min(first)), ("limit", "5")]))
    assert queries
    return queries


def an_equal_search_within_a_filter(books: list[dict]) -> list[str]:
    """A few books' isbn searched (=isbn: the one field of books a search asks to equal) among
    the books of one of their authors: few enough to be checked on their documents, where the
    field is read from its spec without the prefix."""
    queries = [urlencode([("authors", ident(book["authors"][0])), ("search", book["isbn"])])
               for book in books if book.get("authors") and book.get("isbn")][:5]
    assert queries
    return queries


def phrases_with_white_space_at_an_end(books: list[dict]) -> list[str]:
    """Quoted phrases with white space before a word, of one character or two, and after it or
    before the next word (search_index._phrase_exact: the pair keys give some exactly, the others
    are checked on documents), of the word after another in titles whose records lie farthest
    apart, a page of one record: the JavaScript checks on documents (reading their pages) the
    phrases the Python checks, and no other."""
    holding = collections.defaultdict(list)  # (a word after another in a title: the records holding it there)
    for position, book in enumerate(books):
        for word in set(book["title"].split()[1:]):
            holding[word].append(position)
    word = max(holding, key=lambda w: holding[w][-1] - holding[w][0])
    words = books[holding[word][0]]["title"].split()
    phrases = [f" {word} ", f"  {word} ", f" {word}  "] + [f" {word} {n}" for n in words[words.index(word, 1) + 1:][:1]]
    return [urlencode([("search", f'"{phrase}"'), ("limit", "1")]) for phrase in phrases]


def pieces_across_leaves(generation) -> list[str]:
    """Searches of a leaf's first suffix key's first three letters (the key longer than them):
    the keys starting with them start in a leaf before it, and the JavaScript reads every leaf
    that may hold one, as the Python does (none where the index has one leaf)."""
    folder = generation / search_index.index_dir("books")
    root = search_index.Root.decode((folder / search_index.ROOT).read_bytes())
    leaves, _ = search_index._all_leaves(lambda path: (folder / path).read_bytes(), root)
    firsts = [first.decode() for first, _ in leaves[1:] if first.startswith(search_index.SUFFIX.encode())]
    return [urlencode([("search", first[1:4])]) for first in firsts if len(first) > 4][:3]


def inside_a_first_run_of_ties(books: list[dict]) -> list[str]:
    """Pages of the whole collection in two fields' order that start inside the run of ties the
    order begins with (records without a value, or sharing the least): the run is found back to
    the first record (the JavaScript's search for its start reaches the first position)."""
    queries = []
    for field in SETTINGS["ordering"]["books"]:
        values = [book.get(field) for book in books]
        least = None if None in values else min(values)
        if values.count(least) >= 3:
            queries += [urlencode([("ordering", f"{field},-title"), ("offset", str(offset)), ("limit", "2")])
                        for offset in (1, values.count(least) - 2)]
    assert queries
    return queries


def inside_a_last_run_of_ties(books: list[dict]) -> list[str]:
    """Pages of the whole collection in two fields' order, the first descending, that end
    inside the run of ties the order ends with (records without a value, or sharing the
    least), one short of it, the second field each way: the run is found up to the last
    record (the search for its end reaches the last position), else one of the two pages
    leaves out the wrong record."""
    queries = []
    for field in SETTINGS["ordering"]["books"]:
        values = [book.get(field) for book in books]
        least = None if None in values else min(values)
        run = values.count(least)
        if run >= 3:
            queries += [urlencode([("ordering", f"-{field},{second}"), ("offset", str(len(books) - run)),
                                   ("limit", str(run - 1))]) for second in ("title", "-title")]
    assert queries
    return queries


GOLDEN_HARNESS = """
import {readFileSync} from "node:fs";
const table = JSON.parse(readFileSync(0, "utf8"));
const hex = (text) => Uint8Array.from(text.match(/../g) || [], (pair) => parseInt(pair, 16));
const out = {
  lookups: table.lookups.map(([term, spec]) => [term, spec, ...qyLookup(term, qySearchField(spec))]),
  sets: table.sets.map(([bytes, count]) => {
    const records = QyRecords.none(count);
    qyAddSet(records, hex(bytes), 0);
    return [bytes, count, Array.from(records.positions())];
  }),
  words: table.words.map(([term]) => [term, qyWords(term)]),
  terms: table.terms.map(([text]) => [text, qyTerms(text)]),
  fold: table.fold.map(([text, n]) => [text, n, qyFold(text, n)]),
  uuid: table.uuid.map(([text]) => [text, qyUuid(text)]),
  ordering: table.ordering.map(([text]) => [text, qyOrdering(text, ["title", "pages"])]),
};
process.stdout.write(JSON.stringify(out));
"""


def run_harness(directory, harness: str, given: str):
    """A harness run in Node after the twins (the query string's reading and every backend's),
    `given` on its standard input: what it writes, read as JSON."""
    values = answer_values("no-cache")
    script = directory / "harness.mjs"
    script.write_text(values["querystring"] + "\n" + values["query"] + "\n" + harness, encoding="utf-8")
    done = subprocess.run(["node", str(script)], input=given, capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


def test_javascript_reads_values_as_the_golden_table_says(tmp_path):
    table = FILTERS.read_text(encoding="utf-8")
    assert run_harness(tmp_path, GOLDEN_HARNESS, table) == json.loads(table)


def test_javascript_answers_as_python_across_many_blocks(tmp_path, monkeypatch):
    """Records in blocks of 16: searches over many files, orderings whose runs of ties cross
    them, filters; the JavaScript reads them as the Python does, the same files in the same
    order (the search for a run's ends gallops and halves as the Python's: probes in other
    blocks read other files)."""
    from generator.api.backends import common
    from generator.hosts import query as query_js

    monkeypatch.setattr(common, "BLOCK", 16)
    query_js.javascript.cache_clear()
    try:
        synth.write(tmp_path / "plain", 200, seed=4)
        compose.build(with_settings(tmp_path / "plain", tmp_path / "data"), tmp_path / "site")
        generation = (tmp_path / "site" / CURRENT).resolve()
        probes = Probes(documents(generation), seed=9)
        requests = [(name, probes.query(name)) for name in COLLECTIONS for _ in range(40)]
        requests += [("books", probes.combined()) for _ in range(40)]
        requests += [("books", f"ordering={o}&offset={n}&limit=7") for o in ("pages,-title", "-price,pages", "pages")
                     for n in (0, 15, 16, 31, 100)]
        assert_as_python(generation, requests, run_node_reads(module(tmp_path), generation, requests))
    finally:
        query_js.javascript.cache_clear()


def test_javascript_answers_as_python_on_an_edited_index(tmp_path):
    """A term index edited, not made again (search_index.edit): a word given to forty books
    leaves its leaf for a postings file of its own, a common one taken from them leaves empty
    places in its file; the JavaScript reads it as the Python does."""
    synth.write(tmp_path / "plain", 300, seed=5)
    data = with_settings(tmp_path / "plain", tmp_path / "data")
    compose.build(data, tmp_path / "site")
    path = data / "books.csv"
    rows = list(csv.reader(path.open(encoding="utf-8", newline="")))
    title = rows[0].index("title")
    common_word = collections.Counter(w for row in rows[1:] for w in row[title].split()).most_common(1)[0][0]
    for row in rows[1::7]:
        row[title] = " ".join(w for w in row[title].split() if w != common_word) + " یگانه"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    compose.build(data, tmp_path / "site")
    compose.build(data, tmp_path / "fresh")
    generation = (tmp_path / "site" / CURRENT).resolve()
    postings = "api/v1/books/_query/search/post"
    assert sorted(os.listdir(generation / postings)) != sorted(os.listdir((tmp_path / "fresh" / CURRENT) / postings))
    probes = Probes(documents(generation), seed=2)
    requests = [("books", probes.query("books")) for _ in range(60)]
    requests += [("books", urlencode({"search": term})) for term in
                 ("یگانه", "گانه", "یگ", common_word, common_word[1:], f"{common_word} یگانه", f'"{common_word} یگانه"')]
    assert_as_python(generation, requests, run_node_reads(module(tmp_path), generation, requests))


HOSTILE_TITLES = ["\ufeffکتاب دریا", "  دو  فاصله  ", "a\u2003b", "می\u200cخواهم", "ΣΑΣ", "x\u3000y", "a\tb\u200c",
                  "کتاب", "\ufeff"]
HOSTILE_SEARCHES = ["\ufeffکتاب", "کتاب", '"دو  فاصله"', '" دو"', '"دو "', "می\u200cخواهم", "σας", '"x y"', "ی",
                    '""', '" "', "a", "b", '"a\u2003b"', "فاصله دو", "\ufeff", '"فاصله  "', '"b\u200c"', "\u200c"]


@pytest.mark.parametrize("normalise", [None, "persian"])
def test_javascript_answers_as_python_on_hostile_values(tmp_path, normalise):
    """Values and terms with a BOM at a word's start, white space of every kind around and
    inside, ZWNJ (a space when folded under search_normalise: persian), final sigma, empty
    ones: the token index read alike, and every lookup, also across blocks of 4 records."""
    import csv

    from generator.api.backends import common
    from generator.hosts import query as query_js

    synth.write(tmp_path / "plain", 40, seed=6)
    extra = {"search": {**SETTINGS["search"], "books": ["title", "^title", "=title", "=isbn", "authors__fullName"]}}
    if normalise:
        extra["search_normalise"] = normalise
    data = with_settings(tmp_path / "plain", tmp_path / "data", **extra)
    books = data / "books.csv"
    with books.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    column = rows[0].index("title")
    for at, title in enumerate(HOSTILE_TITLES * 2, 1):
        rows[at * 2][column] = title
    with books.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    original = common.BLOCK
    for block in (original, 4):
        common.BLOCK = block
        query_js.javascript.cache_clear()
        try:
            compose.build(data, tmp_path / f"site-{block}")
            generation = (tmp_path / f"site-{block}" / CURRENT).resolve()
            requests = [("books", urlencode({"search": term, "limit": 100})) for term in HOSTILE_SEARCHES]
            requests += [("books", urlencode({"search": a + " " + b})) for a in HOSTILE_SEARCHES[:6]
                         for b in HOSTILE_SEARCHES[6:12]]
            got = run_node(module(tmp_path), generation, requests)
            for (name, query), answer in zip(requests, got, strict=True):
                assert answer == put_together(generation, name, query), (block, query)
            assert any(b'"count":0,' not in answer[1] for answer in got)
        finally:
            common.BLOCK = original
            query_js.javascript.cache_clear()


def test_javascript_names_a_missing_query_index_as_python_does(tmp_path):
    """A generation that lacks an index file a query needs (one taken away by hand): the
    JavaScript's error names the file, as the Python's Missing does (what the host's log
    tells whoever deploys it)."""
    from generator.api.backends.common import Missing
    from generator.api.backends.ordering import sorted_file

    synth.write(tmp_path / "plain", 40, seed=6)
    compose.build(with_settings(tmp_path / "plain", tmp_path / "data"), tmp_path / "site")
    generation = (tmp_path / "site" / CURRENT).resolve()
    missing = sorted_file("books", "title", True, 0)
    (generation / missing).unlink()
    with pytest.raises(Missing, match=f"^{missing}$"):
        put_together(generation, "books", "ordering=-title")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_node(module(tmp_path), generation, [("books", "ordering=-title")])
    assert f"Error: a query index is missing: {missing}\n" in failed.value.stderr


CUT_SHORT_HARNESS = """
import {readFileSync} from "node:fs";
const root = Uint8Array.from(JSON.parse(readFileSync(0, "utf8")));
let said = "read";
try { qyRoot(root); } catch (error) { said = error.name; }
process.stdout.write(JSON.stringify(said));
"""


def test_javascript_refuses_a_term_index_file_missing_its_end_as_python_does(tmp_path):
    """A term index's root that ends inside a number (the collection's count cut short after
    its first byte: a file half written or half uploaded): the Python's reader raises, and the
    JavaScript's throws, at once (it read on past the end for ever)."""
    root = search_index.ROOT_MAGIC + bytes([search_index.VERSION, 0x80])
    with pytest.raises(IndexError):
        search_index.Root.decode(root)
    assert run_harness(tmp_path, CUT_SHORT_HARNESS, json.dumps(list(root))) == "RangeError"


RECORDS_HARNESS = """
import {readFileSync} from "node:fs";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map(([count, first, second]) => {
  const a = QyRecords.of(first, count), b = QyRecords.none(count);
  b.set(second);
  const held = [...Array(count).keys()].filter((p) => a.has(p));
  return [a.size, Array.from(a), a.and(b).slice(0, count), a.or(b).slice(0, count), a.slice(1, 4), held,
          a.words.byteLength];
});
process.stdout.write(JSON.stringify(out));
"""


def test_javascript_records_as_python_does(tmp_path):
    """QyRecords (common.js.j2), the bitmap every backend narrows to, counts, lists, joins,
    slices and asks as common.Records does, in the bytes Python's takes rounded up to a word (a
    Worker has 128 MB; a request holds a few bitmaps of a million records): collections of
    every count around a word's 32 records (none, one, a word, a word and one...), sets
    empty, full, random, the last record and each word's highest bit (a sign bit to
    JavaScript's `1 << 31`) among them. One Node run a count, the largest first: a bitmap made
    a word short is seen as wrong answers there before a small count's could make it huge."""
    from generator.api.backends.common import Records

    rng = random.Random(45)
    for count in (1000, 100, 65, 64, 63, 33, 32, 31, 5, 1, 0):
        everything = list(range(count))
        cases = [[count, first + first[:2], rng.sample(everything, count // 2)]  # (a position given twice: one record)
                 for first in ([], everything, rng.sample(everything, count // 3),
                               [p for p in everything if p % 32 == 31])]
        expected = []
        for _, first, second in cases:
            a, b = Records.of(first, count), Records.of(second, count)
            expected.append([len(a), list(a), (a & b)[:], (a | b)[:], a[1:4], [p for p in range(count) if p in a],
                             -(-a.bits.nbytes // 4) * 4])
        assert run_harness(tmp_path, RECORDS_HARNESS, json.dumps(cases)) == expected, count


BY_DOCUMENTS_HARNESS = """
import {readFileSync} from "node:fs";
const {books, orderings} = JSON.parse(readFileSync(0, "utf8"));
const request = {name: "books", documents: async (positions) => new Map(positions.map((p) => [p, books[p]]))};
const out = [];
for (const ordering of orderings) out.push(await qyByDocuments(request, ordering, [...books.keys()]));
process.stdout.write(JSON.stringify(out));
"""


def test_javascript_orders_a_few_records_by_their_documents_as_python_does(tmp_path):
    """qyByDocuments (ordering.js.j2) sorts a few records by their documents' fields as
    ordering.by_documents does: each field each way, then two, with records without a value
    and runs of ties (kept in the collection's order descending too)."""
    from generator.api.backends.common import Request
    from generator.api.backends.ordering import by_documents

    books = [{"title": title, "price": price, "pages": pages, "created_time": created, "enable": enable}
             for title, price, pages, created, enable in [
                 ("b", "12", 30, "2024-01-02T00:00:00Z", True), ("a", None, None, None, None),
                 ("b", 12, 30, "2024-01-01T20:30:00-03:30", False), ("c", "2.5", None, None, True),
                 ("a", None, 7, "2024-01-02T00:00:00Z", None), ("", 0, 7, "1969-12-31T23:59:59Z", False),
                 ("c", "2.50", None, "2024-01-02T00:00:00.000001Z", True)]]
    fields = ["title", "price", "pages", "created_time", "enable"]
    orderings = [[[field, descending]] for field in fields for descending in (False, True)]
    orderings += [[[first, True], [second, descending]] for first in fields for second in fields if first != second
                  for descending in (False, True)]
    got = run_harness(tmp_path, BY_DOCUMENTS_HARNESS, json.dumps({"books": books, "orderings": orderings}))
    request = Request(None, "books", [], {}, len(books), lambda positions: {p: books[p] for p in positions})
    expected = [by_documents(request, [tuple(f) for f in ordering], list(range(len(books)))) for ordering in orderings]
    assert got == expected


ORDER_HARNESS = """
import {readFileSync} from "node:fs";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map(([kind, values]) => {
  const keys = values.map((value) => qySortKey(kind, value));
  return [...values.keys()].sort((a, b) => qyCompareKeys(keys[a], keys[b]));
});
process.stdout.write(JSON.stringify(out));
"""


def test_javascript_sorts_documents_values_as_python_does(tmp_path):
    """The keys a few records are ordered by from their documents (ordering.by_documents):
    text by code points (a character beyond U+FFFF after U+E000..U+FFFF, where UTF-16 units
    would put it before), exact numbers given as text or numbers, instants in any offset
    (before 1970, Z, fractions of a second), booleans, nulls first; ties in the given order."""
    from generator.api.backends.ordering import _document_key

    cases = [
        ("text", ["b", "\U0001F600", "\uE000", "\uFFFD", None, "a", "", "\U0001F600a", "ک", "ك", "b"]),
        ("number", ["2730000", 12, "-3", "12", 0, None, "99999999999999999999", "-3.5", "2.25", 2]),
        ("instant", ["2024-11-22T03:45:34.686112+03:30", "2024-11-22T00:15:34.686112Z", "1969-12-31T23:59:59.5+00:00",
                     "1969-12-31T20:29:59-03:30", None, "2024-11-22T03:45:34+03:30", "0999-01-01T00:00:00Z",
                     "2024-02-01T00:00:00Z", "2024-01-31T12:00:00Z"]),
        ("boolean", [True, False, None, True, False]),
    ]
    got = run_harness(tmp_path, ORDER_HARNESS, json.dumps(cases))
    expected = [sorted(range(len(given)), key=lambda at: _document_key(kind, given[at])) for kind, given in cases]
    assert got == expected
