"""The one place that knows how a resource or page maps to its URL and its file,
and how a site directory is laid out.

Every file the build writes is named here, and every host's configuration is
derived from the same constants, so the URL a document carries and the path it
is served from can never drift apart.

Layout under a generation's root (served as site/api/v1/...):

    api/v1/index.json                               API root
    api/v1/<resource>/index.json                    first page (no query string)
    api/v1/<resource>/pages/<limit>/<bucket>/<offset>.json
                                                    ?limit=<limit>&offset=<offset>;
                                                    bucket = offset // 10000
    api/v1/<resource>/pages/<limit>/<bucket>/<first offset>.idx
                                                    where each record lies in the pages of
                                                    a span of 1000 offsets (default page
                                                    size only; api/pageindex.py)
    api/v1/<resource>/pages/default -> <default page size>
    api/v1/<resource>/<id[:2]>/<id>.json            detail document
    _meta/page-not-built.json                       body of the 400 for pages not built
    _meta/not-found.json                            body of the 404, for hosts whose 404 is a file
    _meta/openapi.json                              the OpenAPI document (GET /api/v1/schema/)

Detail documents and pages are spread over shard directories (two hex digits of
the id; ten thousand offsets) so that no directory grows past a few thousand
entries at a million books and a rebuild can replace one shard as a unit.

A site directory (the build's --out) holds the generations and what hosts need:

    <out>/current -> .build/gens/<N>    the published generation, swapped by one rename
    <out>/api -> current/api            the stable path servers name
    <out>/.build/                       generations, shard store, trash, lock (the build's)
    <out>/.preview/                     a local build of the data, links pointing where it is served
    <out>/hosts/<host>/                 what each host needs: nginx's configuration, the router
"""
from __future__ import annotations

import re
from typing import NamedTuple

from ..catalogue.fields import is_uuid
# Each collection as the API names it is its declaration (catalogue/resources.py).
from ..catalogue.resources import BY_COLLECTION, BY_NAME, RESOURCES, Resource

API = "api/v1"
PAGE_BUCKET = 10000  # offsets per page shard directory
# Offsets one page index covers (api/pageindex.py): a record's place costs a host some 4 KB
# of index, where one a shard directory would be 40 KB. A divisor of PAGE_BUCKET: a span's
# pages and its index share a directory.
PAGE_INDEX_SPAN = 1000
BUCKET_DIGITS = 4  # the bucket is the offset without its last four digits
ID_SHARD = 2  # leading characters of an id that name its shard directory
DEFAULT_LIMIT = "default"  # pages/default links to the default page size's pages
WRITABLE = {r.name: r.collection for r in RESOURCES if r.writable}  # resource -> data file stem
PAGE_INDEX = ".idx"  # a span of pages' index, beside them (api/pageindex.py)
QUERY_DIR = "_query"  # api/v1/<name>/_query/: the query backends' indexes (api/backends/), read by hosts, never served


class Urls:
    """Absolute URLs, all starting with the site's base_url: the API's own (as DRF wrote
    them), or with links="paths" the URLs of the files themselves, for a host that serves
    files and nothing else (no query strings, no directory index)."""

    def __init__(self, base_url: str, links: str = "api") -> None:
        self.base = base_url
        self.paths = links == "paths"

    def root(self) -> str:
        return f"{self.base}/{root_path()}" if self.paths else f"{self.base}/{API}/"

    def collection(self, resource: Resource) -> str:
        if self.paths:
            return f"{self.base}/{first_page_path(resource)}"
        return f"{self.base}/{API}/{resource.name}/"

    def detail(self, resource: Resource, id: str) -> str:
        if self.paths:
            return f"{self.base}/{detail_path(resource, id)}"
        return f"{self.base}/{API}/{resource.name}/{id}/"

    def page(self, resource: Resource, limit: int, offset: int = 0) -> str:
        """A page link as DRF writes it: parameters sorted, offset left out at 0."""
        if self.paths:
            return f"{self.base}/{page_path(resource, limit, offset)}"
        query = f"?limit={limit}" if offset == 0 else f"?limit={limit}&offset={offset}"
        return self.collection(resource) + query

    def origin(self) -> str:
        """scheme://host of base_url, against which root-relative image paths resolve."""
        scheme, rest = self.base.split("://", 1)
        return f"{scheme}://{rest.split('/', 1)[0]}"


def root_path() -> str:
    return f"{API}/index.json"


