"""site.yaml's search, ordering, filters and search_normalise (catalogue/querying.py): one
message per mistake, naming the key, the collection and the fix, through `catalogue check`."""
from __future__ import annotations

import shutil

from click.testing import CliRunner

from conftest import SAMPLE
from generator.cli import main

MISTAKES = """
search:
  books: [created_time, id, nope, authors__nope, "@title", "$title", categories__name, __title]
  nope: [title]
ordering:
  books: [authors, "-title", isbn]
filters:
  books: [title, authors]
  author: books
search_normalise: arabic
"""


def site_lines(tmp_path, settings: str) -> list[str]:
    """What `catalogue check` says of site.yaml once `settings` are appended to the sample's."""
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    with (data / "site.yaml").open("a", encoding="utf-8") as f:
        f.write(settings)
    result = CliRunner().invoke(main, ["check", "--data", str(data)])
    assert result.exit_code == 1
    return [line.strip() for line in result.output.splitlines() if line.strip().startswith("data/site.yaml")]


def test_each_mistake_in_the_query_settings_is_one_line_at_its_key(tmp_path):
    # (the sample's site.yaml has 5 lines; MISTAKES starts with an empty one)
    assert site_lines(tmp_path, MISTAKES) == [
        "data/site.yaml:8: field 'search.books': 'created_time': created_time is an instant; a search looks in "
        "text and numbers",
        "data/site.yaml:8: field 'search.books': 'id': an id is held by a database without its hyphens; a search "
        "looks in text and numbers",
        "data/site.yaml:8: field 'search.books': 'nope': books has no field 'nope' to look in; fields: id, title, "
        "isbn, code, code_qoq, ddc, price_currency, price, pages, weight, about, comment_for_develop, enable, "
        "created_time",
        "data/site.yaml:8: field 'search.books': 'authors__nope': author has no field 'nope' to look in; fields: "
        "slug, fullName, bio",
        "data/site.yaml:8: field 'search.books': '@title': the prefix '@' asks for full-text search (a database's), "
        "which a static site cannot answer as DRF does; use no prefix (contains), '^' (starts with) or '=' (equals)",
        "data/site.yaml:8: field 'search.books': '$title': the prefix '$' asks for regular expressions, which a "
        "static site cannot answer as DRF does; use no prefix (contains), '^' (starts with) or '=' (equals)",
        "data/site.yaml:8: field 'search.books': '__title': no relation is named before '__'; name the field alone, "
        "like 'title'",
        "data/site.yaml:9: field 'search.nope': is not a collection; collections: author, books, publisher, "
        "category, user, bookshelf",
        "data/site.yaml:11: field 'ordering.books': 'authors' is a relation: an ordering names fields of books "
        "itself, like 'id'",
        "data/site.yaml:11: field 'ordering.books': '-title': list the field without '-'; a request asks for either "
        "direction",
        "data/site.yaml:13: field 'filters.books': 'title' is not a relation of books: filters take a related "
        "record's id; relations: authors, translators, publishers, categories",
        "data/site.yaml:14: field 'filters.author': 'books' must be a list of field names",
        "data/site.yaml:15: field 'search_normalise': 'arabic' is not a normalisation; the one there is: persian "
        "(or leave the key out: none)",
    ]


def test_a_misspelt_name_is_met_with_the_one_meant(tmp_path):
    assert site_lines(tmp_path, "search:\n  book: [title]\n  author: [fulName]\nordering:\n  books: [prise]\n"
                                "filters:\n  books:\n    - author\n") == [
        "data/site.yaml:7: field 'search.book': is not a collection: did you mean 'books'?",
        "data/site.yaml:8: field 'search.author': 'fulName': author has no field 'fulName' to look in: did you mean "
        "'fullName'?",
        "data/site.yaml:10: field 'ordering.books': 'prise': books has no field 'prise' to look in: did you mean "
        "'price'?",
        "data/site.yaml:12: field 'filters.books': 'author' is not a relation of books: filters take a related "
        "record's id: did you mean 'authors'?",
    ]
