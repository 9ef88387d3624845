"""make mutation: plausible one-line mistakes, made one at a time, and whether the tests see them.

    python tests/mutate.py [MODULE ...] [--sample N] [--seed S] [--timeout 600] [--jobs J] [--report FILE]
    python tests/mutate.py [MODULE ...] --again [--timeout 600] [--jobs J]
    python tests/mutate.py --rewrite

For each module of the query engine (ENGINE: each Python module, its JavaScript twin beside
it and the hosts' templates that read a query, the JavaScript mutated as text) every line is offered the
mistakes a tired developer makes: a comparison turned (`<` `<=` `==` `!=` `===` `!==`...),
`and`/`or` (`&&`/`||`) swapped, a `not` (`!`) dropped, `True`/`False` swapped, a small
number off by one, `+`/`-` swapped, a set intersection made a union, a `return` of
something else (`None`, `null`). Each mutant is written into the module in a copy of the
project (the checkout is never touched) and judged by the module's tests in stages, the
fast first (a template's by the tests that run it under Node, then workerd and Deno):
killed when a stage fails, a timeout when a stage outlives --timeout or fails because a
test's own bound on a program it runs ran out (subprocess.TimeoutExpired: the mutant made
Node or a server loop or hang; reported apart: a hang is seen, not a failed assertion),
survived when every stage passes.

The report (mutation-report.md at the project's root unless --report says otherwise) is
written afresh from each module's last run, kept beside it (mutation-report.json; a module
run alone replaces its own row and leaves the others'): per module the command that ran it,
the mutants tried, killed, timeouts, survivors, the score, and each survivor with its
one-line explanation from EXPLAINED (an equivalent mutant, say) or "unexplained". --sample
N tries N mutants of each module drawn with the seed (the report says so), for a machine
where every mutant would take hours; --jobs J judges J modules at once. --again judges a
module's last run's timeouts and unexplained survivors again with the tests as they are now
(a test added to kill one), keeping its kills; its row's command then ends in --again.

Written for this project instead of a general mutation tool: it reaches the templates'
JavaScript, through the tests that run it. tests/mutation.py runs mutmut over the Python
modules (the query engine's among them); `make mutation` runs both.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "mutation-report.md"  # (and beside it, as .json, each module's last run: the report is written from them)

# The tests that judge a module's mutants, in stages (each a pytest command line's arguments).
NODE = ["tests/hosts/test_query_js.py", "-k", "sample or golden or hostile"]
# The twins' functions run alone in Node (the golden table, QyRecords, the sorts by documents, a missing index):
# first, as they are quick, and a wrong answer there is seen before a hang in a whole page's.
UNITS = ["tests/hosts/test_query_js.py", "-k", "golden or records or documents or missing"]
EDGES = ["tests/hosts/test_conformance.py", "-k", "random_searches and (cloudflare or netlify)"]
DRF = ["tests/test_drf_query.py", "-k", "sample"]
BACKENDS = "generator/api/backends"
TEMPLATES = "generator/hosts/templates"
REGISTRY = "tests/api/backends/test_registry.py"  # (the golden table of hostile values; each backend's probes)
# The query engine: each backend (api/backends/, one module per backend with its JavaScript
# twin beside it) with its stages, and what builds and renders its indexes.
ENGINE: dict[str, list[list[str]]] = {
    f"{BACKENDS}/common.py": [["tests/api/backends/test_relations.py", "tests/api/backends/test_search.py",
                               "tests/sitebuild/test_queries.py", "tests/api/test_openapi.py",  # (Backend's defaults)
                               "tests/api/backends/test_common.py"],
                              ["tests/hosts/test_querystring_js.py", "-k", "lower_case_table"], NODE, DRF],
    f"{BACKENDS}/ordering.py": [["tests/api/backends/test_ordering.py", REGISTRY, "tests/api/test_openapi.py",
                                 "tests/sitebuild/test_queries.py"], NODE,  # (test_queries: Ordering.edit's)
                                ["tests/hosts/test_query_js.py", "-k", "many_blocks"], DRF],
    f"{BACKENDS}/paging.py": [["tests/api/backends/test_pagination.py", "tests/api/test_routes.py",
                               "tests/api/test_assemble.py"], NODE],
    f"{BACKENDS}/relations.py": [["tests/api/backends/test_relations.py", REGISTRY, "tests/api/test_assemble.py",
                                  "tests/api/test_openapi.py", "tests/sitebuild/test_queries.py"], NODE, DRF],
    f"{BACKENDS}/search.py": [["tests/api/backends/test_search.py", REGISTRY, "tests/api/test_openapi.py",
                               "tests/sitebuild/test_queries.py"], NODE, DRF],  # (test_queries: Search.edit's)
    f"{BACKENDS}/search_index.py": [["tests/api/backends/test_search_index.py", "tests/api/backends/test_search.py",
                                     "tests/sitebuild/test_queries.py"], NODE, DRF],
    "generator/sitebuild/queries.py": [["tests/sitebuild/test_queries.py"], NODE],
    "generator/sitebuild/stretches.py": [["tests/sitebuild/test_queries.py"], NODE],
    # The page indexes: read by api/assemble.py (test_assemble), written by the build (the golden
    # manifest holds them; test_state: one rewritten a span), read by pages.js.j2 as Python reads them.
    "generator/api/pageindex.py": [["tests/api/test_assemble.py", "tests/sitebuild/test_pipeline.py"],
                                   ["tests/sitebuild/test_state.py", "-k", "page_index"],
                                   ["tests/hosts/test_pages_js.py"]],
    "generator/hosts/query.py": [NODE, EDGES],
    **{f"{BACKENDS}/{name}.js.j2": [UNITS, NODE, EDGES]
       for name in ("common", "ordering", "paging", "relations", "search")},
    # (the term index's twin also on the synthetic catalogue, whose index has postings files and branches)
    f"{BACKENDS}/search_index.js.j2": [UNITS, NODE,
                                       ["tests/hosts/test_query_js.py", "-k", "answers_queries_as_python and synthetic"],
                                       EDGES],
    # The hosts' templates that read a query: its query string (DRF's paging and links), and
    # the page put together from what qySelect gives, within a host's caps on what it reads
    # (and its 400 where a page would pass them, through CloudFront's handler; a HEAD's answer).
    f"{TEMPLATES}/querystring.js.j2": [["tests/hosts/test_querystring_js.py"], NODE, EDGES],
    f"{TEMPLATES}/pages.js.j2": [["tests/hosts/test_pages_js.py"], NODE,
                                 ["tests/hosts/test_edge_limits.py", "-k", "past_a_host"],
                                 ["tests/hosts/test_cloudfront.py", "-k", "too_large or response_limit"],
                                 ["tests/hosts/test_conformance.py", "-k",
                                  "(random_searches or head_is_get) and (cloudflare or netlify)"]],
}
QUOTE = 'found += /[A-Za-z0-9_.~-]/.test(c) || (b < 128 && safe.includes(c)) ? c : "%" + (b < 16 ? "0" : "") + ' \
    'b.toString(16).toUpperCase();'  # (qsQuote's line, querystring.js.j2)
FIRST_PAGE_LINE = "const first = counted === null && page < BigInt(Number.MAX_SAFE_INTEGER)"  # (ownRun's, pages.js.j2)
# Survivors explained: (module, line as it was, line as mutated), each stripped: why no test can
# tell them apart (equivalent), or why none should.
EXPLAINED: dict[tuple[str, str, str], str] = {
    **{(f"{BACKENDS}/ordering.py", "columns.append((ranks, -1 if descending else 1))", mutated):
       "equivalent: the sign scales every rank of the column alike, and integers scaled by the same positive "
       "number keep their order" for mutated in ("columns.append((ranks, -2 if descending else 1))",
                                                 "columns.append((ranks, -1 if descending else 2))")},
    (f"{BACKENDS}/common.py", "return False", "return None"):
        "equivalent: Backend.indexes's default (Pagination's) and rejects's (Pagination's, Ordering's) are only "
        "asked by `if` and any(), alike for None and False",
    (f"{BACKENDS}/search.py", "return []", "return None"):
        "equivalent: Search.terms(None)'s callers ask `if terms:`, alike for None and []",
    ("generator/sitebuild/queries.py", 'return hashlib.blake2b("\\n".join(ids).encode(), digest_size=16).hexdigest()',
     'return hashlib.blake2b("\\n".join(ids).encode(), digest_size=17).hexdigest()'):
        "equivalent: the digest is only compared with the one the same code kept in the previous state; any "
        "size tells different ids apart (a state an older size wrote only makes the indexes again)",
    ("generator/sitebuild/queries.py",
     "digest = hashlib.blake2b(PARTS_FORMAT + STATE_VERSION.encode(), digest_size=16)",
     "digest = hashlib.blake2b(PARTS_FORMAT + STATE_VERSION.encode(), digest_size=17)"):
        "equivalent: the digest of what stretches' parts are made with is only compared with the one the same "
        "code kept in the previous state; any size tells settings apart (an older size's parts are only made again)",
    ("generator/sitebuild/queries.py", "if len(runs) > 1:", "if len(runs) >= 1:"):
        "equivalent: one run read in a pool of one forked process gives the parts the build's own process gives",
    ("generator/sitebuild/queries.py",
     "return job.previous is not None and _pages_kept(job, name, 0, max(job.counts[name], 1))",
     "return job.previous is not None and _pages_kept(job, name, 0, max(job.counts[name], 2))"):
        "equivalent in what is built: with pages of one record, a collection of none or one has no second "
        "page, so the ids are read and compared instead, to the same verdict",
    ("generator/sitebuild/queries.py",
     "return False  # (no previous build's records, or no parts of this build's to say)",
     "return True  # (no previous build's records, or no parts of this build's to say)"):
        "equivalent: Job.records_kept is asked only of a stretch the previous state holds (so where there is a "
        "previous build), and the build gives every Job its scratch: a guard no caller reaches",
    ("generator/sitebuild/queries.py", "if processes == 1 or len(names) < 2:",
     "if processes == 1 or len(names) < 3:"):
        "equivalent: two collections' indexes finished one after the other, not side by side, are the same files",
    (f"{BACKENDS}/search_index.py",
     "PAGE_SIZE = 12  # records of a page, as the plan reckons the pages its candidates' documents lie on",
     "PAGE_SIZE = 13  # records of a page, as the plan reckons the pages its candidates' documents lie on"):
        "equivalent in every answer: the size by which the plan (the Python's, and the JavaScript's rendered from "
        "it) reckons its candidates' pages only moves where it checks a term on documents rather than reading its "
        "sets, which select the same records",
    (f"{BACKENDS}/search_index.py",
     "CODE_COST = 12  # codes of a key's sources that cost its writer as much as one more key (measured: ~1 µs)",
     "CODE_COST = 13  # codes of a key's sources that cost its writer as much as one more key (measured: ~1 µs)"):
        "equivalent: the cost by which the writer's processes share the keys only moves where its ranges are cut, "
        "each after a key that ends a postings file and a leaf: the files are one writer's either way",
    (f"{BACKENDS}/search_index.py", "processes: int = 1) -> None:", "processes: int = 2) -> None:"):
        "equivalent: the default of search_index.finish, which its one caller (Search.finish) always gives",
    (f"{BACKENDS}/search_index.py", "return codes * UNION_SHARE >= slots", "return codes * UNION_SHARE > slots"):
        "equivalent: at the bound, codes are united by sorting rather than in a bitmap: the same codes, each once, "
        "in order, and so the same set's bytes",
    ("generator/sitebuild/queries.py", "return False", "return None"):
        "equivalent: _pages_kept's False is only tested for truth (`and`, `or`, `if`)",
    (f"{BACKENDS}/common.js.j2", "while (after < chars.length && QY_CASE_IGNORABLE.test(chars[after])) after++;",
     "while (after <= chars.length && QY_CASE_IGNORABLE.test(chars[after])) after++;"):
        "equivalent: chars[chars.length] is undefined, which the test reads as the text \"undefined\", no "
        "letter of it case-ignorable: the loop stops at the length either way",
    (f"{BACKENDS}/relations.js.j2", "while (stop > start && qsIsSpace(chars[stop - 1])) stop--;",
     "while (stop >= start && qsIsSpace(chars[stop - 1])) stop--;"):
        "equivalent: stop meets start only when all 32 characters are white space, and the body is empty then "
        "either way (a slice that ends before it starts is empty)",
    (f"{BACKENDS}/relations.js.j2", "if (/^[0-9a-fA-F]$/.test(c)) digits += c;",
     "if (/^[1-9a-fA-F]$/.test(c)) digits += c;"):
        "equivalent: a \"0\" left out goes to qsDigitValue, whose first run of ten digits is ASCII's: its value, "
        "0, is added alike",
    **{(f"{TEMPLATES}/querystring.js.j2", QUOTE, QUOTE.replace("b < 128", mutated)):
       "equivalent: safe holds ASCII characters only (Django's IRI_SAFE, or a space), never the character of "
       "byte 128" for mutated in ("b <= 128", "b < 129")},
    (f"{BACKENDS}/common.js.j2", "while (start < stop && chars.has(list[start])) start++;",
     "while (start <= stop && chars.has(list[start])) start++;"):
        "equivalent: stop is still the list's length in that loop, and list[length] is undefined, never in chars",
    (f"{BACKENDS}/common.js.j2", "for (let i = 0; i < words.length; i++) {",
     "for (let i = 0; i <= words.length; i++) {"):
        "equivalent: words[length] is undefined: one pass writes past the end of `out`, which a Uint32Array "
        "ignores, and `&=` makes it 0",
    **{(f"{BACKENDS}/ordering.js.j2",
        "found.sort((a, b) => (descending ? -1 : 1) * qyCompareKeys(keys.get(a), keys.get(b)));  // (a stable sort)",
        mutated):
       "equivalent: sort() reads only the sign of what the comparator gives, and scaling by 2 keeps it"
       for mutated in (
           "found.sort((a, b) => (descending ? -1 : 2) * qyCompareKeys(keys.get(a), keys.get(b)));  // (a stable sort)",
           "found.sort((a, b) => (descending ? -2 : 1) * qyCompareKeys(keys.get(a), keys.get(b)));  // (a stable sort)")},
    **{(f"{BACKENDS}/search.js.j2", line, line.replace("at < 0", "at < 1")):
       "equivalent: a search field's path never starts with \"__\" (site.yaml's check refuses one that does), so "
       "lastIndexOf gives -1 or a place past 1"
       for line in ('return {spec, lookup: lookup || "contains", relation: at < 0 ? null : path.slice(0, at), '
                    'column: path,', "field: at < 0 ? path : path.slice(at + QY_SEARCH_C.sep.length)};")},
    (f"{TEMPLATES}/pages.js.j2", FIRST_PAGE_LINE, FIRST_PAGE_LINE.replace("page < ", "page <= ")):
        "equivalent in every answer: a page at offset 2**53 - 1 exactly (still exact as a Number; a multiple of "
        "the page size only for sizes of 1, 6,361, 69,431 ...) is past every collection's end, which the mutant "
        "reads, missing, before span 0's index: one read more, a 400 only for a request that needs exactly the "
        "cap's files",
    (f"{TEMPLATES}/pages.js.j2",
     "for (let at = 0; at < positions.length;) {  // (each run of neighbours on one page at once)",
     "for (let at = 0; at <= positions.length;) {  // (each run of neighbours on one page at once)"):
        "equivalent: the one pass past the end asks records(undefined, NaN, picked), whose loop runs while "
        "undefined < NaN: never",
    (f"{BACKENDS}/relations.py", "processes: int = 1) -> None:", "processes: int = 2) -> None:"):
        "equivalent: the default of Relations.finish, which never reads `processes` (it joins the runs' parts "
        "and writes each filter's files in the build's own process)",
    (f"{BACKENDS}/ordering.py", "return (0,) if value is None else (1, sort_key(kind, value))",
     "return (1,) if value is None else (1, sort_key(kind, value))"):
        "equivalent: (1,) is a prefix of every value's key (1, k), so a record without a value still sorts first",
    (f"{BACKENDS}/ordering.py", "return (0,) if value is None else (1, sort_key(kind, value))",
     "return (0,) if value is None else (2, sort_key(kind, value))"):
        "equivalent: every value's key starts with the same number, above the 0 of a record without a value",
    (f"{BACKENDS}/search_index.py", "VERSION = 6", "VERSION = 7"):
        "equivalent: the format's number, written by the writer and compared by its readers (the Python, and the "
        "JavaScript's rendered from it) and the build's index_format: any number tells this format from another; "
        "an index of version 6 a previous build wrote is only made again whole",
    (f"{BACKENDS}/search_index.py",
     "VECTOR_MIN = 64  # positions of a set encoded or decoded with vector operations (fewer: a loop is quicker)",
     "VECTOR_MIN = 65  # positions of a set encoded or decoded with vector operations (fewer: a loop is quicker)"):
        "equivalent: where a set's encoding turns from a loop to vector operations, which give the same bytes "
        "(test_many_sets_encoded_together_as_each_alone, and VECTOR_MIN 0 in the writers' test)",
    (f"{BACKENDS}/search_index.py",
     "_OWNER_SHIFT = 40  # (an entry's codes united, sorted with it in the bits above: up to 2**24 records)",
     "_OWNER_SHIFT = 41  # (an entry's codes united, sorted with it in the bits above: up to 2**24 records)"):
        "equivalent: any shift above the codes' 40 bits keeps each entry's codes apart and in order, while the "
        "entries of a batch (KEY_BATCH keys) stay under 2**22",
    (f"{BACKENDS}/search_index.py",
     "placed = numpy.where(run < 0, numpy.arange(count) + leaf.keys, numpy.arange(count) - run)",
     "placed = numpy.where(run < 1, numpy.arange(count) + leaf.keys, numpy.arange(count) - run)"):
        "equivalent: run is -1 or the place of a key that begins a leaf, never 0 (begins[0] stays False: the "
        "batch's first key continues the leaf before it), so < 0 and < 1 pick the same keys",
    (f"{BACKENDS}/search_index.py", "self.writer = TermIndexWriter(query[SEARCH][name], 0, first=first)",
     "self.writer = TermIndexWriter(query[SEARCH][name], 1, first=first)"):
        "equivalent: a run's writer only gathers its records' columns (close() gives them to the collection's "
        "writer, made with the collection's count); its own count is never read",
    (f"{BACKENDS}/search_index.py",
     "looked = [(ANY, False) if text[0].isspace() else (HEAD + words[0], False)]  # (its first token)",
     "looked = [(ANY, True) if text[0].isspace() else (HEAD + words[0], False)]  # (its first token)"):
        "equivalent: the `A` key is the only key starting with `A` (every other kind's letter differs), so "
        "every key starting with it is that key",
    (f"{BACKENDS}/search_index.py", "return False", "return None"):
        "equivalent: every False search_index.py returns (_check_instead's, joined's, record_matches') is only "
        "tested for truth (`if`, a comprehension's `if`), alike for None and False",
    (f"{BACKENDS}/search_index.py",
     "return [Piece(held.field, (1 << held.size_class) - 1, held.data, 0, 0) if held.data is not None else",
     "return [Piece(held.field, (1 << held.size_class) - 1, held.data, 0, 1) if held.data is not None else"):
        "equivalent: an inline piece's postings file name is never read (its set is in `data`)",
    (f"{BACKENDS}/search_index.js.j2", "while (high - low > 1) {", "while (high - low > 2) {"):
        "equivalent in answers and reads: the search for a restart may stop one restart early, and the scan "
        "from there decodes the keys before it (at most RESTART more, in the file already read) to the same key",
    (f"{BACKENDS}/search_index.js.j2", 'return value === true ? "1" : value === false ? "0" : String(value);',
     'return value === false ? "1" : value === false ? "0" : String(value);'):
        "equivalent: a search field is never true or false (site.yaml refuses one: catalogue/querying.py "
        "_unsearchable), so qyText, which only search reads, is never given a boolean",
    ("generator/api/pageindex.py", "stop = min((span + 1) * PAGE_INDEX_SPAN, max(count, 1))",
     "stop = min((span + 1) * PAGE_INDEX_SPAN, max(count, 2))"):
        "equivalent: it differs only for a collection of none or one record in pages of one, adding page 1, which "
        "holds no record: its index's starts, and every file built, are the same",
}

PYTHON_SWAPS = [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" == ", " != "),
                (" != ", " == "), (" and ", " or "), (" or ", " and "), ("not ", ""), ("True", "False"),
                ("False", "True"), (" + ", " - "), (" - ", " + "), (" & ", " | "), ("[1:]", "[2:]"),
                ("[:-1]", "[:-2]")]
JS_SWAPS = [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" === ", " !== "),
            (" !== ", " === "), (" && ", " || "), (" || ", " && "), ("(!", "("), (" !", " "), ("true", "false"),
            ("false", "true"), (" + ", " - "), (" - ", " + "), (".filter(", ".map("), ("slice(1)", "slice(2)")]
NUMBER = re.compile(r"(?<![\w.])([0-9]+)(?![\w.])")
VERDICTS = ("killed", "timeout", "survived")
# A failure that is a test's own bound running out: pytest's line of the exception in the failure's
# traceback (its short summary drops the message where the test's name fills the line).
HUNG = re.compile(r"^E +subprocess\.TimeoutExpired: ", re.MULTILINE)


@dataclass
class Mutant:
    path: str
    line: int
    before: str
    after: str
    verdict: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.path, self.before.strip(), self.after.strip()


def is_javascript(path: str) -> bool:
    return path.endswith((".js", ".mjs", ".j2"))


def code_lines(path: str):
    """(number, line, its code without a comment) of the lines that are code: not a docstring,
    comment, import, definition line or (in a template) a line of Jinja."""
    javascript = is_javascript(path)
    in_string = False
    for number, text in enumerate((ROOT / path).read_text(encoding="utf-8").splitlines(), 1):
        code = text.split("  //" if javascript else "  #")[0]
        stripped = code.strip()
        quotes = 0 if javascript else stripped.count('"""')
        if in_string or quotes:
            in_string = in_string != (quotes % 2 == 1)
            continue
        skipped = ("//", "/*", "*", "import ", "export ", "function ", "async function ") if javascript else (
            "#", "import ", "from ", "def ", "class ", "@")
        if not stripped or stripped.startswith(skipped) or "{{" in code or "{%" in code:
            continue
        yield number, text, code


