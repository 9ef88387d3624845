"""The documentation stays true: the MkDocs site builds strictly, its command-line reference
is generated from the commands, every `catalogue` command and option the docs and the README
write exists, every site.yaml key the loader knows is documented (and the starter's
site.yaml lists it) and no other, the README stays a front door, the design pages stay
short and hold no log of runs, and the commands the getting-started and serving pages
show run as shown."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE
from servers import REQUIRED, runnable

DOCS = ROOT / "docs"
README_LIMIT = 12_000  # bytes
# Pages that are design and reference, kept short enough to be read whole (bytes).
PAGE_LIMITS = {"docs/architecture.md": 25_000, "docs/performance.md": 12_000}
# What a log of runs looks like in a page: a section for changes, notes or history, and
# footnotes (numbered markers, or superscript digits a ledger cites its runs by).
DIARY_HEADING = re.compile(r"(?im)^#+ .*\b(?:changelog|change log|history|more notes|notes from|journal|diary)\b.*$")
FOOTNOTE = re.compile(r"\[\^[^\]]+\]|[⁰¹²³⁴⁵⁶⁷⁸⁹]")


def written_pages() -> dict[str, str]:
    """The pages written for this project (the spec under docs/spec/ is the contract's own
    text), and the README, by path."""
    pages = {"README.md": (ROOT / "README.md").read_text(encoding="utf-8")}
    for path in sorted(DOCS.rglob("*.md")):
        if "spec" not in path.relative_to(DOCS).parts:
            pages[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return pages


def written_docs() -> str:
    return "\n".join(written_pages().values())


def code_of(text: str) -> list[str]:
    """The code a page shows: inline code spans and the lines of indented code blocks."""
    spans = re.findall(r"`([^`\n]+)`", text)
    blocks = [line[4:] for line in text.splitlines() if line.startswith("    ") and line.strip()]
    return spans + blocks


def test_mkdocs_builds_strictly_with_the_generated_reference(tmp_path: Path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[docs]'")
    from generator.cli import main
    from test_cli import commands

    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    reference = (tmp_path / "site" / "cli.html").read_text(encoding="utf-8")
    for typed, command in [("catalogue", main), *commands()]:
        assert typed in reference, typed
        for param in command.params:
            for opt in param.opts:
                assert opt in reference or param.param_type_name == "argument", f"{typed} {opt}"


def test_every_command_and_option_written_exists():
    from generator.cli import main

    for page, text in written_pages().items():
        for code in code_of(text):
            for found in re.finditer(r"(?:^|&&|\||;|\$\()\s*catalogue((?: [a-z][a-z-]*)*)((?: [^|;&`]*)?)", code):
                words, rest = found[1].split(), found[2]
                command = main
                while words and hasattr(command, "commands") and words[0] in command.commands:
                    command = command.commands[words.pop(0)]
                if hasattr(command, "commands") and words:
                    pytest.fail(f"{page}: `catalogue ... {words[0]}` is not a command (in `{code}`)")
                known = {opt for param in command.params for opt in param.opts} | {"--help"}
                for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", " ".join(words) + rest):
                    assert option in known, f"{page}: {option} is not an option of `{command.name}` (in `{code}`)"


def test_a_made_up_option_is_caught(monkeypatch):
    import test_docs

    real = test_docs.written_pages
    monkeypatch.setattr(test_docs, "written_pages", lambda: {**real(), "x.md": "`catalogue build --fast`"})
    with pytest.raises(AssertionError, match="--fast is not an option of `build`"):
        test_every_command_and_option_written_exists()


def documented_keys() -> set[str]:
    """The keys with a section of their own under the site.yaml heading of docs/data.md."""
    page = (DOCS / "data.md").read_text(encoding="utf-8")
    section = page.split("\n## site.yaml", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"(?m)^### (.+)$", section))


def test_every_site_yaml_key_is_documented_and_no_other():
    from generator.catalogue.settings import SITE_KEYS

    assert documented_keys() == SITE_KEYS


def test_the_starter_site_yaml_lists_every_key_with_its_docs():
    from generator.catalogue.settings import SITE_KEYS
    from generator.catalogue.starter import starter_files

    text = starter_files()["site.yaml"].decode("utf-8")
    listed = set(re.findall(r"(?m)^(?:# )?([a-z_]+):(?: |$)", text))
    assert listed == SITE_KEYS
    for key in SITE_KEYS:
        assert f"docs/data.md#{key}" in text, key


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= README_LIMIT, f"README.md is {len(readme):,} bytes: move the detail into docs/"
    text = readme.decode("utf-8")
    for command in ("make build", "make test", "catalogue init", "catalogue build", "catalogue serve"):
        assert command in text, command
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_design_pages_stay_within_their_size():
    for page, limit in PAGE_LIMITS.items():
        size = len((ROOT / page).read_bytes())
        assert size <= limit, f"{page} is {size:,} bytes, more than {limit:,}: mend its sections, move history to git log"


def diary_in(pages: dict[str, str]) -> list[str]:
    """Where the pages log runs rather than describe the project: a changelog or notes
    section, a footnote."""
    found = []
    for page, text in pages.items():
        found += [f"{page}: section {m[0]!r}" for m in DIARY_HEADING.finditer(text)]
        found += [f"{page}:{text.count(chr(10), 0, m.start()) + 1}: footnote {m[0]!r}" for m in FOOTNOTE.finditer(text)]
    return found


def test_the_docs_are_no_diary():
    assert diary_in(written_pages()) == [], "runs and their history go in commit messages, not the docs"


def test_a_diary_is_caught():
    assert diary_in({"x.md": "# X\n\n## Changelog\n\n- faster\n", "y.md": "run ¹\n\n## More notes from the work\n",
                     "z.md": "a claim[^3]\n\n## Notes on history\n", "ok.md": "# Publishing\n\nLogs go to stderr.\n"}) == [
        "x.md: section '## Changelog'", "y.md: section '## More notes from the work'", "y.md:1: footnote '¹'",
        "z.md: section '## Notes on history'", "z.md:1: footnote '[^3]'"]


SPEC = ("api", "data", "http", "query")


def test_the_spec_is_in_the_repository():
    for name in SPEC:
        assert (DOCS / "spec" / f"{name}.md").is_file(), name


def test_the_code_cites_the_spec_by_its_path():
    bare = re.compile(rf"(?<![\w/])(?:{'|'.join(SPEC)})\.md\b")
    cited = re.compile(r"docs/spec/([a-z]+)\.md")
    for folder in ("generator", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__):
                continue  # (which names the docs' own pages, docs/data.md among them)
            text = path.read_text(encoding="utf-8")
            where = path.relative_to(ROOT)
            for found in bare.finditer(text):
                line = text.count("\n", 0, found.start()) + 1
                pytest.fail(f"{where}:{line}: cite the spec by its path, docs/spec/{found[0]}")
            for name in cited.findall(text):
                assert (DOCS / "spec" / f"{name}.md").is_file(), f"{where} cites docs/spec/{name}.md"


# ---- the commands the docs show, run as shown ------------------------------------------------
# Each indented code block of a page, line by line, in a temporary directory, as a reader
# types them (Datasette's and sqlite-utils' docs tests do the same): `cd`, every `catalogue`
# command and `make serve` run and must succeed; a server runs in the background until the
# next server or the end of the page, stopped with Ctrl-C as a reader stops it; each `curl`
# asks it. What a reader cannot run elsewhere as written is changed in one way only: the
# fixed ports become free ones. The installation itself (a new virtual environment under
# ~/) is tests/test_package.py's, which runs the same steps.

ANSWER_WITHIN = 180  # seconds for a server to say it is ready (a first `npm ci` takes about a minute)
PORT, WRITE_PORT = "8000", "8001"  # the ports the docs show


def shown_commands(page: str) -> list[str]:
    """The command lines of a page's indented code blocks, comments aside; not the lines
    that show what a command prints (`ready: ...`) nor the installation (`~/...`)."""
    lines = [re.sub(r"\s+#\s.*$", "", line[4:]).strip() for line in (DOCS / page).read_text(encoding="utf-8").splitlines()
             if line.startswith("    ") and line.strip()]
    typed = ("catalogue ", "cd ", "curl ", "make serve")
    return [line for line in lines if line.startswith(typed)]


class Reader:
    """A shell as a reader has one: a directory, this environment's `catalogue` first on the
    PATH, and at most one server running in the background."""

    def __init__(self, here: Path) -> None:
        from servers import free_port, release

        self.here = here
        self.ports = {PORT: str(free_port()), WRITE_PORT: str(free_port())}
        for port in self.ports.values():
            release(int(port))
        self.env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        self.server: subprocess.Popen | None = None
        self.log = here / "server.log"

    def run(self, line: str) -> None:
        if line.startswith("cd "):
            self.here = self.here / line[3:].strip()
        elif line.startswith(("catalogue serve", "make serve")):
            self.serve(line)
        else:
            for shown, port in self.ports.items():
                line = line.replace(f"127.0.0.1:{shown}/", f"127.0.0.1:{port}/")
            done = subprocess.run(line, shell=True, cwd=self.here, env=self.env, capture_output=True, timeout=300)
            said = (done.stdout + done.stderr).decode("utf-8", "replace")
            assert done.returncode == 0, f"`{line}` exited with {done.returncode}:\n{said}"
            if line.startswith("curl "):
                status, body = self.answer(done.stdout, " -i " in f" {line} ")
                assert status == 200 and json.loads(body), f"`{line}`:\n{said}"

    @staticmethod
    def answer(out: bytes, with_head: bool) -> tuple[int, bytes]:
        if not with_head:
            return 200, out
        head, _, body = out.partition(b"\r\n\r\n")
        return int(head.split()[1]), body

    def serve(self, line: str) -> None:
        self.stop()
        command = shlex.split(line)
        if command[0] == "make":  # (the checkout's Makefile, with its .venv, here)
            command += ["-f", str(ROOT / "Makefile"), "STAMP=", f"BIN={Path(sys.executable).parent}",
                        f"PORT={self.ports[PORT]}", f"WRITE_PORT={self.ports[WRITE_PORT]}"]
        else:
            command += ["--port", self.ports[PORT], "--write-port", self.ports[WRITE_PORT]]
        self.server = subprocess.Popen(command, cwd=self.here, env=self.env, stdout=subprocess.DEVNULL,
                                       stderr=self.log.open("wb"), start_new_session=True,
                                       preexec_fn=as_from_a_terminal)
        deadline = time.monotonic() + ANSWER_WITHIN
        while "ready: " not in self.log.read_text(encoding="utf-8", errors="replace"):
            if self.server.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"`{line}` did not get ready:\n{self.log.read_text(encoding='utf-8', errors='replace')}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Ctrl-C, as a reader stops it: to the whole group, `make` included, which says it
        was interrupted in a line of its own and dies of it (catalogue serve exits with 0)."""
        if self.server is None:
            return
        server, self.server = self.server, None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(30)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
        said = self.log.read_text(encoding="utf-8", errors="replace")
        after = said.split("(Ctrl-C stops)\n", 1)[1].splitlines()
        assert "Traceback" not in said and len(after) <= 1, said
        assert server.returncode == (-signal.SIGINT if server.args[0] == "make" else 0), said


