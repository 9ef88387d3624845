"""The test servers' ports (servers.free_port): never the same twice in one test run, and
held from the moment one is chosen until its server listens, so that no one else, this
process included, is handed it meanwhile."""
from __future__ import annotations

import socket
import subprocess
import sys
from types import SimpleNamespace

import pytest

from servers import free_port, release, wait_for_port


def test_a_port_is_never_handed_out_twice():
    ports = [free_port() for _ in range(20)]
    for port in ports:
        release(port)  # (let go: the kernel may well offer it again)
    ports += [free_port() for _ in range(20)]
    assert len(set(ports)) == len(ports)
    for port in ports:
        release(port)


def test_a_held_port_is_left_to_its_server_alone():
    port = free_port()
    stranger = socket.socket()  # (what another program binding this port explicitly would meet)
    with pytest.raises(OSError):
        stranger.bind(("127.0.0.1", port))
    stranger.close()
    others = [socket.socket() for _ in range(200)]
    for other in others:  # ports the kernel picks for anyone else
        other.bind(("127.0.0.1", 0))
    assert port not in {other.getsockname()[1] for other in others}
    for other in others:
        other.close()
    server = socket.socket()  # a server binds it as every server here does, with SO_REUSEADDR
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    wait_for_port(port, SimpleNamespace(poll=lambda: None), "the server")  # (and the port is let go)
    server.close()
    rebound = socket.socket()
    rebound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rebound.bind(("127.0.0.1", port))  # (nothing holds it any more)
    rebound.close()


HELD_ELSEWHERE = """
import sys
from servers import free_port
ports = [free_port() for _ in range(int(sys.argv[1]))]
print(" ".join(map(str, ports)), flush=True)
sys.stdin.read()  # (held until told to go)
"""


def test_ports_held_by_one_process_are_never_handed_to_another():
    """As pytest-xdist's workers ask at once: what one worker holds, the kernel offers no other,
    however many it asks for (the probes all set SO_REUSEADDR, as the servers do)."""
    from conftest import ROOT

    mine = {free_port() for _ in range(50)}
    other = subprocess.Popen([sys.executable, "-c", HELD_ELSEWHERE, "3000"], cwd=ROOT / "tests",
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        theirs = set(map(int, other.stdout.readline().split()))
        assert len(theirs) == 3000 and not mine & theirs  # (unheld, some 50 of ~28,000 would be among 3,000)
        more = {free_port() for _ in range(50)}
        assert not more & theirs
    finally:
        other.communicate("")
    for port in mine | more:
        release(port)


def test_nginx_page_service_port_is_held_until_the_service_listens(tmp_path):
    """Where the page service's socket path would be too long, nginx reaches it on a loopback
    port, held from the moment it is chosen: the kernel offers it no one else meanwhile."""
    from generator.hosts.nginx import PageService

    run = tmp_path / ("r" * PageService.SOCKET_PATH_MAX)
    run.mkdir()
    service = PageService.beside(run)
    assert service.socket is None and service.address == f"127.0.0.1:{service.port}"
    others = []
    for _ in range(3000):  # (let go at once, it was among them four times in ten)
        other = socket.socket()
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("127.0.0.1", 0))
        others.append(other)
    assert service.port not in {other.getsockname()[1] for other in others}
    for other in others:
        other.close()
    service.release()
    rebound = socket.socket()
    rebound.bind(("127.0.0.1", service.port))  # (let go: anyone may have it now)
    rebound.close()


def test_nginx_serves_pages_put_together_through_a_page_service_on_a_port(tmp_path):
    """The same, end to end: a site whose run directory is too deep for a Unix socket."""
    from conftest import SAMPLE
    from generator.sitebuild import build
    from servers import Server, runnable

    if not runnable("nginx"):
        pytest.skip("nginx is not installed")
    site = tmp_path / ("d" * 100) / "site"
    build(SAMPLE, site)
    server = Server(site, kind="nginx")
    try:
        answer = server.get("/api/v1/books/?limit=5&offset=3")  # (no file holds it: the page service puts it together)
        assert answer.status == 200 and b'"count":42' in answer.body.replace(b" ", b"")
        assert not (site / ".run" / "pages.sock").exists()
    finally:
        assert server.stop() == 0


def test_a_server_that_ends_before_listening_says_why(tmp_path):
    port, log = free_port(), tmp_path / "server.log"
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit('FileExistsError: the key')"],
                               stdout=log.open("ab"), stderr=subprocess.STDOUT)
    with pytest.raises(RuntimeError, match=f"ended \\(exit code 1\\) before listening on port {port}: "
                                           "FileExistsError: the key"):
        wait_for_port(port, process, "the server", log=log)
    release(port)
