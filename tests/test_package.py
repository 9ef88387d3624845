"""The package as a user installs it: a wheel built from the project, installed into a fresh
virtual environment and run from a directory that is not the project's: `catalogue --help`,
`--version` (from the package metadata), `catalogue init`, a build of what it wrote, and
`catalogue serve` answering from it. The schemas, templates, viewer and starter must come
from inside the installed package.

The wheel is built with pip (fetching the build backend as any `pip install .` does). Its
dependencies are not downloaded again: the fresh environment sees this one's site-packages
through a .pth line, after its own, so that the package itself can only come from the
wheel. Takes some seconds.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
from importlib.metadata import version
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import ROOT
from servers import free_port, wait_for_port

pytestmark = pytest.mark.slow

SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "generator", "schemas")
# What pip says when it cannot get the build backend (no index, no cache): then, and only
# then, the test cannot run here.
OFFLINE = ("No matching distribution found", "Could not find a version", "NewConnectionError",
           "Temporary failure in name resolution", "Network is unreachable")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin/ directory of a fresh virtual environment with the project's wheel installed."""
    work = tmp_path_factory.mktemp("package")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir",
                            str(work / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    if built.returncode != 0:
        if any(sign in built.stderr for sign in OFFLINE):
            pytest.skip("the build backend (setuptools) cannot be fetched here: offline, with no pip cache")
        pytest.fail(f"the wheel did not build:\n{built.stderr}")
    wheel, = (work / "dist").glob("catalogue_generator-*.whl")

    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, timeout=300, env=clean_env())
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "zz_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    return venv / "bin"


def clean_env() -> dict[str, str]:
    """The environment without anything that would put the project's checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(bin_dir: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "catalogue"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=clean_env())


def test_the_package_comes_from_the_wheel(installed: Path, tmp_path: Path):
    found = subprocess.run([str(installed / "python"), "-c", "import generator.cli, generator.catalogue.fields as f; "
                            "print(generator.cli.__file__); print(f.SCHEMA_DIR)"],
                           cwd=tmp_path, capture_output=True, text=True, env=clean_env(), check=True).stdout.split()
    venv = installed.parent.resolve()
    assert all(Path(p).resolve().is_relative_to(venv) for p in found), found
    assert (Path(found[1]) / "book.json").is_file()


def test_help_and_version_from_anywhere(installed: Path, tmp_path: Path):
    helped = run(installed, tmp_path, "--help")
    assert helped.returncode == 0, helped.stderr
    assert "Build the catalogue's static JSON API" in helped.stdout and "init" in helped.stdout
    versioned = run(installed, tmp_path, "--version")
    assert versioned.returncode == 0, versioned.stderr
    assert versioned.stdout == f"catalogue, version {version('catalogue-generator')}\n"


def test_init_build_and_serve_from_anywhere(installed: Path, tmp_path: Path):
    started = run(installed, tmp_path, "init", "ketab")
    assert started.returncode == 0, started.stderr
    catalogue = tmp_path / "ketab"
    built = run(installed, catalogue, "build")
    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith("records: author 3, books 3,")
    assert (catalogue / "site/current/_meta/viewer.html").is_file()
    assert (catalogue / "site/hosts/nginx/catalogue.conf").is_file()

    port = free_port()
    server = subprocess.Popen([str(installed / "catalogue"), "serve", "--server", "builtin", "--port", str(port)],
                              cwd=catalogue, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_env())
    try:
        wait_for_port(port, server, "catalogue serve")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/books/?limit=1&offset=1", timeout=10) as answer:
            page = json.load(answer)
        assert page["count"] == 3 and page["results"][0]["title"] == "سووشون"
        searched = f"http://127.0.0.1:{port}/api/v1/books/?search={quote('خوارزمی')}&ordering=-price"
        with urllib.request.urlopen(searched, timeout=10) as answer:  # (the starter searches and orders)
            page = json.load(answer)
        assert [book["title"] for book in page["results"]] == ["سووشون", "وداع با اسلحه"]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_jsonschema_is_not_needed_at_run_time(installed: Path, tmp_path: Path):
    """The pure-Python jsonschema is the tests' second opinion only: a build never imports it."""
    script = ("import sys; from generator.cli import main\n"
              "try:\n    main(['init', 'k'])\nexcept SystemExit:\n    pass\n"
              "import os; os.chdir('k')\n"
              "try:\n    main(['build'])\nexcept SystemExit:\n    pass\n"
              "print('jsonschema' in sys.modules)")
    result = subprocess.run([str(installed / "python"), "-c", script], cwd=tmp_path, capture_output=True,
                            text=True, env=clean_env(), timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "False"
