"""Every host, in one tuple: `catalogue build` writes what each needs (and the parts they
share) and takes the options each declares, `catalogue serve --server` offers each that
serves here, and the tests' server fixtures take them from here. A new host is a module
with a `HOST` (contract.py) and its line below.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from . import builtin, cloudflare, cloudfront, netlify, nginx
from .contract import Host, Local, Option

HOSTS: tuple[Host, ...] = (nginx.HOST, builtin.HOST, cloudflare.HOST, cloudfront.HOST, netlify.HOST)
BY_NAME = {host.name: host for host in HOSTS}
OPTIONS: tuple[Option, ...] = tuple(option for host in HOSTS for option in host.options)


def servers() -> dict[str, Host]:
    """The hosts `catalogue serve --server` can run, by name."""
    return {host.name: host for host in HOSTS if host.serve is not None}


def checked(given: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Each host's options (by host name): those given, else their defaults, each checked
    (a CatalogueError names the fix) before anything is built."""
    unknown = set(given) - {option.name for option in OPTIONS}
    if unknown:
        raise ValueError(f"no host takes the options {sorted(unknown)}")
    found = {}
    for host in HOSTS:
        values = {option.name: given.get(option.name, option.default) for option in host.options}
        for option in host.options:
            option.check(values[option.name])
        found[host.name] = values
    return found


def local_options(local: Local) -> dict[str, str]:
    """The options of a build served here by `catalogue serve --data`."""
    return {option.name: option.local(local) for option in OPTIONS if option.local is not None}


def write(site: Path, options: dict[str, dict[str, str]]) -> None:
    """What every host needs in the published site: the parts they share, then each host's
    files, with its options (checked())."""
    for part in dict.fromkeys(part for host in HOSTS for part in host.parts):
        part(site)
    for host in HOSTS:
        if host.write is not None:
            host.write(site, **options[host.name])
