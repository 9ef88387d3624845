"""The API's documents back into the data contract's records (docs/spec/data.md), and what the
service's answers say of its settings.

Embedded records become ids (the copy a book embeds must be the record its collection
lists), a category's parent comes from its `path`, and each value passes the contract's
own checks (catalogue/fields.py); what each collection holds is its declaration's
(catalogue/resources.py). What the crawl saw is checked for consistency: every
page of a collection gives the same count, the pages hold that many records, and no
record appears twice. Every problem names the URL and the field.
"""
from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..api.schemas import load_schemas
from ..api.urls import API, BY_COLLECTION, BY_NAME, RESOURCES, Resource, Urls
from ..catalogue.fields import FieldError, derived_id, timestamp, url_parts
from ..catalogue.records import IMAGES
from ..catalogue.settings import DEFAULT_TIME_ZONE
from ..errors import Problems
from .crawl import Collection

# Each resource's fields, as the schemas the build checks its own documents with name them.
_SCHEMAS = load_schemas()
FIELDS = {r.name: set(_SCHEMAS[r.schema]["properties"]) for r in RESOURCES}


@dataclass
class Frozen:
    """The catalogue as the data directory will hold it."""
    site: dict  # site.yaml
    rows: dict[str, list[dict]]  # collection -> records in the API's order, docs/spec/data.md's fields
    paths: dict[str, str]  # category id -> its path on the service (the build must give the same)
    notes: list[str] = field(default_factory=list)  # what was inferred, what could not be seen
    problems: Problems = field(default_factory=Problems)


def convert(links: dict[str, str], collections: dict[str, Collection], pages: dict[str, list[dict]],
            sizes: list[int] | None, time_zone: str | None, max_limit: int | None = None) -> Frozen:
    """The records of every collection, the site's settings and the notes on both."""
    problems = Problems()
    documents = {name: _documents(collections[name], pages[name], problems) for name in pages}
    rows = {r.collection: [] for r in RESOURCES}
    converter = _Converter(documents, problems)
    for resource in RESOURCES:
        for document in documents[resource.name].values():
            row = converter.row(resource.name, document)
            if row is not None:
                rows[resource.collection].append(row)
    base_url = links[RESOURCES[0].name].removesuffix(f"/{API}/{RESOURCES[0].name}/")
    frozen = Frozen({"base_url": base_url}, rows, converter.paths, problems=problems)
    _page_sizes(frozen, collections, sizes)
    _max_limit(frozen, max_limit)
    _time_zone(frozen, _timestamps(documents), time_zone)
    for r in RESOURCES:
        if r.published_if is not None:
            frozen.notes.append(f"{r.collection}: only {r.published_if.on} {r.collection} are in the API; "
                                f"{r.published_if.off} ones could not be seen and are not in the data")
    return frozen


def _timestamps(documents: dict[str, dict[str, dict]]) -> list:
    """Every time the documents give (a book's created_time), as written."""
    return [document[f.name] for r in RESOURCES for f in r.fields if f.coerce is timestamp
            for document in documents[r.name].values()]


def _documents(collection: Collection, pages: list[dict], problems: Problems) -> dict[str, dict]:
    """A collection's records by id, in order; a changing count or a record met twice reported."""
    found: dict[str, dict] = {}
    for number, page in enumerate(pages):
        if page["count"] != collection.count:
            problems.add(f"{collection.name} page at offset {number * (collection.limit or 0)}", 0, "count",
                         f"{page['count']} where the first page said {collection.count}: the collection changed "
                         "during the import; import again when it is quiet")
        for document in page["results"]:
            key = _id(document)
            if key in found:
                problems.add(document.get("url", collection.name), 0, "id",
                             f"{key} is listed twice: the collection changed during the import; import again")
            found[key] = document
    if len(found) != collection.count and not problems:
        problems.add(collection.name, 0, "count",
                     f"the pages held {len(found)} records where the count is {collection.count}")
    return found


def _id(document) -> str:
    if not isinstance(document, dict) or not isinstance(document.get("url"), str):
        return repr(document)[:60]
    parts = url_parts(document["url"])
    path = document["url"] if parts is None else parts.path  # (a URL urlsplit refuses: its text)
    return document.get("id") or path.rstrip("/").rsplit("/", 1)[-1]


