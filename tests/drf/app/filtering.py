"""The filter backends of the reference service, set on each viewset from the site's
search, ordering and filters (site.yaml, docs/spec/query.md §2): django-filter's backend first,
then DRF's SearchFilter and OrderingFilter, each only where the site configures it.

Two things the old service's database did that SQLite does not, done here: LIKE ignores
case as Python's str.lower() does (SQLite's only folds ASCII), with search_normalise's
folding where the site asks for it; and an ordering's ties keep the collection's own
order (SQLite leaves them in any order).
"""
import json
import os
import re

from django.db.backends.signals import connection_created
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.filters import OrderingFilter, SearchFilter

from generator.api.backends.common import fold

QUERY = json.loads(os.environ.get("CATALOGUE_DRF_QUERY") or "{}")
NORMALISE = QUERY.get("search_normalise")


class TiesInOwnOrder(OrderingFilter):
    def filter_queryset(self, request, queryset, view):
        ordering = self.get_ordering(request, queryset, view)
        if ordering:
            own = list(queryset.query.order_by) or list(queryset.model._meta.ordering)
            return queryset.order_by(*ordering, *own)
        return queryset


def configure(viewset, name: str) -> None:
    """The backends and fields of the viewset of the collection `name` (its URL segment)."""
    backends = []
    if QUERY.get("filters", {}).get(name):
        backends.append(DjangoFilterBackend)
        viewset.filterset_fields = QUERY["filters"][name]
    if QUERY.get("search", {}).get(name):
        backends.append(SearchFilter)
        viewset.search_fields = QUERY["search"][name]
    if QUERY.get("ordering", {}).get(name):
        backends.append(TiesInOwnOrder)
        viewset.ordering_fields = QUERY["ordering"][name]
    viewset.filter_backends = backends


def like(pattern, value, escape="\\"):
    """SQL's LIKE, case folded as str.lower() folds it (and search_normalise's way)."""
    if pattern is None or value is None:
        return None
    regex, at = "", 0
    while at < len(pattern):
        char = pattern[at]
        if char == escape and at + 1 < len(pattern):
            regex += re.escape(fold(pattern[at + 1], NORMALISE))
            at += 2
            continue
        regex += ".*" if char == "%" else "." if char == "_" else re.escape(fold(char, NORMALISE))
        at += 1
    return re.fullmatch(regex, fold(str(value), NORMALISE), re.DOTALL) is not None


def _on_connect(sender, connection, **kwargs) -> None:
    if connection.vendor == "sqlite":
        connection.connection.create_function("like", 2, like, deterministic=True)
        connection.connection.create_function("like", 3, like, deterministic=True)


connection_created.connect(_on_connect)
