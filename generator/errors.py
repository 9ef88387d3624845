"""Problems found in the input, collected over a whole run and reported together.

Every stage appends to one `Problems` list instead of raising at the first bad
value, so a librarian sees every mistake of a catalogue in one report. The report
groups what one cause repeats: the same mistake on many rows is shown a few times,
then counted ("and 40 more like it"), so the first lines stay readable.
"""
from __future__ import annotations

import difflib
import errno
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int  # 0 when the problem concerns the file as a whole
    field: str  # "" when it concerns the whole record or file
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" field {self.field!r}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class Problems:
    """An ordered collection of problems, with the report they make."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        # Collections whose data file could not be read to its end: what refers to their
        # records is not checked (it would only repeat that cause, once per reference).
        self.unread: set[str] = set()

    def add(self, file: str, line: int, field: str, message: str) -> None:
        self.items.append(Problem(file, line, field, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def sort(self, files: list[str]) -> None:
        """Group by file in the given order (others first), each file's by line."""
        rank = {name: n for n, name in enumerate(files, 1)}
        self.items.sort(key=lambda p: (rank.get(p.file, 0), p.line))

    def report(self, shown: int = 3) -> str:
        """Every problem, one a line, except that of problems alike (the same file, field and
        message but for the values in it) only the first `shown` are written, the last of
        them followed by how many more there are and on which lines."""
        count = len(self.items)
        head = f"{count} problem{'s' if count != 1 else ''} in the catalogue data:"
        keys = [_likeness(p) for p in self.items]
        groups: dict[tuple, list[Problem]] = {}
        for key, p in zip(keys, self.items):
            groups.setdefault(key, []).append(p)
        lines, seen = [head], dict.fromkeys(groups, 0)
        for key, p in zip(keys, self.items):
            alike, position = groups[key], seen[key]
            seen[key] += 1
            if position < shown:
                lines.append(f"  {p}")
            if position == shown - 1 and len(alike) > shown:
                rest = [q.line for q in alike[shown:]]
                field = f" field {p.field!r}:" if p.field else ""
                lines.append(f"  {p.file}:{field} and {len(rest)} more like it{_lines(rest)}")
        return "\n".join(lines)


# What varies between problems of one cause: quoted values, ids and numbers.
_VALUES = re.compile(r"'[^']*'|\"[^\"]*\"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d+")


def _likeness(problem: Problem) -> tuple[str, str, str]:
    """Problems of rows alike but for their values; a problem of a whole file (line 0: a
    collection with no data file, say) is its own, and there are never many."""
    if not problem.line:
        return problem.file, problem.field, problem.message
    return problem.file, problem.field, _VALUES.sub("…", problem.message)


def _lines(lines: list[int]) -> str:
    """" on lines 5, 9 and 12" or " on lines 5 to 480"."""
    if len(lines) == 1:
        return f" on line {lines[0]}"
    if len(lines) <= 4:
        return f" on lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}"
    return f" on lines {min(lines)} to {max(lines)}"


def meant(name: str, known: Iterable[str], what: str) -> str:
    """What a message saying that `name` is unknown goes on with: ": did you mean 'page_sizes'?"
    when a known name is close to it (a misspelling), else every known one under `what`
    ("; collections: author, books, ...")."""
    known = list(known)
    close = difflib.get_close_matches(name, known, 1)
    return f": did you mean {close[0]!r}?" if close else f"; {what}: {', '.join(known) or 'none'}"


class CatalogueError(Exception):
    """Base of the errors the library raises; the CLI turns them into exit status 1."""


class DataError(CatalogueError):
    """The input data breaks the rules of docs/spec/data.md; nothing was published."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        super().__init__(problems.report())


class DiskFull(CatalogueError):
    """The disk holding the site filled (or its quota was spent) before the build published:
    the machine's, not a bug."""
    ERRNOS = (errno.ENOSPC, errno.EDQUOT)
    ADVICE = ("The disk holding the site is full (or its quota is spent); nothing was published. "
              "Free some space there and build again")


@contextmanager
def disk_full_said() -> Iterator[None]:
    """A write that fails for want of space, raised as DiskFull (with the file it names)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in DiskFull.ERRNOS:
            raise DiskFull(f"{exc}\n{DiskFull.ADVICE}.") from exc
        raise


class GeneratorBug(CatalogueError):
    """A document the generator made does not match its JSON Schema."""
