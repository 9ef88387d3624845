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

OPENAPI = "openapi.json"  # the sample's OpenAPI document (api/openapi.py), with search and filters, indented


def openapi_document() -> str:
    """The sample's OpenAPI document with the search, ordering and filters of
    tests/query_probes.py (the sample has none, and they add parameters and 400 answers),
    indented for reading its diff (the build writes it compact)."""
    from dataclasses import replace

    from generator.api import openapi
    from generator.catalogue import load
    from query_probes import SETTINGS

    settings, _sources, _problems = load.read_catalogue(ROOT / "data", None)
    settings = replace(settings, query={**SETTINGS, "search_normalise": "persian"})
    return json.dumps(json.loads(openapi.encoded(settings)), ensure_ascii=False, indent=1) + "\n"


QUERYSTRING = "querystring.json"  # the golden query-string table: api/querystring.py and its JavaScript


def raw(text: str) -> str:
    """A query string whose non-ASCII characters arrive as raw UTF-8 bytes (one character a byte)."""
    return text.encode("utf-8").decode("latin-1")


BIG = "1" + "0" * 30  # 10**30
# Query strings read as request.GET and written back into DRF's links (docs/spec/query.md §1), each
# against 42 records, a default page of 10 (unlike the 12s the spellings write) and no max_limit;
# then SETTINGS' cases.
QUERIES = [
    # the site's own links and the spec's spellings of numbers
    "", "limit=12", "limit=12&offset=24", "offset=24&limit=12", "offset=24", "limit=5&offset=0",
    raw("limit=۱۲&offset=۲۴"), "limit=%DB%B1%DB%B2&offset=%DB%B2%DB%B4", raw("limit=١٢&offset=١٢"),
    "limit=%EF%BC%91%EF%BC%92", "limit=%F0%9D%9F%99%F0%9D%9F%9A", "limit=%E0%A5%A7%E0%A5%A8", "limit=1%D9%A2",
    "limit=%C2%B2", "limit=%F0%91%BD%91",  # a superscript; a Kawi digit (Unicode 15, not this Python's 14)
    "limit=1_2&offset=2_4", "limit=1__2", "limit=_12", "limit=12_", "limit=+_12", "limit=1_%D9%A2",
    "limit=+12+&offset=+24", "limit=%20%2B12%20", "limit=%2B12&offset=%2B24", "limit=+%2B12", "limit=%2B+12",
    "limit=%2B%2B12", "limit=%2D12", "limit=-12&offset=24", "limit=0&offset=24", "limit=-0&offset=-0",
    "offset=-5", "offset=-0", "limit=012&offset=0024", "limit=%31%32", "limit=1.0", "limit=1e2", "limit=0x10",
    "limit=12abc", "limit=abc&offset=abc", "limit=%E3%80%8012%E3%80%80&offset=%C2%A024%C2%85",
    "limit=%0B12%0C&offset=%0924%0D%0A", "limit=%1C12", "limit=12%1F", "limit=%E2%80%8B12", "limit=%EF%BB%BF12",
    "limit=%E1%A0%8E12", "limit=%2012%00", "limit=1%202",
    f"limit={BIG}&offset={BIG}", f"offset={BIG}", f"limit=5&offset={BIG}", f"limit={BIG}",
    "offset=" + "9" * 4300, "offset=" + "9" * 4301, "limit=" + "0" * 4299 + "5", "limit=" + "0" * 4300 + "5",
    "offset=1" + "_0" * 4299, "offset=1" + "_0" * 4300, "limit=" + "%DB%B5" * 4301,
    # repeated parameters: the last counts, the links keep every value
    "limit=24&limit=12&offset=24", "offset=36&offset=24&limit=12", "a=1&a=2&limit=5&offset=5",
    "a=2&b=1&a=1&offset=20", "limit=5&limit=abc", "offset=24&offset=", "limit=7&LIMIT=5&xlimit=3",
    # other parameters are kept, sorted by name (code points)
    "utm_source=x&offset=24", "limit=12&offset=24&utm_source=x&utm_medium=y", "search=x&ordering=-title&offset=12",
    "B=1&a=2&_=3&~=4&offset=24", raw("Ａ=1&😀=2&offset=24"), "%EF%BC%A1=1&%F0%9F%98%80=2&offset=24",
    # blank values, names without '=', empty fields
    "q=&offset=24", "limit=&offset=24", "offset=", "=&offset=24", "=x&offset=24", "flag&offset=24",
    "limit&offset=24", "offset", "&&limit=5&&offset=10&&", "&", "&=&", "==&offset=24", "a==b&offset=24",
    # spaces, `+`, and what quote_plus escapes
    "q=a+b&offset=24", "q=a%20b&offset=24", "q+x=1&offset=24", "q=a%2Bb&offset=24", "q=a b&offset=24",
    "q=!'()*&offset=24", "q=%21%27%28%29%2A&offset=24", "q=~-._&offset=24", "q=%7E%2D&offset=24",
    "q=[]@:/$,&offset=24", "q=\"<>\\^`{|}&offset=24", "q=\x01\x7f&offset=24", "q=\t\r\n&offset=24", "q=?&offset=24",
    "?limit=5&offset=10",
    # percent-escaped names
    "li%6Dit=5&offset=10", "%6C%69%6D%69%74=5&%6f%66%66%73%65%74=10", "%6Cimit=5&limit=7&offset=14",
    "LIMIT=5&offset=10",
    # escapes that are not UTF-8, and malformed escapes
    "q=%FF&offset=24", "q=%C0%80&offset=24", "q=%C1%BF&offset=24", "q=%E0%80%80&offset=24", "q=%ED%A0%80&offset=24",
    "q=%ED%BF%BF&offset=24", "q=%F4%90%80%80&offset=24", "q=%F5%80&offset=24", "q=%E2%82&offset=24",
    "q=%E2%82a&offset=24", "q=%F0%9F%98&offset=24", "q=%80%BF&offset=24", "q=%C3%28&offset=24",
    "q=%EF%BB%BF&offset=24", "q=%EF%BB%BFx&offset=24", "q=%e2%82%ac&offset=24", "q=%E2%82%AC&offset=24",
    "q=%ED%9F%BF%F4%8F%BF%BF&offset=24",
    "q=%&offset=24", "q=%2&offset=24", "q=%G1&offset=24", "q=%%41&offset=24", "q=100%&offset=24", "q=%2g&offset=24",
    "q=%%&offset=24", "%=%&offset=24",
    # raw bytes: UTF-8 (read as such, written back as mojibake) and not (read as latin-1)
    raw("q=کتاب&offset=24"), raw("کتاب=1&offset=24"), "q=\xe9&offset=24", "q=\xe9&x=%D9%83&offset=24",
    raw("q=%C3کتاب&offset=24"), "q=\xd9\x83\xe9&offset=24", raw("q=\ufeff&offset=24"), "q=%D9\xe9%83&offset=24",
    "q=%C3\xa9&offset=24", raw("q=%C3©&offset=24"), "q=\xc3&offset=24", "q=\xed\xa0\x80&offset=24",
    "q=\xf0\x9f\x98\x80&offset=24", raw("limit=۱۲&offset=24&q=کتاب"),
    # `;` is no separator (Python 3.10+)
    "a=1;limit=5&offset=24", "limit=5;offset=24", "limit=5&offset=24;x=1",
    # `#` (a raw request can send it): request.GET keeps it in the value, the links end the query there
    "a=1#b&limit=5&offset=10", "limit=5#", "limit=5#x", "#", "offset=24#frag%20x", "offset=24#=", "a#=1&offset=24",
    # more fields than Django reads
    "&" * 999, "&" * 1000, "a=1&" * 999 + "limit=5", "a=1&" * 1000 + "limit=5",
]
# (query, count, default limit, max_limit): past the end, empty collections, DRF's clamp.
SETTINGS = [
    ("offset=42", 42, 12, None), ("offset=43", 42, 12, None), ("offset=1000", 42, 12, None),
    ("limit=10&offset=45", 42, 12, None), ("limit=100&offset=30", 42, 12, None), ("limit=30&offset=12", 42, 12, None),
    ("limit=12&offset=30", 42, 12, None), ("limit=12&offset=31", 42, 12, None), ("limit=42", 42, 12, None),
    ("limit=41", 42, 12, None), ("offset=41&limit=1", 42, 12, None),
    ("", 0, 12, None), ("offset=5", 0, 12, None), ("limit=5&offset=5", 0, 12, None), ("offset=12", 12, 12, None),
    ("", 12, 12, None), ("", 13, 12, None),
    ("limit=500", 1000, 12, 100), ("limit=100", 1000, 12, 100), ("limit=101&offset=950", 1000, 12, 100),
    ("limit=abc", 1000, 12, 10), ("", 1000, 12, 10), ("limit=0", 1000, 12, 10), ("limit=-5", 1000, 12, 10),
    ("limit=11&offset=5", 1000, 12, 10), (f"limit={BIG}&offset=20", 1000, 24, 50), ("limit=500", 1000, 12, 0),
    (f"limit={BIG}", 10**15, 12, None), (f"offset={BIG}&limit=5", 10**15, 12, None),
    ("limit=5&offset=999999999999998", 10**15, 12, None), ("limit=5&offset=999999999999999", 10**15, 12, None),
    ("utm_source=x&limit=500&offset=400", 1000, 24, 100), (raw("q=کتاب&limit=۵۰۰"), 1000, 24, 100),
    ("a=1#b&limit=500&offset=999", 1000, 24, 100),
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


def querystring_table() -> list[dict]:
    """Each case of QUERIES and SETTINGS with the answer of Django and DRF, as JSON-ready data."""
    from querystring_reference import answer

    cases = [(query, 42, 10, None) for query in QUERIES] + SETTINGS
    return [{"query": query, "count": count, "default_limit": default, "max_limit": most,
             "answer": answer(query, count, default, most)} for query, count, default, most in cases]


FILTERS = GOLDEN / "filters.json"
# Values of search, ordering and filters as clients send them, hostile ones too.
SEARCH_CASES = ["", " ", "a b", "a,b", ",a,,b,", '"a b" c', "'a b',c", '"a \\"b\\" c"', "\"", "'", '"a', "a\u200cb،c",
                "a\u3000b\x1cc\x85d", "ΣΑΣ Σ", "ΑΣ ΑΣΑ Α\u0301Σ\u0301", "İstanbul", "ﬁ ß", "كتاب عربي", "کتـــاب", "دَرس ۱۲٣",
                "\u2028", "x" * 3,
                "ʰΣ aʰΣ"]  # (ʰ is cased and case-ignorable: skipped, so no cased letter comes before the first Σ)
UUID_CASES = ["", "nope", "00000000-0000-4000-8000-000000000000", "00000000000040008000000000000000",
              "{00000000-0000-4000-8000-000000000000}", "urn:uuid:00000000-0000-4000-8000-00000000000A",
              " 00000000000040008000000000000000 ", "+0000000000040008000000000000000", "0_000000000040008000000000000000",
              "٠0000000000040008000000000000000", "０0000000000040008000000000000000", "-00000000000040008000000000000000",
              "uuid:{{00000000-0000-4000-8000-000000000000}}", "urn:00000000-0000-4000-8000-000000000000-",
              "\u300000000000000040008000000000000000", "g0000000000040008000000000000000",
              " 0000000000040008000000000000001", "0000000000040008000000000000001 ", "\u3000000000000004000800000000000000",
              "                                ", "+", "0000000000000000000000000000000_", "00000000000000000000000000000000",
              "+1" + "0" * 30]  # (a sign, then a first digit the sign's removal must keep)
ORDERING_CASES = ["", "title", "-title", " -title ,pages", "--title", "-", "title,,nope", "\u3000pages\x1c"]


# Terms and the key of the term index each looks up under each lookup (api/backends/search_index._lookup),
# the splitting of a term into words (str.split()), and sets of positions as the index encodes them.
LOOKUP_TERMS = ["", "a", "ab", "abc", "کتاب", "تا", "𝔫", "𝔘𝔫𝔦", " a", "x" * 40]
WORD_TERMS = ["a b", " a", "a\u3000\x1cb ", "\u200c", "کتاب\u2028ها", "\x85\xa0", "a\u200bb"]
SETS = [([], 1), ([0], 1), ([5], 9), ([70000], 70001), ([1, 2, 3, 65535, 65536, 200000], 200001),
        (list(range(0, 300, 2)), 300), (list(range(100)), 100), (list(range(100)), 1000)]


def _set_bytes(positions: list[int], count: int) -> str:
    from generator.api.backends.search_index import encode_set
    out = bytearray()
    encode_set(positions, out)
    return out.hex()


def filters_table() -> dict:
    """Python's readings of the cases: each backend's (api/backends/), for their JavaScript twins."""
    from generator.api.backends.common import fold
    from generator.api.backends.ordering import Ordering
    from generator.api.backends.relations import uuid_text
    from generator.api.backends.search import smart_terms
    from generator.api.backends.search_index import _lookup, search_field
    return {"lookups": [[term, spec, *_lookup(term, search_field(spec))] for term in LOOKUP_TERMS
                        for spec in ("title", "^title", "=title")],
            "sets": [[_set_bytes(positions, count), count, positions] for positions, count in SETS],
            "words": [[term, term.split()] for term in WORD_TERMS],
            "terms": [[text, smart_terms(text)] for text in SEARCH_CASES],
            "fold": [[text, n, fold(text, n)] for text in SEARCH_CASES for n in (None, "persian")],
            "uuid": [[text, uuid_text(text)] for text in UUID_CASES],
            "ordering": [[text, [list(f) for f in Ordering().fields(text, ["title", "pages"])]] for text in ORDERING_CASES]}


def write_filters_table() -> None:
    FILTERS.write_text(json.dumps(filters_table(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def write_querystring_table() -> None:
    """One case a line: the table is read by eye."""
    lines = [json.dumps(case, ensure_ascii=False) for case in querystring_table()]
    (GOLDEN / QUERYSTRING).write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")


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
    from generator.api.backends import PAGINATION, Rejected
    from generator.api.querystring import TooManyFields
    from generator.api.serving import SiteInfo

    file = PAGINATION.plain_page(name, query)
    if file is not None and (generation / file).is_file():
        return 200, (generation / file).read_bytes()
    info = SiteInfo.of_generation(generation)
    try:
        paging = PAGINATION.read(name, query, info)
    except TooManyFields:
        return 400, meta.TOO_MANY_FIELDS

    def read(path: str) -> bytes | None:
        return (generation / path).read_bytes() if (generation / path).is_file() else None
    try:
        return 200, b"".join(assemble.answer(read, paging, info, f"{info.base_url}/api/v1/{name}/"))
    except Rejected as rejected:
        return 400, rejected.encoded()


def golden_routes(prefix: str = "") -> list[dict]:
    """The golden request table (ROUTES) as every host's tests read it: its requests for a site
    whose base_url has this path prefix (the sample's has none)."""
    return [entry for entry in json.loads((GOLDEN / ROUTES).read_text(encoding="utf-8"))
            if entry["request"][3] == prefix]


def golden_answer(generation: Path, query: str, answer: dict) -> tuple[int, bytes]:
    """The status and body every host answers to a request of the golden request table
    (ROUTES) that is not a redirect, given the route table's `answer` to it, with no write
    service behind the host: the file it names, the page put together, or the answer for a
    missing file."""
    from generator.api import meta

    file = answer["file"]
    if answer["forward"]:
        return 503, meta.WRITE_UNAVAILABLE
    if answer["page"] is not None:
        return put_together(generation, answer["page"], query)
    if file is not None and (generation / file).is_file():
        return 200, (generation / file).read_bytes()
    if file is not None:
        missing = answer["missing_file"]
        return answer["missing_status"], (generation / missing).read_bytes() if missing else answer["body"].encode()
    return answer["status"], answer["body"].encode()


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
    (GOLDEN / OPENAPI).write_text(openapi_document(), encoding="utf-8")
    write_querystring_table()
    write_filters_table()
    print(f"refreshed {len(FILES)} golden files, {MANIFEST}, {ROUTES}, {OPENAPI} and {QUERYSTRING} in "
          f"{GOLDEN.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    refresh()
