"""The hosts' templates are compiled once: a later build loads what an earlier one compiled
(hosts/files.py keeps it in the user's cache directory)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPILES = """
import json, sys, jinja2
from generator.hosts import files
compiled = []
compile = jinja2.Environment.compile
def noted(self, source, name=None, *rest, **more):
    compiled.append(name)
    return compile(self, source, name, *rest, **more)
jinja2.Environment.compile = noted
files.templates().get_template(sys.argv[1])
print(json.dumps(compiled))
"""


def compiled_in_a_build(template: str, cache: Path) -> list[str]:
    """The templates a fresh process compiles to load `template` (its cache directory given)."""
    found = subprocess.run([sys.executable, "-c", COMPILES, template], cwd=ROOT, check=True, capture_output=True,
                           env={**os.environ, "XDG_CACHE_HOME": str(cache)}, text=True)
    return json.loads(found.stdout)


def test_a_later_build_loads_the_templates_an_earlier_one_compiled(tmp_path):
    first, other = tmp_path / "first", tmp_path / "other"
    assert "worker.js.j2" in compiled_in_a_build("worker.js.j2", first)
    assert compiled_in_a_build("worker.js.j2", first) == []
    assert "worker.js.j2" in compiled_in_a_build("worker.js.j2", other)  # (none kept there)
