"""The JavaScript of hosts/querystring.py answers as api/querystring.py: the whole golden
table, then a few hundred hostile queries, numbers and links at a time, each batch in one
process of Node (CloudFront's Lambda@Edge), and where they are installed of Deno (Netlify
Edge Functions) and of workerd (Cloudflare Workers, through miniflare)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.api.querystring import TooManyFields, links_query, parse, read_int
from generator.hosts import cloudflare, npm
from generator.hosts.querystring import digit_zeros, javascript, spaces
from generator.system import dying_with_parent
from golden_files import GOLDEN, QUERYSTRING
from querystring_cases import CASES, NUMBERISH, QUERIES, answered, long_numbers
from servers import find_deno, runnable

EXPORTS = "export {qsParse, qsLast, qsReadInt, qsLinksQuery, qsPaginate, QsTooManyFields};\n"
# answers(input): every request of the input (numbers as decimal strings), answered.
ANSWERS = """
function page([query, count, defaultLimit, maxLimit]) {
  try {
    const p = qsPaginate(query, defaultLimit, maxLimit, count);
    return {pairs: p.pairs, limit: String(p.limit), offset: String(p.offset), next: p.next, previous: p.previous,
            only_paging: p.onlyPaging};
  } catch (e) {
    if (e instanceof QsTooManyFields) return {error: "TooManyFields"};
    throw e;
  }
}

function parsed(query) {
  try {
    return qsParse(query);
  } catch (e) {
    if (e instanceof QsTooManyFields) return "TooManyFields";
    throw e;
  }
}

function number(text) {
  const value = qsReadInt(text);
  return value === null ? null : String(value);
}

function answers(input) {
  const link = ([query, limit, offset]) => qsLinksQuery(query, BigInt(limit), offset === null ? null : BigInt(offset));
  return {pages: input.pages.map(page), parsed: input.parsed.map(parsed), numbers: input.numbers.map(number),
          links: input.links.map(link)};
}
"""
# Node and Deno: the module as a host imports it; input.json read as a module of its own.
HARNESS = """
import {qsParse, qsLinksQuery, qsPaginate, qsReadInt, QsTooManyFields} from "./querystring.mjs";
import input from "./input.mjs";
""" + ANSWERS + """
console.log(JSON.stringify(answers(input)));
"""
# workerd: the declarations in a Worker that answers a POST of input.json, run by miniflare.
WORKER = ANSWERS + """
export default {
  async fetch(request) {
    return new Response(JSON.stringify(answers(await request.json())));
  },
};
"""
MINIFLARE = """
import {createRequire} from "node:module";
import {readFileSync} from "node:fs";

