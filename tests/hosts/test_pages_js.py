"""The JavaScript hosts' pages put together at request time (templates/pages.js.j2, with
the query-string reading it includes) are the Python hosts' (api/assemble.py), byte for
byte: the same requests, on the sample and on a catalogue of several blocks of pages, run
in Node against the files of the built site."""
from __future__ import annotations

import base64
import json
import random
import subprocess
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import SAMPLE
from generator import compose
from generator.api.meta import PAGE_TOO_LARGE
from generator.api.urls import CURRENT
from generator.catalogue import synth
from generator.hosts.files import templates
from generator.hosts.router import answer_values
from golden_files import put_together
from servers import runnable

pytestmark = pytest.mark.skipif(not runnable("node"), reason="node is not installed")

# pages.js.j2 in a module of its own, reading the generation's files from disk.
HARNESS = """
import {readFileSync, statSync} from "node:fs";
const root = process.argv[2];
const read = async (key) => {
  try {
    return {bytes: new Uint8Array(readFileSync(root + "/" + key)), modified: statSync(root + "/" + key).mtime.toUTCString()};
  } catch (error) {
    return null;
  }
};
const requests = JSON.parse(readFileSync(0, "utf8"));
const answers = [];
for (const [name, query] of requests) {
  const keys = [];  // (the files the answer read, each once, in the order first read)
  const reading = async (key) => {
    if (!keys.includes(key)) keys.push(key);
    return read(key);
  };
  try {
    const made = await assemblePage(reading, readPaging(name, query, await siteInfo(reading)), {reads: 1e9, bytes: Infinity});
    answers.push([200, Buffer.from(made.body).toString("base64"), keys]);
  } catch (error) {
    if (error instanceof QyRejected) {
      answers.push([400, Buffer.from(error.encoded()).toString("base64"), keys]);
      continue;
    }
    if (!(error instanceof QsTooManyFields)) throw error;
    answers.push([400, Buffer.from(TOO_MANY_FIELDS).toString("base64"), keys]);
  }
}
process.stdout.write(JSON.stringify(answers));
"""
QUERIES = ["", "limit=5", "limit=12&offset=5", "offset=1000", "limit=1_2&utm_source=x", "limit=%DB%B1%DB%B2",
           "limit=3&offset=40&a=b+c&a=d", "limit=1000", "limit=%20%2B7%20&offset=011", "offset=-3&limit=-1",
           "limit=12&offset=11&offset=12", "=x&q&limit=2", "limit=" + "9" * 40, "offset=" + "9" * 40,
           "limit=" + "1" * 4301, "x=%E2%28&limit=4", "&".join(["a=1"] * 1001)]


def module(directory: Path, harness: str = HARNESS) -> Path:
    values = answer_values("no-cache")
    code = values["querystring"] + "\n" + values["query"] + "\n" + templates().get_template("pages.js.j2").render(values)
    path = directory / "pages.mjs"
    path.write_text(code + "\nconst notModified = () => false;\n" + harness, encoding="utf-8")
    return path


def run_node(path: Path, root: Path, requests: list[tuple[str, str]]) -> list[tuple[int, bytes]]:
    return [(status, body) for status, body, _ in run_node_reads(path, root, requests)]


def run_node_reads(path: Path, root: Path, requests: list[tuple[str, str]]) -> list[tuple[int, bytes, list[str]]]:
    """Each request's status, body and the files it read (each once, in the order first read)."""
    done = subprocess.run(["node", str(path), str(root)], input=json.dumps(requests), capture_output=True, text=True,
                          check=True, timeout=300)
    return [(status, base64.b64decode(body), keys) for status, body, keys in json.loads(done.stdout)]