def mutants(path: str) -> list[Mutant]:
    javascript = is_javascript(path)
    nothing = "return null;" if javascript else "return None"
    found = []
    for number, text, code in code_lines(path):
        seen = set()

        def offer(changed: str) -> None:
            if changed != text and changed not in seen:
                seen.add(changed)
                found.append(Mutant(path, number, text, changed))

        for old, new in JS_SWAPS if javascript else PYTHON_SWAPS:
            if old in code:
                offer(code.replace(old, new, 1) + text[len(code):])
        for match in NUMBER.finditer(code):
            if int(match[1]) < 100000:
                offer(code[:match.start()] + str(int(match[1]) + 1) + code[match.end():] + text[len(code):])
        stripped = code.strip()
        if stripped.startswith("return ") and stripped not in ("return None", "return null;", "return;"):
            offer(code[:len(code) - len(code.lstrip())] + nothing)
    return found


def judge(mutant: Mutant, stages: list[list[str]], copy: Path, timeout: int) -> str:
    """The mutant written into the copy, its module's stages run until one fails."""
    target = copy / mutant.path
    original = target.read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    lines[mutant.line - 1] = mutant.after + ("\n" if lines[mutant.line - 1].endswith("\n") else "")
    target.write_text("".join(lines), encoding="utf-8")
    try:
        for stage in stages:
            try:
                done = pytest(stage, copy, timeout)
            except subprocess.TimeoutExpired:
                return "timeout"
            if done.returncode != 0:
                return "timeout" if HUNG.search(os.fsdecode(done.stdout)) else "killed"
        return "survived"
    finally:
        target.write_text(original, encoding="utf-8")


