"""DRF's SearchFilter (docs/spec/query.md §3): `?search=` (the last value) split into terms as
DRF does, each term folded (lower-cased; search_normalise: persian folds more), and the
records listed where every term is found in one of the collection's search fields (site.yaml's
`search`). A term found in a related record's field counts; when several terms count only
on related records, one related record of each relation must serve them all, as DRF's
single filter() joins them. search.js.j2 is its JavaScript twin.

What the terms are looked up in, and how a request's reads are planned, is search_index.py's:
the index format, a unit of its own.
"""
from __future__ import annotations

import re

from ...catalogue.querying import LOOKUPS, NORMALISE, SEARCH, SEP, relations, scalars, search_field, sort_kind
from ...catalogue.resources import Resource
from . import search_index
from .common import NUL, NUL_MESSAGE, Backend, Change, DocumentField, Edit, Flush, Reader, Records, Rejected, Request, folding

# Django's smart_split: quoted phrases (with backslash escapes) stay one bit (its pattern, but the
# group around it all: a bit is the whole match).
SMART_SPLIT = re.compile(r"""(?:[^\s'"]*(?:(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')[^\s'"]*)+)|\S+""")
MAX_SEARCH = 1000  # characters of a search value: longer ones answer 400 (a cap DRF does not have)
TOO_LONG = f"Ensure this field has no more than {MAX_SEARCH} characters."
_LOOKUP_WORDS = {"": "contains", "^": "starts with", "=": "equals"}


class Search(Backend):
    name = "search"
    parameter = "search"
    index_format = f"term index {search_index.VERSION}"

    def terms(self, value: str | None) -> list[str]:
        """The last value's terms, as DRF splits them; Rejected for a NUL or a value too long."""
        if value is None:
            return []
        if NUL in value:
            raise Rejected([NUL_MESSAGE])
        if len(value) > MAX_SEARCH:
            raise Rejected({self.parameter: [TOO_LONG]})
        return smart_terms(value)

    def narrow(self, request: Request, matched: Records | None) -> Records | None:
        if not request.settings(SEARCH):
            return None
        terms = self.terms(request.last(self.parameter))
        return search_index.searched(request, terms, matched) if terms else None

    def indexes(self, name: str, query: dict) -> bool:
        return bool(query.get(SEARCH, {}).get(name))

    def indexer(self, name: str, query: dict, first: int) -> search_index.Indexer:
        return search_index.Indexer(name, query, first)

    def reads(self, name: str, query: dict) -> list[DocumentField]:
        return [(field.relation, field.field) if field.relation else (field.field,)
                for field in search_index.index_fields(query.get(SEARCH, {}).get(name, []))]

    def finish(self, name: str, query: dict, flush: Flush, parts: list, ids, processes: int = 1) -> None:
        search_index.finish(name, query, flush, parts, processes)

    def edit(self, name: str, query: dict, previous: Reader, changes: list[Change], count: int,
             parts) -> Edit | None:
        """The term index's files that change where `changes` changed (search_index.edit)."""
        folder, specs = search_index.index_dir(name), query[SEARCH][name]
        fields = search_index.index_fields(specs)
        columns = search_index.readers(fields)

        def values(document: dict) -> dict[str, list[str | None]]:
            return search_index.document_values(document, columns, folding(query.get(NORMALISE)))

        files = search_index.edit(lambda path: previous(f"{folder}/{path}"), specs, count,
                                 [(position, values(then), values(now)) for position, then, now in changes],
                                 lambda: search_index.alphabets(fields, [columns for _, _, columns in parts()]))
        return None if files is None else Edit([folder], {f"{folder}/{path}": data for path, data in files.items()})

    def openapi(self, resource: Resource, settings) -> list[dict]:
        fields = settings.query.get(SEARCH, {}).get(resource.name)
        return [self.describe(fields, settings.query.get(NORMALISE))] if fields else []

    def describe(self, fields: list[str], normalise: str | None) -> dict:
        looks = ", ".join(f"`{f.lstrip('^=')}` ({_LOOKUP_WORDS[f[0] if f[0] in '^=' else '']})" for f in fields)
        folded = (" Before comparing, both sides are folded as search_normalise: persian says (ي/ی, ك/ک, ة/ۀ/ه, "
                  "Persian and Arabic-Indic digits, tatweel and diacritics dropped, ZWNJ a space): a deviation "
                  "from DRF.") if normalise else ""
        return {"name": self.parameter, "in": "query", "required": False, "schema": {"type": "string"},
                "description": "DRF's SearchFilter: the value is split into terms at white space and commas "
                               "(a quoted phrase stays one term), and a record is listed when every term is "
                               f"found, case ignored, in one of: {looks}. A relation's field matches when one "
                               "related record's does. A NUL character answers 400; so does a value over "
                               f"{MAX_SEARCH} characters (a cap DRF does not have).{folded}"}

    def rejects(self, name: str, query: dict) -> bool:
        return self.indexes(name, query)

    def probes(self, resource: Resource, documents: list[dict]) -> list[dict[str, str]]:
        """The first word of the middle record's value of each text field and related record's."""
        record = documents[len(documents) // 2]
        words = []
        fields = [(None, f) for f in scalars(resource) if sort_kind(resource, f) == "text"]
        fields += [(r, f) for r, target in relations(resource).items() for f in scalars(target)
                   if sort_kind(target, f) == "text"]
        for relation, field in fields:
            found = search_field(f"{relation}{SEP}{field}" if relation else field)
            values = [v for v in search_index.column_values(record, found) if v is not None and v.split()]
            if values and values[0].split()[0] not in words:
                words.append(values[0].split()[0])
        return [{self.parameter: word} for word in words]

    def constants(self) -> dict:
        return {"setting": SEARCH, "normalise": NORMALISE, "parameter": self.parameter, "maxSearch": MAX_SEARCH, "tooLong": TOO_LONG,
                "lookups": LOOKUPS, "sep": SEP, **search_index.constants()}


def smart_terms(value: str) -> list[str]:
    """DRF's search_smart_split."""
    terms = []
    for bit in SMART_SPLIT.finditer(value):
        term = bit[0].strip(",")
        if term.startswith(('"', "'")) and term[0] == term[-1]:
            quote = term[0]
            terms.append(term[1:-1].replace("\\" + quote, quote).replace("\\\\", "\\"))
        else:
            terms.extend(part.strip() for part in term.split(",") if part)
    return terms


BACKEND = Search()
