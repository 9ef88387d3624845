"""Encode records as DRF's JSONRenderer writes them, each record exactly once.

Compact separators, UTF-8 left unescaped, U+2028/U+2029 escaped, keys in the
order of api.md. A record that others embed (an author in a book, a user in a
bookshelf) is kept as its encoded bytes and spliced into the embedding record
with orjson.Fragment, so it is never encoded again.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Callable

import orjson

from ..catalogue.fields import EMBEDDED
from ..catalogue.settings import Settings
from .urls import BY_COLLECTION, Urls

_LINE_SEPARATORS = re.compile(b"\xe2\x80[\xa8\xa9]")


def encode(document: Any) -> bytes:
    data = orjson.dumps(document)
    # DRF escapes these for JavaScript's sake; a regex scan is much faster than
    # `in` on Persian UTF-8, which is full of the bytes 0xa8 and 0xa9.
    if _LINE_SEPARATORS.search(data):
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
        self._documents: dict[str, Callable[[dict], dict | None]] = {
            "authors": self._author, "publishers": self._publisher, "categories": self._category,
            "users": self._user, "books": self._book, "bookshelves": self._bookshelf,
        }

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

    def _url(self, collection: str, id: str) -> str:
        return self.urls.detail(BY_COLLECTION[collection], id)

    def _author(self, r: dict) -> dict:
        return {"url": self._url("authors", r["id"]), "slug": r["slug"], "user": None,
                "fullName": r["fullName"], "image_author": None, "bio": r["bio"]}

    def _publisher(self, r: dict) -> dict:
        return {"url": self._url("publishers", r["id"]), "slug": r["slug"], "user": None,
                "company": r["company"], "image_publisher_logo": None, "info": r["info"]}

    def _category(self, r: dict) -> dict:
        return {"url": self._url("categories", r["id"]), "id": r["id"], "no_child": r["numchild"] == 0,
                "slug": r["slug"], "path": r["path"], "depth": r["depth"], "numchild": r["numchild"],
                "name": r["name"], "code": r["code"]}

    def _user(self, r: dict) -> dict:
        return {"url": self._url("users", r["id"]), "id": r["id"], "username": r["username"],
                "first_name": r["first_name"], "last_name": r["last_name"], "bio": r["bio"],
                "following_count": r["following_count"], "followers_count": r["followers_count"],
                "followed": r["followed"]}

    def _bookshelf(self, r: dict) -> dict:
        return {"url": self._url("bookshelves", r["id"]), "user": self.embedded["users"][r["user"]],
                "title": r["title"]}

    def _book(self, r: dict) -> dict | None:
        if not r["enable"]:
            return None
        authors, publishers = self.embedded["authors"], self.embedded["publishers"]
        book_id = r["id"]
        return {
            "url": self._url("books", book_id), "id": book_id,
            "publishers": [publishers[i] for i in r["publishers"]],
            "authors": [authors[i] for i in r["authors"]],
            "translators": [authors[i] for i in r["translators"]],
            "categories": [self.embedded["categories"][i] for i in r["categories"]],
            "images": [{"id": image["id"], "image": self._absolute(image["image"]),
                        "type_image_book": image["type_image_book"], "book": book_id}
                       for image in r["images"]],
            "title": r["title"], "isbn": r["isbn"], "code": r["code"], "code_qoq": r["code_qoq"],
            "ddc": r["ddc"], "price_currency": r["price_currency"], "price": r["price"],
            "pages": r["pages"], "weight": r["weight"], "about": r["about"],
            "comment_for_develop": r["comment_for_develop"], "enable": True,
            "created_time": drf_time(r["created_time"], self.zone),
        }

    def _absolute(self, image: str) -> str:
        # A root-relative path resolves against the site's host, as a browser would.
        return self.origin + image if image.startswith("/") else image
