"""The golden output of the sample catalogue, and the one way to refresh it.

    make golden    (rebuilds the sample into a temporary folder and rewrites tests/golden/)

Refresh only on purpose, after checking the difference by hand against the spec.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
ROOT = HERE.parent

# Chosen to cover, between them, every rule a reader would check by eye: the API
# root, first / middle / last pages of two page sizes, an empty previous link, a
# book with translators, images (one root-relative), a multi-line comment and a
# U+2028 in `about`, an author whose name ends in a space, a nested category, a
# user with a Persian username and a bookshelf embedding its owner.
FILES = [
    "api/v1/index.json",
    "api/v1/category/index.json",
    "api/v1/category/pages/12/0/12.json",
    "api/v1/publisher/pages/24/0/0.json",
    "api/v1/books/pages/12/0/36.json",
    "api/v1/books/76/76f9d815-44dc-545f-890b-4419e8e5e6da.json",
    "api/v1/books/b9/b9c8d6c0-fd3b-41c9-be0b-8324d58529dd.json",
    "api/v1/author/18/187b102f-27c8-4e95-9f12-42ebc7b73cb1.json",
    "api/v1/category/99/99f72799-9e19-41dd-ac52-26d489f45595.json",
    "api/v1/user/index.json",
    "api/v1/bookshelf/index.json",
]
MANIFEST = "tree.sha256"
ROUTES = "routes.json"  # the golden request table: every router's decisions (api/routes.py)

BOOK = "76f9d815-44dc-545f-890b-4419e8e5e6da"
UNKNOWN = "76f9d815-0000-4000-8000-000000000000"
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
# (method, path, query, base_url's path prefix[, Accept]): what every server and router must route alike.
REQUESTS = [
    # DRF's negotiation: a browser gets the HTML view of any routed GET; others the JSON.
    ("GET", "/api/v1/books/", "limit=24", "", BROWSER), ("HEAD", f"/api/v1/books/{BOOK}/", "", "", "text/html"),
    ("GET", "/api/v1/", "", "", "text/*"), ("GET", "/api/v1/books/", "", "", "application/json, text/html"),
    ("GET", "/api/v1/books/", "", "", "text/html;q=0.1, application/json"), ("GET", "/api/v1/books/", "", "", "*/*"),
    ("GET", "/api/v1/user/", "", "", "application/*, text/html"), ("GET", f"/api/v1/books/{UNKNOWN}/", "", "", "TEXT/HTML"),
    ("GET", "/api/v1/books/", "limit=5", "", BROWSER), ("GET", "/api/v1/books", "", "", BROWSER),
    ("GET", "/api/v1/nothing/", "", "", BROWSER), ("OPTIONS", "/api/v1/user/", "", "", BROWSER),
    ("PUT", "/api/v1/books/", "", "", BROWSER), ("POST", "/api/v1/user/", "", "", BROWSER),
    ("GET", "/catalogue/api/v1/books/", "", "/catalogue", BROWSER),
    *[("GET", "/api/v1/books/", q, "") for q in [
        "", "offset=24&limit=12", "limit=012&offset=0024", "limit=+12&offset=+24", "limit=%2B12&offset=%2B24",
        "limit=+%2B12&offset=24", "limit=%2012%20&offset=24%09", "limit=24&limit=12&offset=24",
        "offset=36&offset=24&limit=12", "offset=24", "limit=abc&offset=24", "limit=0&offset=24",
        "limit=-24&offset=24", "limit=&offset=24", "limit=24&offset=abc", "limit=24&offset=-24",
        "limit=24&offset=-0", "limit=12&offset=24&search=x&ordering=-title&LIMIT=5&xlimit=3", "offset",
        "limit=5", "offset=13", "offset=48", "offset=1200000", "limit=1_2", "offset=2_4", "limit=%DB%B2%DB%B4",
        "limit=%31%32", "%6Cimit=24", "limit=%2B+12", "limit=99999999999999999999999", "offset=10008",
        "limit=12&offset=999996", "limit=12&offset=1000008"]],
    ("GET", "/api/v1/", "", ""), ("HEAD", "/api/v1/user/", "limit=24", ""),
    ("GET", f"/api/v1/books/{BOOK}/", "", ""), ("GET", f"/api/v1/author/{UNKNOWN}/", "", ""),
    ("GET", "/api/v1/books/not-a-uuid/", "", ""), ("GET", "/api/v1/books/12345/", "", ""),
    ("GET", "/api/v1/nothing/", "", ""), ("GET", "/", "", ""), ("GET", "/api/v2/books/", "", ""),
    ("GET", f"/api/v1/books/{BOOK}/extra/", "", ""), ("GET", "/_meta/site.json", "", ""),
    ("GET", "/api/v1/books/a.b/", "", ""), ("GET", "/api/v1/books/کتاب", "x=%DA%A9", ""), ("GET", "/api/v1", "", ""), ("GET", "/api/v1/books", "offset=24&limit=12", ""),
    ("GET", f"/api/v1/books/{BOOK}", "", ""), ("POST", "/api/v1/user", "limit=24", ""),
    ("OPTIONS", "/api/v1/", "", ""), ("OPTIONS", "/api/v1/user/", "", ""), ("OPTIONS", "/api/v1/books/", "", ""),
    ("OPTIONS", f"/api/v1/bookshelf/{UNKNOWN}/", "", ""), ("OPTIONS", "/api/v1/category/x/", "", ""),
    ("PUT", "/api/v1/books/", "", ""), ("DELETE", "/api/v1/bookshelf/", "limit=12", ""),
    ("PATCH", f"/api/v1/books/{BOOK}/", "", ""), ("POST", "/api/v1/books/", "", ""), ("POST", "/api/v1/", "", ""),
    ("TRACE", "/api/v1/books/", "", ""), ("POST", "/api/v1/user/", "", ""), ("POST", "/api/v1/bookshelf/", "", ""),
    ("GET", "/api/v1/schema/", "", ""), ("HEAD", "/api/v1/schema/", "limit=5", ""), ("GET", "/api/v1/schema", "x=1", ""),
    ("OPTIONS", "/api/v1/schema/", "", ""), ("POST", "/api/v1/schema/", "", ""), ("GET", "/api/v1/schema/x/", "", ""),
    ("GET", "/catalogue/api/v1/schema/", "", "/catalogue"),
    ("GET", "/catalogue/api/v1/books/", "offset=12", "/catalogue"), ("GET", "/api/v1/books/", "", "/catalogue"),
    ("GET", "/catalogue/api/v1/books", "", "/catalogue"),
]


def route_table() -> list[dict]:
    """Each request of REQUESTS with the answer of the route table, as JSON-ready data."""
    requests = [(*request, "")[:5] for request in REQUESTS]  # (the Accept header: none unless given)
    return [{"request": list(request), "answer": routed(*request)} for request in requests]


def routed(method: str, path: str, query: str, prefix: str, accept: str = "") -> dict:
    """The route table's answer to one request, as JSON-ready data."""
    from dataclasses import asdict

    from generator.api.routes import Bodies, resolve

    return {k: v.decode() if isinstance(v, bytes) else v
            for k, v in asdict(resolve(method, path, query, prefix, Bodies(), accept)).items()}


