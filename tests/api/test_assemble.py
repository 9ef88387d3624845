"""Pages put together at request time (api/assemble.py), against pages made the plain way:
a generation written here in memory as the build lays it out (pages of the default size,
one index a span of page offsets, docs/spec/query.md §1), and each answer compared, byte for
byte, with the page DRF would write of the same records (count, links, results). Records
of different lengths and a collection over eleven spans and two blocks (page shard
directories) of offsets, so that the slices of a page, of a block and of the collection's end
are all taken."""
from __future__ import annotations

import json
from array import array

import pytest
from hypothesis import given, strategies as st

from generator.api import assemble, pageindex
from generator.api.pages import TAIL
from generator.api.backends.paging import Paging
from generator.api.serving import SiteInfo
from generator.api.urls import PAGE_BUCKET, PAGE_INDEX_SPAN, page_file, page_index_file

NAME = "books"
BASE = "https://k.example/api/v1/books/"
SIZE = 12  # the default page size: the pages that are files
COUNT = PAGE_BUCKET + 30  # two blocks of page offsets, eleven spans


def record(i: int) -> bytes:
    """Record i: lengths that differ from one record to the next (and Persian text)."""
    return json.dumps({"id": i, "title": "کتاب " * (i % 7) + str(i)}, ensure_ascii=False,
                      separators=(",", ":")).encode()


RECORDS = [record(i) for i in range(COUNT)]


def head(count: int, following: str | None, previous: str | None) -> bytes:
    return (b'{"count":%d,"next":' % count + json.dumps(following).encode() + b',"previous":'
            + json.dumps(previous).encode() + b',"results":[')


def links(count: int, limit: int, offset: int) -> tuple[str | None, str | None]:
    """DRF's LimitOffsetPagination: next while records remain; previous from offset > 0,
    without its offset when it would be 0 or less."""
    following = f"{BASE}?limit={limit}&offset={offset + limit}" if offset + limit < count else None
    previous = None
    if offset > 0:
        previous = f"{BASE}?limit={limit}" if offset - limit <= 0 else f"{BASE}?limit={limit}&offset={offset - limit}"
    return following, previous


def expected(limit: int, offset: int, count: int = COUNT) -> bytes:
    return head(count, *links(count, limit, offset)) + b",".join(RECORDS[offset:min(offset + limit, count)]) + TAIL


