"""make mutation, with mutmut: every mutant mutmut makes of a module, run against that
module's tests, one module at a time, in a copy of the project; the score of each module
and every survivor (mutmut's diff of it) reported.

    python tests/mutation.py [MODULE ...] [--timeout 1200] [--children 1] [--recheck-timeout 60] [--mutants GLOB ...] [--report FILE]

MODULES below names, for each module that decides what clients get, the tests that check
it; a module not listed there is run against the tests that import it (`-k` is not used:
mutmut picks, of those, the tests that reach each mutated function). mutmut mutates the
bodies of functions and methods (operators, constants, arguments, return values), not a
module's top-level constants such as the route table's patterns: those are pinned by the
golden tables (tests/golden/) that every host's tests read.

A survivor, and a mutant mutmut saw time out, is run again against all of its module's
tests in a process that imports the project with the mutant already chosen (`recheck()`):
mutmut runs each mutant against the tests its statistics saw reach the function, in
processes forked after the project was imported, which misses a function the module calls
as it is imported (the route table's `routes()`). The report says which verdicts changed.

mutmut runs a mutant's tests by their ids, and when pytest refuses the command (its exit
status 4, a usage error: an id it cannot select again, say one holding a byte above 0x7F)
mutmut's worker ends with status 255, which mutmut counts as a timeout. Such a mutant is
counted here as a usage error instead, and the report names it with pytest's own words
(`usage_errors()`); the recheck, which runs the test files, not ids, then gives its verdict.

The checkout is never touched: the project's files (tracked, and new ones git does not
ignore) are copied to a temporary folder with the mutmut settings for the module, and mutmut
runs there. A module's run that exceeds the timeout is stopped and reported as such.
tests/mutate.py is the project's own mutator, for the templates' JavaScript that a Python
mutator cannot reach; `make mutation` runs both.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The route table, paging and links first (issue: mutation testing as a habit).
MODULES = {
    "generator/api/routes.py": ["tests/api/test_routes.py", "tests/api/test_urls.py"],
    "generator/api/backends/paging.py": ["tests/api/backends/test_pagination.py", "tests/api/test_routes.py", "tests/api/test_assemble.py",
                                "tests/api/test_openapi.py"],
    "generator/api/querystring.py": ["tests/api/test_querystring.py"],
    "generator/api/pages.py": ["tests/api/test_pages.py"],
    "generator/api/assemble.py": ["tests/api/test_assemble.py"],
    "generator/api/openapi.py": ["tests/api/test_openapi.py"],
    "generator/api/viewer.py": ["tests/api/test_viewer.py"],
    # (the importer runs in the test's process, reading a site from the built-in server; its test
    # against a DRF service, tests/importer/test_from_drf.py, is the slow one, and not needed here)
    "generator/importer/convert.py": ["tests/importer/test_freeze.py"],
    "generator/importer/crawl.py": ["tests/importer/test_freeze.py"],
    "generator/importer/output.py": ["tests/importer/test_freeze.py"],
    # The write path: its tests in this process (the end-to-end ones in tests/writes/test_service.py
    # run the service in a process of its own, where mutmut's statistics do not reach).
    "generator/writes/append.py": ["tests/writes/test_append.py"],
    "generator/writes/accepted.py": ["tests/writes/test_rebuild.py"],
    "generator/writes/rebuild.py": ["tests/writes/test_rebuild.py"],
    "generator/writes/tokens.py": ["tests/writes/test_tokens.py", "tests/test_cli.py"],
    "generator/writes/create.py": ["tests/writes/test_application.py"],
    "generator/writes/service.py": ["tests/writes/test_application.py"],
    "generator/hosts/deploy.py": ["tests/hosts/test_deploy.py"],
    # (the built-in server's other tests run it in a process of its own, tests/servers.py)
    "generator/hosts/builtin.py": ["tests/hosts/test_builtin_inprocess.py"],
    "generator/api/schemas.py": ["tests/api/test_schemas.py"],
    # The query engine's Python (tests/mutate.py mutates it and its JavaScript twin as text, judged
    # also by the tests that run the JavaScript and by DRF): the tests in this process.
    "generator/api/backends/common.py": ["tests/api/backends/test_relations.py", "tests/sitebuild/test_queries.py"],
    "generator/api/backends/ordering.py": ["tests/api/backends/test_ordering.py"],
    "generator/api/backends/relations.py": ["tests/api/backends/test_relations.py", "tests/api/test_assemble.py"],
    "generator/api/backends/search.py": ["tests/api/backends/test_search.py", "tests/api/test_openapi.py"],
    "generator/api/backends/search_index.py": ["tests/api/backends/test_search.py", "tests/sitebuild/test_queries.py"],
    "generator/sitebuild/queries.py": ["tests/sitebuild/test_queries.py"],
}
STATUSES = ("killed", "survived", "timeout", "suspicious", "no_tests", "skipped", "segfault")
USAGE_ERROR = "usage error"  # pytest refused the command mutmut gave it (its exit status 4)
PYTEST_USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR
# The status mutmut's worker ends with when its test runner raises, which it does on pytest's
# usage error; mutmut counts it as a timeout (its own timeouts end the worker with SIGXCPU).
WORKER_RAISED = 255


@dataclass
class Result:
    module: str
    tests: list[str]
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    survivors: dict[str, str] = field(default_factory=dict)  # mutant's name: its diff
    rechecked: dict[str, str] = field(default_factory=dict)  # mutant's name: mutmut's verdict → the recheck's
    usage_errors: dict[str, str] = field(default_factory=dict)  # mutant's name: what pytest said of its tests
    stopped: bool = False  # the timeout ended the run
    failed: str = ""  # mutmut's last words when it could not run (the tests fail without a mutant, say)

    @property
    def total(self) -> int:
        return self.counts.get("total", 0)

    @property
    def score(self) -> float:
        """Mutants the tests see (killed, or made to hang) among those they reach."""
        judged = self.total - self.counts.get("no_tests", 0) - self.counts.get("skipped", 0)
        seen = self.counts.get("killed", 0) + self.counts.get("timeout", 0)
        return seen / judged if judged else 0.0


def tests_importing(module: str) -> list[str]:
    """The test files that import a module of generator/ (for a module MODULES does not name)."""
    dotted = module.removesuffix(".py").replace("/", ".")
    package, _, name = dotted.rpartition(".")
    pattern = re.compile(rf"(from {re.escape(dotted)} import|import {re.escape(dotted)}\b|"
                         rf"from {re.escape(package)} import [^\n]*\b{re.escape(name)}\b)")
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                  if pattern.search(p.read_text(encoding="utf-8")))


def project_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return [name for name in listed if name and (ROOT / name).is_file()]


def copy_project(into: Path) -> None:
    for name in project_files():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, into / name)
    if (ROOT / "node_modules").exists():  # (the tests that run JavaScript find it there)
        (into / "node_modules").symlink_to((ROOT / "node_modules").resolve())


def settings(module: str, tests: list[str]) -> str:
    """The [tool.mutmut] table for one module and its tests."""
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["generator/"]\n'
        f"only_mutate = {json.dumps([module])}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "-n", "0"]\n'
        # (each mutant's worker forked from a server process of mutmut's own, not from its main
        # process: a test that builds a site leaves the build's worker processes behind, and the
        # main process, which waits for any child, would take one for a mutant's worker)
        'process_isolation = "forkserver"\n'
        'also_copy = ["data/", "schemas/", "setup.py", "MANIFEST.in", "README.md", "docs/"]\n'
    )


def mutmut(work: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    process = subprocess.Popen([sys.executable, "-m", "mutmut", *args], cwd=work, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)  # (mutmut and the test processes it forked)
        try:
            out, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, _ = process.communicate()
        raise TimeoutError(out.decode(errors="replace")[-2000:]) from None
    return subprocess.CompletedProcess(process.args, process.returncode, out.decode(errors="replace"))


def run(module: str, tests: list[str], timeout: float, children: int, recheck_timeout: float = 60,
        only: list[str] | None = None) -> Result:
    result = Result(module, tests)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
        work = Path(folder)
        copy_project(work)
        with (work / "pyproject.toml").open("a", encoding="utf-8") as f:
            f.write(settings(module, tests))
        try:
            done = mutmut(work, "run", "--max-children", str(children), *(only or ()), timeout=timeout)
            if done.returncode != 0:  # (its tests failed without a mutant, say: no verdict is worth anything)
                result.failed = done.stdout.strip().rsplit("\r", 1)[-1][-2000:]
        except TimeoutError:
            result.stopped = True
        result.seconds = time.monotonic() - started
        if mutmut(work, "export-cicd-stats").returncode == 0 and (work / "mutants/mutmut-cicd-stats.json").is_file():
            stats = json.loads((work / "mutants/mutmut-cicd-stats.json").read_text(encoding="utf-8"))
            result.counts = {key: stats.get(key, 0) for key in (*STATUSES, "total")}
            if only:  # (a sample: the mutants it ran, not every mutant of the module)
                result.counts["total"] = sum(result.counts[key] for key in STATUSES)
        result.usage_errors = usage_errors(work, module)
        for name in result.usage_errors:  # (mutmut counted each as a timeout)
            result.counts["timeout"] = result.counts.get("timeout", 0) - 1
            result.counts[USAGE_ERROR] = result.counts.get(USAGE_ERROR, 0) + 1
        listed = mutmut(work, "results").stdout
        for line in listed.splitlines():
            name, _, status = line.strip().rpartition(": ")
            if status not in ("survived", "timeout"):
                continue
            if name in result.usage_errors:
                status = USAGE_ERROR
            again = recheck(work, name, tests, recheck_timeout)
            if again != status:
                result.counts[status] -= 1
                result.counts[again] = result.counts.get(again, 0) + 1
                result.rechecked[name] = f"{status} → {again}"
            if again == "survived":
                result.survivors[name] = mutmut(work, "show", name).stdout.strip()
    return result


def exit_codes(work: Path, module: str) -> dict[str, int | None]:
    """mutmut's record of each mutant's end: its worker's exit status (None: not run)."""
    meta = work / "mutants" / f"{module}.meta"
    if not meta.is_file():
        return {}
    return json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})


