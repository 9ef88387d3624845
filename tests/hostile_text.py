"""Hostile strings in every field a person reads (book titles, authors' names, publishers'
companies, category names, about texts, users' names, bookshelf titles): a copy of a
catalogue with them written in, and where each went. The HTML view, the JSON answers and
the OpenAPI document are tested with it (tests/hosts/test_hostile_text.py)."""
from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import yaml

from generator.catalogue.resources import RESOURCES

# Each payload that could run sets window.__pwned (and opens a dialog): neither may happen.
PAYLOADS = [
    "<script>window.__pwned=1;alert(1)</script>",
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    '"><svg onload=window.__pwned=1>',
    "</textarea></title></script><script>window.__pwned=1</script>",
    "\u202Eکتاب\u202C abc \u202Bمتن\u202C",  # RTL override and embedding
    "ک" * 2500 + "x" * 2500,  # a 5,000-character word
    "quotes \" ' ` and backslashes \\ \\\\ \\\" \\u003c \\n",
    "javascript:window.__pwned=1 ${window.__pwned=1} {{7*7}} &lt;b&gt; &amp;",
    # what JSON and JavaScript escape: line and paragraph separators (DRF writes \u2028 and
    # \u2029), control characters, NEL, a byte order mark, zero-width joiners
    "line\u2028separator\u2029paragraph \x01\x1f\x7f \u0085 \ufeff \u200d\u200c end",
]
NAME_MAX = 150  # (first_name and last_name: as Django's User, see catalogue/fields.py)


def _payload(i: int, limit: int | None = None) -> str:
    text = PAYLOADS[i % len(PAYLOADS)]
    return text[:limit] if limit else text


def _rewrite_csv(path: Path, fields: dict[str, int | None]) -> list[dict]:
    """Hostile values in the named columns of a CSV file, row by row; the rows written."""
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    for i, row in enumerate(rows):
        for n, (field, limit) in enumerate(fields.items()):
            row[field] = _payload(i + n, limit)
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return rows


def _walk(nodes: list[dict]):
    for node in nodes:
        yield node
        yield from _walk(node.get("children") or [])


def hostile_catalogue(sample: Path, out: Path) -> dict[tuple[str, str], list[str]]:
    """A copy of the catalogue `sample` with hostile strings in every field people read;
    each (collection's URL segment, field) with the values written into it."""
    shutil.copytree(sample, out)
    segment = {r.collection: r.name for r in RESOURCES}
    written: dict[tuple[str, str], list[str]] = {}
    for stem, fields in (("books", {"title": None, "about": None}), ("publishers", {"company": None, "info": None}),
                         ("bookshelves", {"title": None})):
        rows = _rewrite_csv(out / f"{stem}.csv", fields)
        for field in fields:
            written[segment[stem], field] = [row[field] for row in rows]
    for stem, fields in (("authors", {"fullName": None, "bio": None}), ("categories", {"name": None}),
                         ("users", {"first_name": NAME_MAX, "last_name": NAME_MAX, "bio": None})):
        records = yaml.safe_load((out / f"{stem}.yaml").read_text(encoding="utf-8"))
        for i, record in enumerate(_walk(records)):
            for n, (field, limit) in enumerate(fields.items()):
                record[field] = _payload(i + n, limit)
                written.setdefault((segment[stem], field), []).append(record[field])
        (out / f"{stem}.yaml").write_text(yaml.safe_dump(records, allow_unicode=True, width=10 ** 6), encoding="utf-8")
    return written
