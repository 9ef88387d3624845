"""The reference for query strings: Django's own request, as its development server builds
one (a WSGI environ, QUERY_STRING in latin-1), and DRF's LimitOffsetPagination over it,
run in this process. The golden table (golden_files.py) is computed here, and the
property tests compare generator/api/querystring.py with it."""
from __future__ import annotations

import contextlib
import io
import sys

PREFIX = "http://testserver/api/v1/books/?"  # what precedes the query in every link here


def _django() -> None:
    """Django configured just enough for a request (only once, and never over other settings)."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(ALLOWED_HOSTS=["testserver"], DATA_UPLOAD_MAX_NUMBER_FIELDS=1000, INSTALLED_APPS=[],
                           USE_I18N=False, DEFAULT_CHARSET="utf-8")
        django.setup()


def _request(query: str):
    """DRF's request for GET /api/v1/books/?<query>, the query given as WSGI gives it."""
    _django()
    from django.core.handlers.wsgi import WSGIRequest
    from rest_framework.request import Request

    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/api/v1/books/", "QUERY_STRING": query,
               "SERVER_NAME": "testserver", "SERVER_PORT": "80", "HTTP_HOST": "testserver",
               "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "http"}
    return Request(WSGIRequest(environ))


class Rows:
    """A queryset of `count` rows none of which is read (the offset may be 10**30)."""

    def __init__(self, count: int) -> None:
        self._count = count

    def count(self) -> int:
        return self._count

    def __getitem__(self, part: slice) -> list:
        return []


def pairs(query: str) -> list[tuple[str, str]]:
    """request.GET's pairs in the order QueryDict appends them (it keeps only each name's list)."""
    _django()
    from django.core.handlers.wsgi import get_bytes_from_wsgi
    from django.http import QueryDict

    appended: list[tuple[str, str]] = []

    class Recording(QueryDict):
        def appendlist(self, key, value):
            appended.append((key, value))
            super().appendlist(key, value)

    read = Recording(get_bytes_from_wsgi({"QUERY_STRING": query}, "QUERY_STRING", ""))
    assert dict(read.lists()) == _grouped(appended)
    return appended


def _grouped(found: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for key, value in found:
        grouped.setdefault(key, []).append(value)
    return grouped


def _paginator(query: str, default_limit: int, max_limit: int | None, count: int):
    from rest_framework.pagination import LimitOffsetPagination

    paginator = LimitOffsetPagination()
    paginator.default_limit, paginator.max_limit = default_limit, max_limit
    paginator.paginate_queryset(Rows(count), _request(query))
    return paginator


def _after_query(link: str | None) -> str | None:
    if link is None:
        return None
    assert link.startswith(PREFIX), link
    return link.removeprefix(PREFIX)


def answer(query: str, count: int, default_limit: int, max_limit: int | None) -> dict:
    """What DRF answers: the pairs, limit and offset (decimal strings), what follows the `?` of
    each link, and whether the page is that of `?limit=…&offset=…`; or the error."""
    from django.core.exceptions import TooManyFieldsSent

    try:
        read = pairs(query)
        paginator = _paginator(query, default_limit, max_limit, count)
    except TooManyFieldsSent:
        return {"error": "TooManyFields"}
    return {"pairs": [list(pair) for pair in read], "limit": str(paginator.limit), "offset": str(paginator.offset),
            "next": _after_query(paginator.get_next_link()), "previous": _after_query(paginator.get_previous_link()),
            "only_paging": _only_paging(query, paginator)}


def _only_paging(query: str, paginator) -> bool:
    """Whether DRF's links for this request carry nothing but limit and offset (a next link,
    which carries every parameter, compared with that of a request without parameters)."""
    limit, offset = paginator.limit, paginator.offset
    with _any_number_of_digits():  # (offset + limit may have a digit more than str() writes)
        return link(query, limit, offset + limit) == link("", limit, offset + limit)


@contextlib.contextmanager
def _any_number_of_digits():
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


def link(query: str, limit: int, offset: int | None) -> str:
    """What follows the `?` of DRF's link with limit set and offset set (None: removed),
    composed as DRF does from build_absolute_uri()."""
    from rest_framework.utils.urls import remove_query_param, replace_query_param

    url = replace_query_param(_request(query).build_absolute_uri(), "limit", limit)
    url = remove_query_param(url, "offset") if offset is None else replace_query_param(url, "offset", offset)
    return _after_query(url)
