"""schemathesis against the built-in server and nginx, from the OpenAPI document each serves at
/api/v1/schema/: every operation, POSTs included (with a write token, into a copy of the
sample data), every check but positive_data_acceptance, must find nothing.

positive_data_acceptance was left out when a page that was not pre-built answered 400
(docs/spec/query.md §1 since made every page answer 200); it has not been turned on again
and checked yet.
The run is kept short (MAX_EXAMPLES per operation, a fixed seed so that it repeats); set
CATALOGUE_FUZZ_EXAMPLES and CATALOGUE_FUZZ_SEED to fuzz longer or elsewhere.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from conftest import SAMPLE
from servers import WriteStack, runnable

MAX_EXAMPLES = os.environ.get("CATALOGUE_FUZZ_EXAMPLES", "20")
SEED = os.environ.get("CATALOGUE_FUZZ_SEED", "1")
EXCLUDED = "positive_data_acceptance"
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


@pytest.fixture(params=[pytest.param(kind, id=kind, marks=() if runnable(kind) else
                                     pytest.mark.skip(reason=f"{kind} is not installed"))
                        for kind in ("builtin", "nginx")])
def stack(request, tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "data")
    running = WriteStack.start(tmp_path / "data", tmp_path, request.param)
    yield running
    running.stop()


def test_schemathesis_finds_nothing(stack, tmp_path):
    url = f"http://127.0.0.1:{stack.server.port}"
    served = stack.server.get("/api/v1/schema/")
    assert served.status == 200
    # (from a file: loaded from its URL, schemathesis leaves out the operation that serves it)
    (tmp_path / "openapi.json").write_bytes(served.body)
    run = subprocess.run(
        [str(SCHEMATHESIS), "run", str(tmp_path / "openapi.json"), "--url", url,
         "--header", f"Authorization: Bearer {stack.token}", "--checks", "all", "--exclude-checks", EXCLUDED,
         "--max-examples", MAX_EXAMPLES, "--seed", SEED, "--no-color", "--generation-database", "none",
         "--report", "ndjson", "--report-dir", str(tmp_path / "report")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    # (no example database: in a new folder each run it never had one to replay, and writing it
    # cost a tenth of the run's processor time)
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
    paths = orjson.loads(served.body)["paths"].values()
    operations = sum(len(set(item) - {"description", "parameters"}) for item in paths)
    assert f"{operations} selected / {operations} total" in run.stdout  # every operation, POSTs included
    written = (stack.data / "users.yaml").read_text(encoding="utf-8")
    assert written != (SAMPLE / "users.yaml").read_text(encoding="utf-8"), "no POST was ever accepted"