def tests_of(work: Path, name: str) -> list[str]:
    """The tests mutmut ran a mutant against, by their ids: those its statistics saw reach the
    mutated function (the mutant's name without its `__mutmut_N`)."""
    stats = work / "mutants" / "mutmut-stats.json"
    if not stats.is_file():
        return []
    by_function = json.loads(stats.read_text(encoding="utf-8")).get("tests_by_mangled_function_name", {})
    return sorted(by_function.get(name.partition("__mutmut_")[0], []))


def usage_errors(work: Path, module: str) -> dict[str, str]:
    """The mutants whose tests pytest refused to run, each with pytest's words: of those whose
    worker ended as it does when its runner raises, the ones whose test ids pytest, asked to
    collect them as mutmut asked it to run them, answers with a usage error."""
    found: dict[str, str] = {}
    said: dict[tuple[str, ...], str | None] = {}  # (the mutants of a function share its tests)
    for name, code in sorted(exit_codes(work, module).items()):
        if code != WORKER_RAISED:
            continue
        tests = tuple(tests_of(work, name))
        if tests not in said:
            said[tests] = refused(work, list(tests))
        if said[tests] is not None:
            found[name] = said[tests]
    return found


def refused(work: Path, tests: list[str]) -> str | None:
    """What pytest says when it refuses to collect these tests (a usage error); None if it collects them."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--rootdir=.", "-p", "no:cacheprovider", "-q", "-n", "0",
                           "--collect-only", *tests], cwd=work / "mutants", capture_output=True)
    if done.returncode != PYTEST_USAGE_ERROR:
        return None
    words = (done.stderr + done.stdout).decode(errors="replace").replace(f"{work / 'mutants'}/", "").strip().splitlines()
    return "\n".join(line for line in words if line.startswith("ERROR")) or "\n".join(words[-5:])


def recheck(work: Path, name: str, tests: list[str], timeout: float = 60) -> str:
    """A survivor (or a timeout) run again against all of its module's tests, in a process of
    its own that imports the project with the mutant already chosen: mutmut runs a mutant
    against the tests its statistics saw reach the function, in processes forked after the
    project was imported, so a function the module calls as it is imported (the route
    table's `routes()`, `accept_pattern()`) is never run mutated there."""
    env = {**os.environ, "MUTANT_UNDER_TEST": name}
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", "-n", "0", *tests],
                              cwd=work / "mutants", env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    if done.returncode == PYTEST_USAGE_ERROR:  # (no verdict: pytest ran nothing)
        return USAGE_ERROR
    return "survived" if done.returncode == 0 else "killed"


def markdown(results: list[Result]) -> str:
    lines = ["| module | tests | mutants | killed | survived | timeout | usage error | no tests | score | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        c = r.counts
        lines.append(f"| `{r.module}` | {', '.join(f'`{t}`' for t in r.tests)} | {r.total} | {c.get('killed', 0)} | "
                     f"{c.get('survived', 0)} | {c.get('timeout', 0)} | {c.get(USAGE_ERROR, 0)} | {c.get('no_tests', 0)} | "
                     f"{r.score:.1%}{' (stopped: timeout)' if r.stopped else ''}{' (mutmut failed)' if r.failed else ''} | "
                     f"{r.seconds:.0f} |")
    for r in results:
        if r.usage_errors:
            lines += ["", f"### Usage errors in `{r.module}` (pytest refused the tests mutmut ran them against)", ""]
            for name, words in r.usage_errors.items():
                verdict = r.rechecked.get(name, "").partition(" → ")[2]
                lines += [f"`{name}`{f' (the recheck: {verdict})' if verdict else ''}", "", "```", words, "```", ""]
        if r.survivors:
            lines += ["", f"### Survivors in `{r.module}`", ""]
            for name, diff in r.survivors.items():
                lines += [f"`{name}`", "", "```diff", diff, "```", ""]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules under generator/ (default: every module of MODULES)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds for one module's run")
    parser.add_argument("--children", type=int, default=1, help="mutants run at once")
    parser.add_argument("--recheck-timeout", type=float, default=60,
                        help="seconds for the recheck of one mutant (a mutant that hangs takes all of them)")
    parser.add_argument("--report", type=Path, help="also write the report (markdown) here")
    parser.add_argument("--mutants", nargs="+", metavar="GLOB",
                        help="only these of mutmut's mutants (names or patterns, as `mutmut results` names them): a sample")
    args = parser.parse_args()
    results = []
    for module in args.modules or list(MODULES):
        tests = MODULES.get(module) or tests_importing(module)
        if not tests:
            print(f"{module}: no test imports it", file=sys.stderr)
            return 2
        print(f"{module}: mutmut against {' '.join(tests)}", flush=True)
        result = run(module, tests, args.timeout, args.children, args.recheck_timeout, args.mutants)
        print(f"{module}: {result.counts.get('killed', 0)} of {result.total} killed, "
              f"{len(result.survivors)} survived, {len(result.usage_errors)} usage errors ({result.seconds:.0f} s; "
              f"{len(result.rechecked)} verdicts changed by the recheck)", flush=True)
        if result.failed:
            print(f"  mutmut failed:\n{result.failed}", flush=True)
        for name, words in result.usage_errors.items():
            print(f"  usage error: {name}: {words.splitlines()[0] if words else ''}", flush=True)
        for name in result.survivors:
            print(f"  survived: {name}", flush=True)
        results.append(result)
    report = markdown(results)
    print(report)
    if args.report:
        args.report.write_text(report, encoding="utf-8")
    return 1 if any(r.survivors or r.stopped or r.failed or r.usage_errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
