"""The test servers' ports (servers.free_port): never the same twice in one test run, and
held from the moment one is chosen until its server listens, so that no one else, this
process included, is handed it meanwhile."""
from __future__ import annotations

import socket
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
