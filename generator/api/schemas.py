"""Check every document the build writes against the JSON Schemas in schemas/.

jsonschema-rs does the checking: it validates a book about a hundred times
faster than the pure-Python jsonschema package, which matters at a million
books. Each record is checked once, as the very object that is encoded: a record
embedded in another (an author in a book) was checked as a document of its own,
so inside the other it only has to be an object. A violation is a generator bug,
not bad data: the build collects a few and fails.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

from ..catalogue.fields import SCHEMA_DIR
from ..catalogue.resources import BY_COLLECTION, RESOURCES
from ..errors import GeneratorBug

MAX_REPORTED = 20
_EMBEDDED: dict = {}


def load_schemas(directory: Path = SCHEMA_DIR) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))}


def validators(schemas: dict[str, dict]) -> dict[str, Any]:
    registry = jsonschema_rs.Registry([(s["$id"], s) for s in schemas.values()])
    return {name: jsonschema_rs.validator_for(s, registry=registry, validate_formats=True)
            for name, s in schemas.items() if name != "defs"}


# Records that other records embed, and that are checked as documents of their own.
RECORDS = {f"{BY_COLLECTION[f.to].schema}.json" for r in RESOURCES for f in r.relations if f.embedded}


def embedded_properties(schema: dict) -> dict[str, bool]:
    """The properties that hold an embedded record (a $ref to one of RECORDS), each True when
    it holds an array of them."""
    def embedded(node: dict) -> bool:
        return isinstance(node, dict) and node.get("$ref") in RECORDS

    found = {}
    for name, node in schema.get("properties", {}).items():
        if embedded(node) or embedded(node.get("items")):
            found[name] = not embedded(node)
    return found


def shallow(schema: dict) -> dict:
    """The schema with each embedded record (alone or as the items of an array) only
    required to be an object: it was checked on its own already."""
    embedded = embedded_properties(schema)
    properties = {}
    for name, node in schema.get("properties", {}).items():
        if name in embedded:
            node = {**node, "items": {"type": "object"}} if embedded[name] else {"type": "object"}
        properties[name] = node
    return {**schema, "properties": properties} if "properties" in schema else schema


class SchemaChecker:
    def __init__(self) -> None:
        schemas = load_schemas()
        self.validators = validators(schemas)
        self.record_validators = validators({name: shallow(s) for name, s in schemas.items()})
        self._embedded = {name: embedded_properties(s) for name, s in schemas.items()}
        self.violations: list[str] = []
        self.total = 0

    def check(self, schema: str, data: bytes, where: str) -> None:
        """Check encoded bytes (parsed back)."""
        self.check_document(schema, orjson.loads(data), where)

    def check_record(self, schema: str, document: dict, where: str) -> None:
        """Check a document before it is encoded; its embedded records (orjson Fragments,
        encoded and checked already) stand as empty objects."""
        view = dict(document)
        for key, many in self._embedded[schema].items():
            value = view.get(key)
            if many and isinstance(value, list):
                view[key] = [_EMBEDDED] * len(value)
            elif isinstance(value, orjson.Fragment):
                view[key] = _EMBEDDED
        self._check(self.record_validators[schema], view, where)

    def check_document(self, schema: str, document: Any, where: str) -> None:
        self._check(self.validators[schema], document, where)

    def _check(self, validator: Any, document: Any, where: str) -> None:
        if validator.is_valid(document):
            return
        for error in validator.iter_errors(document):
            self.total += 1
            if len(self.violations) < MAX_REPORTED:
                pointer = "/" + "/".join(str(p) for p in error.instance_path)
                self.violations.append(f"{where} at {pointer}: {error.message}")

    def raise_if_violated(self) -> None:
        if self.violations:
            raise GeneratorBug(self.report(self.violations, self.total))

    @staticmethod
    def report(violations: list[str], total: int) -> str:
        more = f"\n  ... and {total - len(violations)} more" if total > len(violations) else ""
        return (f"{total} schema violation{'s' if total != 1 else ''} in generated documents "
                "(a bug in the generator, not in the data; please report it):\n  "
                + "\n  ".join(violations) + more)
