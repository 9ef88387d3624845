"""The relations backend (api/backends/relations.py): ids read as Django's UUIDField reads
them (against uuid.UUID itself), and django-filter's words for each mistake."""
from __future__ import annotations

import uuid

import orjson
import pytest
from hypothesis import given, strategies as st

from generator.api.backends import Rejected
from generator.api.backends.common import related_id
from generator.api.backends.relations import Referred, RelationFilter, filter_file, uuid_text, write_filter

UUIDISH = st.text(st.sampled_from("0123456789abcdefABCDEF-{}urn:uid_ +٠۱\u3000x"), min_size=28, max_size=44)


@given(st.one_of(UUIDISH, st.uuids().map(str), st.uuids().map(lambda u: "urn:uuid:{" + u.hex.upper() + "}")))
def test_ids_are_read_as_django_reads_a_uuid(text):
    try:
        expected = str(uuid.UUID(hex=text))
    except ValueError:
        expected = None
    assert uuid_text(text) == expected


def test_a_signed_id_keeps_its_first_digit():
    for text in ("+1" + "0" * 30, "+f" + "e" * 30):
        assert uuid_text(text) == str(uuid.UUID(hex=text))


def test_filters_messages():
    many, one = RelationFilter("authors", True), RelationFilter("user", False)
    with pytest.raises(Rejected) as refused:
        many.ids([""])
    assert refused.value.encoded() == '{"authors":["“” is not a valid UUID."]}'.encode()
    assert one.ids([""]) == [] and one.ids(["x", ""]) == []
    assert one.unknown("x").body == {"user": ["Select a valid choice. That choice is not one of the available choices."]}
    assert many.unknown("X").body == {"authors": ["Select a valid choice. X is not one of the available choices."]}
    assert many.ids(["0" * 32, "urn:uuid:" + "A" * 32]) == ["00000000-0000-0000-0000-000000000000", "a" * 8 + "-" + "a" * 4 + "-" + "a" * 4 + "-" + "a" * 4 + "-" + "a" * 12]




@pytest.mark.parametrize("url", ["https://h/api/v1/author/{id}/", "/api/v1/author/{id}/", "https://h/api/v1/author/{id}",
                                 "https://h/api/v1/author/{id}/?format=json", "https://h/{other}/author/{id}/x",
                                 "https://h/{other}{id}/", "{id}/"])
def test_an_embedded_record_s_id_is_the_last_uuid_of_its_url(url):
    """Its `id` where it has one, else the last UUID in its `url` (also off the usual shape:
    no trailing slash, a query after it, another UUID just before it, nothing before it),
    each group's digits any hex digit, 0 too."""
    id, other = "0a0b0c0d-0e0f-4000-8a00-000000000001", "ffffffff-ffff-4fff-bfff-ffffffffffff"
    assert related_id({"url": url.format(id=id, other=other)}) == id
    assert related_id({"id": other, "url": url.format(id=id, other=other)}) == other


@pytest.mark.parametrize("named", [lambda id: {"id": id}, lambda id: {"url": f"https://h/api/v1/author/{id}/"},
                                   lambda id: {"url": f"/{'f' * 8}-{'f' * 4}-4fff-bfff-{'f' * 12}/author/{id}"}],
                         ids=["id", "url", "url after another UUID"])
def test_a_record_listing_a_related_id_twice_is_listed_once_under_it(named):
    """The filter's index lists each record once under each id it refers to (data may list an
    author twice; a to-many filter answers each record once), related records named by their
    id or by their url alike (its last UUID: related_id's rule)."""
    a, b = "0a0b0c0d-0e0f-4000-8a00-000000000001", "ffffffff-ffff-4fff-bfff-ffffffffffff"
    none = "0a000000-0000-4000-8000-000000000000"  # (an id no record refers to: listed, with none)
    referred = Referred(["authors"], 5)
    referred.add([{"authors": [named(a), named(a)]}, {"authors": [named(b)]},
                  {"authors": [named(a), named(b), named(a)]}])
    files: dict[str, bytes] = {}
    write_filter("books", files.__setitem__, "authors", [referred.close()["authors"]], [b, a, none])
    assert files == {filter_file("books", "authors", "0a"): orjson.dumps({none: [], a: [5, 7]}),  # (ids in order)
                     filter_file("books", "authors", "ff"): orjson.dumps({b: [6, 7]})}