class _Converter:
    """One API document at a time into a data row, with the contract's checks."""

    def __init__(self, documents: dict[str, dict[str, dict]], problems: Problems) -> None:
        self.documents = documents
        self.problems = problems
        self.paths: dict[str, str] = {}  # of every node of a tree (a category)
        self.by_path = {r.name: {d.get("path"): key for key, d in documents[r.name].items()}
                        for r in RESOURCES if r.tree}

    def row(self, name: str, document: dict) -> dict | None:
        where = document.get("url", name) if isinstance(document, dict) else name
        resource = BY_NAME[name]
        given = set(document) if isinstance(document, dict) else set()
        known = FIELDS[name]
        for missing in sorted(known - given):
            self.problems.add(where, 0, missing, "is missing: not a record of the catalogue API")
        for extra in sorted(given - known):
            self.problems.add(where, 0, extra, "is not a field of the catalogue API: it cannot be kept")
        if known - given:
            return None
        for null in resource.always_null:
            if document[null] is not None:
                self.problems.add(where, 0, null, f"is {document[null]!r}: the data contract writes it as null, so it "
                                                  "cannot be kept")
        held = resource.names  # (the data's fields: the others are derived)
        row = {"id": _id(document), **{k: document[k] for k in document if k in held and k != "id"}}
        if resource.tree:
            self._parent(resource, row, document, where)
        if resource.published_if is not None:
            self._published(resource, row, document, where)
        self._relations(resource, row, document, where)
        for images in resource.images:
            row[images] = self._images(resource, row, images, document, where)
        self._check(resource, row, where)
        return row

    def _parent(self, resource: Resource, row: dict, document: dict, where: str) -> None:
        """A node's parent, from its path (four digits a level)."""
        path, depth = document["path"], document["depth"]
        self.paths[row["id"]] = path
        if not isinstance(path, str) or len(path) != 4 * depth or not path.isdigit():
            self.problems.add(where, 0, "path", f"{path!r} does not have four digits per level of its depth {depth}")
            return
        parent = self.by_path[resource.name].get(path[:-4]) if depth > 1 else None
        if depth > 1 and parent is None:
            self.problems.add(where, 0, "path", f"{path}: no {resource.name} has the parent's path {path[:-4]}")
        row[resource.tree.name] = parent

    def _published(self, resource: Resource, row: dict, document: dict, where: str) -> None:
        """A listed record is a published one (an enabled book)."""
        switch = resource.published_if.field
        if document.get(switch) is not True:
            self.problems.add(where, 0, switch, f"is not true, yet the {resource.label.lower()} is listed")
        row[switch] = True

    def _relations(self, resource: Resource, row: dict, document: dict, where: str) -> None:
        """The ids of the records a document embeds or links to, in the document's order."""
        for field in [resource.field(key) for key in resource.document if key in resource.names]:
            if field.to is None:
                continue
            target = BY_COLLECTION[field.to].name
            read = self._embedded if field.embedded else self._linked
            if field.many:
                row[field.name] = [read(target, item, where, field.name) for item in document[field.name]]
            else:
                row[field.name] = read(target, document[field.name], where, field.name)

    def _images(self, resource: Resource, row: dict, name: str, document: dict, where: str) -> list[dict]:
        """A record's images as the data gives them: each must name the record (its owner)."""
        owner = resource.label.lower()
        found = []
        for image in document[name]:
            if image.get(owner) != row["id"]:
                self.problems.add(where, 0, name, f"image {image.get('id')} belongs to {owner} {image.get(owner)}")
            found.append({"id": image.get("id"), "image": image.get("image"),
                          "type_image_book": image.get("type_image_book")})
        return found

    def _embedded(self, name: str, item, where: str, relation: str) -> str:
        """The id of an embedded record, which must be its collection's record as listed."""
        key = _id(item)
        listed = self.documents[name].get(key)
        if listed is None:
            self.problems.add(where, 0, relation, f"refers to {key}, which the {name} collection does not list")
        elif listed != item:
            self.problems.add(where, 0, relation, f"embeds {key} otherwise than the {name} collection lists it "
                                                  "(changed during the import?)")
        return key

    def _linked(self, name: str, url, where: str, relation: str) -> str:
        """The id of a record linked to by its URL, which its collection must list."""
        key = _id({"url": url})
        if key not in self.documents[name]:
            self.problems.add(where, 0, relation, f"refers to {key}, which the {name} collection does not list")
        return key

    def _check(self, resource: Resource, row: dict, where: str) -> None:
        """Each value as the build will check it (docs/spec/data.md), so the data directory builds."""
        for spec in resource.fields:
            value = row.get(spec.name)
            if value is None and not spec.required:
                continue
            try:
                spec.coerce(value)
            except FieldError as exc:
                self.problems.add(where, 0, spec.name, str(exc))


