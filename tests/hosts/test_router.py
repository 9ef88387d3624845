"""The generated JavaScript router (for Workers, CloudFront and Edge Functions) decides as
the route table does: the golden request table, run in Node."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from generator.hosts.router import javascript
from golden_files import GOLDEN, ROUTES
from servers import runnable

pytestmark = pytest.mark.skipif(not runnable("node"), reason="node is not installed")

RUN = """
const table = JSON.parse(require("fs").readFileSync(0, "utf8"));
const routers = {};
const answers = table.map(({request: [method, path, query, prefix, accept]}) => {
  routers[prefix] = routers[prefix] || require(process.argv[1] + (prefix ? "-prefixed" : "") + ".js");
  return routers[prefix].route(method, path, query, accept);
});
process.stdout.write(JSON.stringify(answers));
"""
DEFAULTS = {"status": 200, "body": None, "file": None, "missingStatus": 404, "missingFile": None, "location": None,
            "forward": False, "allow": "", "page": None}


def test_the_router_answers_as_the_golden_request_table(tmp_path):
    table = json.loads((GOLDEN / ROUTES).read_text(encoding="utf-8"))
    prefixes = {entry["request"][3] for entry in table}
    assert prefixes == {"", "/catalogue"}
    export = "\nmodule.exports = {route: route};\n"  # (the hosts' router is a part of an ES module: this, a script)
    (tmp_path / "router.js").write_text(javascript("") + export, encoding="utf-8")
    (tmp_path / "router-prefixed.js").write_text(javascript("/catalogue") + export, encoding="utf-8")
    done = subprocess.run(["node", "-e", RUN, str(tmp_path / "router")], input=json.dumps(table),
                          capture_output=True, text=True, check=True)
    for entry, got in zip(table, json.loads(done.stdout), strict=True):
        answer = {**DEFAULTS, **got}
        expected = entry["answer"]
        assert {"status": answer["status"], "body": answer["body"], "file": answer["file"],
                "missing_status": answer["missingStatus"], "missing_file": answer["missingFile"],
                "location": answer["location"], "forward": answer["forward"], "allow": answer["allow"],
                "page": answer["page"]} == expected, entry["request"]


def test_the_router_is_es5():
    """No arrow functions, let/const, template literals, classes or named groups."""
    code = re.sub(r"(?m)^//.*$", "", javascript(""))  # (comment lines aside)
    assert not re.search(r"=>|\blet\b|\bconst\b|`|\bclass\b|\(\?<", code)


def test_the_router_fits_a_cloudfront_function():
    """CloudFront Functions take at most 10 KB of code."""
    assert len(javascript("/a/longer/path/prefix").encode("utf-8")) <= 10 * 1024
