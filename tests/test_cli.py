"""The `catalogue` command through click's CliRunner: exit codes and full texts."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from conftest import ROOT
from servers import runnable

SUMMARY = "records: author 19, books 42, publisher 7, category 14, user 8, bookshelf 12"


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_build_prints_summary_and_publishes(data_dir: Path, tmp_path: Path):
    out = tmp_path / "site"
    result = run("build", "--data", str(data_dir), "--out", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == SUMMARY
    assert re.fullmatch(r"files: 151, 0\.\d MB, \d+\.\d\d s", lines[1])
    assert lines[2] == f"published: {out}/api/v1/"
    assert (out / "api/v1/books/index.json").is_file()


def test_check_writes_nothing(data_dir: Path, tmp_path: Path):
    result = run("check", "--data", str(data_dir))
    assert result.exit_code == 0
    assert result.output == f"{SUMMARY}\nthe data is valid\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_bad_data_exits_1_with_the_whole_report(data_dir: Path, tmp_path: Path):
    users = data_dir / "users.yaml"
    users.write_text(users.read_text(encoding="utf-8")
                     + "- username: \"bad name\"\n  followers_count: -3\n", encoding="utf-8")
    result = run("build", "--data", str(data_dir), "--out", str(tmp_path / "site"))
    assert result.exit_code == 1
    assert result.output == (
        "2 problems in the catalogue data:\n"
        "  data/users.yaml:52: field 'username': 'bad name' may hold only letters, digits and @ . + - _\n"
        "  data/users.yaml:52: field 'followers_count': -3 is negative; it must be 0 or more\n")
    assert not (tmp_path / "site" / "api").exists()


def test_base_url_option_and_environment(data_dir: Path, tmp_path: Path):
    run("build", "--data", str(data_dir), "--out", str(tmp_path / "a"), "--base-url", "https://staging.example")
    run("build", "--data", str(data_dir), "--out", str(tmp_path / "b"),
        env={"CATALOGUE_BASE_URL": "http://localhost:8000/catalogue"})
    assert (tmp_path / "a/api/v1/index.json").read_bytes().startswith(
        b'{"author":"https://staging.example/api/v1/author/"')
    assert b'"next":"http://localhost:8000/catalogue/api/v1/books/?limit=12&offset=12"' in (
        tmp_path / "b/api/v1/books/index.json").read_bytes()


def test_bad_base_url_option(data_dir: Path):
    result = run("check", "--data", str(data_dir), "--base-url", "example.org")
    assert result.exit_code == 1
    assert result.output == (
        "1 problem in the catalogue data:\n"
        "  data/site.yaml: field 'base_url': 'example.org' is not an absolute http(s) URL\n")


def test_missing_data_directory(tmp_path: Path):
    result = run("check", "--data", str(tmp_path / "nowhere"))
    assert result.exit_code == 1
    assert result.output == f"data directory {tmp_path / 'nowhere'} does not exist\n"


def commands(group=main, prefix="catalogue"):
    """Every command of the CLI, groups' subcommands included, as (its name as typed, command)."""
    for name, command in group.commands.items():
        yield f"{prefix} {name}", command
        if hasattr(command, "commands"):
            yield from commands(command, f"{prefix} {name}")


def test_every_command_and_option_is_in_the_docs():
    """The reference (docs/cli.md) is generated from the commands' help texts, and the
    hand-written pages name every command and option: a new one fails here until it is
    documented."""
    from test_docs import written_docs

    docs = written_docs()
    for typed, command in [("catalogue", main), *commands()]:
        assert typed in docs, typed
        assert command.help, f"{typed} has no help text for the reference"
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in docs, f"{typed} {opt}"
                    assert getattr(param, "help", None), f"{typed} {opt} has no help text for the reference"


def test_serve_without_nginx_says_how_to_install(tmp_path: Path, monkeypatch):
    from generator.hosts import nginx

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(nginx, "NGINX_ELSEWHERE", ())
    result = run("serve", "--server", "nginx", "--site", str(tmp_path))
    assert result.exit_code == 1
    assert result.output == (
        "nginx is not installed (or not on PATH): install it with the system's package manager, for "
        "example `apt-get install nginx-light` on Debian or Ubuntu, `dnf install nginx` on Fedora, or "
        "`brew install nginx` on macOS\n")


@pytest.mark.parametrize("server", ["nginx", "builtin", "cloudfront", "netlify"])
def test_serve_without_a_built_site(tmp_path: Path, server: str):
    if not runnable(server):
        pytest.skip(f"{server} is not installed")
    result = run("serve", "--server", server, "--site", str(tmp_path / "site"))
    assert result.exit_code == 1
    assert result.output == (f"there is no built site in {tmp_path / 'site'}: "
                             "run `catalogue build` (make build) first\n")


