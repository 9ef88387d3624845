"""hosts/files.py writes a host's file whole under a temporary name of its own writer: a server
writing its Worker's files as it starts and a build writing them at the same moment both
succeed, and neither leaves a temporary file behind; a file made once (the Netlify function's
key) is the same for every maker at once, never half-written."""
from __future__ import annotations

import os
import threading

from generator.api.urls import PUBLISHED
from generator.hosts import files, netlify


def at_once(write, writers: int = 4) -> list[BaseException]:
    """Runs write(n) in `writers` threads at once; what they raised."""
    raised: list[BaseException] = []

    def run(n: int) -> None:
        try:
            write(n)
        except BaseException as error:  # noqa: BLE001 (reported by the test)
            raised.append(error)
    threads = [threading.Thread(target=run, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return raised


def test_writers_of_one_file_at_once_each_replace_it_whole(tmp_path):
    path = tmp_path / "hosts" / "cloudflare" / "wrangler.toml"
    texts = {n: f"writer {n}\n" * 2000 for n in range(4)}

    def write(n: int) -> None:
        for round_ in range(200):
            files.replace(path, texts[n] + str(round_))
            files.replace_bytes(path.with_name("worker.bin"), texts[n].encode() + bytes([round_]))
    assert at_once(write) == []
    assert path.read_text(encoding="utf-8")[:-3].rstrip("0123456789") in texts.values()
    assert sorted(p.name for p in path.parent.iterdir()) == ["worker.bin", "wrangler.toml"]


def test_linkers_of_the_published_directories_at_once_each_link_them(tmp_path):
    site = tmp_path / "site"
    rounds, writers = 100, 4
    together = threading.Barrier(writers)

    def link(_: int) -> None:
        try:
            for round_ in range(rounds):
                together.wait()  # (every writer links a new directory at the same moment)
                files.link_published(tmp_path / f"publish-{round_}", site)
        except BaseException:
            together.abort()  # (the others stop waiting for this one)
            raise
    assert at_once(link, writers) == []
    for round_ in range(rounds):
        assert sorted(p.name for p in (tmp_path / f"publish-{round_}").iterdir()) == sorted(PUBLISHED)


def test_makers_of_the_netlify_key_at_once_each_get_the_one_kept(tmp_path):
    rounds, writers = 100, 4
    together = threading.Barrier(writers)
    keys: dict[int, set[str]] = {round_: set() for round_ in range(rounds)}

    def make(_: int) -> None:
        try:
            for round_ in range(rounds):
                together.wait()  # (every writer makes a new site's key at the same moment)
                keys[round_].add(netlify.file_key(tmp_path / str(round_) / netlify.KEY_FILE))
        except BaseException:
            together.abort()
            raise
    assert at_once(make, writers) == []
    for round_ in range(rounds):
        kept = (tmp_path / str(round_) / netlify.KEY_FILE).read_text(encoding="ascii").strip()
        assert keys[round_] == {kept} and len(kept) == 32
        assert os.listdir(tmp_path / str(round_)) == [netlify.KEY_FILE]
        assert (tmp_path / str(round_) / netlify.KEY_FILE).stat().st_mode & 0o777 == 0o600
