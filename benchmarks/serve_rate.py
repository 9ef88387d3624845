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

from workload import catalogue, user_build  # noqa: E402
from servers import SERVERS, Server, runnable  # noqa: E402



class EachOnce:
    """Pages of 12 put together, each request another: the n-th asks for offset
    12 * (n mod pages) + 1 + (n div pages) mod 11, never a multiple of 12, so no page
    comes twice before pages * 11 requests; `run` (a parameter of this run's own) keeps
    a host from answering with a page it kept from an earlier run."""

    def __init__(self, pages: int) -> None:
        self.pages, self.prefix = pages, f"/api/v1/books/?run={time.time_ns()}&limit=12&offset="

    def __getitem__(self, n: int) -> str:
        return f"{self.prefix}{12 * (n % self.pages) + 1 + n // self.pages % 11}"

    def lua(self) -> str:
        """The same in wrk's script: each thread from its own place."""
        return (f"local threads = 0\n"
                f"function setup(thread) thread:set('n', threads * {self.pages * 11 // 2}); threads = threads + 1 end\n"
                f"function request() n = n + 1; return wrk.format(nil, '{self.prefix}' .. "
                f"(12 * (n % {self.pages}) + 1 + math.floor(n / {self.pages}) % 11)) end\n")


def nth(path: str | EachOnce, n: int) -> str:
    """The path of the n-th request."""
    return path[n] if isinstance(path, EachOnce) else path


def wrk(port: int, path: str | EachOnce, seconds: int, headers: dict[str, str]) -> tuple[float, float | None]:
    """Requests/s and the 99th percentile of latency in ms."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(path.lua() if isinstance(path, EachOnce) else "")
        script.flush()
        command = ["wrk", "-t2", "-c16", "--latency", f"-d{seconds}s", "-s", script.name,
                   *(a for k, v in headers.items() for a in ("-H", f"{k}: {v}")), f"http://127.0.0.1:{port}{nth(path, 0)}"]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    p99 = re.search(r"99%\s+([0-9.]+)(us|ms|s)\b", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    return float(re.search(r"Requests/sec:\s+([0-9.]+)", out)[1]), float(p99[1]) * scale[p99[2]] if p99 else None


def python_client(port: int, path: str | EachOnce, seconds: int, headers: dict[str, str]) -> tuple[float, None]:
    """Keep-alive GETs from 8 threads: a lower bound (the client shares the machine's cores)."""
    done, stop = [0] * 8, time.monotonic() + seconds

    def worker(k: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port)
        while time.monotonic() < stop:
            connection.request("GET", nth(path, done[k] * 8 + k), headers=headers)
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
    user_build(data, site)  # (a no-op when the last run built it)
    load = wrk if shutil.which("wrk") else python_client
    if load is python_client:
        print("wrk is not installed: measuring with a Python client (a lower bound)", file=sys.stderr)
    middle = args.books // 2 // 12 * 12  # (a page deep in the collection, past the first blocks)
    page, made = f"/api/v1/books/?limit=12&offset={middle}", f"/api/v1/books/?limit=12&offset={middle + 5}"
    cases = [("pre-built", page, {}), ("put together", made, {}), ("pre-built gzip", page, {"Accept-Encoding": "gzip"}),
             ("put together gzip", made, {"Accept-Encoding": "gzip"}), ("detail", None, {}),
             ("put together, each once", EachOnce(args.books // 12), {})]
    rows = []
    for kind in args.servers.split(","):
        if not runnable(kind):
            print(f"{kind} is not installed: not measured", file=sys.stderr)
            continue
        server = Server(site, kind=kind)
        try:
            detail = json.loads(server.get(page).body)["results"][0]["url"].split("://", 1)[1].split("/", 1)[1]
            rates = []
            for _, path, headers in cases:
                if not isinstance(path, EachOnce):  # (once first: what the server reads the first time is read)
                    server.get(path or f"/{detail}")
                rates.append(load(server.port, path or f"/{detail}", args.seconds, headers))
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
