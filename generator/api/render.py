"""Encode records as DRF's JSONRenderer writes them, each record exactly once.

Compact separators, UTF-8 left unescaped, U+2028/U+2029 escaped, keys in the
order of docs/spec/api.md. Each collection's document is what its declaration says
(catalogue/resources.py): its keys in order, each value the record's own, its URL, a
null the old service never set, a related record embedded or linked, a time in the
site's zone, or its images. A record that others embed (an author in a book, a user in
a bookshelf) is kept as its encoded bytes and spliced into the embedding record with
orjson.Fragment, so it is never encoded again.
"""
from __future__ import annotations

import re
from datetime import datetime
from functools import partial
from typing import Any, Callable

import orjson

from ..catalogue.fields import image_list, timestamp
from ..catalogue.resources import EMBEDDED, URL, Resource
from ..catalogue.settings import Settings
from .urls import BY_COLLECTION, RESOURCES, Urls

_LINE_SEPARATORS = re.compile(b"\xe2\x80[\xa8\xa9]")


def encode(document: Any) -> bytes:
    data = orjson.dumps(document)
    # DRF escapes these for JavaScript's sake. Both start with the byte 0xe2, which Persian
    # UTF-8 seldom holds (a ZWNJ does): looked for alone (memchr), it spares most records the
    # regex scan, itself much faster than `in` on Persian UTF-8, full of the bytes 0xa8 and 0xa9.
    if b"\xe2" in data and _LINE_SEPARATORS.search(data):
        data = data.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return data


def drf_time(moment: datetime, zone) -> str:
    """isoformat() in the site's zone, with +00:00 written as Z (DRF's DateTimeField)."""
    text = moment.astimezone(zone).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class Renderer:
    def __init__(self, settings: Settings, urls: Urls, remember: bool = True) -> None:
        """remember: keep the bytes of each record others embed as it is rendered (else the
        caller fills `embedded`)."""
        self.urls = urls
        self.remember = remember
        self.zone = settings.zone
        self.origin = urls.origin()
        self.embedded: dict[str, dict[str, orjson.Fragment]] = {c: {} for c in EMBEDDED}
        self._documents = {r.collection: self._document_maker(r) for r in RESOURCES}

    def render(self, collection: str, record: dict) -> tuple[dict, bytes] | None:
        """The record's document and its published bytes, or None when it is not published."""
        document = self._documents[collection](record)
        if document is None:
            return None
        data = encode(document)
        if self.remember and collection in self.embedded:
            # orjson's result can keep a buffer several times its length; copy what is kept.
            self.embedded[collection][record["id"]] = orjson.Fragment(bytes(memoryview(data)))
        return document, data

    def root(self) -> bytes:
        return encode({r.name: self.urls.collection(r) for r in BY_COLLECTION.values()})

    def _document_maker(self, resource: Resource) -> Callable[[dict], dict | None]:
        """The function making a record's document, or None for a record not published: one
        dict display of the declared keys, compiled once (as dataclasses compile __init__),
        so that each of a million books costs what a display written by hand costs, rather
        than a call for each of its twenty keys."""
        values = ", ".join(f"{key!r}: {self._value(resource, key)}" for key in resource.document)
        switch = resource.published_if
        unpublished = f"None if not r[{switch.field!r}] else " if switch else ""
        namespace = {
            "url": partial(self.urls.detail, resource), "embedded": self.embedded,
            "link": {c: partial(self.urls.detail, r) for c, r in BY_COLLECTION.items()},
            "drf_time": drf_time, "zone": self.zone, "images": self._images, "owner": resource.label.lower(),
        }
        return eval(f"lambda r: {unpublished}{{{values}}}", namespace)

    @staticmethod
    def _value(resource: Resource, key: str) -> str:
        """The expression of one key's value in the document of the record `r`."""
        value = f"r[{key!r}]"
        if key == URL:
            return "url(r['id'])"
        if key in resource.always_null:
            return "None"
        if key not in resource.names:
            return value  # worked out by the build (a node's path)
        field = resource.field(key)
        if field.to is not None and field.embedded:  # the related records, encoded once already
            found = f"embedded[{field.to!r}]"
            return f"[{found}[i] for i in {value}]" if field.many else f"{found}[{value}]"
        if field.to is not None:  # the related records' URLs
            link = f"link[{field.to!r}]"
            return f"[{link}(i) for i in {value}]" if field.many else f"{link}({value})"
        if field.coerce is timestamp:
            return f"drf_time({value}, zone)"
        if field.coerce is image_list:
            return f"images({value}, r['id'], owner)"
        return value

    def _images(self, images: list[dict], owner_id: str, owner: str) -> list[dict]:
        """A record's images, each naming the record it belongs to (DRF's foreign key)."""
        return [{"id": image["id"], "image": self._absolute(image["image"]),
                 "type_image_book": image["type_image_book"], owner: owner_id} for image in images]

    def _absolute(self, image: str) -> str:
        # A root-relative path resolves against the site's host, as a browser would.
        return self.origin + image if image.startswith("/") else image
