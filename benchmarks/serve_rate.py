"""make bench (serving): requests per second of each server on the same files.

    python benchmarks/serve_rate.py [--books 20000] [--seconds 8] [--workdir bench-work]

Builds a synthetic catalogue of N books (cached by size), then for each server installed
(the built-in one; nginx, the Cloudflare Worker in workerd and the others, where installed)
starts `catalogue serve` on a free loopback port and loads it with wrk (2 threads, 16
connections) on: a pre-built page of 12 books, a page of 12 put together at request time
(an offset that is not a multiple of 12: docs/spec/query.md §1), each also gzipped, a book's
detail document, and pages of 12 put together each asked for once (every request another
offset: what a host that keeps the pages it put together, as nginx does, has not kept).
Prints requests/s and the 99th percentile of latency of each, and the put-together pages
against the pre-built one. Without wrk it says so and uses a small Python client instead,
which gives a lower bound (and no latency).
"""
from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from generator.sitebuild import build  # noqa: E402
from workload import catalogue  # noqa: E402
from servers import SERVERS, Server, runnable  # noqa: E402



# wrk's script for a list of paths: each thread asks for them in turn, from its own place.
ROTATE = """
paths = {%s}
local threads = 0
function setup(thread) thread:set("at", threads * #paths // 2); threads = threads + 1 end
function request() at = at %% #paths + 1; return wrk.format(nil, paths[at]) end
"""


def wrk(port: int, path: str | list[str], seconds: int, headers: dict[str, str]) -> tuple[float, float | None]:
    """Requests/s and the 99th percentile of latency in ms (a list of paths: asked for in turn)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(ROTATE % ",".join(f'"{p}"' for p in path) if isinstance(path, list) else "")
        script.flush()
        command = ["wrk", "-t2", "-c16", "--latency", f"-d{seconds}s", "-s", script.name,
                   *(a for k, v in headers.items() for a in ("-H", f"{k}: {v}")),
                   f"http://127.0.0.1:{port}{path[0] if isinstance(path, list) else path}"]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    p99 = re.search(r"99%\s+([0-9.]+)(us|ms|s)\b", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    return float(re.search(r"Requests/sec:\s+([0-9.]+)", out)[1]), float(p99[1]) * scale[p99[2]] if p99 else None


def python_client(port: int, path: str | list[str], seconds: int, headers: dict[str, str]) -> tuple[float, None]:
    """Keep-alive GETs from 8 threads: a lower bound (the client shares the machine's cores)."""
    done, stop = [0] * 8, time.monotonic() + seconds
    paths = path if isinstance(path, list) else [path]

    def worker(k: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port)
        while time.monotonic() < stop:
            connection.request("GET", paths[(done[k] * 8 + k) % len(paths)], headers=headers)
            connection.getresponse().read()
            done[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / seconds, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--books", type=int, default=20000)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--workdir", default="bench-work", type=Path)
    parser.add_argument("--servers", default=",".join(SERVERS), help="which, comma-separated (default: all)")
    args = parser.parse_args()
    work = args.workdir.absolute()
    data = catalogue(work, args.books)
    site = work / f"serve-site-{args.books}"
    build(data, site)
    load = wrk if shutil.which("wrk") else python_client
    if load is python_client:
        print("wrk is not installed: measuring with a Python client (a lower bound)", file=sys.stderr)
    middle = args.books // 2 // 12 * 12  # (a page deep in the collection, past the first blocks)
    page, made = f"/api/v1/books/?limit=12&offset={middle}", f"/api/v1/books/?limit=12&offset={middle + 5}"
    pages = args.books // 12
    run = time.time_ns()  # (a parameter of this run's own: no page a host kept from an earlier one)
    once = [f"/api/v1/books/?limit=12&offset={12 * n + k}&run={run}"
            for n in range(0, pages, max(1, pages // 2000)) for k in range(1, 12)]
    cases = [("pre-built", page, {}), ("put together", made, {}), ("pre-built gzip", page, {"Accept-Encoding": "gzip"}),
             ("put together gzip", made, {"Accept-Encoding": "gzip"}), ("detail", None, {}),
             ("put together, each once", once, {})]
    rows = []
    for kind in args.servers.split(","):
        if not runnable(kind):
            print(f"{kind} is not installed: not measured", file=sys.stderr)
            continue
        server = Server(site, kind=kind)
        try:
            detail = json.loads(server.get(page).body)["results"][0]["url"].split("://", 1)[1].split("/", 1)[1]
            rates = [load(server.port, path or f"/{detail}", args.seconds, headers) for _, path, headers in cases]
        finally:
            server.stop()
        rows.append((kind, rates))
    print(f"{args.books:,} books, {'wrk -t2 -c16' if load is wrk else 'Python client'}, {args.seconds} s each; "
          "requests/s (p99 ms)")
    head = ["server", *(name for name, _, _ in cases), "put together / pre-built", "each once / pre-built"]
    lines = [head] + [[kind, *(f"{rate:,.0f}" + (f" ({p99:.1f})" if p99 is not None else "") for rate, p99 in rates),
                       f"{rates[1][0] / rates[0][0]:.2f}", f"{rates[5][0] / rates[0][0]:.2f}"] for kind, rates in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    print("\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines))


if __name__ == "__main__":
    main()
