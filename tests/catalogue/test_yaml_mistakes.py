"""A mistake in a YAML file, site.yaml included, is one line naming the file, the line, what
is wrong and the fix (docs/data.md, "Problems"): a tab wherever it is, the slips of hand
YAML is known for, a misspelt key."""
from __future__ import annotations

from pathlib import Path

import pytest

from generator.catalogue.load import read_catalogue
from generator.errors import CatalogueError, DataError
from generator.importer import read_query_file
from generator.sitebuild import check

TAB = "a tab at column {}, which YAML does not allow for indenting: indent with spaces"
# The sample's users.yaml as far as its second record, which starts on line 9.
SECOND = "- id: 21b9776e-be74-49af-a67b-085a53ff5a10\n"


def reported(data_dir: Path) -> list[str]:
    with pytest.raises(DataError) as caught:
        check(data_dir)
    lines = str(caught.value).splitlines()[1:]
    assert all(line.startswith("  data/") for line in lines), lines  # (one line each)
    return [line.strip() for line in lines]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize("old, new, line, column", [
    (SECOND, "\t" + SECOND, 9, 1),  # before `- id`
    ("  username: reza_k", "\tusername: reza_k", 10, 1),  # a key's indent
    ("  username: reza_k", " \tusername: reza_k", 10, 2),  # a tab among spaces
    ("  username: reza_k", "\t\n  username: reza_k", 10, 1),  # a line of nothing but a tab
    (SECOND, "-\tid: 21b9776e-be74-49af-a67b-085a53ff5a10\n", 9, 2),  # after the '-'
])
def test_a_tab_anywhere_in_a_data_file_is_named(data_dir, old, new, line, column):
    edit(data_dir / "users.yaml", old, new)
    assert reported(data_dir)[0].startswith(f"data/users.yaml:{line}: is not valid YAML: {TAB.format(column)} (")


@pytest.mark.parametrize("old, new, line, column", [
    ("page_sizes: [12, 24]", "\tpage_sizes: [12, 24]", 4, 1),
    ("page_sizes: [12, 24]", "search:\n\tbooks: [title]\npage_sizes: [12, 24]", 5, 1),
    ("page_sizes: [12, 24]", "search:\n  books:\n  \t- title\npage_sizes: [12, 24]", 6, 3),
])
def test_a_tab_in_site_yaml_is_named(data_dir, old, new, line, column):
    edit(data_dir / "site.yaml", old, new)
    assert reported(data_dir) == [f"data/site.yaml:{line}: is not valid YAML: {TAB.format(column)}"]


@pytest.mark.parametrize("old, new, line, fix", [
    ("  bio: کتاب‌خوان", "  bio: نکته: کتاب‌خوان", 6,
     "the value holds ': ', which YAML reads as another key: put the whole value in quotes"),
    ("  username: sara.ahmadi", "   username: sara.ahmadi", 3,
     "this line is indented more than the key before it: indent it as that key"),
    ("  bio: کتاب‌خوان", "   bio: کتاب‌خوان", 6,
     "this line is indented unlike the lines around it: align its key (or its '-') with theirs"),
    ('  last_name: "احمدی"', '  last_name: "احمدی', 5, "a quote opened on this line is never closed: close it"),
    # (a value left open reads on to the next quote of its kind, whose line the reader names)
    ("  first_name: سارا", "  first_name: 'سارا", 4, "a quote opened on this line is never closed: close it"),
    # (the file's last: nothing closes it)
    ('  last_name: "تهرانی"', '  last_name: "تهرانی', 49, "a quote opened on this line is never closed: close it"),
    ("  first_name: سارا", "  first_name: [سارا", 4,
     "a list ('[') or mapping ('{') opened on this line is never closed: close it"),
    ("  first_name: سارا", "  first_name", 4,
     "a key without ':' after it (or a value running on to the next line): write 'key: value', and put a value "
     "that spans lines in quotes"),
    ("  first_name: سارا", "  first_name: @سارا", 4, "'@' cannot start a plain value in YAML: put the value in quotes"),
    ("  first_name: سارا", "  first_name: 'سارا's'", 4,
     "a quoted value is followed by more text: write a ' inside '...' twice (''), or quote the value with \" instead"),
    ("  first_name: سارا", "  first_name: *سارا*", 4,
     "'*' and '&' start an alias or an anchor in YAML: put the value in quotes"),
    ("  first_name: سارا", ' first_name: سارا', 4,
     "this line is indented unlike the lines around it: align its key (or its '-') with theirs"),
    ('  last_name: "احمدی"', '  last_name: "\\احمدی"', 5,
     "a backslash in double quotes starts an escape: write \\\\ for one, or put the value in single quotes"),
])
def test_a_slip_of_yaml_is_named_with_its_fix(data_dir, old, new, line, fix):
    edit(data_dir / "users.yaml", old, new)
    assert reported(data_dir)[0].startswith(f"data/users.yaml:{line}: is not valid YAML: {fix} (nothing of the file")