def failing_stages(stages: list[list[str]], copy: Path, timeout: int) -> list[str]:
    """The stages that fail, or outlive the timeout, without a mutant (then no verdict means anything)."""
    failing = []
    for stage in stages:
        try:
            if pytest(stage, copy, timeout).returncode != 0:
                failing.append(" ".join(stage))
        except subprocess.TimeoutExpired:
            failing.append(f"{' '.join(stage)} (outlived --timeout {timeout})")
    return failing


def pytest(stage: list[str], copy: Path, timeout: int) -> subprocess.CompletedProcess:
    """pytest run on one stage, in the copy, in one process, in the order written; past the
    timeout its whole process group is ended (a mutant that makes Node loop would outlive a
    pytest killed alone: its fixtures' clean-up never runs)."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0",
               *stage]
    with subprocess.Popen(command, cwd=copy, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(copy)}, start_new_session=True) as running:
        try:
            stdout, stderr = running.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(running.pid, signal.SIGKILL)  # (its own session: the group is pytest's and its children's)
            running.communicate()
            raise
        finally:
            if running.poll() is None:  # (interrupted: nothing of the stage outlives this process)
                os.killpg(running.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(command, running.returncode, stdout, stderr)


def report(runs: dict[str, dict], kept: str) -> str:
    """The markdown of every module's last run (`kept`: the file that keeps them)."""
    lines = ["# Mutation report", "",
             "Written by `tests/mutate.py` (`make mutation`) from the verdicts it keeps beside it "
             f"(`{kept}`); regenerate it, do not edit it. Survivors' explanations live in `EXPLAINED` there. "
             "Each module's row is its last run's.", "",
             "| module | command | mutants | tried | killed | timeout | survived | score | caught |",
             "|---|---|---|---|---|---|---|---|---|"]
    for module in (m for m in ENGINE if m in runs):
        run = runs[module]
        tried = [Mutant(**fields) for fields in run["mutants"]]
        counts = {verdict: sum(m.verdict == verdict for m in tried) for verdict in VERDICTS}
        score, caught = (f"{n / len(tried):.0%}" if tried else "n/a"
                         for n in (counts["killed"], counts["killed"] + counts["timeout"]))
        lines.append(f"| `{module}` | `{run['command']}` | {run['offered']} | {len(tried)} | {counts['killed']} | "
                     f"{counts['timeout']} | {counts['survived']} | {score} | {caught} |")
    lines += ["", "Score: killed of tried. A timeout, counted apart, is a hang the tests saw (a stage outlived its "
              "time, or a test's own bound on a program it ran ran out); caught: killed and timeouts of tried. "
              "`--sample N`: N mutants of the module drawn with `--seed`.", "", "## Survivors and timeouts", ""]
    for module in (m for m in ENGINE if m in runs):
        for m in (Mutant(**fields) for fields in runs[module]["mutants"]):
            if m.verdict != "killed":
                why = "a hang, seen (not a kill)" if m.verdict == "timeout" else EXPLAINED.get(m.key, "unexplained")
                lines.append(f"- {m.verdict}: `{m.path}:{m.line}`: `{m.before.strip()}` → `{m.after.strip()}`: {why}")
    return "\n".join(lines) + "\n"


