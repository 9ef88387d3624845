"""The npm packages a host runs here (workerd, which the miniflare package carries; wrangler)
at the versions package-lock.json pins, found or installed: the checkout's node_modules/
(`make node_modules`), else the user's cache (`$XDG_CACHE_HOME/catalogue/node`, by default
~/.cache/catalogue/node), where npm installs them on first use, from any directory, and
again when an upgrade of this package pins other versions. An installed package carries
the checkout's package.json and package-lock.json as its data (setup.py)."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from ..errors import CatalogueError

MANIFESTS = ("package.json", "package-lock.json")
CHECKOUT = Path(__file__).resolve().parents[2]  # (in an installed package: site-packages, which has none)
SHIPPED = Path(__file__).with_name("npm")  # the installed package's copy of the manifests
INSTALLED = ".installed-lock"  # in the cache: the package-lock.json it was installed from, once npm succeeded
SIZE = "about 370 MB"


def manifests() -> Path:
    """The directory holding the package.json and package-lock.json this package pins."""
    return SHIPPED if (SHIPPED / MANIFESTS[1]).is_file() else CHECKOUT


def cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "catalogue" / "node"


def find(package: str) -> Path | None:
    """The directory whose node_modules/ holds the package at the pinned version, if any."""
    if (CHECKOUT / MANIFESTS[0]).is_file() and (CHECKOUT / "node_modules" / package / "package.json").is_file():
        return CHECKOUT
    cached = cache()
    try:
        current = (cached / INSTALLED).read_bytes() == (manifests() / MANIFESTS[1]).read_bytes()
    except OSError:
        return None
    return cached if current and (cached / "node_modules" / package / "package.json").is_file() else None


def ensure(package: str, say: Callable[[str], None]) -> Path:
    """find(package), installing the pinned packages into the cache first when it finds none
    (saying so in one line); one install at a time, however many commands ask."""
    found = find(package)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise CatalogueError(f"{package} is not installed and npm is not here to install it: install Node.js "
                             f"and npm, then run this again (it installs {package} into {cache()} once)")
    target = cache()
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = find(package)  # (another command may have installed them meanwhile)
        if found is not None:
            return found
        say(f"installing {package} and the other npm packages package-lock.json pins into {target} "
            f"(once, {SIZE})")
        (target / INSTALLED).unlink(missing_ok=True)
        for name in MANIFESTS:
            shutil.copyfile(manifests() / name, target / name)
        # (--prefer-offline: what npm's own cache holds is not fetched again)
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline"],
                              cwd=target, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]
            raise CatalogueError(f"npm could not install {package} into {target}: " + " / ".join(said))
        shutil.copyfile(target / MANIFESTS[1], target / INSTALLED)
    return target
