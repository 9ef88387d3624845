"""Problems found in the input, collected over a whole run and reported together.

Every stage appends to one `Problems` list instead of raising at the first bad
value, so a librarian sees every mistake of a catalogue in one report.
"""
from __future__ import annotations

from dataclasses import dataclass


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

    def report(self) -> str:
        count = len(self.items)
        head = f"{count} problem{'s' if count != 1 else ''} in the catalogue data:"
        return "\n".join([head, *(f"  {p}" for p in self.items)])


class CatalogueError(Exception):
    """Base of the errors the library raises; the CLI turns them into exit status 1."""


class DataError(CatalogueError):
    """The input data breaks the rules of docs/spec/data.md; nothing was published."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        super().__init__(problems.report())


class GeneratorBug(CatalogueError):
    """A document the generator made does not match its JSON Schema."""
