"""Every collection of the catalogue, each declared once: what DRF's serializers and
`router.register` said of it, and what docs/spec/data.md says of its file.

A `Resource` names a collection three ways (its data file, its URL segment, its model's
name in messages), lists its fields with their kinds and relations, the key its derived
ids are made from, the keys of its API document in docs/spec/api.md's order, and what a POST may
give. Everything else iterates these declarations: reading and checking the data,
rendering, the schemas, the OpenAPI document and the OPTIONS bodies, the write service,
the importer and the synthetic catalogue. A new collection is a declaration here, its
JSON Schema in schemas/ (and its URL in the root's, root.json) and its data file.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .fields import (NAME_MAX, USERNAME_MAX, F, Field, R, boolean, currency, id_list, image_list, isbn,
                     nonempty_text, price, slug, text, timestamp, username, uuid_id, whole)

URL = "url"  # every document's first key: the record's own URL
# What the build works out for each node of a tree (records.category_tree), never read.
TREE_FIELDS = ("path", "depth", "numchild", "no_child")
# Keys the build computes, in any collection's document: a row that gives one is refused.
DERIVED = frozenset({URL, *TREE_FIELDS})


@dataclass(frozen=True)
class Switch:
    """A boolean field that publishes a record only while it is true, and the words for
    a record either way (in what the importer notes)."""
    field: str
    on: str
    off: str


@dataclass(frozen=True, eq=False)
class Resource:
    """A collection as the data directory, the API and DRF's messages name it, and its shape."""
    name: str  # URL segment: "books"
    collection: str  # data file stem, and the namespace of its derived ids: "books"
    label: str  # DRF's model name, in messages and OPTIONS bodies: "Book"
    fields: tuple[Field, ...]  # docs/spec/data.md's fields, in the order a CSV header gives them
    id_key: tuple[str, ...]  # the fields a missing id is derived from, joined by "/"
    document: tuple[str, ...]  # the keys of the API document, in docs/spec/api.md's order
    heading: str  # the collection in the HTML view (its title, its link from the root): "کتاب‌ها"
    shown_by: str  # the document key whose value names a record in the HTML view's lists: "title"
    always_null: tuple[str, ...] = ()  # document keys the old service never set
    published_if: Switch | None = None  # unpublished records stay in the data, out of the API
    post: tuple[str, ...] = ()  # what a POST to the list may give, in the serializer's order
    taken: str | None = None  # DRF's message for a POST whose record exists already

    @property
    def writable(self) -> bool:
        """Clients may POST new records to the collection."""
        return bool(self.post)

    @cached_property
    def schema(self) -> str:
        """Name of the JSON Schema of one record: schemas/<schema>.json."""
        return self.label.lower()

    @cached_property
    def names(self) -> frozenset[str]:
        """The names of the fields a row may give."""
        return frozenset(f.name for f in self.fields)

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    @cached_property
    def relations(self) -> tuple[Field, ...]:
        """The fields that hold ids of records, of another collection or of this one."""
        return tuple(f for f in self.fields if f.to is not None)

    @cached_property
    def tree(self) -> Field | None:
        """The field naming each record's parent, when the records form a tree."""
        return next((f for f in self.relations if f.to == self.collection), None)

    @cached_property
    def unique(self) -> str | None:
        """The field besides the id that no two records may share, if any."""
        return next((f.name for f in self.fields if f.unique), None)

    @cached_property
    def images(self) -> tuple[str, ...]:
        """The fields holding images, whose missing ids are derived from the record's."""
        return tuple(f.name for f in self.fields if f.coerce is image_list)

    def __repr__(self) -> str:
        return f"Resource({self.name!r})"


# ---- the declarations ---------------------------------------------------------------

