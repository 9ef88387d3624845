"""api/querystring.py's rules for the hosts that run JavaScript: one sequence of ES2020
declarations (`qsParse`, `qsLast`, `qsReadInt`, `qsLinksQuery`, `qsPaginate`; the
template's head says what each returns) that a host's template includes as it is.

The tables int() reads by, the white space around a number and the digits of every
script, are generated here from the Python module's own predicates, so that both
languages read numbers alike, with the Unicode version of this Python (not that of the
JavaScript engine).
"""
from __future__ import annotations

import array
import functools
import json
import re
import sys
import unicodedata

from ..api import querystring
from .files import templates


@functools.cache
def javascript() -> str:
    """The declarations, without imports or exports (a host's script or module includes them)."""
    return templates().get_template("querystring.js.j2").render(
        max_fields=querystring.MAX_FIELDS, max_digits=querystring.MAX_DIGITS,
        iri_safe=json.dumps(querystring.IRI_SAFE), spaces=json.dumps(spaces()),
        digit_zeros=json.dumps(digit_zeros()), unicode=unicodedata.unidata_version)


def spaces() -> list[int]:
    """Every code point int() strips around a number."""
    return [code for code in _candidates(r"\s") if querystring.is_space(chr(code))]


def digit_zeros() -> list[int]:
    """The digit zero of every run of decimal digits; each run is ten code points, 0 to 9
    (checked: the JavaScript reads a digit's value as its distance from the zero before it)."""
    digits = {code: value for code in _candidates(r"\d")
              if (value := querystring.digit_value(chr(code))) is not None}
    zeros = [code for code, value in digits.items() if value == 0]
    runs = {zero + value: value for zero in zeros for value in range(10)}
    if runs != digits:
        raise RuntimeError("this Python has decimal digits that are not runs of ten from 0 to 9")
    return zeros


def _candidates(pattern: str) -> list[int]:
    """The code points a regular expression class matches: `\\s` is str.isspace() and `\\d`
    str.isdecimal(), supersets of what the predicates accept, found faster than by calling
    them on every code point (the tests check that against every code point)."""
    return [found.start() for found in re.finditer(pattern, _every_character())]


@functools.cache
def _every_character() -> str:
    """Every code point in order, surrogates included (as UTF-32: three times faster than chr())."""
    codes = array.array("I", range(sys.maxunicode + 1))
    return codes.tobytes().decode(f"utf-32-{sys.byteorder[0]}e", "surrogatepass")