def record(report_file: Path, module: str | None = None, run: dict | None = None) -> dict[str, dict]:
    """This run of a module kept beside the report (replacing its last), the report rewritten
    from every module's: a module run alone (`make mutation ENGINE=...`) leaves the others' rows."""
    kept = report_file.with_suffix(".json")
    runs = json.loads(kept.read_text(encoding="utf-8")) if kept.is_file() else {}
    runs = {name: ran for name, ran in runs.items() if name in ENGINE}
    if module is not None:
        runs[module] = run
    kept.write_text(json.dumps(runs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    report_file.write_text(report(runs, kept.name), encoding="utf-8")
    return runs


def copy_project(into: Path) -> Path:
    """A copy of the project to write mutants into (the checkout is never touched)."""
    copy = into / "project"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", "node_modules", "site", ".git", "bench-work",
                                                               "__pycache__", "mutants"))
    if (ROOT / "node_modules").exists():
        (copy / "node_modules").symlink_to((ROOT / "node_modules").resolve())
    return copy


def run_module(module: str, args: argparse.Namespace) -> tuple[dict, list[Mutant]]:
    """The module's run (its command, the mutants offered) and the mutants tried, judged, in a
    copy of its own (modules run side by side with --jobs)."""
    stages = ENGINE[module]
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        copy = copy_project(Path(tmp))
        failing = failing_stages(stages, copy, args.timeout)
        if failing:
            raise RuntimeError(f"{module}: its tests fail without a mutant ({'; '.join(failing)}): no verdict")
        if args.again:
            run, made = again(module, args.report)
        else:
            made = mutants(module)
            sampled = f" --sample {args.sample} --seed {args.seed}" if args.sample else ""
            run = {"command": f"python tests/mutate.py {module}{sampled}", "offered": len(made)}
            if args.sample and args.sample < len(made):
                made = sorted(random.Random(f"{args.seed}:{module}").sample(made, args.sample), key=lambda m: m.line)
        started = time.monotonic()
        for mutant in (m for m in made if not m.verdict):
            mutant.verdict = judge(mutant, stages, copy, args.timeout)
            if mutant.verdict != "killed":  # (said at once: a long run can be stopped and still told)
                print(f"{mutant.verdict}: {mutant.path}:{mutant.line}: {mutant.after.strip()}", flush=True)
    killed = sum(m.verdict == "killed" for m in made)
    print(f"{module}: {killed}/{len(made)} killed of {run['offered']} ({time.monotonic() - started:.0f} s)", flush=True)
    return run, made