def generation(count: int = COUNT, size: int = SIZE) -> dict[str, bytes]:
    """The files a build writes for the collection's pages of the default size: each page
    (head, records, TAIL) and each span's index of where its records start."""
    files = {}
    for span in range(pageindex.span_of(max(count - 1, 0)) + 1):
        starts = array("I")
        pages = pageindex.span_pages(count, size, span)
        for offset in pages:
            limit = min(size, count - offset)
            page_head = head(count, *links(count, size, offset))
            body = page_head + b",".join(RECORDS[offset:offset + limit]) + TAIL
            files[page_file(NAME, str(size), str(offset // PAGE_BUCKET), str(offset))] = body
            starts.extend(pageindex.record_starts(len(page_head), [len(r) for r in RECORDS[offset:offset + limit]]))
        if pages:  # (pages larger than a span leave some spans without one)
            files[page_index_file(NAME, str(size), str(pages.start // PAGE_BUCKET), str(pages.start))] = \
                pageindex.encode(count, size, pages.start, starts)
    return files


FILES = generation()
SITE = SiteInfo(base_url="https://k.example", cache_control="no-cache", page_size=SIZE)


def answered(query: str, files: dict[str, bytes] = FILES, size: int = SIZE, sizes: tuple[int, ...] = ()) -> bytes:
    info = SiteInfo(base_url="https://k.example", cache_control="no-cache", page_size=size, page_sizes=sizes)
    return b"".join(assemble.answer(files.get, Paging.read(NAME, query, info), info, BASE))


def test_the_generation_here_is_the_builds_own_layout():
    assert answered(f"limit={SIZE}&offset=24") == FILES[page_file(NAME, str(SIZE), "0", "24")] == expected(SIZE, 24)


@pytest.mark.parametrize("limit, offset", [
    (5, 0), (5, 7), (1, 0), (1, 11), (1, 12), (13, 0), (12, 6), (24, 12), (25, 11), (100, 3),
    # across the seam of spans 0 and 1: span 0's last page starts at 996 and holds 1007
    (12, 990), (30, 995), (5, 1003), (20, 996), (1, 1007), (1, 1008), (7, 1008), (2000, 990),
    # across the seam of the two blocks (and of spans 9 and 10): the last page of block 0
    # starts at 9996 and holds 10007
    (12, 9990), (30, 9995), (5, 10003), (20, 9996), (1, 10007), (1, 10008), (7, 10008),
    # the end of the collection, and past it
    (12, COUNT - 5), (50, COUNT - 12), (1, COUNT - 1), (5, COUNT), (12, COUNT + 100), (3, 10 ** 6),
])
def test_any_page_is_the_records_it_names_with_drfs_count_and_links(limit, offset):
    assert answered(f"limit={limit}&offset={offset}") == expected(limit, offset)


@pytest.mark.parametrize("limit, offset", [(5, 0), (30, 2495), (2500, 2), (1, 4999), (3000, 7499), (40, COUNT - 20)])
def test_a_default_page_larger_than_a_span_leaves_spans_without_an_index(limit, offset):
    """Pages of 2,500 start in spans 0, 2, 5, 7 and 10 alone: each has an index, the others
    none, and each record is found in its page."""
    files = generation(size=2500)
    assert page_index_file(NAME, "2500", "0", "1000") not in files and page_index_file(NAME, "2500", "0", "2500") in files
    assert answered(f"limit={limit}&offset={offset}", files, 2500) == expected(limit, offset)


def test_the_records_of_one_page_file_come_whole_or_sliced():
    """Two records from the middle of a page, a page's last record and the next page's first."""
    assert answered("limit=2&offset=4") == expected(2, 4)
    assert answered("limit=2&offset=11") == expected(2, 11)


@pytest.mark.parametrize("count", [5, 1, 0])
def test_a_small_collection_and_an_empty_one(count):
    """One page file, short of the page size (an empty collection has its one empty page)."""
    page_head = head(count, None, None)
    files = {page_file(NAME, str(SIZE), "0", "0"): page_head + b",".join(RECORDS[:count]) + TAIL,
             page_index_file(NAME, str(SIZE), "0", "0"): pageindex.encode(
                 count, SIZE, 0, array("I", pageindex.record_starts(len(page_head), [len(r) for r in RECORDS[:count]])))}
    for limit, offset in [(3, 1), (3, 0), (SIZE, 0), (1, count), (2, 4)]:
        assert answered(f"limit={limit}&offset={offset}", files) == expected(limit, offset, count), (limit, offset)


def test_a_missing_file_is_said_not_hidden():
    def without(*paths: str) -> dict[str, bytes]:
        return {k: v for k, v in FILES.items() if k not in paths}
    with pytest.raises(FileNotFoundError):  # (past the last page: the count is span 0's index's)
        answered(f"limit=5&offset={COUNT + 100}", without(page_index_file(NAME, str(SIZE), "0", "0")))
    with pytest.raises(FileNotFoundError):
        answered("limit=5&offset=30", without(page_file(NAME, str(SIZE), "0", "24")))
    with pytest.raises(FileNotFoundError):  # (the first page missing: not taken for the collection's end)
        answered("limit=5&offset=26", without(page_file(NAME, str(SIZE), "0", "24")))


def test_the_count_is_read_from_the_first_page_or_past_the_last_from_the_first_span_s_index():
    """A run's count is its first page's, no index read; past the last page, span 0's
    index's, the only file read."""
    assert answered("limit=5&offset=20000") == expected(5, 20000)
    for query, files in [("limit=30&offset=9990", [page_file(NAME, str(SIZE), "0", str(p)) for p in (9984, 9996)]
                          + [page_file(NAME, str(SIZE), "1", "10008")]),
                         ("limit=5&offset=20000", [page_file(NAME, str(SIZE), "1", "19992"),
                                                   page_index_file(NAME, str(SIZE), "0", "0")])]:
        reads = []
        counting = lambda path: reads.append(path) or FILES.get(path)  # noqa: E731
        b"".join(assemble.answer(counting, Paging.read(NAME, query, SITE), SITE, BASE))
        assert reads == files


@pytest.mark.parametrize("limit, offset, sizes, pages", [
    (100, 990, (12, 24), [(24, p) for p in range(984, 1090, 24)]),  # (5 files of 24, not 9 of 12)
    (24, 13, (12, 24), [(24, 0), (24, 24)]),  # (as many files either way: the smaller pages)
    (24, 13, (12,), [(12, 12), (12, 24), (12, 36)]),
    (23, 0, (12, 24), [(12, 0), (12, 12)]),  # (no page larger than the limit)
    (48, 24, (12, 24), [(24, 24), (24, 48)]),
    (100, COUNT - 30, (12, 24), [(24, p) for p in range(COUNT - 30 - (COUNT - 30) % 24, COUNT, 24)]),
])
def test_a_run_is_read_from_the_pages_that_hold_it_in_the_fewest_files(limit, offset, sizes, pages):
    """Of the pages the build wrote no larger than the limit (the default's always), the size
    whose pages hold the run in the fewest files; the records of a page wholly wanted as they
    stand, the others found in its bytes."""
    files = generation() | generation(size=24)
    reads = []
    counting = lambda path: reads.append(path) or files.get(path)  # noqa: E731
    assert answered(f"limit={limit}&offset={offset}", files, sizes=sizes) == expected(limit, offset)
    info = SiteInfo(base_url="https://k.example", cache_control="no-cache", page_size=SIZE, page_sizes=sizes)
    b"".join(assemble.answer(counting, Paging.read(NAME, f"limit={limit}&offset={offset}", info), info, BASE))
    assert reads == [page_file(NAME, str(size), str(page // PAGE_BUCKET), str(page)) for size, page in pages]


def test_recent_keeps_the_last_files_read():
    reads = []
    reading = assemble.recent(lambda path: reads.append(path) or path.encode(), keep=2)
    for path in ("a", "b", "a", "c", "a", "b"):
        assert reading(path) == path.encode()
    assert reads == ["a", "b", "c", "b"]  # (a is kept by being read again; b was let go for c)


def test_picked_records_come_in_the_order_asked_each_run_at_once():
    pages = assemble.Pages(FILES.get, NAME, SIZE)
    positions = [3, 4, 5, 40, 2, 10007, 10008, COUNT - 1]
    assert list(map(bytes, assemble.picked(FILES.get, pages, positions))) == [
        b",".join(RECORDS[3:6]), RECORDS[40], RECORDS[2], RECORDS[10007], RECORDS[10008], RECORDS[COUNT - 1]]


def test_a_missing_file_names_what_is_missing():
    with pytest.raises(FileNotFoundError, match="^page 24 of books$"):
        answered("limit=5&offset=30", {k: v for k, v in FILES.items() if k != page_file(NAME, str(SIZE), "0", "24")})
    with pytest.raises(FileNotFoundError, match="^page 24 of books$"):
        answered("limit=5&offset=20", {k: v for k, v in FILES.items() if k != page_file(NAME, str(SIZE), "0", "24")})
    with pytest.raises(FileNotFoundError, match="^the index of the first pages of books$"):
        answered(f"limit=5&offset={COUNT + 100}",
                 {k: v for k, v in FILES.items() if k != page_index_file(NAME, str(SIZE), "0", "0")})


def test_a_run_needs_no_index():
    indexless = {k: v for k, v in FILES.items() if not k.endswith(".idx")}
    for limit, offset in [(5, 10010), (5, COUNT - 3), (30, 0), (1, 5003)]:
        assert answered(f"limit={limit}&offset={offset}", indexless) == expected(limit, offset)


def test_recent_keeps_sixteen_files_by_default():
    reads = []
    reading = assemble.recent(lambda path: reads.append(path) or b"")
    for path in [str(i) for i in range(16)] + ["0"]:
        reading(path)
    assert len(reads) == 16  # ("0" was still held)
    reading("16")
    reading("1")
    assert reads[-2:] == ["16", "1"]  # (the seventeenth file let the least recent go: "1")


# ---- a request with search, ordering or filters: the records the selection picks -------------

@pytest.fixture(scope="module")
def filtered(tmp_path_factory):
    """The sample built with filters on (query_probes.SETTINGS), every book as served, and
    the generation's files."""
    from conftest import SAMPLE
    from generator.api.urls import CURRENT
    from generator.sitebuild import build
    from query_probes import with_settings

    work = tmp_path_factory.mktemp("assemble")
    build(with_settings(SAMPLE, work / "data"), work / "site")
    root = (work / "site" / CURRENT).resolve()
    info = SiteInfo.of_generation(root)

    def read(path: str) -> bytes | None:
        return (root / path).read_bytes() if (root / path).is_file() else None
    books = json.loads(b"".join(assemble.answer(read, Paging.read(NAME, "limit=1000", info), info, BASE)))["results"]
    return read, info, books


def test_a_filtered_page_is_the_matching_records_in_order_with_drfs_count_and_links(filtered):
    from generator.api.render import encode

    read, info, books = filtered
    def ids(book: dict) -> set[str]:
        return {a["url"].rstrip("/").rsplit("/", 1)[1] for a in book["authors"]}
    authors = sorted({a for b in books for a in ids(b)}, key=lambda a: (-sum(a in ids(b) for b in books), a))[:3]
    checked = 0
    for author in authors:
        matching = [b for b in books if author in ids(b)]
        for limit, offset in [(1, 0), (2, 1), (100, 0), (1, len(matching) - 1), (3, len(matching))]:
            query = f"authors={author}&limit={limit}&offset={offset}"
            got = b"".join(assemble.answer(read, Paging.read(NAME, query, info), info, BASE))
            count = len(matching)
            following = f"{BASE}?authors={author}&limit={limit}&offset={offset + limit}" if offset + limit < count else None
            previous = None
            if offset > 0:
                previous = (f"{BASE}?authors={author}&limit={limit}" if offset - limit <= 0
                            else f"{BASE}?authors={author}&limit={limit}&offset={offset - limit}")
            assert got == head(count, following, previous) + b",".join(
                encode(b) for b in matching[offset:offset + limit]) + TAIL, query
            checked += 1
    assert checked == 15 and len(books) > 12


@pytest.mark.parametrize("ordering", ["price", "-price"])
def test_an_ordered_page_holds_every_record_once_in_that_order(filtered, ordering):
    """The whole collection ordered (no filter): every record once, the field's values in
    order, page after page."""
    read, info, books = filtered
    def price(book: dict) -> float:
        return float(book["price"])
    pages = []
    for offset in range(0, len(books), 5):
        query = f"ordering={ordering}&limit=5&offset={offset}"
        page = json.loads(b"".join(assemble.answer(read, Paging.read(NAME, query, info), info, BASE)))
        assert page["count"] == len(books)
        pages += page["results"]
    assert sorted(b["url"] for b in pages) == sorted(b["url"] for b in books)
    prices = [price(b) for b in pages]
    assert prices == sorted(prices, reverse=ordering.startswith("-"))


def test_the_records_a_query_picks_cost_their_pages_alone():
    """Records here and there, as a query picks them: each run of neighbours on one page is
    found in that page's bytes, and no span's index is read for them (it would double the
    files read); a run across two pages comes from each."""
    reads = []
    counting = lambda path: reads.append(path) or FILES.get(path)  # noqa: E731
    positions = [5003, 40, 41, 9000, 11, 12, 13, COUNT - 1]
    got = list(assemble.picked(counting, assemble.Pages(counting, NAME, SIZE), positions))
    assert b",".join(got) == b",".join(RECORDS[p] for p in positions)
    assert len(got) == 6  # (a piece a run on one page: 11, then 12..13, lie on two)
    assert reads == [page_file(NAME, str(SIZE), str(p // PAGE_BUCKET), str(p - p % SIZE)) for p in
                     (5003, 40, 9000, 11, 12, COUNT - 1)]


JSON_TEXT = st.text(st.sampled_from(list('{}[]",:\\ ab/\n\tکتاب\u2028')) | st.characters(codec="utf-8"), max_size=12)
VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | JSON_TEXT,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_TEXT, inner, max_size=4),
                      max_leaves=12)


@given(st.lists(st.dictionaries(JSON_TEXT, VALUES, max_size=5), min_size=1, max_size=SIZE), st.data())
def test_records_are_found_in_their_page(documents, data):
    """found_in takes from a page's bytes the records it was made of (brackets, quotes and
    backslashes in strings, nested arrays and objects, empty ones), at any offset."""
    records = [json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode() for document in documents]
    offset = data.draw(st.sampled_from([0, SIZE, 996, 9996]))  # (pages of SIZE)
    page_head = head(offset + len(records), f"{BASE}?x=%22results%22:[", None)
    page = page_head + b",".join(records) + TAIL
    start = data.draw(st.integers(offset, offset + len(records) - 1))
    stop = data.draw(st.integers(start + 1, offset + len(records)))
    assert pageindex.found_in(page, offset, start, stop).cut(page) == b",".join(records[start - offset:stop - offset])


def test_a_page_without_the_records_asked_for_is_said():
    page = FILES[page_file(NAME, str(SIZE), "0", "0")]
    with pytest.raises(ValueError, match="holds no records 11..13"):
        pageindex.found_in(page, 0, 11, 13)
    with pytest.raises(ValueError):
        pageindex.found_in(b'{"count":1,"results":[{"a":"unclosed', 0, 0, 1)
