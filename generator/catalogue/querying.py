"""What a collection's `?search=`, `?ordering=` and filters may name (docs/spec/query.md §2), and
site.yaml's settings of them checked against the collections' declarations.

The settings are kept as a plain document (collection URL segment -> list of field
specs), recorded in each generation's site.json for the hosts that answer at request
time; `search_fields()` reads a search list into `SearchField`s, DRF's way.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import Problems, meant
from .fields import boolean, id_list, image_list, price, shown, timestamp, uuid_id, whole
from .resources import BY_COLLECTION, BY_NAME, TREE_FIELDS, Resource

SEP = "__"  # Django's LOOKUP_SEP: follows a relation
LOOKUPS = {"^": "startswith", "=": "exact"}  # DRF's prefixes we answer; none: contains
REFUSED_PREFIXES = {"@": "full-text search (a database's)", "$": "regular expressions"}
SEARCH, ORDERING, FILTERS, NORMALISE = "search", "ordering", "filters", "search_normalise"
NORMALISERS = ("persian",)


@dataclass(frozen=True)
class SearchField:
    """One entry of a collection's search list: `lookup` ("contains", "startswith" or
    "exact") on `field`, of the record itself or, with `relation`, of its related records."""
    spec: str  # as site.yaml writes it: "=isbn", "authors__fullName"
    lookup: str
    relation: str | None
    field: str

    @property
    def column(self) -> str:
        """The path of the values it looks in, without the prefix: "authors__fullName"."""
        return f"{self.relation}{SEP}{self.field}" if self.relation else self.field


def search_field(spec: str) -> SearchField:
    lookup = LOOKUPS.get(spec[:1])
    path = spec[1:] if lookup else spec
    relation, _, field = path.rpartition(SEP)
    return SearchField(spec, lookup or "contains", relation or None, field)


# Computed for the document alone, not a column of the old service's tables: DRF could
# neither search nor order by it.
NOT_COLUMNS = ("no_child",)


def scalars(resource: Resource) -> tuple[str, ...]:
    """The fields of a collection a search may look in and an ordering may name: those of
    its documents that hold one value (the tree's path, depth and numchild too), in
    document order."""
    kinds = {f.name: f for f in resource.fields}
    return tuple(key for key in resource.document if key not in NOT_COLUMNS and (
        key in TREE_FIELDS or (key in kinds and kinds[key].to is None and kinds[key].coerce is not image_list)))


def relations(resource: Resource) -> dict[str, Resource]:
    """The relations a search may follow and a filter may name: those the document embeds."""
    return {f.name: BY_COLLECTION[f.to] for f in resource.relations if f.embedded}


def sort_kind(resource: Resource, field: str) -> str:
    """How a field's values compare (docs/spec/query.md §4): "number", "instant", "boolean" or "text"."""
    if field in ("depth", "numchild"):
        return "number"
    coerce = resource.field(field).coerce if field in resource.names else None
    return {whole: "number", price: "number", timestamp: "instant", boolean: "boolean"}.get(coerce, "text")


def is_to_many(resource: Resource, relation: str) -> bool:
    return resource.field(relation).coerce is id_list


def query_settings(name: str, raw: dict, problems: Problems) -> dict:
    """search, ordering, filters and search_normalise from site.yaml, checked; one problem
    per mistake, each naming the key, the collection and the fix."""
    found = {}
    for key, check in ((SEARCH, _search_spec), (ORDERING, _ordering_spec), (FILTERS, _filter_spec)):
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            problems.add(name, 0, key, f"{shown(value)} must map collections to lists of fields, like "
                                       f"`{key}: {{books: [title]}}`")
            continue
        lists = {}
        for collection, specs in value.items():
            resource = BY_NAME.get(collection)
            if resource is None:
                problems.add(name, 0, f"{key}.{collection}",
                             f"is not a collection{meant(str(collection), BY_NAME, 'collections')}")
            elif not isinstance(specs, list) or not all(isinstance(s, str) and s for s in specs):
                problems.add(name, 0, f"{key}.{collection}", f"{shown(specs)} must be a list of field names")
            else:
                mistakes = [m for m in (check(resource, spec) for spec in specs) if m]
                for mistake in mistakes:
                    problems.add(name, 0, f"{key}.{collection}", mistake)
                if not mistakes and specs:
                    lists[collection] = list(dict.fromkeys(specs))
        found[key] = lists
    normalise = raw.get(NORMALISE)
    if normalise is not None:
        if normalise not in NORMALISERS:
            problems.add(name, 0, NORMALISE, f"{shown(normalise)} is not a normalisation; the one there is: "
                                             f"persian (or leave the key out: none)")
        else:
            found[NORMALISE] = normalise
    return found


def _search_spec(resource: Resource, spec: str) -> str | None:
    if spec[:1] in REFUSED_PREFIXES:
        return (f"{spec!r}: the prefix {spec[0]!r} asks for {REFUSED_PREFIXES[spec[0]]}, which a static site "
                f"cannot answer as DRF does; use no prefix (contains), '^' (starts with) or '=' (equals)")
    found = search_field(spec)
    if found.relation is None and SEP in spec:  # ("__title": Django reads a relation named "", DRF answers 500)
        return f"{spec!r}: no relation is named before {SEP!r}; name the field alone, like {found.field!r}"
    if found.relation is None:
        if found.field not in scalars(resource):
            return _not_a_field(spec, resource, found.field)
        return _unsearchable(spec, resource, found.field)
    target = relations(resource).get(found.relation)
    if target is None:
        return (f"{spec!r}: {found.relation!r} is not a relation of {resource.name} a search can follow"
                f"{meant(found.relation, relations(resource), 'relations')}")
    if SEP in found.relation:
        return f"{spec!r}: a search follows one relation, not more"
    if found.field not in scalars(target):
        return _not_a_field(spec, target, found.field)
    return _unsearchable(spec, target, found.field)


def _unsearchable(spec: str, resource: Resource, field: str) -> str | None:
    """A time or a yes/no is held by a database in a form of its own (SQLite: UTC text, 1/0), which
    no client sees: a search in it would find what the API never shows."""
    if field in resource.names and resource.field(field).coerce is uuid_id:
        return f"{spec!r}: an id is held by a database without its hyphens; a search looks in text and numbers"
    kind = sort_kind(resource, field)
    if kind in ("instant", "boolean"):
        return f"{spec!r}: {field} is a{'n' if kind == 'instant' else ''} {kind}; a search looks in text and numbers"
    return None


def _ordering_spec(resource: Resource, spec: str) -> str | None:
    if spec in relations(resource) or SEP in spec:
        return f"{spec!r} is a relation: an ordering names fields of {resource.name} itself, like " \
               f"{scalars(resource)[0]!r}"
    if spec.startswith("-"):
        return f"{spec!r}: list the field without '-'; a request asks for either direction"
    return None if spec in scalars(resource) else _not_a_field(spec, resource, spec)


def _filter_spec(resource: Resource, spec: str) -> str | None:
    if spec in relations(resource):
        return None
    return (f"{spec!r} is not a relation of {resource.name}: filters take a related record's id"
            f"{meant(spec, relations(resource), 'relations')}")


def _not_a_field(spec: str, resource: Resource, field: str) -> str:
    return f"{spec!r}: {resource.name} has no field {field!r} to look in{meant(field, scalars(resource), 'fields')}"
