"""The viewsets: read-only for authors, books, publishers and categories; users and
bookshelves also take POST on their list (create).

The classes have no docstrings on purpose: DRF puts a view's docstring into the
`description` of its OPTIONS body, which the old service left empty.
"""
from django.http import Http404
from rest_framework import mixins, viewsets

from .filtering import configure
from .models import Author, Book, Bookshelf, Category, Publisher, UserProfile
from .serializers import (AuthorSerializer, BookSerializer, BookshelfSerializer, CategorySerializer,
                          PublisherSerializer, UserSerializer)


class AuthorViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Author.objects.all()
    serializer_class = AuthorSerializer


class BookViewSet(viewsets.ReadOnlyModelViewSet):
    # Only the active books are published (docs/spec/api.md); disabled ones stay in the database.
    # Each relation's links and their records are fetched for a whole page at once (Book.related()
    # reads them from the prefetched links): a page of 12 took 105 queries, 15 ms.
    queryset = Book.objects.filter(enable=True).prefetch_related(
        "images", "publisher_links__publisher", "author_links__author", "translator_links__author",
        "category_links__category")
    serializer_class = BookSerializer


class PublisherViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Publisher.objects.all()
    serializer_class = PublisherSerializer


class CategoryViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Category.objects.all()  # (treebeard's manager orders by path)
    serializer_class = CategorySerializer


class UserViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    queryset = UserProfile.objects.all()
    serializer_class = UserSerializer

    def get_object(self):
        # Django names the model in the 404 ("No UserProfile matches ..."); docs/spec/http.md's body
        # names the resource, User, as for every other resource.
        try:
            return super().get_object()
        except Http404 as missing:
            if missing.args:
                raise Http404("No User matches the given query.")
            raise


class BookshelfViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    queryset = Bookshelf.objects.select_related("user")
    serializer_class = BookshelfSerializer


for _name, _viewset in (("author", AuthorViewSet), ("books", BookViewSet), ("publisher", PublisherViewSet),
                        ("category", CategoryViewSet), ("user", UserViewSet), ("bookshelf", BookshelfViewSet)):
    configure(_viewset, _name)