def _page_sizes(frozen: Frozen, collections: dict[str, Collection], sizes: list[int] | None) -> None:
    defaults = {c.default_limit for c in collections.values() if c.default_limit}
    if sizes:
        frozen.site["page_sizes"] = sizes
        frozen.notes.append(f"page sizes: {', '.join(map(str, sizes))} (the pre-built sizes the service names)")
    elif len(defaults) == 1:
        frozen.site["page_sizes"] = [defaults.pop()]
        frozen.notes.append(f"page size: {frozen.site['page_sizes'][0]} (from the next links); the service "
                            "answers any limit, only this one will be pre-built: add others to site.yaml's page_sizes")
    else:
        frozen.notes.append("page size: 12, the default (no collection has a second page to tell)" if not defaults
                            else f"page size: the next links disagree ({sorted(defaults)}): check site.yaml")


def _max_limit(frozen: Frozen, max_limit: int | None) -> None:
    if max_limit is None:
        frozen.notes.append("max_limit: none (the service answered a page of a billion records; site.yaml can set "
                            "one: without it a client may ask for every record in one answer)")
        return
    frozen.site["max_limit"] = max_limit
    sizes = frozen.site.get("page_sizes", [])
    frozen.site["page_sizes"] = [s for s in sizes if s <= max_limit] or [max_limit]
    frozen.notes.append(f"max_limit: {max_limit} (the service clamps a larger limit to it)")


def _time_zone(frozen: Frozen, stamps: list, given: str | None) -> None:
    """The zone whose offsets every created_time was written with (or the given one)."""
    if given is not None:
        frozen.site["time_zone"] = given
        frozen.notes.append(f"time zone: {given} (given)")
        return
    # Each moment once with its offset, none taken for another of its hour: a zone may change its
    # offset within an hour of the stamps' own (Lord Howe Island's half-hour shift at 02:00 of
    # +10:30 is 02:30 of +11:00), or within a minute (Monrovia's, at 00:44:30 UTC in 1972).
    seen: dict[tuple[datetime, timedelta], None] = {}  # (an ordered set: aware moments equal across offsets)
    for stamp in stamps:
        try:
            moment = datetime.fromisoformat(stamp)
        except (TypeError, ValueError):
            continue  # (reported with the book)
        if moment.utcoffset() is not None:
            seen[moment, moment.utcoffset()] = None
    if not seen:
        frozen.site["time_zone"] = DEFAULT_TIME_ZONE
        frozen.notes.append(f"time zone: {DEFAULT_TIME_ZONE}, the default (no created_time to tell)")
        return
    moments = [moment for moment, _ in seen]
    sample = moments[:: max(1, len(moments) // 64)]  # (most zones fail at once; the few left see all)
    candidates = [z for z in _zones() if _fits(z, sample) and _fits(z, moments)]
    if not candidates:
        offsets = [_offset(delta) for delta in sorted({offset for _, offset in seen})]
        frozen.problems.add("created_time", 0, "time_zone", f"no time zone has the offsets seen ({', '.join(offsets)}): "
                                                           "give one with --time-zone")
        return
    chosen = DEFAULT_TIME_ZONE if DEFAULT_TIME_ZONE in candidates else "UTC" if "UTC" in candidates else candidates[0]
    frozen.site["time_zone"] = chosen
    others = [z for z in candidates if z != chosen]
    frozen.notes.append(f"time zone: {chosen} (inferred from the offsets of {len(stamps):,} created_time"
                        + (f"; {len(others)} other zones fit them too, such as {', '.join(others[:3])}: "
                           "--time-zone chooses" if others else "") + ")")


def _offset(delta: timedelta) -> str:
    """An offset as a time stamp writes it (-02:30, not timedelta's "-1 day, 21:30:00")."""
    seconds = int(delta.total_seconds())
    minutes = abs(seconds) // 60
    return f"{'-' if seconds < 0 else '+'}{minutes // 60:02}:{minutes % 60:02}"


def _zones() -> list[str]:
    """Every IANA zone, the usual names before the old aliases (Etc/, US/, Iran, ...)."""
    names = zoneinfo.available_timezones()
    return sorted(names, key=lambda z: ("/" not in z and z != "UTC", z.startswith(("Etc/", "SystemV/", "US/")), z))


def _fits(zone: str, moments: list[datetime]) -> bool:
    """Whether each moment, written with its offset, has that offset in the zone."""
    tz = zoneinfo.ZoneInfo(zone)
    return all(moment.astimezone(tz).utcoffset() == moment.utcoffset() for moment in moments)


def image_csv_form(book: str, image: dict, base_url: str) -> str | None:
    """How an image can be written in CSV (a URL only, its id derived from it): the URL as
    the API gives it or root-relative, whichever derives its id; None if neither does."""
    url = image["image"]
    if image["type_image_book"] is not None:
        return None
    origin = Urls(base_url, "api").origin()
    forms = [url] + ([url[len(origin):]] if url.startswith(origin + "/") else [])
    return next((form for form in forms if derived_id(IMAGES, f"{book}/{form}") == image["id"]), None)
