"""Property-based: after any sequence of edits of the data, each followed by an incremental
build into the same site, the published tree is byte-identical to a clean build of the
same data in a fresh directory. What a build keeps for the next must never show."""
from __future__ import annotations

import csv
import io
import re
import shutil
import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import yaml

from conftest import SAMPLE
from generator.sitebuild import build, segments

PUBLISHED = ("api", "_meta")  # what a generation serves (its .state/ is the build's own)


def books(data: Path) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO((data / "books.csv").read_text(encoding="utf-8"))))
    return rows[0], rows[1:]


def write_books(data: Path, header: list[str], rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    (data / "books.csv").write_text(out.getvalue(), encoding="utf-8")


def edit(data: Path, action: str, n: int, step: int) -> None:
    """One edit of the sample's data, as a librarian would make it (the step-th of a sequence)."""
    header, rows = books(data)
    column = {name: i for i, name in enumerate(header)}
    row = rows[n % len(rows)]
    if action == "retitle":
        row[column["title"]] = f"عنوان {n}"
    elif action == "delete":
        rows.remove(row)
    elif action == "add":
        new = list(row)
        new[column["id"]] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"edit {step}"))
        new[column["isbn"]] = f"9780000{step:03d}{n:03d}"
        rows.insert(n % (len(rows) + 1), new)
    elif action == "disable":
        row[column["enable"]] = "false" if row[column["enable"]] != "false" else "true"
    elif action == "swap":
        other = (n * 7 + 3) % len(rows)
        rows[n % len(rows)], rows[other] = rows[other], row
    elif action == "reprice":
        row[column["price"]] = str(1000 * (n + 1))
    elif action == "author":
        text = (data / "authors.yaml").read_text(encoding="utf-8")
        (data / "authors.yaml").write_text(text.replace('fullName: "سیمین دانشور"', f'fullName: "سیمین {n}"'),
                                           encoding="utf-8")
    elif action == "user":  # as a write appends one; every other one with a bookshelf of its own
        user = uuid.uuid5(uuid.NAMESPACE_URL, f"user {step}")
        if (data / "users.csv").exists():
            with (data / "users.csv").open("a", encoding="utf-8") as f:
                f.write(f"{user},reader{step}.{n},خواننده,,,,,\n")
        else:
            with (data / "users.yaml").open("a", encoding="utf-8") as f:
                f.write(f"- id: {user}\n  username: reader{step}.{n}\n  first_name: خواننده\n  last_name: \"\"\n")
        if n % 2:
            with (data / "bookshelves.csv").open("a", encoding="utf-8") as f:
                f.write(f"{uuid.uuid5(uuid.NAMESPACE_URL, f'shelf {step}')},{user},قفسه {n}\n")
    elif action == "rename":  # a user whose bookshelves embed the username
        users = next(data.glob("users.*"))
        users.write_text(re.sub(r"sara\.[^,\s]+", f"sara.{n}.{step}", users.read_text(encoding="utf-8")),
                         encoding="utf-8")
    elif action == "page sizes":
        sizes = [[12, 24], [10], [24, 12, 5], [12]][n % 4]
        text = (data / "site.yaml").read_text(encoding="utf-8").splitlines()
        (data / "site.yaml").write_text("\n".join(line if not line.startswith("page_sizes:") else
                                                  f"page_sizes: {sizes}" for line in text) + "\n", encoding="utf-8")
    if action not in ("author", "user", "rename", "page sizes"):
        write_books(data, header, rows)


def users_as_csv(data: Path) -> None:
    """users.yaml written as users.csv: a CSV file is read by segment (segments.py)."""
    users = yaml.safe_load((data / "users.yaml").read_text(encoding="utf-8"))
    columns = ["id", "username", "first_name", "last_name", "bio", "following_count", "followers_count", "followed"]
    with (data / "users.csv").open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(
            [columns, *([str(user.get(c, "")).lower() if isinstance(user.get(c), bool) else user.get(c, "")
                         for c in columns] for user in users)])
    (data / "users.yaml").unlink()


def published(site: Path) -> dict[str, bytes]:
    found = {}
    for top in PUBLISHED:
        root = site / "current" / top
        for path in sorted(root.rglob("*")):
            if path.is_file():
                found[str(path.relative_to(site / "current"))] = path.read_bytes()
    return found


ACTIONS = st.sampled_from(["retitle", "delete", "add", "disable", "swap", "reprice", "author", "user", "rename",
                           "page sizes"])


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(ACTIONS, st.integers(0, 200)), min_size=1, max_size=4), st.booleans())
def test_any_edit_sequence_builds_what_a_clean_build_builds(monkeypatch, edits, users_csv):
    # Segments of a few records, so that edits fall in some and not others, and near their ends
    # (users' in CSV, some a segment).
    monkeypatch.setattr(segments, "SMALLEST", 300 if users_csv else 1500)
    monkeypatch.setattr(segments, "SEGMENT", 300 if users_csv else 1500)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        data, site = work / "data", work / "site"
        shutil.copytree(SAMPLE, data)
        if users_csv:
            users_as_csv(data)
        build(data, site, background=False)
        for step, (action, n) in enumerate(edits):
            edit(data, action, n, step)
            last = build(data, site, background=False)
        clean_summary = build(data, work / "clean", background=False)
        # (the files and bytes a build reports are counted as written and linked, not measured)
        assert (last.files, last.bytes) == (clean_summary.files, clean_summary.bytes), edits
        incremental, clean = published(site), published(work / "clean")
        assert sorted(incremental) == sorted(clean), edits
        assert [name for name in clean if incremental[name] != clean[name]] == [], edits
