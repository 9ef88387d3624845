"""Fill the DRF service's database from a data directory, read by the project's own
reader (generator.catalogue), so every case of docs/spec/data.md (derived ids, nested or
CSV categories, defaults, relation order, disabled books) comes out as the build
sees it.

Records are created in file order, each with its insertion index; categories are
added with treebeard, parents first and siblings in file order, so that treebeard
works out the very paths the build does (and the loader checks that it did).
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from django.db import transaction

from generator.catalogue.load import read_catalogue
from generator.catalogue.records import Known, collection_records
from generator.catalogue.resources import COLLECTIONS
from generator.errors import DataError

from .app import models


def load(data_dir: Path, base_url: str | None = None) -> dict[str, int]:
    """Load the catalogue into the (empty, migrated) database: the records per collection.
    Root-relative image paths resolve against base_url (default: site.yaml's)."""
    settings, sources, problems = read_catalogue(data_dir, base_url)
    known = Known()
    read = {}
    for collection in COLLECTIONS:
        if collection not in sources:
            continue
        source = sources[collection]
        found = collection_records(source, problems, known)
        read[collection] = [record for _line, record in found]
    if settings is None or problems:
        raise DataError(problems)
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(settings.base_url))
    with transaction.atomic():
        add_categories(read.get("categories", []))
        for collection, add in (("publishers", add_publishers), ("authors", add_authors),
                                ("books", lambda rs: add_books(rs, origin)), ("users", add_users),
                                ("bookshelves", add_bookshelves)):
            add(read.get(collection, []))
    return {collection: len(rs) for collection, rs in read.items()}


def add_categories(cats: list[dict]) -> None:
    """Parents before their children, siblings in file order: sorting by the build's path
    gives that order, and treebeard then appends each at the position the build gave it."""
    nodes: dict[str, models.Category] = {}
    for cat in sorted(cats, key=lambda c: c["path"]):
        fields = {"id": cat["id"], "slug": cat["slug"], "name": cat["name"], "code": cat["code"]}
        if cat["parent"] is None:
            node = models.Category.add_root(**fields)
        else:
            parent = nodes[cat["parent"]]
            parent.refresh_from_db()  # (treebeard counts its children in the database)
            node = parent.add_child(**fields)
        if node.path != cat["path"]:
            raise AssertionError(f"treebeard put category {cat['id']} at {node.path}, the build at {cat['path']}")
        nodes[cat["id"]] = node


def add_publishers(rows: list[dict]) -> None:
    models.Publisher.objects.bulk_create(
        models.Publisher(index=i, id=r["id"], slug=r["slug"], company=r["company"], info=r["info"])
        for i, r in enumerate(rows))


def add_authors(rows: list[dict]) -> None:
    models.Author.objects.bulk_create(
        models.Author(index=i, id=r["id"], slug=r["slug"], fullName=r["fullName"], bio=r["bio"])
        for i, r in enumerate(rows))


BOOK_FIELDS = ("id", "title", "isbn", "code", "code_qoq", "ddc", "price_currency", "price", "pages", "weight",
               "about", "comment_for_develop", "enable", "created_time")
# Relation field -> (through model, its field naming the related record).
LINKS = {"publishers": (models.BookPublisher, "publisher"), "authors": (models.BookAuthor, "author"),
         "translators": (models.BookTranslator, "author"), "categories": (models.BookCategory, "category")}


def add_books(rows: list[dict], origin: str) -> None:
    """Every book, disabled ones too (the viewset lists only the active ones)."""
    models.Book.objects.bulk_create(
        models.Book(index=i, **{name: r[name] for name in BOOK_FIELDS}) for i, r in enumerate(rows))
    for relation, (through, target) in LINKS.items():
        through.objects.bulk_create(
            through(book_id=r["id"], index=position, **{f"{target}_id": related})
            for r in rows for position, related in enumerate(r[relation]))
    models.BookImage.objects.bulk_create(
        models.BookImage(id=image["id"], book_id=r["id"], index=position,
                         # stored absolute, as the old service kept its images' URLs
                         image=origin + image["image"] if image["image"].startswith("/") else image["image"],
                         type_image_book=image["type_image_book"])
        for r in rows for position, image in enumerate(r["images"]))


def add_users(rows: list[dict]) -> None:
    models.UserProfile.objects.bulk_create(
        models.UserProfile(index=i, id=r["id"], username=r["username"], first_name=r["first_name"],
                           last_name=r["last_name"], bio=r["bio"], following_count=r["following_count"],
                           followers_count=r["followers_count"], followed=r["followed"])
        for i, r in enumerate(rows))


def add_bookshelves(rows: list[dict]) -> None:
    models.Bookshelf.objects.bulk_create(
        models.Bookshelf(index=i, id=r["id"], user_id=r["user"], title=r["title"]) for i, r in enumerate(rows))