def test_build_writes_the_nginx_configuration(data_dir: Path, tmp_path: Path):
    out = tmp_path / "site"
    run("build", "--data", str(data_dir), "--out", str(out), "--listen", "127.0.0.1:9123")
    server = (out / "hosts/nginx/catalogue.conf").read_text(encoding="utf-8")
    assert "listen 127.0.0.1:9123;" in server and f'root "{out.absolute()}/current";' in server
    assert "server_name ketab.example.ir;" in server
    standalone = (out / "hosts/nginx/nginx.conf").read_text(encoding="utf-8")
    assert f'include "{out.absolute()}/hosts/nginx/catalogue.conf";' in standalone
    assert "function route(method, path, query, accept)" in (out / "hosts/router/router.js").read_text(encoding="utf-8")


def test_token_add_prints_the_token_and_keeps_its_hash(tmp_path: Path):
    from generator.writes import tokens
    path = tmp_path / "secrets" / "tokens"
    result = run("token", "add", "librarian", "--tokens", str(path))
    assert result.exit_code == 0
    token = result.output.strip()
    assert len(token) >= 40 and result.output == token + "\n"
    assert path.read_text() == f"librarian {tokens.digest(token)}\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert tokens.Tokens(path).holder(token) == "librarian"
    assert run("token", "add", "two words", "--tokens", str(path)).exit_code == 1


def test_write_service_refuses_to_start_without_its_tokens(data_dir: Path, tmp_path: Path):
    result = run("write-service", "--data", str(data_dir), "--out", str(tmp_path / "site"),
                 "--tokens", str(tmp_path / "nowhere"))
    assert result.exit_code == 1
    assert result.output == (f"token file {tmp_path / 'nowhere'} does not exist: create a token with "
                             f"`catalogue token add NAME --tokens {tmp_path / 'nowhere'}`\n")


def test_serve_with_data_needs_tokens(data_dir: Path, tmp_path: Path):
    result = run("serve", "--site", str(tmp_path), "--data", str(data_dir))
    assert result.exit_code == 2
    assert "--data needs --tokens" in result.output


def test_build_refuses_a_write_service_address_nginx_cannot_hold(data_dir: Path, tmp_path: Path):
    result = run("build", "--data", str(data_dir), "--out", str(tmp_path / "site"),
                 "--write-service", "127.0.0.1:8001; return 200")
    assert result.exit_code == 1
    assert result.output == ("write service address '127.0.0.1:8001; return 200': give it as host:port, "
                             "for example 127.0.0.1:8001\n")
    assert not (tmp_path / "site").exists()


# ---- catalogue init -------------------------------------------------------------------------
INIT_SUMMARY = "records: author 3, books 3, publisher 2, category 3, user 2, bookshelf 2"


def test_init_writes_a_catalogue_that_builds(tmp_path: Path, monkeypatch):
    from generator.catalogue.resources import RESOURCES

    monkeypatch.chdir(tmp_path)
    result = run("init", "ketab")
    assert result.exit_code == 0, result.output
    assert result.output == (f"created ketab/data/ (site.yaml; {INIT_SUMMARY})\n"
                             "next:\n"
                             "  cd ketab\n"
                             "  catalogue build    # publishes site/api/v1/\n"
                             "  catalogue serve    # serves it on http://127.0.0.1:8000/api/v1/\n")
    data = tmp_path / "ketab" / "data"
    assert sorted(p.name for p in data.iterdir()) == sorted(
        ["site.yaml"] + [f"{r.collection}.yaml" for r in RESOURCES])
    monkeypatch.chdir(tmp_path / "ketab")
    built = run("build")
    assert built.exit_code == 0, built.output
    assert built.output.splitlines()[0] == INIT_SUMMARY
    root = (tmp_path / "ketab/site/api/v1/index.json").read_bytes()
    assert root.startswith(b'{"author":"http://127.0.0.1:8000/api/v1/author/"')  # served where `catalogue serve` listens
    assert "صادق هدایت".encode() in (tmp_path / "ketab/site/api/v1/author/index.json").read_bytes()


def test_init_into_an_empty_directory_and_the_current_one(tmp_path: Path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    result = run("init", ".")
    assert result.exit_code == 0, result.output
    assert "  cd " not in result.output
    assert (tmp_path / "empty/data/site.yaml").is_file()


@pytest.mark.parametrize("existing", ["notes.txt", ".git"])
def test_init_refuses_a_directory_that_holds_anything(tmp_path: Path, existing: str):
    (tmp_path / "ketab").mkdir()
    (tmp_path / "ketab" / existing).write_text("mine")
    result = run("init", str(tmp_path / "ketab"))
    assert result.exit_code == 1
    assert result.output == (f"{tmp_path / 'ketab'} is not empty: catalogue init writes a new catalogue only "
                             "into a new or empty directory\n")
    assert sorted(p.name for p in (tmp_path / "ketab").iterdir()) == [existing]


def test_init_refuses_a_file(tmp_path: Path):
    (tmp_path / "ketab").write_text("mine")
    result = run("init", str(tmp_path / "ketab"))
    assert result.exit_code == 1
    assert result.output == f"{tmp_path / 'ketab'} is a file: give catalogue init a new or empty directory\n"


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    result = run("--version")
    assert result.exit_code == 0
    assert result.output.endswith(f", version {version('catalogue-generator')}\n")