def again(module: str, report_file: Path) -> tuple[dict, list[Mutant]]:
    """The module's last run (kept beside the report), its kills kept and its other mutants
    to be judged again, but the survivors EXPLAINED says no test can tell apart: for tests
    added since. The module's lines must be as that run found them."""
    kept = report_file.with_suffix(".json")
    last = json.loads(kept.read_text(encoding="utf-8")).get(module) if kept.is_file() else None
    if last is None:
        raise RuntimeError(f"{module}: no run of it kept in {kept.name} to judge again")
    lines = (ROOT / module).read_text(encoding="utf-8").splitlines()
    made = [Mutant(**fields) for fields in last["mutants"]]
    for mutant in made:
        if lines[mutant.line - 1:mutant.line] != [mutant.before]:
            raise RuntimeError(f"{module}:{mutant.line} changed since its last run: run it afresh")
        if mutant.verdict == "timeout" or (mutant.verdict == "survived" and mutant.key not in EXPLAINED):
            mutant.verdict = ""
    command = last["command"] if last["command"].endswith(" --again") else last["command"] + " --again"
    return {"command": command, "offered": last["offered"]}, made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="modules of ENGINE (default: all)")
    parser.add_argument("--sample", type=int, help="mutants of each module to try, drawn at random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=600, help="seconds for one stage of one mutant")
    parser.add_argument("--jobs", type=int, default=1, help="modules judged at once, each in its own copy")
    parser.add_argument("--report", type=Path, default=REPORT)
    parser.add_argument("--again", action="store_true",
                        help="judge again each module's last run's timeouts and unexplained survivors (tests added "
                             "since), its kills kept")
    parser.add_argument("--rewrite", action="store_true",
                        help="only write the report again from the kept runs (EXPLAINED changed, say)")
    args = parser.parse_args()
    if args.rewrite:
        record(args.report)
        return 0
    unknown = [m for m in args.modules if m not in ENGINE]
    if unknown:
        print(f"not a module of ENGINE: {' '.join(unknown)}", file=sys.stderr)
        return 2
    plan = args.modules or list(ENGINE)
    unexplained = no_verdict = False
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_module, module, args): module for module in plan}
        for future in concurrent.futures.as_completed(futures):
            try:
                run, tried = future.result()
            except RuntimeError as error:  # (said; the other modules' verdicts still kept)
                print(error, file=sys.stderr, flush=True)
                no_verdict = True
                continue
            # (kept as each module ends: a long run stopped early still leaves what it found)
            record(args.report, futures[future], {**run, "mutants": [dataclasses.asdict(m) for m in tried]})
            unexplained |= any(m.verdict == "survived" and m.key not in EXPLAINED for m in tried)
    print(args.report.read_text(encoding="utf-8"))
    return 2 if no_verdict else 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
