"""The API's URLs: DRF's DefaultRouter under /api/v1/, resources in the API root's order."""
from django.urls import include, path
from rest_framework.routers import DefaultRouter

from drf.app import views

router = DefaultRouter()
router.register("author", views.AuthorViewSet, basename="author")
router.register("books", views.BookViewSet, basename="book")
router.register("publisher", views.PublisherViewSet, basename="publisher")
router.register("category", views.CategoryViewSet, basename="category")
router.register("user", views.UserViewSet, basename="user")
router.register("bookshelf", views.BookshelfViewSet, basename="bookshelf")

urlpatterns = [path("api/v1/", include(router.urls))]