def first_page_path(resource: Resource) -> str:
    return f"{API}/{resource.name}/index.json"


def page_file(resource: str, limit: str, bucket: str, offset: str) -> str:
    """The page file for already-normalised parts; the nginx template fills in variables."""
    return f"{API}/{resource}/pages/{limit}/{bucket}/{offset}.json"


def page_index_file(resource: str, limit: str, bucket: str, first: str) -> str:
    """The index of a span of pages (api/pageindex.py), named after its first page."""
    return f"{API}/{resource}/pages/{limit}/{bucket}/{first}{PAGE_INDEX}"


def page_index_path(resource: Resource, limit: int, first: int) -> str:
    return page_index_file(resource.name, str(limit), str(first // PAGE_BUCKET), str(first))


def detail_file(resource: str, shard: str, id: str) -> str:
    return f"{API}/{resource}/{shard}/{id}.json"


def page_path(resource: Resource, limit: int, offset: int) -> str:
    return page_file(resource.name, str(limit), str(offset // PAGE_BUCKET), str(offset))


def default_pages_link(resource: Resource) -> str:
    """pages/default -> pages/<default size>: a request without a usable limit lands here,
    so the server's configuration need not know the page sizes."""
    return f"{API}/{resource.name}/pages/{DEFAULT_LIMIT}"


def detail_path(resource: Resource, id: str) -> str:
    # Ids come from the input: only a canonical UUID may ever name a file.
    if not is_uuid(id):
        raise ValueError(f"refusing to name a file after {id!r}: not a canonical UUID")
    return detail_file(resource.name, id[:ID_SHARD], id)


# Documents that are not API resources, served by the web server for errors. They live in
# the generation beside api/ (not under it), so they change atomically with the pages.
META = "_meta"
PAGE_NOT_BUILT = f"{META}/page-not-built.json"
NOT_FOUND_FILE = f"{META}/not-found.json"  # {"detail":"Not found."}: for hosts whose 404 is a file
OPENAPI_FILE = f"{META}/openapi.json"  # the OpenAPI document of the site, served at SCHEMA_PATH
SCHEMA_PATH = f"{API}/schema/"  # where the OpenAPI document is served (a path, not a resource)
SITE_INFO = f"{META}/site.json"  # how the site is served, recorded by each build
VIEWER = f"{META}/viewer.html"  # the HTML view, answered to clients that prefer text/html


_SHARD = re.compile(rf"{API}/([a-z]+)/(?:[0-9a-f]{{{ID_SHARD}}}|pages/([0-9]+)/[0-9]+)")


class Shard(NamedTuple):
    """A shard directory: the detail documents of one id prefix, or one block of pages."""
    resource: str  # its resource's name
    limit: int | None  # the page size of a block of pages; None for detail documents

    @classmethod
    def parse(cls, directory: str) -> "Shard | None":
        """The shard a directory is, or None for a directory of the skeleton."""
        match = _SHARD.fullmatch(directory)
        if match is None:
            return None
        return cls(match[1], None if match[2] is None else int(match[2]))


def is_shard(directory: str) -> bool:
    """A detail shard or a block of pages (rather than a directory of the skeleton)."""
    return _SHARD.fullmatch(directory) is not None


def shard_of(path: str) -> str | None:
    """The shard directory holding a file, or None for the few files of the skeleton
    (the API root, first pages, _meta)."""
    directory = path.rpartition("/")[0]
    return directory if is_shard(directory) else None


def key_of(name: str) -> str:
    """What a file in a shard is named after: the id of a detail document, the offset of a
    page (the name without .json or .json.gz)."""
    return name.split(".", 1)[0]


# ---- the site directory -----------------------------------------------------------------

CURRENT = "current"  # <out>/current: link to the published generation
SERVED = (API.split("/")[0],)  # top-level names of a generation, each linked from <out>/
PUBLISHED = (API.split("/")[0], META)  # all a host is given of a generation: never its STATE
BUILD_DIR = ".build"  # <out>/.build/: the build's generations, store, trash and lock
PREVIEW = ".preview"  # <out>/.preview/: a site of its own, `catalogue serve --data`'s local build
STATE = ".state"  # <generation>/.state/: what a build keeps for the next (never served nor deployed)
HOSTS = "hosts"  # <out>/hosts/<host>/: what the build writes for each host (configurations, routers)
# <out>/.accepted/: the detail documents of records the write service accepted that no build
# has published yet, at the paths they will have in a generation (read your writes).
ACCEPTED = ".accepted"