@pytest.mark.parametrize("file", ["users.yaml", "site.yaml"])
@pytest.mark.parametrize("byte, said", [
    (b"\xe9", "is not UTF-8 text (byte {}): save it as UTF-8"),
    (b"\x07", "holds a control character (U+0007), which YAML does not allow: remove it, or write it as an escape "
             "in double quotes"),
])
def test_a_character_yaml_cannot_read_is_named_at_its_line(data_dir, file, byte, said):
    path = data_dir / file
    text = path.read_bytes()
    at = text.index(b"\n", text.index(b"\n") + 1) + 1  # (the third line)
    path.write_bytes(text[:at] + b"x: " + byte + b"\n" + text[at:])
    found = reported(data_dir)[0]
    assert found.startswith(f"data/{file}:3: " + said.format(at + 4)), found


def test_a_misspelt_setting_is_met_with_the_one_meant_at_its_line(data_dir):
    edit(data_dir / "site.yaml", "page_sizes:", "page_size:")
    assert reported(data_dir) == ["data/site.yaml:4: field 'page_size': is not a setting: did you mean 'page_sizes'?"]


def test_a_misspelt_field_of_a_record_is_met_with_the_one_meant(data_dir):
    edit(data_dir / "users.yaml", "  first_name: سارا", "  firstname: سارا")
    assert reported(data_dir) == ["data/users.yaml:2: field 'firstname': is not a field of users: did you mean "
                                  "'first_name'?"]  # (at the line its record starts on)


def test_site_yaml_that_is_no_mapping_is_named_at_its_line(data_dir):
    (data_dir / "site.yaml").write_text("# settings\n- base_url: https://ketab.example.ir\n", encoding="utf-8")
    assert reported(data_dir) == ["data/site.yaml:2: must be a mapping of settings: write them as `key: value`, "
                                  "one a line"]


def test_page_sizes_and_max_limit_read_any_digits(data_dir):
    edit(data_dir / "site.yaml", "page_sizes: [12, 24]", "page_sizes: [۱۲, ٢٤]\nmax_limit: '۱۰۰'")
    settings = read_catalogue(data_dir).settings
    assert (settings.page_sizes, settings.max_limit) == ((12, 24), 100)


@pytest.mark.parametrize("text, said", [
    ("search:\n  books: [titel]\nsearh: {}\n",
     "query.yaml:2: field 'search.books': 'titel': books has no field 'titel' to look in: did you mean 'title'?\n"
     "query.yaml:3: field 'searh': is not a query setting: did you mean 'search'?"),
    ("search:\n\tbooks: [title]\n", f"query.yaml:2: is not valid YAML: {TAB.format(1)}"),
    ("- search\n", "query.yaml:1: must be a mapping of settings: write them as `key: value`, one a line"),
])
def test_an_import_query_file_is_read_as_site_yaml_is(tmp_path, text, said):
    (tmp_path / "query.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(CatalogueError) as caught:
        read_query_file(tmp_path / "query.yaml")
    assert str(caught.value) == said
