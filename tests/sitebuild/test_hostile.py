"""Property-based: whatever is done to valid YAML and CSV input, a build either publishes a
whole site or reports problems that each name a file (and a line where there is one),
and a failed build leaves the published site exactly as it was. Never a crash."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.sitebuild import build
from generator.errors import DataError
from conftest import SAMPLE, served, site_state

FILES = sorted(p.name for p in SAMPLE.iterdir())
# Characters that matter to YAML and CSV, and some that text may not hold.
ALPHABET = st.sampled_from(list(",\"'\n\r\t :-[]{}|&*!%#@>?=\\/.0123456789abcxyz") +
                           ["\x00", "\ufeff", "\u2028", "\ud800", "ک", "ی", "\u200c", "- ", "id", "null", "~",
                            "true", "!!python/object/apply:os.system", "&a", "*a", "<<: *a", "children:"])


@st.composite
def mutations(draw):
    """(file, how, where, what): one edit of one data file."""
    name = draw(st.sampled_from(FILES))
    text = (SAMPLE / name).read_text(encoding="utf-8")
    how = draw(st.sampled_from(["replace", "insert", "delete", "duplicate line", "swap lines"]))
    start = draw(st.integers(0, len(text)))
    length = draw(st.integers(0, 40))
    what = "".join(draw(st.lists(ALPHABET, max_size=8)))
    return name, how, start, length, what


def mutate(text: str, how: str, start: int, length: int, what: str) -> str:
    lines = text.splitlines(keepends=True)
    if how == "replace":
        return text[:start] + what + text[start + length:]
    if how == "insert":
        return text[:start] + what + text[start:]
    if how == "delete":
        return text[:start] + text[start + length:]
    line = text.count("\n", 0, start) % max(len(lines), 1)
    if how == "duplicate line":
        return "".join(lines[:line + 1] + lines[line:])
    other = (line + length) % max(len(lines), 1)
    lines[line], lines[other] = lines[other], lines[line]
    return "".join(lines)


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """The sample catalogue built once; each example starts from a copy of it."""
    out = tmp_path_factory.mktemp("hostile") / "site"
    build(SAMPLE, out, background=False)
    return out


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=mutations(), processes=st.sampled_from([1, 2]))
def test_any_edit_builds_or_is_reported_and_never_half_publishes(published: Path, edit, processes: int):
    name, how, start, length, what = edit
    with tempfile.TemporaryDirectory() as work:
        data, out = Path(work) / "data", Path(work) / "site"
        shutil.copytree(SAMPLE, data)
        shutil.copytree(published, out, symlinks=True)
        path = data / name
        path.write_bytes(mutate(path.read_text(encoding="utf-8"), how, start, length, what)
                         .encode("utf-8", "surrogatepass"))
        before = site_state(out)
        try:
            build(data, out, processes=processes, background=False)
        except DataError as error:
            for problem in error.problems.items:
                assert problem.file.startswith("data/") and problem.message, problem
            assert site_state(out) == before  # nothing published, nothing half-written
            return
        site = served(out)
        assert "api/v1/index.json" in site and "api/v1/books/index.json" in site
        for path, data_bytes in site.items():
            json.loads(data_bytes)  # whole documents only
