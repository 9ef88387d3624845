"""Check every document the build writes against the JSON Schemas in schemas/.

jsonschema-rs does the checking: it validates a book about a hundred times
faster than the pure-Python jsonschema package, which matters at a million
books. Documents are checked as parsed back from the bytes that are written,
so what is checked is exactly what is served. A violation is a generator bug,
not bad data: the build collects a few and fails.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

from .errors import GeneratorBug
from .validate import SCHEMA_DIR

MAX_REPORTED = 20


def load_schemas(directory: Path = SCHEMA_DIR) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))}


def validators(schemas: dict[str, dict]) -> dict[str, Any]:
    registry = jsonschema_rs.Registry([(s["$id"], s) for s in schemas.values()])
    return {name: jsonschema_rs.validator_for(s, registry=registry, validate_formats=True)
            for name, s in schemas.items() if name != "defs"}


class SchemaChecker:
    def __init__(self) -> None:
        self.validators = validators(load_schemas())
        self.violations: list[str] = []
        self.total = 0

    def check(self, schema: str, data: bytes, where: str) -> None:
        self.check_document(schema, orjson.loads(data), where)

    def check_document(self, schema: str, document: Any, where: str) -> None:
        validator = self.validators[schema]
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
