"""Pages and their gzip twins assembled from runs of records: every page once, in any
number of parts, byte for byte DRF's page, its twin a valid gzip file of exactly those
bytes, and each run compressed once for all the page sizes that hold it."""
from __future__ import annotations

import gzip
import hashlib
import zlib

import pytest

from generator.api.pages import Page, page_count
from generator.api.serving import GZIP_MIN
from generator.api.urls import BY_COLLECTION, Urls
from generator.sitebuild import paging
from generator.sitebuild.spool import Spool, Spools

BOOKS = BY_COLLECTION["books"]
URLS = Urls("https://books.example/")


def record(n: int) -> bytes:
    # Long enough that pages pass GZIP_MIN; varied enough that runs compress differently.
    about = hashlib.sha256(b"%d" % n).hexdigest().encode() * 5
    return b'{"id":%d,"title":"%s","about":"%s"}' % (n, ("کتاب %d " % n).encode() * 3, about[:200 + n % 97])


def spooled(tmp_path, sizes: list[int]) -> Spools:
    """Records 0..n-1 in one spool per part, of the given sizes."""
    paths, n = [], 0
    for part, size in enumerate(sizes):
        with Spool(tmp_path / f"records.{part}") as spool:
            for _ in range(size):
                spool.append(record(n))
                n += 1
        paths.append(tmp_path / f"records.{part}")
    return Spools(paths)


def expected(limit: int, offset: int, count: int) -> bytes:
    page = Page(BOOKS, limit, offset, count)
    return page.encode(URLS, [record(n) for n in range(offset, min(offset + limit, count))])


@pytest.mark.parametrize("count", [0, 1, 11, 12, 13, 24, 25, 100, 1000])
@pytest.mark.parametrize("sizes", [(12, 24), (12,), (24, 12, 48), (10, 25), (7,)])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_every_page_once_with_its_twin(tmp_path, count, sizes, parts):
    with spooled(tmp_path, [count // 3, count - count // 3]) as records:
        made = []
        for part in range(parts):
            runs = paging.Runs(records)
            share = paging.share(count, sizes, part, parts)
            assert share == sorted(share)  # (Runs lets go of the runs before each page asked for)
            for offset, limit in share:
                data, twin = runs.page(Page(BOOKS, limit, offset, count), URLS)
                assert data == expected(limit, offset, count)
                if len(data) >= GZIP_MIN:
                    assert gzip.decompress(twin) == data
                    assert zlib.decompress(twin, 31) == data  # (one member, read to its end)
                else:
                    assert twin is None
                made.append((limit, offset))
        assert sorted(made) == sorted((limit, n * limit) for limit in sizes
                                      for n in range(page_count(count, limit)))


def test_a_run_is_compressed_once_for_both_page_sizes(tmp_path, monkeypatch):
    compressed = []
    deflated = paging.deflated
    monkeypatch.setattr(paging, "deflated", lambda data: compressed.append(data) or deflated(data))
    with spooled(tmp_path, [240]) as records:
        runs = paging.Runs(records)
        for offset, limit in paging.share(240, (12, 24), 0, 1):
            runs.page(Page(BOOKS, limit, offset, 240), URLS)
    assert len(compressed) == 20  # 240 records in runs of 12, not 20 + 10 pages compressed
    assert len(set(compressed)) == 20


def test_the_twin_compresses_about_as_well_as_the_page_whole(tmp_path):
    with spooled(tmp_path, [48]) as records:
        runs = paging.Runs(records)
        page = Page(BOOKS, 24, 0, 48)
        data, twin = runs.page(page, URLS)
    whole = gzip.compress(data, compresslevel=1)
    assert len(twin) < 1.1 * len(whole)


def test_stored_blocks_hold_any_length():
    for length in (0, 1, paging.STORED_MAX, paging.STORED_MAX + 1, 3 * paging.STORED_MAX):
        data = bytes(range(256)) * (length // 256 + 1)
        data = data[:length]
        assert zlib.decompress(paging.stored(data, final=True), -15) == data
        assert zlib.decompress(paging.deflated(data) + paging.stored(b"", final=True), -15) == data


@pytest.mark.parametrize("limit, size", [(12, 12), (24, 12), (36, 12), (10, 10), (20, 10), (100, 10),
                                         (16, 8), (25, 25), (7, 7), (1, 1)])
def test_a_page_is_cut_into_runs_by_its_own_size_alone(limit, size):
    assert paging.run_size(limit) == size


def test_a_pages_twin_is_the_same_whatever_the_other_page_sizes(tmp_path):
    """A rebuild that changes the page sizes takes over the pages of a size it keeps: their
    twins must be the bytes a clean build with the new sizes makes."""
    with spooled(tmp_path, [100]) as records:
        twins = []
        for sizes in ((12, 24), (12,), (12, 10), (36, 12)):
            runs = paging.Runs(records)
            for offset, limit in paging.share(100, sizes, 0, 1):
                if limit == 12:
                    twins.append((sizes, offset, runs.page(Page(BOOKS, 12, offset, 100), URLS)[1]))
        by_offset = {}
        for sizes, offset, twin in twins:
            assert by_offset.setdefault(offset, twin) == twin, (sizes, offset)
