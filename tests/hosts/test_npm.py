"""Where an installed package finds the npm packages it runs (generator/hosts/npm.py): the
checkout's node_modules/ first, else the user's cache, but only an install made from the
package-lock.json this version pins (an upgrade that pins others installs again)."""
from __future__ import annotations

from pathlib import Path

import pytest

from generator.hosts import npm


@pytest.fixture
def places(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    """A package as installed (its manifests shipped, no checkout) and the user's cache."""
    shipped, checkout = tmp_path / "shipped", tmp_path / "site-packages"
    shipped.mkdir()
    checkout.mkdir()
    (shipped / "package.json").write_text('{"devDependencies": {"miniflare": "4.1.0"}}\n', encoding="utf-8")
    (shipped / "package-lock.json").write_text('{"lockfileVersion": 3, "v": 1}\n', encoding="utf-8")
    monkeypatch.setattr(npm, "SHIPPED", shipped)
    monkeypatch.setattr(npm, "CHECKOUT", checkout)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return {"shipped": shipped, "checkout": checkout, "cache": tmp_path / "cache" / "catalogue" / "node"}


def installed_in(directory: Path, lock: Path | None = None) -> None:
    (directory / "node_modules" / "miniflare").mkdir(parents=True)
    (directory / "node_modules" / "miniflare" / "package.json").write_text("{}", encoding="utf-8")
    if lock is not None:
        (directory / npm.INSTALLED).write_bytes(lock.read_bytes())


def test_nothing_installed_is_nothing_found(places):
    assert npm.find("miniflare") is None


def test_the_cache_serves_the_version_pinned_and_no_other(places):
    installed_in(places["cache"], places["shipped"] / "package-lock.json")
    assert npm.cache() == places["cache"] and npm.find("miniflare") == places["cache"]
    assert npm.find("wrangler") is None
    (places["shipped"] / "package-lock.json").write_text('{"lockfileVersion": 3, "v": 2}\n', encoding="utf-8")
    assert npm.find("miniflare") is None  # (an upgrade: installed again on first use)


def test_an_install_npm_did_not_finish_is_not_found(places):
    installed_in(places["cache"])  # (no record of the lock: npm stopped before the end)
    assert npm.find("miniflare") is None


def test_a_checkout_with_its_node_modules_comes_first(places):
    installed_in(places["cache"], places["shipped"] / "package-lock.json")
    installed_in(places["checkout"])
    assert npm.find("miniflare") == places["cache"]  # (site-packages is no checkout: it has no package.json)
    (places["checkout"] / "package.json").write_text("{}", encoding="utf-8")
    assert npm.find("miniflare") == places["checkout"]
