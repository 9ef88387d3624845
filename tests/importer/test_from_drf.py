"""`catalogue import` from a real DRF service (tests/drf): the import, built and served,
answers every page, detail and header as the service does, on the sample catalogue and
on a synthetic one no test has seen before (a new seed each run, named in the test id)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import SAMPLE, run_seed
from drf_service import DrfService, Pair, walk
from generator.api.urls import RESOURCES
from generator.catalogue import synth
from generator.cli import main
from generator.compose import build
from servers import Server

SEED = run_seed()  # (one per run: pytest-xdist's workers must collect the same tests)
MAX_LIMIT = 30


@pytest.fixture(scope="module", params=["sample", f"unseen-seed-{SEED}"])
def imported(tmp_path_factory, request):
    """The DRF service of a catalogue, and beside it the built-in server over the import
    of that service, built."""
    work = tmp_path_factory.mktemp("from-drf")
    data = SAMPLE
    if request.param != "sample":
        data = work / "data"
        synth.write(data, 120, seed=SEED)
        with (data / "site.yaml").open("a", encoding="utf-8") as f:
            f.write(f"max_limit: {MAX_LIMIT}\n")  # (the service clamps; the import must find it)
    drf = DrfService.start(data, work / "drf")
    result = CliRunner().invoke(main, ["import", f"{drf.url}/api/v1/", "--out", str(work / "imported"),
                                       "--format", "csv"])
    assert result.exit_code == 0, result.output
    build(work / "imported", work / "site")
    static = Server(work / "site")
    yield Pair(drf, static), result.stdout
    static.stop()
    drf.stop()


def test_the_import_says_what_it_inferred(imported):
    pair, summary = imported
    assert "  page size: 12 (from the next links); the service answers any limit, only this one will be " \
           "pre-built: add others to site.yaml's page_sizes" in summary.splitlines()
    assert "  time zone: Asia/Tehran (inferred from the offsets of" in summary


def test_the_import_finds_max_limit_and_answers_as_the_service(imported):
    pair, summary = imported
    sample = "max_limit: none" in summary
    assert sample or f"  max_limit: {MAX_LIMIT} (the service clamps a larger limit to it)" in summary.splitlines()
    for query in ("limit=1000", "limit=31&offset=3", f"limit={MAX_LIMIT}&offset={MAX_LIMIT}&x=1"):
        pair.same(f"/api/v1/books/?{query}")


def test_the_api_root(imported):
    pair, _ = imported
    pair.same("/api/v1/")


@pytest.mark.parametrize("name", [r.name for r in RESOURCES])
def test_every_page_and_every_detail_as_the_service_answers(imported, name):
    pair, _ = imported
    records = walk(pair, f"/api/v1/{name}/")
    assert len(records) == json.loads(pair.same(f"/api/v1/{name}/").body)["count"]
    for record in records:
        pair.same(pair.local(record["url"]))
    pair.same(f"/api/v1/{name}/", "OPTIONS")


def test_the_import_takes_the_service_s_query_settings_and_checks_them(tmp_path):
    """DRF does not publish its search, ordering and filter fields: told them (--query), the
    import asks the service a few such queries, and refuses settings it answers otherwise."""
    import yaml
    from query_probes import SETTINGS, with_settings

    data = with_settings(SAMPLE, tmp_path / "data")
    drf = DrfService.start(data, tmp_path / "drf")
    try:
        told = {key: SETTINGS[key] for key in ("search", "ordering", "filters")}
        (tmp_path / "query.yaml").write_text(yaml.safe_dump(told, allow_unicode=True), encoding="utf-8")
        result = CliRunner().invoke(main, ["import", f"{drf.url}/api/v1/", "--out", str(tmp_path / "imported"),
                                           "--query", str(tmp_path / "query.yaml")])
        assert result.exit_code == 0, result.output
        assert "  search, ordering and filters: as --query gives them;" in result.output
        site = yaml.safe_load((tmp_path / "imported" / "site.yaml").read_text(encoding="utf-8"))
        assert {key: site[key] for key in told} == told

        wrong = {**told, "search": {"books": ["title"]}, "ordering": {"books": ["pages"]}}
        (tmp_path / "wrong.yaml").write_text(yaml.safe_dump(wrong, allow_unicode=True), encoding="utf-8")
        result = CliRunner().invoke(main, ["import", f"{drf.url}/api/v1/", "--out", str(tmp_path / "again"),
                                           "--query", str(tmp_path / "wrong.yaml")])
        assert result.exit_code == 1 and not (tmp_path / "again").exists()
        assert "the service answers these queries otherwise than --query's settings say" in result.output
        assert "books/?search=" in result.output

        (tmp_path / "bad.yaml").write_text("search:\n  books: ['$title']\nsort: 1\n", encoding="utf-8")
        result = CliRunner().invoke(main, ["import", f"{drf.url}/api/v1/", "--out", str(tmp_path / "bad"),
                                           "--query", str(tmp_path / "bad.yaml")])
        assert result.exit_code == 1
        assert "field 'sort': is not a query setting" in result.output and "'$title': the prefix '$'" in result.output
    finally:
        drf.stop()
