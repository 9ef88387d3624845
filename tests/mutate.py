"""make mutation: plausible one-line mistakes, made one at a time, and whether the tests see them.

    python tests/mutate.py [MODULE=TESTS ...] [--timeout 120] [--report FILE]

For each module (a path under generator/) and the tests that check it, every line is
offered the mistakes a tired developer makes: a comparison turned (`<` `<=` `==` `!=`
`>` `>=`), `and`/`or` swapped, a `not` dropped, `True`/`False` swapped, a small number
off by one, `+`/`-` swapped, a `return` of something else (`None`). Each mutant is
written into the module in a copy of the project (the checkout is never touched), the
module's tests run (`-x`, a timeout; a timeout counts as killed), and the mutant is
killed when they fail. The report lists the survivors with their line, so that each is
killed by a new test or explained as equivalent (the docs' testing page keeps both).

Written for this project instead of a general mutation tool: it reaches the templates'
JavaScript too, through the Python tests that run it, by mutating .j2 files the same way.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = {
    "generator/api/backends/search.py": ["tests/api/backends/test_search.py"],
    "generator/api/backends/search_index.py": ["tests/api/backends/test_search.py", "tests/sitebuild/test_queries.py"],
    "generator/api/backends/paging.py": ["tests/api/test_querystring.py", "tests/api/test_routes.py", "tests/api/test_pages.py"],
    "generator/api/querystring.py": ["tests/api/test_querystring.py"],
}
SWAPS = [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" == ", " != "), (" != ", " == "),
         (" and ", " or "), (" or ", " and "), ("not ", ""), ("True", "False"), ("False", "True"),
         (" + ", " - "), (" - ", " + "), ("[1:]", "[2:]"), ("[:-1]", "[:-2]")]
NUMBER = re.compile(r"(?<![\w.])([0-9]+)(?![\w.])")


@dataclass
class Mutant:
    path: str
    line: int
    before: str
    after: str
    killed: bool | None = None


def mutants(path: str) -> list[Mutant]:
    found = []
    in_string = False  # (inside a docstring: words, not code)
    for number, text in enumerate((ROOT / path).read_text(encoding="utf-8").splitlines(), 1):
        code = text.split("  #")[0]
        stripped = code.strip()
        quotes = stripped.count('"""')
        if in_string or quotes:
            in_string = in_string != (quotes % 2 == 1)
            continue
        if not stripped or stripped.startswith(("#", "import ", "from ", "def ", "class ", "@", "//", "*")):
            continue
        seen = set()
        for old, new in SWAPS:
            if old in code:
                changed = code.replace(old, new, 1) + text[len(code):]
                if changed not in seen:
                    seen.add(changed)
                    found.append(Mutant(path, number, text, changed))
        for match in NUMBER.finditer(code):
            value = int(match[1])
            if value < 100000:
                changed = code[:match.start()] + str(value + 1) + code[match.end():] + text[len(code):]
                if changed not in seen:
                    seen.add(changed)
                    found.append(Mutant(path, number, text, changed))
        if stripped.startswith("return ") and stripped != "return None":
            indent = code[:len(code) - len(code.lstrip())]
            found.append(Mutant(path, number, text, f"{indent}return None"))
    return found


def run(mutant: Mutant, tests: list[str], copy: Path, timeout: int) -> bool:
    target = copy / mutant.path
    original = target.read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    ending = "\n" if lines[mutant.line - 1].endswith("\n") else ""
    lines[mutant.line - 1] = mutant.after + ending
    target.write_text("".join(lines), encoding="utf-8")
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0", *tests],
                              cwd=copy, capture_output=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": str(copy)})
        return done.returncode != 0
    except subprocess.TimeoutExpired:
        return True
    finally:
        target.write_text(original, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="*", help="MODULE=TEST[,TEST...] (default: the modules above)")
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    plan = {p.split("=")[0]: p.split("=")[1].split(",") for p in args.pairs} or DEFAULT
    results: list[Mutant] = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        copy = Path(tmp) / "project"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", "node_modules", "site", ".git",
                                                                   "bench-work", "__pycache__"))
        if (ROOT / "node_modules").exists():
            (copy / "node_modules").symlink_to(ROOT / "node_modules")
        for module, tests in plan.items():
            started = time.monotonic()
            made = mutants(module)
            for mutant in made:
                mutant.killed = run(mutant, tests, copy, args.timeout)
                results.append(mutant)
                if not mutant.killed:  # (said at once: a long run can be stopped and still told)
                    print(f"survived: {mutant.path}:{mutant.line}: {mutant.after.strip()}", flush=True)
            killed = sum(m.killed for m in made)
            print(f"{module}: {killed}/{len(made)} killed ({time.monotonic() - started:.0f} s)", flush=True)
    report = ["| module | mutants | killed | survived |", "|---|---|---|---|"]
    for module in plan:
        mine = [m for m in results if m.path == module]
        report.append(f"| `{module}` | {len(mine)} | {sum(m.killed for m in mine)} | "
                      f"{sum(not m.killed for m in mine)} |")
    report += ["", "Survivors:", ""]
    report += [f"- `{m.path}:{m.line}`: `{m.before.strip()}` → `{m.after.strip()}`" for m in results if not m.killed]
    text = "\n".join(report) + "\n"
    print(text)
    if args.report:
        args.report.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