def random_queries(count: int, total: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        params = [("limit", str(rng.choice([1, 5, 11, 12, 13, 24, 100, 2000]))),
                  ("offset", str(rng.randrange(0, total + 30)))]
        if rng.random() < 0.3:
            params.append(("utm_source", rng.choice(["x y", "کتاب", "", "a&b"])))
        rng.shuffle(params)
        yield urlencode(params)


@pytest.fixture(scope="module", params=["sample", "blocks"])
def built(request, tmp_path_factory) -> tuple[Path, int]:
    """The sample, and 25,000 books: pages across three blocks of page offsets."""
    work = tmp_path_factory.mktemp("pages-js")
    data, books = SAMPLE, 42
    if request.param == "blocks":
        data, books = work / "data", 25000
        synth.write(data, books, seed=3)
    compose.build(data, work / "site")
    return work / "site", books


def test_javascript_puts_pages_together_as_python_does(built, tmp_path):
    site, books = built
    generation = (site / CURRENT).resolve()
    requests = [("books", q) for q in [*QUERIES, *random_queries(150, books, seed=books)]]
    requests += [(name, q) for name in ("author", "category", "bookshelf") for q in QUERIES[:8]]
    if books > 10000:  # across the first spans' and blocks' seams, and the last page of a span and of a block
        requests += [("books", f"limit=30&offset={o}") for o in (990, 996, 1001, 1999, 9990, 9996, 10001, 19999,
                                                                   books - 7)]
    got = run_node(module(tmp_path), generation, requests)
    for (name, query), answer in zip(requests, got, strict=True):
        assert answer == put_together(generation, name, query), (name, query)


@pytest.mark.parametrize("built", ["blocks"], indirect=True)
def test_a_run_costs_the_fewest_pages_that_hold_it(built, tmp_path):
    """A record deep in the collection costs the JavaScript, as the Python, its page alone
    (whose head tells the count); a run of 100, the pages of 24 that hold it (5, not 9 of 12)."""
    from test_query_js import python_reads  # (which imports this module)

    site, _ = built
    generation = (site / CURRENT).resolve()
    requests = [("books", "limit=1&offset=14999"), ("books", "limit=100&offset=14904")]
    expected = [["api/v1/books/pages/12/1/14988.json"],
                [f"api/v1/books/pages/24/1/{offset}.json" for offset in range(14904, 15004, 24)]]
    for (status, _, keys), (name, query), files in zip(run_node_reads(module(tmp_path), generation, requests),
                                                        requests, expected, strict=True):
        assert status == 200 and [k for k in keys if not k.startswith("_meta/")] == files
        assert python_reads(generation, name, query) == files


@pytest.mark.parametrize("built", ["blocks"], indirect=True)
def test_past_a_host_s_file_cap_the_largest_page_is_what_its_reads_hold_wherever_it_starts(built, tmp_path):
    """With room for 200 files, the largest page named is 198 pages of 12's worth (199 page
    files off the grid, and span 0's index), answered within the cap wherever it starts."""
    from test_edge_limits import guard_module, run

    site, _ = built
    generation = str((site / CURRENT).resolve())
    caps = {"reads": 200, "held": 1 << 30}
    path = guard_module(tmp_path)
    refused, = run(path, generation, [("limit=3000&offset=995", caps)])
    assert refused[0] == 400 and json.loads(refused[1])["detail"] == PAGE_TOO_LARGE.format(largest=198 * 12)
    for offset in (995, 7, 2000):
        answered, = run(path, generation, [(f"limit={198 * 12}&offset={offset}", caps)])
        assert answered[0] == 200 and answered[2] <= 200, (offset, answered[:3])


def test_javascript_reads_pages_larger_than_a_span_as_python_does(tmp_path):
    """A default page size of 2,500: spans with no page of their own (and no index) between
    those with one; the JavaScript finds each record, from the same files, as the Python."""
    from conftest import many_users
    from test_query_js import assert_as_python  # (which imports this module)

    generation = (many_users(tmp_path, 6000, (2500, 12)) / CURRENT).resolve()
    assert not (generation / "api/v1/user/pages/2500/0/1000.idx").exists()
    requests = [("user", q) for q in ("limit=30&offset=2490", "limit=5&offset=4999", "limit=3000&offset=1",
                                      "limit=7&offset=5996", "offset=7000", "limit=2&offset=999")]
    assert_as_python(generation, requests, run_node_reads(module(tmp_path), generation, requests))


FOUND_IN = """
import {readFileSync} from "node:fs";
const asked = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(asked.map(([page, first, last]) => foundIn(Buffer.from(page, "base64"), first, last))));
"""


def test_javascript_finds_a_pages_records_where_python_does(tmp_path):
    """foundIn (the records a query picks, found in their page's bytes) cuts each page where
    pageindex.found_in does: strings holding brackets, quotes, backslashes and escapes,
    nested arrays and objects, empty ones."""
    from generator.api import pageindex
    from generator.api.pages import TAIL

    rng = random.Random(7)
    pieces = ['{', '}', '[', ']', '"', '\\', ',', ':', 'کتاب', ' ', '\n', '\u2028', 'x']

    def text() -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randrange(8)))

    def value(depth: int):
        kind = rng.randrange(6 if depth < 3 else 3)
        if kind == 0:
            return text()
        if kind == 1:
            return rng.choice([None, True, 12, -1.5, 0])
        if kind == 2:
            return {}
        if kind == 3:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {text(): value(depth + 1) for _ in range(rng.randrange(4))}
    asked, expected = [], []
    for _ in range(300):
        records = [json.dumps({"url": text(), "v": value(0)}, ensure_ascii=False, separators=(",", ":")).encode()
                   for _ in range(rng.randrange(1, 13))]
        page = b'{"count":99,"next":null,"previous":"http://k.example/?q=%22results%22:[","results":[' + \
            b",".join(records) + TAIL
        first = rng.randrange(len(records))
        last = rng.randrange(first + 1, len(records) + 1)
        asked.append([base64.b64encode(page).decode(), first, last])
        found = pageindex.found_in(page, 0, first, last)
        expected.append([found.begin, found.end])
        assert page[found.begin:found.end] == b",".join(records[first:last])
    done = subprocess.run(["node", str(module(tmp_path, FOUND_IN))], input=json.dumps(asked), capture_output=True, text=True, check=True,
                          timeout=120)
    assert json.loads(done.stdout) == expected
