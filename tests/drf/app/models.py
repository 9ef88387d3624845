"""The catalogue's models, with docs/spec/api.md's fields in its order and UUID primary keys.

Every collection keeps the order of its data file: records carry an insertion `index`
and are ordered by it, except categories, which treebeard orders by path. A book's
relations keep the order the record gives them through models ordered by an index.
"""
import uuid

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.db import models
from treebeard.mp_tree import MP_Node


class Ordered(models.Model):
    """A record listed in insertion order: its index is the next one when not given."""
    index = models.BigIntegerField(editable=False, db_index=True)

    class Meta:
        abstract = True
        ordering = ["index"]

    def save(self, *args, **kwargs):
        if self.index is None:
            last = type(self).objects.aggregate(models.Max("index"))["index__max"]
            self.index = (last or 0) + 1
        super().save(*args, **kwargs)


class Author(Ordered):
    id = models.UUIDField("ID", primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=255, allow_unicode=True)
    fullName = models.CharField(max_length=255)
    bio = models.TextField(blank=True)


class Publisher(Ordered):
    id = models.UUIDField("ID", primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=255, allow_unicode=True)
    company = models.CharField(max_length=255)
    info = models.TextField(blank=True)


class Category(MP_Node):
    # Decimal digits, four a level, as docs/spec/api.md writes paths (treebeard's default counts in base 36).
    alphabet = "0123456789"
    steplen = 4
    node_order_by = []  # siblings in the order they are added: the data file's

    id = models.UUIDField("ID", primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=255, allow_unicode=True)
    name = models.CharField(max_length=255)
    code = models.CharField(max_length=255, blank=True)


class Book(Ordered):
    id = models.UUIDField("ID", primary_key=True, default=uuid.uuid4, editable=False)
    publishers = models.ManyToManyField(Publisher, through="BookPublisher", related_name="books")
    authors = models.ManyToManyField(Author, through="BookAuthor", related_name="books")
    translators = models.ManyToManyField(Author, through="BookTranslator", related_name="translated")
    categories = models.ManyToManyField(Category, through="BookCategory", related_name="books")
    title = models.TextField()
    isbn = models.CharField(max_length=255)
    code = models.TextField(blank=True)
    code_qoq = models.TextField(null=True, blank=True)
    ddc = models.TextField(blank=True)
    price_currency = models.CharField(max_length=3, default="IRR")
    price = models.DecimalField(max_digits=40, decimal_places=0)
    pages = models.PositiveBigIntegerField(default=0)
    weight = models.PositiveBigIntegerField(default=0)
    about = models.TextField(blank=True)
    comment_for_develop = models.TextField(blank=True)
    enable = models.BooleanField(default=True)
    created_time = models.DateTimeField()

    def related(self, links: str, target: str) -> list:
        """A relation's records in the order the book gives them (repeats kept)."""
        return [getattr(link, target) for link in getattr(self, links).all()]


class Link(models.Model):
    """One entry of a book's relation list, at its position in the list."""
    index = models.PositiveIntegerField()

    class Meta:
        abstract = True
        ordering = ["index"]


class BookPublisher(Link):
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="publisher_links")
    publisher = models.ForeignKey(Publisher, on_delete=models.CASCADE)


class BookAuthor(Link):
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="author_links")
    author = models.ForeignKey(Author, on_delete=models.CASCADE)


class BookTranslator(Link):
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="translator_links")
    author = models.ForeignKey(Author, on_delete=models.CASCADE)


class BookCategory(Link):
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="category_links")
    category = models.ForeignKey(Category, on_delete=models.CASCADE)


class BookImage(Link):
    id = models.UUIDField("ID", primary_key=True, default=uuid.uuid4, editable=False)
    image = models.TextField()  # an absolute URL, kept as a plain string
    type_image_book = models.TextField(null=True, blank=True)
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="images")


class UserProfile(Ordered):
    id = models.UUIDField("ID", primary_key=True, default=uuid.uuid4, editable=False)
    username = models.CharField(
        max_length=150, unique=True, validators=[UnicodeUsernameValidator()],
        help_text="Required. 150 characters or fewer. Letters, digits and @/./+/-/_ only.")
    first_name = models.CharField(max_length=150, blank=True)
    last_name = models.CharField(max_length=150, blank=True)
    bio = models.TextField(blank=True)
    following_count = models.PositiveBigIntegerField(default=0)
    followers_count = models.PositiveBigIntegerField(default=0)
    followed = models.BooleanField(default=False)


class Bookshelf(Ordered):
    id = models.UUIDField("ID", primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(UserProfile, on_delete=models.CASCADE, related_name="bookshelves",
                             help_text="The owner: a user's id or url.")
    title = models.TextField()
