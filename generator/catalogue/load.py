"""Read the data directory: find each collection's one file and yield its raw rows.

A row is `(line, mapping)`: the line the record starts on and its fields as
written. CSV cells are strings; YAML scalars are strings, integers, floats,
booleans or null. Turning them into typed values is the next stage's job
(records.py), so that both formats go through the same rules.

Mistakes are reported by their cause: a CSV header is checked once, at line 1, and a
file that cannot be read to its end says so once, naming the checks it holds back,
rather than every reference to its records failing after it. A YAML error is worded as
the mistake it most likely is (a tab, a quote left open, ': ' in a value) with its fix.
site.yaml is read with the line of each key, for the problems of its settings.
"""
from __future__ import annotations

import contextlib
import csv
import difflib
import fcntl
import io
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import yaml

from ..errors import CatalogueError, Problems
from .resources import BY_COLLECTION, COLLECTIONS, DERIVED
from .settings import Settings, SiteFile, settings

SITE_FILE = "site.yaml"
# Python's csv module stops at 128 KiB a cell; the data contract sets no limit on text.
csv.field_size_limit(2**31 - 1)


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML 1.2-like scalars: only true/false are booleans and dates stay text.

    PyYAML follows YAML 1.1, where `no` is false and `2020-01-01 10:00` a naive
    datetime; a librarian writing a title "No" or a timestamp would be surprised,
    and CSV never does that, so both formats read alike. A mapping may not give a key twice.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        refuse_duplicate_keys(node)
        return super().construct_mapping(node, deep)


def refuse_duplicate_keys(node: yaml.MappingNode) -> None:
    """A mapping that gives a key twice would silently lose the first value: refused."""
    seen: dict[str, yaml.Node] = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            first = seen.setdefault(key_node.value, key_node)
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key_node.value!r} is given twice (first on line "
                    f"{first.start_mark.line + 1}): keep one", key_node.start_mark)


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if not tag.endswith((":bool", ":timestamp"))]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