def as_from_a_terminal() -> None:
    """Ctrl-C's signal at its default, as a reader's shell starts a command: a suite run in the
    background of a shell without job control starts with SIGINT ignored, and `make` keeps an
    ignored SIGINT ignored (it would outlive the reader's Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def read_as_written(page: str, reader: Reader) -> list[str]:
    ran = []
    try:
        for line in shown_commands(page):
            if "--server cloudflare" in line and not runnable("cloudflare") and shutil.which("npm") is None:
                continue  # (no workerd, and no npm to install it: the Worker's own tests say so in their skip line)
            reader.run(line)
            ran.append(line)
    finally:
        reader.stop()
    return ran


@pytest.fixture
def reader(tmp_path: Path) -> Reader:
    if shutil.which("curl") is None and "curl" not in REQUIRED:
        pytest.skip("curl is not installed")
    return Reader(tmp_path)


def test_getting_started_runs_as_written(reader: Reader):
    ran = read_as_written("getting-started.md", reader)
    assert "catalogue init ketab" in ran and "catalogue serve" in ran and any(line.startswith("curl") for line in ran)


def test_serving_runs_as_written(reader: Reader):
    """In a clone (its data/), as the page's `make serve` assumes."""
    shutil.copytree(SAMPLE, reader.here / "data")
    ran = read_as_written("serving.md", reader)
    assert ran[0] == "make serve" and sum(line.startswith("curl") for line in ran) >= 2
