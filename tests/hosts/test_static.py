"""A `--links paths` build on a host that serves files and nothing else (a plain file
server): a client that starts at api/v1/index.json and follows every link reaches every
record of every collection, and never needs a query string or a directory index."""
from __future__ import annotations

import functools
import json
import threading
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from generator.sitebuild import build
from servers import free_port

COUNTS = {"author": 19, "books": 42, "publisher": 7, "category": 14, "user": 8, "bookshelf": 12}


class Files(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # (quiet)
        pass


def test_every_record_is_reached_by_following_links_on_a_plain_file_server(data_dir: Path, tmp_path: Path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    site = tmp_path / "site"
    build(data_dir, site, base_url=base, links="paths")
    server = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Files, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    links: list[str] = []

    def get(url: str):
        links.append(url)
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())

    try:
        root = get(f"{base}/api/v1/index.json")
        assert list(root) == list(COUNTS)
        for name, url in root.items():
            page, seen, hops = get(url), [], 0
            while True:
                assert page["count"] == COUNTS[name]
                seen += page["results"]
                if page["next"] is None:
                    break
                page, hops = get(page["next"]), hops + 1
            assert len(seen) == COUNTS[name] == len({item["url"] for item in seen})
            for item in seen:  # every item is its detail document
                assert get(item["url"]) == item
            while page["previous"] is not None:
                page, hops = get(page["previous"]), hops - 1
            assert hops == 0 and page["results"] == seen[:len(page["results"])]
    finally:
        server.shutdown()
        thread.join()
    assert all(url.startswith(f"{base}/api/v1/") and url.endswith(".json") and "?" not in url for url in links)


def test_api_links_are_unchanged_by_default(data_dir: Path, tmp_path: Path):
    build(data_dir, tmp_path / "site")
    root = json.loads((tmp_path / "site/api/v1/index.json").read_bytes())
    assert root["books"] == "https://ketab.example.ir/api/v1/books/"