const [project, compatibilityDate] = process.argv.slice(2);
const {Miniflare} = createRequire(project + "/")("miniflare");
const worker = new Miniflare({modules: true, script: readFileSync("worker.mjs", "utf8"), compatibilityDate});
try {
  const answer = await worker.dispatchFetch("http://localhost/", {method: "POST", body: readFileSync("input.json")});
  console.log(await answer.text());
} finally {
  await worker.dispose();
}
"""
RUNTIMES = [pytest.param(kind, id=kind, marks=() if runnable(kind) else
                         pytest.mark.skip(reason=f"{kind} is not installed")) for kind in ("node", "deno", "cloudflare")]


def run(runtime: str, folder: Path, requests: dict) -> dict:
    """The JavaScript's answers to requests ({pages, parsed, numbers, links}) in one process."""
    given = json.dumps({"pages": [], "parsed": [], "numbers": [], "links": [], **requests})
    (folder / "querystring.mjs").write_text(javascript() + EXPORTS, encoding="utf-8")
    (folder / "harness.mjs").write_text(HARNESS, encoding="utf-8")
    (folder / "input.mjs").write_text(f"export default {given};\n", encoding="utf-8")
    (folder / "input.json").write_text(given, encoding="utf-8")
    (folder / "worker.mjs").write_text(javascript() + WORKER, encoding="utf-8")
    (folder / "miniflare.mjs").write_text(MINIFLARE, encoding="utf-8")
    env = None
    if runtime == "node":
        command = ["node", "harness.mjs"]
    elif runtime == "deno":
        command = [find_deno() or "deno", "run", "--quiet", "--no-prompt", "harness.mjs"]
        env = {**os.environ, "DENO_DIR": str(folder / "deno"), "DENO_NO_UPDATE_CHECK": "1"}
    else:
        command = ["node", "miniflare.mjs", str(npm.find(cloudflare.WORKERD) or npm.CHECKOUT), cloudflare.COMPATIBILITY_DATE]
    done = subprocess.run(**dying_with_parent(command), cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def python_parsed(query: str) -> list | str:
    try:
        return [list(pair) for pair in parse(query)]
    except TooManyFields:
        return "TooManyFields"


def python_number(text: str) -> str | None:
    value = read_int(text)
    return None if value is None else str(value)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_golden_table(runtime, tmp_path):
    table = json.loads((GOLDEN / QUERYSTRING).read_text(encoding="utf-8"))
    requests = [[case["query"], case["count"], case["default_limit"], case["max_limit"]] for case in table]
    got = run(runtime, tmp_path, {"pages": requests, "parsed": [case["query"] for case in table]})
    for case, page, pairs in zip(table, got["pages"], got["parsed"], strict=True):
        assert page == case["answer"], case["query"]
        assert pairs == case["answer"].get("pairs", "TooManyFields"), case["query"]


LINKS = st.tuples(QUERIES, st.integers(1, 10 ** 40).map(str), st.one_of(st.none(), st.integers(0, 10 ** 40).map(str)))
# Text a server already decoded (characters above U+00FF): read as its UTF-8 bytes.
DECODED = st.text(st.sampled_from("limit=offset&%+#۱۲٣ک😀\u2028\ufeff\xe9 "), max_size=20)


@pytest.mark.parametrize("runtime", RUNTIMES)
@settings(max_examples=4, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                 HealthCheck.function_scoped_fixture])
@given(pages=st.lists(CASES, min_size=200, max_size=300), parsed=st.lists(st.one_of(QUERIES, DECODED), max_size=100),
       numbers=st.lists(st.one_of(NUMBERISH, st.text(max_size=8), long_numbers()), min_size=100, max_size=150),
       links=st.lists(LINKS, max_size=100))
def test_hostile_requests_answer_as_the_python(runtime, tmp_path, pages, parsed, numbers, links):
    got = run(runtime, tmp_path, {"pages": pages, "parsed": parsed, "numbers": numbers, "links": links})
    for case, answer in zip(pages, got["pages"], strict=True):
        assert answer == answered(*case), case
    for query, pairs in zip(parsed, got["parsed"], strict=True):
        assert pairs == python_parsed(query), query
    for text, number in zip(numbers, got["numbers"], strict=True):
        assert number == python_number(text), text
    for (query, limit, offset), link in zip(links, got["links"], strict=True):
        assert link == links_query(query, int(limit), None if offset is None else int(offset)), (query, limit, offset)


def test_the_tables_are_every_code_point_the_predicates_accept():
    """(They are found by regular expression, faster than by trying every code point.)"""
    from generator.api.querystring import digit_value, is_space

    every = [chr(code) for code in range(sys.maxunicode + 1)]
    assert spaces() == [ord(char) for char in every if is_space(char)]
    assert digit_zeros() == [ord(char) for char in every if digit_value(char) == 0]


def test_the_lower_case_table_is_every_code_points():
    """search's str.lower() table for the JavaScript hosts (hosts/query.py) is drawn from the
    first two planes only: every character with a lower case lies there."""
    from generator.api.backends.common import lower_table

    table = lower_table()
    assert table == lower_table(sys.maxunicode + 1)
    assert table["\U0001e900"] == "\U0001e922" and table["A"] == "a" and "\u03a3" not in table


def test_the_javascript_is_declarations_only():
    """A host's script includes it as it is: no imports, exports or Node's own modules."""
    code = javascript()
    for word in ("import ", "export ", "require(", "module.exports", "process.", "Buffer"):
        assert word not in code, word
