"""make bench (writes): how long a POSTed record takes to be served (by nginx where it is
installed, else by the built-in server).

    python benchmarks/write_delay.py [--sizes 0,100000] [--workdir bench-work]

For each catalogue (0: the sample in data/; N: the synthetic one of N books that
bench.py makes), in a copy: build, start the write service and the server on free loopback
ports, then
  - one at a time, 20 POSTs of a user, each followed by GETs of its url until it is
    served: the delay from the 201 to the first 200 (median and worst);
  - a burst of 200 concurrent POSTs (16 at a time): the time until all are answered,
    until the collection's count includes them all, and the rebuilds it took.
Prints one table.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from servers import WriteService, WriteStack, runnable  # noqa: E402

KIND = "nginx" if runnable("nginx") else "builtin"


def measure(data: Path, work: Path) -> dict:
    stack = WriteStack.start(data, work, KIND)
    server, service = stack.server, stack.service
    headers = {"Authorization": f"Bearer {stack.token}", "Content-Type": "application/json"}
    base = json.loads(server.get("/api/v1/").body)["books"].split("/api/v1/")[0]

    def post(username: str):
        answer = server.request("POST", "/api/v1/user/", headers, json.dumps({"username": username}).encode())
        assert answer.status == 201, answer.body
        return json.loads(answer.body)["url"].removeprefix(base)

    def count() -> int:
        return json.loads(server.get("/api/v1/user/").body)["count"]

    try:
        delays = []
        for n in range(20):
            path = post(f"delay.{n}")
            answered = time.monotonic()
            while server.get(path).status != 200:
                time.sleep(0.01)
            delays.append(time.monotonic() - answered)
        expected = count() + 200
        builds_before = rebuilds(service)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(lambda n: post(f"burst.{n}"), range(200)))
        answered = time.monotonic() - started
        while count() < expected:
            time.sleep(0.02)
        served = time.monotonic() - started
        time.sleep(0.5)
        return {"median": statistics.median(delays), "worst": max(delays), "burst answered": answered,
                "burst served": served, "rebuilds": rebuilds(service) - builds_before}
    finally:
        stack.stop()


def rebuilds(service: WriteService) -> int:
    return service.log.read_text(errors="replace").count("rebuilt and published")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,100000")
    parser.add_argument("--workdir", default="bench-work", type=Path)
    args = parser.parse_args()
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        source = ROOT / "data" if size == 0 else args.workdir / f"data-{size}"
        if not source.is_dir():
            raise SystemExit(f"{source} is missing: run benchmarks/bench.py --sizes {size} first")
        work = args.workdir / f"writes-{size}-{time.time_ns()}"
        shutil.copytree(source, work / "data", ignore=shutil.ignore_patterns("*.orig"))
        try:
            rows.append((size, measure(work / "data", work)))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"served by {KIND}")
    print(f"{'books':>9}  {'POST→served median s':>20}  {'worst s':>7}  {'200 POSTs answered s':>20}  "
          f"{'all 200 served s':>16}  {'rebuilds':>8}")
    for size, r in rows:
        books = "sample" if size == 0 else f"{size:,}"
        print(f"{books:>9}  {r['median']:>20.2f}  {r['worst']:>7.2f}  {r['burst answered']:>20.2f}  "
              f"{r['burst served']:>16.2f}  {r['rebuilds']:>8}")


if __name__ == "__main__":
    main()
