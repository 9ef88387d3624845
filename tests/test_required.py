"""What the suite asks of the machine it runs on: CI names the outside programs the tests need
(CATALOGUE_REQUIRE, .ci/run), and where one of them is not installed the run stops before
any test, naming it, instead of failing each test that needs it after waiting for a server
that cannot start; and no random example has a deadline (a loaded machine is slow)."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT
from test_interrupted import inner_environment


def test_a_required_program_not_installed_stops_the_run_at_once(tmp_path):
    nowhere = tmp_path / "bin"
    nowhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "--co",
                           "tests/test_required.py"],
                          cwd=ROOT, env={**inner_environment(), "PATH": str(nowhere), "CATALOGUE_REQUIRE": "rsync"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "CATALOGUE_REQUIRE names rsync, not installed here" in done.stderr


def test_no_random_example_has_a_deadline():
    from hypothesis import settings
    assert settings.default.deadline is None