CATEGORIES = Resource(
    "category", "categories", "Category",
    fields=(F("id", uuid_id), R("slug", slug), R("name", nonempty_text), F("code", text, ""),
            F("parent", uuid_id, to="categories")),
    id_key=("slug",),
    document=(URL, "id", "no_child", "slug", "path", "depth", "numchild", "name", "code"),
    heading="دسته‌ها", shown_by="name",
)
PUBLISHERS = Resource(
    "publisher", "publishers", "Publisher",
    fields=(F("id", uuid_id), R("slug", slug), R("company", nonempty_text), F("info", text, "")),
    id_key=("slug",),
    document=(URL, "slug", "user", "company", "image_publisher_logo", "info"),
    heading="ناشران", shown_by="company",
    always_null=("user", "image_publisher_logo"),
)
AUTHORS = Resource(
    "author", "authors", "Author",
    fields=(F("id", uuid_id), R("slug", slug), R("fullName", nonempty_text), F("bio", text, "")),
    id_key=("slug",),
    document=(URL, "slug", "user", "fullName", "image_author", "bio"),
    heading="نویسندگان", shown_by="fullName",
    always_null=("user", "image_author"),
)
BOOKS = Resource(
    "books", "books", "Book",
    fields=(
        F("id", uuid_id), R("title", nonempty_text), R("isbn", isbn), F("code", text, ""),
        F("code_qoq", text), F("ddc", text, ""), R("price", price),
        F("price_currency", currency, "IRR"), F("pages", whole, 0), F("weight", whole, 0),
        F("about", text, ""), F("comment_for_develop", text, ""), F("enable", boolean, True),
        R("created_time", timestamp),
        F("authors", id_list, (), to="authors", embedded=True),
        F("translators", id_list, (), to="authors", embedded=True),
        F("publishers", id_list, (), to="publishers", embedded=True),
        F("categories", id_list, (), to="categories", embedded=True),
        F("images", image_list, ()),
    ),
    id_key=("isbn",),
    document=(URL, "id", "publishers", "authors", "translators", "categories", "images", "title", "isbn",
              "code", "code_qoq", "ddc", "price_currency", "price", "pages", "weight", "about",
              "comment_for_develop", "enable", "created_time"),
    heading="کتاب‌ها", shown_by="title",
    published_if=Switch("enable", on="enabled", off="disabled"),
)
USERS = Resource(
    "user", "users", "User",
    fields=(
        F("id", uuid_id),
        R("username", username, unique=True, max_length=USERNAME_MAX,
          help_text="Required. 150 characters or fewer. Letters, digits and @/./+/-/_ only."),
        F("first_name", text, "", max_length=NAME_MAX), F("last_name", text, "", max_length=NAME_MAX),
        F("bio", text, ""), F("following_count", whole, 0), F("followers_count", whole, 0),
        F("followed", boolean, False),
    ),
    id_key=("username",),
    document=(URL, "id", "username", "first_name", "last_name", "bio", "following_count", "followers_count",
              "followed"),
    heading="کاربران", shown_by="username",
    post=("username", "first_name", "last_name", "bio"),
    taken="A user with that username already exists.",
)
BOOKSHELVES = Resource(
    "bookshelf", "bookshelves", "Bookshelf",
    fields=(F("id", uuid_id), R("user", uuid_id, to="users", embedded=True, help_text="The owner: a user's id or url."),
            R("title", nonempty_text, example="Reading list")),
    id_key=("user", "title"),
    document=(URL, "user", "title"),
    heading="قفسه‌ها", shown_by="title",
    post=("user", "title"),
    taken="This user already has a bookshelf with this title.",
)

# In the API root's order (DRF's DefaultRouter lists routes as registered).
RESOURCES = (AUTHORS, BOOKS, PUBLISHERS, CATEGORIES, USERS, BOOKSHELVES)
# In the order the build reads them: a collection after those its records refer to, and
# users after books so that authors and publishers can be let go before users are held.
BUILD_ORDER = (CATEGORIES, PUBLISHERS, AUTHORS, BOOKS, USERS, BOOKSHELVES)

BY_COLLECTION = {r.collection: r for r in RESOURCES}
BY_NAME = {r.name: r for r in RESOURCES}
COLLECTIONS = tuple(r.collection for r in BUILD_ORDER)  # data file stems, in the build's order


def embeds(collection: str) -> tuple[str, ...]:
    """The other collections whose records a collection's records refer to (and embed), in
    the build's order."""
    targets = {f.to for f in BY_COLLECTION[collection].relations}
    return tuple(c for c in COLLECTIONS if c in targets and c != collection)


# Collections whose records others refer to (and embed), and after which collection (in
# COLLECTIONS' order) they are no longer needed.
EMBEDDED = tuple(c for c in COLLECTIONS if any(c in embeds(other) for other in COLLECTIONS))
LAST_NEEDED = {c: [other for other in COLLECTIONS if c in embeds(other)][-1] for c in EMBEDDED}
