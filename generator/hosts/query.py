"""api/filters.py and api/query.py for the hosts that run JavaScript: templates/query.js.j2
(`qySelect`, and the readings of search, ordering and filter values it is made of),
included by templates/pages.js.j2.

The tables the two languages must share are generated here from the Python modules: the
white space DRF splits terms at, what str.lower() makes of each character (so that both
fold case with this Python's Unicode, not the JavaScript engine's), the Persian folding,
the words of each 400 and the query indexes' file names.
"""
from __future__ import annotations

import functools
import json

from ..api import filters, queryindex
from ..api.query import ORDERING_PARAM, SEARCH_PARAM
from ..catalogue.querying import LOOKUPS, SEP, is_to_many, relations
from ..catalogue.resources import RESOURCES
from .files import templates

SIGMA = "\u03a3"  # lower-cased by its context (final or not): the JavaScript decides it as Python does


@functools.cache
def javascript() -> str:
    """The declarations, without imports or exports (a host's script or module includes them)."""
    return templates().get_template("query.js.j2").render(constants=json.dumps(constants(), ensure_ascii=True))


def constants() -> dict:
    return {
        "spaces": filters.SPACES, "spaceClass": "".join(f"\\u{ord(c):04x}" for c in filters.SPACES),
        "lower": lower_table(), "persian": {chr(k): v or "" for k, v in filters.PERSIAN.items()},
        "maxSearch": filters.MAX_SEARCH, "search": SEARCH_PARAM.name, "ordering": ORDERING_PARAM.name,
        "messages": {"nul": [filters.NUL_MESSAGE], "tooLong": filters.TOO_LONG, "invalid": filters.INVALID_UUID,
                     "unknownMany": filters.UNKNOWN_MANY, "unknownOne": filters.UNKNOWN_ONE},
        "block": queryindex.BLOCK, "buckets": queryindex.BUCKETS, "head": queryindex.HEAD, "whole": queryindex.WHOLE,
        "idPrefix": queryindex.ID_PREFIX, "lookups": LOOKUPS, "sep": SEP,
        "many": {r.name: {relation: is_to_many(r, relation) for relation in relations(r)} for r in RESOURCES},
        "files": {"text": queryindex.text_file("{name}", "{column}", "{block}"),
                  "keys": queryindex.keys_file("{name}", "{column}"),
                  "heads": queryindex.keys_file("{name}", "{column}", heads=True),
                  "any": queryindex.any_file("{name}", "{column}"),
                  "postings": queryindex.postings_file("{name}", "{column}", "{bucket}"),
                  "rank": queryindex.rank_file("{name}", "{field}", "{block}"),
                  "sorted": queryindex.sorted_file("{name}", "{field}", False, "{block}").replace("/asc/", "/{direction}/"),
                  "filter": queryindex.filter_file("{name}", "{relation}", "{prefix}")},
    }


# Every character with a lower case lies in the first two planes (the last, U+1E921, an Adlam
# capital): drawn from them alone, the table costs each build a hundredth of a second, not a
# tenth (tests/hosts/test_querystring_js.py draws it from every code point and compares).
CASED_BELOW = 0x20000


def lower_table(below: int = CASED_BELOW) -> dict[str, str]:
    """Every character str.lower() changes, but the capital sigma, and what it makes of it."""
    table = {}
    for code in range(below):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        lowered = char.lower()
        if lowered != char and char != SIGMA:
            table[char] = lowered
    return table
