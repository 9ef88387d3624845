"""The declarations of the collections: each rule a declaration must keep, checked for
every collection declared (a new one is checked as soon as it is declared)."""
from __future__ import annotations

import json

import pytest

from generator.catalogue.fields import SCHEMA_DIR, boolean
from generator.catalogue.resources import (BUILD_ORDER, BY_COLLECTION, COLLECTIONS, RESOURCES, TREE_FIELDS, URL,
                                           Resource)

each = pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.name)


def test_each_name_is_one_collections():
    for names in ([r.collection for r in RESOURCES], [r.name for r in RESOURCES], [r.label for r in RESOURCES]):
        assert len(set(names)) == len(names)
    assert sorted(BUILD_ORDER, key=id) == sorted(RESOURCES, key=id)  # (each built once, each listed once)


@each
def test_relations_point_into_declared_collections(resource: Resource):
    assert all(f.to in BY_COLLECTION for f in resource.relations)


@each
def test_a_collection_is_built_after_those_it_refers_to(resource: Resource):
    here = COLLECTIONS.index(resource.collection)
    assert all(COLLECTIONS.index(f.to) < here for f in resource.relations if f.to != resource.collection)


@each
def test_an_embedded_relation_is_shown(resource: Resource):
    assert all(f.name in resource.document for f in resource.relations if f.embedded)


@each
def test_derived_ids_come_from_required_fields(resource: Resource):
    assert resource.id_key and all(resource.field(name).required for name in resource.id_key)


@each
def test_every_key_of_the_document_has_a_source(resource: Resource):
    """Each key is the URL, a field of the data, a null the old service never set, or (in a
    tree) what the build works out for a node."""
    worked_out = TREE_FIELDS if resource.tree else ()
    for key in resource.document:
        assert key == URL or key in resource.names or key in resource.always_null or key in worked_out, key
    assert set(resource.always_null) <= set(resource.document)


@each
def test_the_document_is_its_json_schemas(resource: Resource):
    schema = json.loads((SCHEMA_DIR / f"{resource.schema}.json").read_text(encoding="utf-8"))
    assert tuple(schema["properties"]) == resource.document
    assert tuple(schema["required"]) == resource.document


@each
def test_a_post_gives_fields_of_the_document_in_its_order(resource: Resource):
    assert list(resource.post) == [key for key in resource.document if key in resource.post]
    assert set(resource.post) <= resource.names
    assert (resource.taken is not None) == resource.writable  # (what a POST of a taken key is told)


@each
def test_a_switch_is_a_boolean_field(resource: Resource):
    if resource.published_if is not None:
        assert resource.field(resource.published_if.field).coerce is boolean