def served_files(site_root: Path, gz: bool = False, suffix: str = ".json") -> list[Path]:
    """Every JSON file (or .gz file, or with `suffix` another kind) a server sees under
    site/api, following the site's links. The .gz files are left out of the golden
    manifest: zlib versions may compress differently."""
    found = []
    for directory, _dirs, names in os.walk(site_root / "api", followlinks=True):
        found.extend(Path(directory) / name for name in names if name.endswith(".gz" if gz else suffix))
    return sorted(found)


def manifest(site_root: Path) -> str:
    """The JSON documents and the page indexes (api/pageindex.py) the hosts read."""
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(site_root)}"
             for p in served_files(site_root) + served_files(site_root, suffix=PAGE_INDEX)]
    return "\n".join(lines) + "\n"


def put_together(generation: Path, name: str, query: str) -> tuple[int, bytes]:
    """The status and body of a collection's page as the Python hosts make it (the file the
    query names plainly when it is there, else api/assemble.py): what every host answers."""
    from generator.api import assemble, meta
    from generator.api.params import Paging, plain_page
    from generator.api.querystring import TooManyFields
    from generator.api.serving import SiteInfo

    file = plain_page(name, query)
    if file is not None and (generation / file).is_file():
        return 200, (generation / file).read_bytes()
    info = SiteInfo.of_generation(generation)
    try:
        paging = Paging.read(name, query, info)
    except TooManyFields:
        return 400, meta.TOO_MANY_FIELDS

    def read(path: str) -> bytes | None:
        return (generation / path).read_bytes() if (generation / path).is_file() else None
    return 200, b"".join(assemble.answer(read, paging, info.page_size, f"{info.base_url}/api/v1/{name}/"))


PAGE_INDEX = ".idx"  # (generator.api.urls.PAGE_INDEX: this module imports nothing of the generator at its top)


def refresh() -> None:
    from generator.sitebuild import build

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "site"
        build(ROOT / "data", out)
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for name in FILES:
            target = GOLDEN / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((out / name).read_bytes())
        (GOLDEN / MANIFEST).write_text(manifest(out), encoding="utf-8")
    (GOLDEN / ROUTES).write_text(json.dumps(route_table(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"refreshed {len(FILES)} golden files, {MANIFEST} and {ROUTES} in {GOLDEN.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    refresh()
