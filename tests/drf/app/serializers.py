"""Serializers with exactly docs/spec/api.md's fields, in its order.

Each resource has a hyperlinked `url`; a book embeds its publishers, authors,
translators and categories as full records in the order the record gives them, and
its images with the book's id; a bookshelf embeds its owner's full record and takes
the owner as an id or a url when one is created.
"""
import uuid
from urllib.parse import urlsplit

from django.urls import Resolver404, resolve
from rest_framework import serializers

from .models import Author, Book, BookImage, Bookshelf, Category, Publisher, UserProfile


def url(view_name: str) -> serializers.HyperlinkedIdentityField:
    return serializers.HyperlinkedIdentityField(view_name=view_name)


class AuthorSerializer(serializers.ModelSerializer):
    url = url("author-detail")
    user = serializers.SerializerMethodField()
    image_author = serializers.SerializerMethodField()

    class Meta:
        model = Author
        fields = ["url", "slug", "user", "fullName", "image_author", "bio"]

    # The old service's user link and author image were never set (docs/spec/api.md: observed as null).
    def get_user(self, author):
        return None

    def get_image_author(self, author):
        return None


class PublisherSerializer(serializers.ModelSerializer):
    url = url("publisher-detail")
    user = serializers.SerializerMethodField()
    image_publisher_logo = serializers.SerializerMethodField()

    class Meta:
        model = Publisher
        fields = ["url", "slug", "user", "company", "image_publisher_logo", "info"]

    def get_user(self, publisher):
        return None

    def get_image_publisher_logo(self, publisher):
        return None


class CategorySerializer(serializers.ModelSerializer):
    url = url("category-detail")
    no_child = serializers.SerializerMethodField()

    class Meta:
        model = Category
        fields = ["url", "id", "no_child", "slug", "path", "depth", "numchild", "name", "code"]

    def get_no_child(self, category):
        return category.numchild == 0


class BookImageSerializer(serializers.ModelSerializer):
    class Meta:
        model = BookImage
        fields = ["id", "image", "type_image_book", "book"]


class Related(serializers.ListField):
    """A book's relation as full records, in the order the book gives them."""

    def __init__(self, links: str, target: str, serializer: type, **kwargs) -> None:
        self.links, self.target = links, target
        super().__init__(child=serializer(), source="*", read_only=True, **kwargs)

    def to_representation(self, book):
        return [self.child.to_representation(item) for item in book.related(self.links, self.target)]


class BookSerializer(serializers.ModelSerializer):
    url = url("book-detail")
    publishers = Related("publisher_links", "publisher", PublisherSerializer)
    authors = Related("author_links", "author", AuthorSerializer)
    translators = Related("translator_links", "author", AuthorSerializer)
    categories = Related("category_links", "category", CategorySerializer)
    images = BookImageSerializer(many=True, read_only=True)

    class Meta:
        model = Book
        fields = ["url", "id", "publishers", "authors", "translators", "categories", "images", "title",
                  "isbn", "code", "code_qoq", "ddc", "price_currency", "price", "pages", "weight", "about",
                  "comment_for_develop", "enable", "created_time"]


class UserSerializer(serializers.ModelSerializer):
    url = url("user-detail")

    class Meta:
        model = UserProfile
        fields = ["url", "id", "username", "first_name", "last_name", "bio", "following_count",
                  "followers_count", "followed"]
        read_only_fields = ["following_count", "followers_count", "followed"]


class Owner(serializers.RelatedField):
    """A bookshelf's owner: the full user record out; a user's id or url in."""
    default_error_messages = {"does_not_exist": "There is no user {value}."}

    def __init__(self, **kwargs) -> None:
        super().__init__(queryset=UserProfile.objects.all(), **kwargs)

    def to_representation(self, user):
        return UserSerializer(user, context=self.context).data

    def to_internal_value(self, data):
        value = str(data)
        key = value
        if "://" in value:  # a user's url: its id is in the path
            try:
                match = resolve(urlsplit(value).path)
            except Resolver404:
                self.fail("does_not_exist", value=value)
            key = str(match.kwargs.get("pk")) if match.url_name == "user-detail" else ""
        try:
            return self.get_queryset().get(pk=uuid.UUID(key))
        except (ValueError, UserProfile.DoesNotExist):
            self.fail("does_not_exist", value=value)

    def use_pk_only_optimization(self):
        return False


class BookshelfSerializer(serializers.ModelSerializer):
    url = url("bookshelf-detail")
    user = Owner(help_text=Bookshelf._meta.get_field("user").help_text)

    class Meta:
        model = Bookshelf
        fields = ["url", "user", "title"]
