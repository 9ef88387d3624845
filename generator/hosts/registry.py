"""Every host, in one tuple: `catalogue build` writes what each needs, `catalogue serve
--server` offers each that serves here, and the tests' server fixtures take them from
here. A new host is a module with a `HOST` (contract.py) and its line below.
"""
from __future__ import annotations

from . import builtin, cloudflare, cloudfront, netlify, nginx, router
from .contract import Host

HOSTS: tuple[Host, ...] = (nginx.HOST, builtin.HOST, router.HOST, cloudflare.HOST, cloudfront.HOST, netlify.HOST)
BY_NAME = {host.name: host for host in HOSTS}


def servers() -> dict[str, Host]:
    """The hosts `catalogue serve --server` can run, by name."""
    return {host.name: host for host in HOSTS if host.serve is not None}
