"""The relations backend (api/backends/relations.py): ids read as Django's UUIDField reads
them (against uuid.UUID itself), and django-filter's words for each mistake."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import given, strategies as st

from generator.api.backends import Rejected
from generator.api.backends.relations import RelationFilter, uuid_text

UUIDISH = st.text(st.sampled_from("0123456789abcdefABCDEF-{}urn:uid_ +٠۱\u3000x"), min_size=28, max_size=44)


@given(st.one_of(UUIDISH, st.uuids().map(str), st.uuids().map(lambda u: "urn:uuid:{" + u.hex.upper() + "}")))
def test_ids_are_read_as_django_reads_a_uuid(text):
    try:
        expected = str(uuid.UUID(hex=text))
    except ValueError:
        expected = None
    assert uuid_text(text) == expected


def test_filters_messages():
    many, one = RelationFilter("authors", True), RelationFilter("user", False)
    with pytest.raises(Rejected) as refused:
        many.ids([""])
    assert refused.value.encoded() == '{"authors":["“” is not a valid UUID."]}'.encode()
    assert one.ids([""]) == [] and one.ids(["x", ""]) == []
    assert one.unknown("x").body == {"user": ["Select a valid choice. That choice is not one of the available choices."]}
    assert many.unknown("X").body == {"authors": ["Select a valid choice. X is not one of the available choices."]}
    assert many.ids(["0" * 32, "urn:uuid:" + "A" * 32]) == ["00000000-0000-0000-0000-000000000000", "a" * 8 + "-" + "a" * 4 + "-" + "a" * 4 + "-" + "a" * 4 + "-" + "a" * 12]


