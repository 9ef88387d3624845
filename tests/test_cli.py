"""The `catalogue` command through click's CliRunner: exit codes and full texts."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from conftest import ROOT
from servers import SERVERS, runnable

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


@pytest.mark.parametrize("url", ["example.org", "https://[ketab.example.ir"])  # (the second: urlsplit refuses it)
def test_bad_base_url_option(data_dir: Path, url: str):
    result = run("check", "--data", str(data_dir), "--base-url", url)
    assert result.exit_code == 1
    assert result.output == (
        "1 problem in the catalogue data:\n"
        f"  data/site.yaml: field 'base_url': {url!r} is not an absolute http(s) URL\n")


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


def test_the_import_formats_offered_are_those_the_importer_writes():
    """cli.py names them without importing the importer (which `catalogue import` alone needs)."""
    from generator import cli
    from generator.importer.output import FORMATS

    assert cli.IMPORT_FORMATS == FORMATS
    assert next(p for p in cli.import_.params if p.name == "fmt").type.choices == FORMATS


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


def test_serve_netlify_refuses_a_site_deno_cannot_read():
    result = run("serve", "--server", "netlify", "--site", "/dev/shm/site")
    assert result.exit_code == 1
    assert result.output == ("/dev/shm/site is under /dev, where Deno, which runs the Netlify Edge Function here, "
                             "reads nothing without every permission: build the site elsewhere, or serve it with "
                             "another --server\n")


@pytest.mark.parametrize("server", SERVERS)
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


def test_the_built_nginx_configuration_passes_nginx_t_as_written(data_dir: Path, tmp_path: Path):
    """`nginx -t` of hosts/nginx/nginx.conf right after a build: no `catalogue serve` has run
    (which once made the run directory the file names), and nothing to warn about."""
    if not runnable("nginx"):
        pytest.skip("nginx is not installed")
    from generator.hosts.nginx import find_nginx
    out = tmp_path / "site"
    assert run("build", "--data", str(data_dir), "--out", str(out)).exit_code == 0
    done = subprocess.run([find_nginx(), "-t", "-c", str(out / "hosts/nginx/nginx.conf")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].endswith("test is successful"), done.stderr
    assert not re.search(r"\[(warn|error|crit|alert|emerg)\]", done.stderr), done.stderr


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


# ---- one cause, one line (issue 28) ------------------------------------------------------------

def test_a_tab_in_a_yaml_file_is_one_problem_naming_the_checks_it_holds_back(data_dir: Path):
    authors = data_dir / "authors.yaml"
    lines = authors.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[4].startswith("  bio: ")
    lines[4] = "\t" + lines[4][2:]  # (books refer to these authors: without them, 55 references fail)
    authors.write_text("".join(lines), encoding="utf-8")
    result = run("check", "--data", str(data_dir))
    assert result.exit_code == 1
    assert result.output == (
        "1 problem in the catalogue data:\n"
        "  data/authors.yaml:5: is not valid YAML: a tab at column 1, which YAML does not allow for "
        "indenting: indent with spaces (nothing of the file was read; references to authors from "
        "books are checked once it reads)\n")


def test_a_misspelt_csv_header_is_one_problem_at_line_1(data_dir: Path):
    books = data_dir / "books.csv"
    text = books.read_text(encoding="utf-8")
    books.write_text(text.replace("id,title,", "id,titel,", 1), encoding="utf-8")
    result = run("check", "--data", str(data_dir))
    assert result.exit_code == 1
    assert result.output == (
        "1 problem in the catalogue data:\n"
        "  data/books.csv:1: field 'titel': the header's column is not a field of books: "
        "rename the column to 'title' (a required field)\n")


def test_header_problems_each_once_whatever_the_rows(data_dir: Path):
    books = data_dir / "books.csv"
    text = books.read_text(encoding="utf-8")
    books.write_text(text.replace("id,title,isbn,", "id,title,url,", 1).replace(",images\n", ",nickname\n", 1),
                     encoding="utf-8")
    result = run("build", "--data", str(data_dir), "--out", str(data_dir.parent / "site"))
    assert result.exit_code == 1
    assert result.output == (
        "3 problems in the catalogue data:\n"
        "  data/books.csv:1: field 'url': is computed by the build and cannot be given: remove the column\n"
        "  data/books.csv:1: field 'nickname': the header's column is not a field of books: remove the "
        "column or rename it; known fields: about, authors, categories, code, code_qoq, comment_for_develop, "
        "created_time, ddc, enable, id, images, isbn, pages, price, price_currency, publishers, title, "
        "translators, weight\n"
        "  data/books.csv:1: field 'isbn': has no column in the header and is required: add the column\n")


def test_repeated_problems_are_capped_with_a_count(data_dir: Path):
    books = data_dir / "books.csv"
    gone = "00000000-0000-4000-8000-000000000000"
    books.write_text(books.read_text(encoding="utf-8").replace("187b102f-27c8-4e95-9f12-42ebc7b73cb1", gone),
                     encoding="utf-8")
    result = run("check", "--data", str(data_dir))
    assert result.exit_code == 1
    refers = f"field 'authors': refers to author {gone}, which does not exist"
    assert result.output == (
        "5 problems in the catalogue data:\n"
        f"  data/books.csv:2: {refers}\n"
        f"  data/books.csv:10: {refers}\n"
        f"  data/books.csv:18: {refers}\n"
        "  data/books.csv: field 'authors': and 2 more like it on lines 26 and 262\n")


def test_problems_of_whole_files_are_never_counted_away(data_dir: Path):
    for name in ("authors.yaml", "books.csv", "categories.yaml", "users.yaml"):
        (data_dir / name).unlink()
    result = run("check", "--data", str(data_dir))
    assert result.exit_code == 1
    assert result.output == "".join(
        ["4 problems in the catalogue data:\n"]
        + [f"  data/: collection {c!r} has no data file: add {c}.yaml or {c}.csv\n"
           for c in ("categories", "authors", "books", "users")])  # (the build's order)


def test_a_csv_file_cut_short_by_a_broken_quote_holds_back_the_references_to_it(data_dir: Path):
    """Users read up to a broken quote: the bookshelves of users after it are not reported
    one by one as owned by no one."""
    users = data_dir / "users.csv"
    (data_dir / "users.yaml").unlink()
    users.write_text('id,username,bio\n8162a4c5-73aa-444d-8a00-7877dd6972d1,sara.ahmadi,"never closed\n',
                     encoding="utf-8")
    result = run("check", "--data", str(data_dir))
    assert result.exit_code == 1
    assert result.output == (
        "1 problem in the catalogue data:\n"
        "  data/users.csv:2: is not valid CSV: unexpected end of data (the file was not read past this; "
        "references to users from bookshelves are checked once it reads)\n")


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


@pytest.mark.parametrize("args, message", [
    (["write-service", "--tokens", "t", "--endpoint-url", "http://e"],
     "--endpoint-url and --invalidate go with --publish s3://BUCKET[/PREFIX]"),
    (["serve", "--publish", "s3://b"], "--publish needs --data (the writes it publishes) and --base-url"),
    (["write-service", "--tokens", "t", "--publish", "https://b"],
     "deploy target 'https://b': give it as s3://BUCKET or s3://BUCKET/PREFIX"),
])
def test_publish_options_are_refused_where_they_cannot_work(args: list[str], message: str, tmp_path: Path):
    """Before anything starts: the bucket's options without a bucket, a publish without the
    writes or the address it publishes for, a target that is no bucket."""
    result = CliRunner().invoke(main, args + ["--out" if args[0] == "write-service" else "--site", str(tmp_path)])
    assert result.exit_code != 0 and message in result.output