@dataclass(frozen=True)
class Source:
    collection: str
    path: Path
    format: str  # "yaml" or "csv"
    # A part of a CSV file, for reading it in several processes: the bytes [start, end)
    # hold whole records, the first on line first_line, under the file's header row.
    start: int = 0
    end: int | None = None
    first_line: int = 1
    header: tuple[str, ...] | None = None
    # The file's size when the build found it: a build reads no further, so a record
    # appended meanwhile (by the write service) waits whole for the next build.
    size: int | None = None
    # (size, mtime, ctime, inode, device) as found, when the file had been left alone for
    # a while (SETTLED_NS): a later build that finds the same may trust what it learned of
    # the content then. None for a file changed just now, which that same stat could hide.
    signature: tuple[int, ...] | None = None

    def parts(self, count: int) -> list["Source"]:
        """count Sources over consecutive ranges of records; a YAML file (which cannot be cut
        safely) or a tree (the categories: it needs all its nodes) stays whole in the first."""
        if count == 1 or self.format != "csv" or BY_COLLECTION[self.collection].tree:
            return [self] + [replace(self, start=0, end=0)] * (count - 1)
        try:
            header = csv_header(self.path)
            cuts, lines = _record_boundaries(self, count)
        except (UnicodeDecodeError, csv.Error, OSError):
            return [self] + [replace(self, start=0, end=0)] * (count - 1)  # its reader reports it
        if cuts[0] == cuts[-1]:  # no newline after the header: lines end in carriage returns alone
            return [self] + [replace(self, start=0, end=0)] * (count - 1)
        return [replace(self, start=a, end=b, first_line=line, header=header)
                for a, b, line in zip(cuts, cuts[1:], lines)]

    def open(self) -> io.BufferedReader:
        """The bytes of this source (its range of the file, or all of it as found)."""
        end = self.end if self.end is not None else self.size
        return io.BufferedReader(_Range(self.path, self.start, end), BLOCK)

    def holds_nul(self) -> bool:
        """Whether the source's bytes hold a NUL, which no text may hold (records.py reads the
        rows of such a file with care): one pass at memchr's speed, a block at a time."""
        if self.end == 0:
            return False
        block = bytearray(BLOCK)
        with self.open() as f:
            while read := f.readinto(block):
                if block.find(0, 0, read) >= 0:
                    return True
        return False

    @property
    def name(self) -> str:
        """The file as reports name it: relative to the data directory's parent."""
        return f"{self.path.parent.name}/{self.path.name}"

    def rows(self, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.end == 0:
            return  # an empty part
        reader = _yaml_rows if self.format == "yaml" else _csv_rows
        try:
            yield from reader(self, problems)
        except UnicodeDecodeError as exc:
            unreadable(self, problems, 0, f"is not UTF-8 text (byte {exc.start}): save it as UTF-8")
        except OSError as exc:
            unreadable(self, problems, 0, f"cannot be read: {exc.strerror}")


class Input(NamedTuple):
    """A data directory as found: the settings (None when site.yaml is unusable), each
    collection's source, and the problems found so far."""
    settings: Settings | None
    sources: dict[str, Source]
    problems: Problems


def read_catalogue(data_dir: Path, base_url: str | None = None, links: str = "api") -> Input:
    """The data directory's settings and sources; base_url, when given, overrides site.yaml's;
    links is the build's choice of links (catalogue build --links)."""
    if not data_dir.is_dir():
        raise CatalogueError(f"data directory {data_dir} does not exist")
    problems = Problems()
    site = read_site(data_dir, problems)
    # (a missing or broken site.yaml is one problem, not one more for each setting)
    found = settings(site, problems, base_url, links) if site is not None else None
    return Input(found, find_sources(data_dir, problems), problems)


def find_sources(data_dir: Path, problems: Problems) -> dict[str, Source]:
    """Each collection's source file; both formats present, or neither, is a problem."""
    sources = {}
    for collection in COLLECTIONS:
        candidates = [(data_dir / f"{collection}.{ext}", fmt) for ext, fmt in (("yaml", "yaml"), ("yml", "yaml"), ("csv", "csv"))]
        found = [Source(collection, path, fmt, **settled(path)) for path, fmt in candidates if path.is_file()]
        if len(found) == 1:
            sources[collection] = found[0]
            if found[0].format == "csv":
                check_header(found[0], problems)
        elif not found:
            problems.add(
                f"{data_dir.name}/", 0, "",
                f"collection {collection!r} has no data file: add {collection}.yaml or {collection}.csv",
            )
        else:
            names = " and ".join(s.path.name for s in found)
            problems.add(
                f"{data_dir.name}/", 0, "",
                f"collection {collection!r} comes from {names}: keep exactly one of them",
            )
    return sources


SETTLED_NS = 2_000_000_000


def settled(path: Path) -> dict[str, int | tuple[int, ...] | None]:
    """The size of a data file once no append is under way (writers append under an
    exclusive lock of the file: writes/append.py) and its signature when it has not changed for
    SETTLED_NS: any later change gives it another mtime or ctime (git's racy-clean rule)."""
    with path.open("rb") as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        now = time.time_ns()
        found = os.fstat(f.fileno())
    signature = (found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino, found.st_dev)
    settled = now - max(found.st_mtime_ns, found.st_ctime_ns) > SETTLED_NS
    return {"size": found.st_size, "signature": signature if settled else None}


def read_site(data_dir: Path, problems: Problems) -> SiteFile | None:
    """site.yaml with the line of each key (None when missing or broken, with the problem noted)."""
    name = f"{data_dir.name}/{SITE_FILE}"
    try:
        return read_settings(data_dir / SITE_FILE, name, problems)
    except FileNotFoundError:
        problems.add(name, 0, "", "is missing: it must at least set base_url")
        return None


def read_settings(path: Path, name: str, problems: Problems) -> SiteFile | None:
    """A YAML file of settings (site.yaml, an import's query file) with the line of each key;
    None when it is no YAML mapping, with the problem noted. (OSError is the caller's.)"""
    with path.open("rb") as f:
        loader = Loader(f)
        try:
            node = loader.get_single_node()
            value = loader.construct_document(node) if node is not None else {}
        except yaml.YAMLError as exc:
            line, message = yaml_mistake(exc, path)
            problems.add(name, line, "", message)
            return None
        finally:
            loader.dispose()
    if not isinstance(value, dict):
        problems.add(name, node.start_mark.line + 1, "", "must be a mapping of settings: write them "
                                                         "as `key: value`, one a line")
        return None
    return SiteFile(name, value, key_lines(node))


def key_lines(node: yaml.Node, path: str = "") -> dict[str, int]:
    """The line of each key of a YAML mapping, nested ones by their path ("search.books")."""
    lines = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                lines[path + key.value] = key.start_mark.line + 1
                lines.update(key_lines(value, f"{path}{key.value}."))
    return lines


def _record_boundaries(source: Source, count: int) -> tuple[list[int], list[int]]:
    """count+1 byte offsets cutting the file's records into count runs of similar size
    (a cut follows a newline outside quotes: an even number of '"' before it), and the
    line each run starts on. One pass over the file in blocks, counting in C."""
    size = source.size if source.size is not None else source.path.stat().st_size
    cuts, lines = [], []
    quotes = newlines = 0  # before the current block
    with source.open() as f:
        offset = 0
        while True:
            block = f.read(BLOCK)
            if not block:
                break
            position = 0
            while True:
                if not cuts:  # the first cut ends the header row
                    target = 0
                elif len(cuts) < count:
                    target = max(cuts[-1], cuts[0] + (size - cuts[0]) * len(cuts) // count)
                else:
                    break
                if target - offset >= len(block):
                    break
                position = max(position, target - offset)
                newline = block.find(b"\n", position)
                if newline < 0:
                    break
                if (quotes + block.count(b'"', 0, newline)) % 2 == 0:
                    cuts.append(offset + newline + 1)
                    lines.append(newlines + block.count(b"\n", 0, newline + 1) + 1)
                position = newline + 1
            quotes += block.count(b'"')
            newlines += block.count(b"\n")
            offset += len(block)
    while len(cuts) < count:
        cuts.append(size)
        lines.append(newlines + 1)
    return cuts + [size], lines


BLOCK = 1 << 22


class _Range(io.RawIOBase):
    """The bytes [start, end) of a file, as a stream."""

    def __init__(self, path: Path, start: int, end: int | None) -> None:
        self._file = path.open("rb", buffering=0)
        self._file.seek(start)
        self._left = end - start if end is not None else 1 << 62

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        view = memoryview(buffer)[: self._left]
        read = self._file.readinto(view) if len(view) else 0
        self._left -= read
        return read

    def close(self) -> None:
        self._file.close()
        super().close()


def csv_header(path: Path) -> tuple[str, ...]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return tuple(next(csv.reader(f), []))


def readable_header(path: Path) -> tuple[str, ...] | None:
    """A CSV file's header row; None where the file cannot be read as CSV (its reader reports why)."""
    try:
        return csv_header(path)
    except (UnicodeDecodeError, csv.Error, OSError):
        return None


def _open_range(source: Source):
    """The source's text, or only its byte range, streamed for csv.reader."""
    # utf-8-sig drops the byte-order mark spreadsheets like to write.
    encoding = "utf-8-sig" if source.header is None else "utf-8"
    return io.TextIOWrapper(source.open(), encoding=encoding, newline="")


def _csv_rows(source: Source, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open_range(source) as f:
        yield from csv_rows_of(f, source, problems)


def csv_rows_of(f, source: Source, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of a text stream holding (the source's range of) a CSV file."""
    reader = csv.reader(f, strict=True)
    try:
        header = list(source.header) if source.header is not None else next(reader, None)
        if header is None:
            unreadable(source, problems, 0, "is empty: a CSV file needs a header row", partly=False)
            return
        header = [h.strip() for h in header]  # (checked once, by check_header)
        end = reader.line_num + source.first_line - 1
        for row in reader:
            start, end = end + 1, reader.line_num + source.first_line - 1
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            if len(row) != len(header):
                problems.add(
                    source.name, start, "",
                    f"has {len(row)} cells but the header has {len(header)}: "
                    "quote cells that contain commas",
                )
                continue
            yield start, dict(zip(header, row))
    except csv.Error as exc:
        unreadable(source, problems, reader.line_num + source.first_line - 1, f"is not valid CSV: {exc}")


def check_header(source: Source, problems: Problems) -> None:
    """A CSV file's header row, checked once for the whole file (rather than a mistake in it
    showing again on every row): each column that is no field, or is given twice, and each
    required field with no column, at line 1 with what to do about it."""
    header = [h.strip() for h in readable_header(source.path) or ()]
    if not header:
        return  # (its reader reports why)
    resource = BY_COLLECTION[source.collection]
    names = resource.names
    for column in sorted({h for h in header if header.count(h) > 1 or not h}):
        what = "an empty column name: name it or remove it" if not column else f"column {column!r} twice: keep one"
        problems.add(source.name, 1, column, f"header has {what}")
    missing = [f.name for f in resource.fields if f.required and f.name not in header]
    free = [n for n in sorted(names) if n not in header]  # what a misspelt column may have meant
    for column in dict.fromkeys(h for h in header if h and h not in names):
        if column in DERIVED:
            problems.add(source.name, 1, column, "is computed by the build and cannot be given: remove the column")
            continue
        meant = difflib.get_close_matches(column, free, 1)
        if meant:
            free.remove(meant[0])
            required = " (a required field)" if meant[0] in missing else ""
            if required:
                missing.remove(meant[0])
            fix = f"rename the column to {meant[0]!r}{required}"
        else:
            fix = f"remove the column or rename it; known fields: {', '.join(sorted(names))}"
        problems.add(source.name, 1, column, f"the header's column is not a field of {source.collection}: {fix}")
    for name in missing:
        problems.add(source.name, 1, name, "has no column in the header and is required: add the column")


def unreadable(source: Source, problems: Problems, line: int, message: str, partly: bool = True) -> None:
    """A problem that stops the reading of a file (`partly`: after the records before it;
    else before any): its other records are unknown, so references to them are not checked
    (each would fail and only repeat this); the message says so, once."""
    problems.unread.add(source.collection)
    referrers = [r.collection for r in BY_COLLECTION.values()
                 if r.collection != source.collection and any(f.to == source.collection for f in r.relations)]
    held = (f"; references to {source.collection} from {' and '.join(referrers)} are checked once it reads"
            if referrers else "")
    read = "the file was not read past this" if partly else "nothing of the file was read"
    problems.add(source.name, line, "", f"{message} ({read}{held})")


def _yaml_rows(source: Source, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    with source.open() as f:
        yield from yaml_rows_of(f, source, problems, whole=True)


def yaml_rows_of(f, source: Source, problems: Problems, whole: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a stream holding a YAML file (`whole`: the source's file itself,
    whose lines a message may quote)."""
    loader = Loader(f)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        # (the whole document is parsed before any record is made: none is)
        unreadable(source, problems, *yaml_mistake(exc, source.path if whole else None), partly=False)
        return
    finally:
        loader.dispose()
    if root is None:
        return
    if not isinstance(root, yaml.SequenceNode):
        unreadable(source, problems, root.start_mark.line + 1, "must be a list of records (- key: value)", partly=False)
        return
    for node in root.value:
        try:
            row = _construct_with_lines(loader, node, source, problems)
        except yaml.YAMLError as exc:  # (a tag the safe loader refuses, a key given twice, ...)
            line, message = yaml_mistake(exc)
            problems.add(source.name, line, "", message)
            continue
        except RecursionError:
            problems.add(source.name, node.start_mark.line + 1, "", "is nested too deeply to read")
            continue
        if row is not None:
            yield row


def _construct_with_lines(loader, node, source: Source, problems: Problems):
    """(line, mapping) for a record node; nested `children` records keep their own lines."""
    line = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        problems.add(source.name, line, "", "must be a mapping of fields (key: value)")
        return None
    record: dict[str, Any] = {}
    refuse_duplicate_keys(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key == "children" and isinstance(value_node, yaml.SequenceNode):
            children = [_construct_with_lines(loader, n, source, problems) for n in value_node.value]
            record[key] = [c for c in children if c is not None]
        else:
            record[str(key)] = loader.construct_object(value_node, deep=True)
    return line, record


# ---- PyYAML's errors in a librarian's words ---------------------------------------------
# PyYAML (its C reader above all) says where it stopped and what it expected, rarely why: a
# tab is "found character that cannot start any token", a value holding ': ' is "mapping
# values are not allowed in this context". The mistakes met most are recognised by those
# words and the line they point at, and worded as what to change; the rest keep PyYAML's
# words and the column.

def yaml_mistake(exc: yaml.YAMLError, path: Path | None = None) -> tuple[int, str]:
    """The line a YAML error names and, in one line, what is wrong there and the fix (PyYAML's
    own words where no fix is known). `path`: the file, whose line the mistake is looked for in
    (a tab, a quote, a colon in a value)."""
    if isinstance(exc, yaml.reader.ReaderError):
        return _unreadable_character(exc, path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark, opened = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    if mark is None:
        return (opened.line + 1 if opened else 0), f"is not valid YAML: {problem}"
    lines = _lines_to(path, mark.line) if path is not None else []
    text = lines[-1] if lines else ""
    said = f"{getattr(exc, 'context', None) or ''}: {problem}"
    if text[mark.column:mark.column + 1] == "\t" or any(w in said for w in _TAB):
        # (the C reader's "cannot start any token" does not say which character: look)
        return mark.line + 1, f"is not valid YAML: {TAB.format(mark.column + 1)}"
    opened_before = _quote_left_open(lines, mark.column) if any(w in said for w in _OUT_OF_LINE) else None
    if opened_before:
        return opened_before, f"is not valid YAML: {_UNCLOSED_QUOTE}"
    for words, fix in _YAML_FIXES:
        if any(w in said for w in words):
            at = opened if words in _OPENED and opened is not None else mark
            return at.line + 1, f"is not valid YAML: {fix(mark.column, text, problem)}"
    return mark.line + 1, f"is not valid YAML: {problem} (at column {mark.column + 1})"


def _unreadable_character(exc: yaml.reader.ReaderError, path: Path | None) -> tuple[int, str]:
    """A byte that is not UTF-8, or a control character, at its line (the C reader counts bytes)."""
    line = 0
    if path is not None:
        with contextlib.suppress(OSError), path.open("rb") as f:
            line = f.read(exc.position).count(b"\n") + 1
    if "not allowed" in exc.reason:
        return line, (f"holds a control character (U+{exc.character:04X}), which YAML does not allow: "
                      "remove it, or write it as an escape in double quotes")
    return line, f"is not UTF-8 text (byte {exc.position}): save it as UTF-8"


def _lines_to(path: Path, number: int) -> list[str]:
    """The lines of a file up to line `number` (from 0), or none when it cannot be read."""
    try:
        with path.open(encoding="utf-8") as f:
            return [text for _, text in zip(range(number + 1), f)]
    except (OSError, UnicodeDecodeError):
        return []


def _quote_left_open(lines: list[str], column: int) -> int | None:
    """The line of a quote left open, when what closes it is the quote before `column` on the
    last line (a value reads on, across lines, to the next value's opening quote): from 1."""
    quote = lines[-1][column - 1:column] if lines and column else ""
    if quote not in ("'", '"') or lines[-1][:column].count(quote) % 2 == 0:
        return None
    return next((n + 1 for n in range(len(lines) - 2, -1, -1) if lines[n].count(quote) % 2), None)


def _colon_in_value(column: int, text: str, problem: str) -> str:
    if ": " in text[:column]:
        return "the value holds ': ', which YAML reads as another key: put the whole value in quotes"
    return "this line is indented more than the key before it: indent it as that key"


def _out_of_line(column: int, text: str, problem: str) -> str:
    if text[column - 1:column] in ("'", '"'):
        return ("a quoted value is followed by more text: write a ' inside '...' twice (''), or quote the "
                "value with \" instead")
    return "this line is indented unlike the lines around it: align its key (or its '-') with theirs"


def _reserved(column: int, text: str, problem: str) -> str:
    first = text[column:column + 1]
    what = repr(first) if first.strip() else "a character YAML reserves (@, `, %)"
    return f"{what} cannot start a plain value in YAML: put the value in quotes"


# The mistakes met most, by the words of PyYAML's reader (C or Python: "while scanning ...:
# found ..."), each with its fix. Those in _OPENED are named at the line where what was left
# open began.
_TAB = ("tab character", "'\\t'")  # (the C reader's words, the Python reader's)
TAB = "a tab at column {}, which YAML does not allow for indenting: indent with spaces"
_QUOTE = ("scanning a quoted scalar: found unexpected end of stream",)
_UNCLOSED_QUOTE = "a quote opened on this line is never closed: close it"
_OUT_OF_LINE = ("did not find expected key", "expected '-' indicator", "expected <block end>")
_UNCLOSED = ("expected ',' or ']'", "expected ',' or '}'")
_NO_COLON = ("could not find expected ':'",)
_OPENED = (_QUOTE, _UNCLOSED, _NO_COLON)
_YAML_FIXES = (
    (("cannot start any token",), _reserved),
    (("mapping values are not allowed",), _colon_in_value),
    (_NO_COLON, lambda *_: "a key without ':' after it (or a value running on to the next line): write "
                           "'key: value', and put a value that spans lines in quotes"),
    (_QUOTE, lambda *_: _UNCLOSED_QUOTE),
    (_UNCLOSED, lambda *_: "a list ('[') or mapping ('{') opened on this line is never closed: close it"),
    (_OUT_OF_LINE, _out_of_line),
    (("scanning an alias", "scanning an anchor"), lambda *_: "'*' and '&' start an alias or an anchor in YAML: "
                                                             "put the value in quotes"),
    (("unknown escape character",), lambda *_: "a backslash in double quotes starts an escape: write \\\\ for "
                                               "one, or put the value in single quotes"),
    (("another document",), lambda *_: "a second YAML document begins here ('---'): a file holds one; remove the "
                                       "line"),
    (("directive",), lambda *_: "'%' at the start of a line begins a YAML directive: put the value in quotes"),
    (("could not determine a constructor",), lambda column, text, problem: f"{problem}: remove the tag, or "
                                                                          "put the value in quotes if it is text"),
)
