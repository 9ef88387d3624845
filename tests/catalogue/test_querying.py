"""site.yaml's search, ordering, filters and search_normalise (catalogue/querying.py): one
message per mistake, naming the key, the collection and the fix, through `catalogue check`."""
from __future__ import annotations

import shutil

from click.testing import CliRunner

from conftest import SAMPLE
from generator.cli import main

MISTAKES = """
search:
  books: [created_time, id, nope, authors__nope, "@title", "$title", categories__name]
  nope: [title]
ordering:
  books: [authors, "-title", isbn]
filters:
  books: [title, authors]
  author: books
search_normalise: arabic
"""


def test_each_mistake_in_the_query_settings_is_one_line(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    with (data / "site.yaml").open("a", encoding="utf-8") as f:
        f.write(MISTAKES)
    result = CliRunner().invoke(main, ["check", "--data", str(data)])
    assert result.exit_code == 1
    lines = [line.strip() for line in result.output.splitlines() if line.strip().startswith("data/site.yaml")]
    assert lines == [
        "data/site.yaml: field 'search.books': 'created_time': created_time is an instant; a search looks in "
        "text and numbers",
        "data/site.yaml: field 'search.books': 'id': an id is held by a database without its hyphens; a search "
        "looks in text and numbers",
        "data/site.yaml: field 'search.books': 'nope': books has no field 'nope' to look in; fields: id, title, "
        "isbn, code, code_qoq, ddc, price_currency, price, pages, weight, about, comment_for_develop, enable, "
        "created_time",
        "data/site.yaml: field 'search.books': 'authors__nope': author has no field 'nope' to look in; fields: "
        "slug, fullName, bio",
        "data/site.yaml: field 'search.books': '@title': the prefix '@' asks for full-text search (a database's), "
        "which a static site cannot answer as DRF does; use no prefix (contains), '^' (starts with) or '=' (equals)",
        "data/site.yaml: field 'search.books': '$title': the prefix '$' asks for regular expressions, which a "
        "static site cannot answer as DRF does; use no prefix (contains), '^' (starts with) or '=' (equals)",
        "data/site.yaml: field 'search.nope': is not a collection; collections: author, books, publisher, "
        "category, user, bookshelf",
        "data/site.yaml: field 'ordering.books': 'authors' is a relation: an ordering names fields of books "
        "itself, like 'id'",
        "data/site.yaml: field 'ordering.books': '-title': list the field without '-'; a request asks for either "
        "direction",
        "data/site.yaml: field 'filters.books': 'title' is not a relation of books: filters take a related "
        "record's id; relations: authors, translators, publishers, categories",
        "data/site.yaml: field 'filters.author': 'books' must be a list of field names",
        "data/site.yaml: field 'search_normalise': 'arabic' is not a normalisation; the one there is: persian "
        "(or leave the key out: none)",
    ]
