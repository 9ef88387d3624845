"""make bench (nginx): the generated configuration against a bare nginx on the same file.

    python benchmarks/nginx_bare.py [--books 20000] [--rounds 5] [--seconds 4] [--workdir bench-work]

The same files, built by `catalogue build`, are served twice, by `catalogue serve --server
nginx` (the route table: query string to file) and by a bare nginx whose only rule is
`try_files $uri` (asked for the file's own path), both rooted at the site's `current` link,
each in a session of its own, both answering the same bytes (checked), both with one worker,
gzip_static, pcre_jit and a buffered access log: a page deep in the collection (plain and
gzipped), a book's detail document and the collection's first page. wrk (2 threads, 32 connections) loads them in turns, the two alternating, so that
the machine's drift falls on both; each figure is the median of the rounds. The workers'
CPU time (user + system, from /proc) divided by the requests served gives the cost of one
request. Prints one table.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from generator.api.urls import CURRENT, detail_file, page_file  # noqa: E402
from generator.hosts.nginx import find_nginx  # noqa: E402
from generator.system import stop_with_parent  # noqa: E402
from workload import catalogue, user_build  # noqa: E402
from servers import Server, children, free_port, wait_for_port  # noqa: E402

PAGE = "/api/v1/books/?limit=12&offset=120"
BARE = """worker_processes 1;
pcre_jit on;
pid "{run}/nginx.pid";
error_log "{run}/error.log" warn;
events {{ worker_connections 1024; }}
http {{
    access_log "{run}/access.log" combined buffer=64k flush=1s;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    types {{ application/json json; }}
    default_type application/json;
    gzip_static on;
    server {{
        listen 127.0.0.1:{port};
        root "{root}";
        location / {{ try_files $uri =404; }}
    }}
}}
"""


CASES = ("page", "page, gzip", "detail", "first page")


def wrk(port: int, path: str, seconds: int, headers: dict[str, str]) -> tuple[float, int]:
    """Requests per second and requests served."""
    command = ["wrk", "-t2", "-c32", f"-d{seconds}s", *(a for k, v in headers.items() for a in ("-H", f"{k}: {v}")),
               f"http://127.0.0.1:{port}{path}"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([0-9.]+)", out)[1]), int(re.search(r"([0-9]+) requests in", out)[1])


def answer(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def check_same(asked: dict, served: dict) -> None:
    """Both answer each case with a 200 and the same bytes: a bare nginx answering a 404 (a
    file named wrongly) would be measured at twice the rate of the file."""
    for case, (path, file, headers) in asked.items():
        generated, bare = answer(served["generated"][0], path, headers), answer(served["bare"][0], f"/{file}", headers)
        if generated[0] != 200 or generated != bare:
            raise SystemExit(f"{case}: the generated configuration answers {generated[0]} ({len(generated[1])} bytes), "
                             f"the bare one {bare[0]} ({len(bare[1])} bytes): not the same file")


def cpu_seconds(pids: list[int]) -> float:
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def is_nginx(pid: int) -> bool:
    return Path(f"/proc/{pid}/comm").read_text().strip() == "nginx"


def workers(server: int) -> list[int]:
    """The worker processes of an nginx master, or of the master `catalogue serve` started
    (beside the page service it supervises, which is not nginx); not the cache manager and
    the cache loader, which comes and goes."""
    master = server if is_nginx(server) else next(pid for pid in children(server) if is_nginx(pid))
    return [pid for pid in children(master) if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"nginx: worker")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--books", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--workdir", default="bench-work", type=Path)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: nothing measured")
    work = args.workdir.absolute()
    data = catalogue(work, args.books)
    site = work / f"serve-site-{args.books}"
    user_build(data, site)  # (a no-op when the last run built it)
    generated = Server(site, kind="nginx")
    book = json.loads(generated.get(PAGE).body)["results"][0]["id"]
    asked = {"page": (PAGE, page_file("books", "12", "0", "120"), {}),
             "page, gzip": (PAGE, page_file("books", "12", "0", "120"), {"Accept-Encoding": "gzip"}),
             "detail": (f"/api/v1/books/{book}/", detail_file("books", book[:2], book), {}),
             "first page": ("/api/v1/books/", page_file("books", "default", "0", "0"), {})}
    run = work / "bare-nginx"
    (run / "tmp").mkdir(parents=True, exist_ok=True)
    port = free_port()
    (run / "nginx.conf").write_text(BARE.format(run=run, port=port, root=site / CURRENT))
    # In a session of its own, as `catalogue serve` runs the generated one's nginx, so that the
    # two are scheduled alike: the kernel shares the processors among sessions first (autogroup).
    bare = subprocess.Popen([find_nginx(), "-p", str(run), "-c", str(run / "nginx.conf"), "-g", "daemon off;"],
                            preexec_fn=stop_with_parent, start_new_session=True)
    try:
        wait_for_port(port, bare, "bare nginx")
        served = {"generated": (generated.port, workers(generated.process.pid)),
                  "bare": (port, workers(bare.pid))}
        check_same(asked, served)
        rates = {(who, case): [] for who in served for case in CASES}
        cost = {key: [] for key in rates}
        for _ in range(args.rounds):
            for case, (path, file, headers) in asked.items():
                for who, (at, pids) in served.items():
                    before = cpu_seconds(pids)
                    rate, requests = wrk(at, path if who == "generated" else f"/{file}", args.seconds, headers)
                    cost[who, case].append((cpu_seconds(pids) - before) / requests * 1e6)
                    rates[who, case].append(rate)
    finally:
        generated.stop()
        bare.terminate()
        bare.wait()
    print(f"{args.books:,} books, wrk -t2 -c32, median of {args.rounds} alternating runs of {args.seconds} s; "
          "requests/s (µs of the worker's CPU a request)")
    print(f"{'':>18}" + "".join(f"{case:>22}" for case in CASES))
    for who, label in (("generated", "generated config"), ("bare", "bare try_files")):
        print(f"{label:>18}" + "".join(f"{statistics.median(rates[who, c]):>13,.0f} ({statistics.median(cost[who, c]):>5.1f})"
                                       for c in CASES))
    print(f"{'generated / bare':>18}" + "".join(
        f"{statistics.median(rates['generated', c]) / statistics.median(rates['bare', c]):>22.2f}" for c in CASES))


if __name__ == "__main__":
    main()
