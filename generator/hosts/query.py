"""The query backends (api/backends/) for the hosts that run JavaScript: each backend's
JavaScript twin, the file beside its module, rendered with the constants its Python side
gives (the white space DRF splits terms at, what str.lower() makes of each character, the
words of each 400, its index files' names), in the registry's order, then the JavaScript
registry `QY_BACKENDS` that `qySelect` (common.js.j2) iterates. Included by
templates/answers.js.j2 before templates/pages.js.j2.
"""
from __future__ import annotations

import functools
import json

from ..api import backends
from ..api.backends import BACKENDS, common
from .files import package_templates


@functools.cache
def javascript() -> str:
    """The declarations, without imports or exports (a host's script or module includes them)."""
    parts = [render("common", common.constants())]
    parts += [render(backend.name, backend.constants()) for backend in BACKENDS]
    parts.append(f"const QY_BACKENDS = [{', '.join(js_name(backend.name) for backend in BACKENDS)}];\n")
    return "\n".join(parts)


def js_name(module: str) -> str:
    """The object a backend's twin declares: `QY_SEARCH` for search.js.j2."""
    return f"QY_{module.upper()}"


def render(module: str, constants: dict) -> str:
    """A twin (beside the backends' modules) rendered with its constants: a constant it names and
    its module does not give fails the build."""
    return package_templates(backends.__name__, ".").get_template(f"{module}.js.j2").render(
        constants=json.dumps(constants))
