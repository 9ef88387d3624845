"""`catalogue init`: a new catalogue's data directory, copied from the starter shipped in
the package (catalogue/starter/: a commented site.yaml, every key with its default, and a
few Persian records of every collection), only ever into a new or empty directory."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import CatalogueError

DATA = "data"  # the data directory inside the new catalogue, where `catalogue build` looks by default
SUFFIXES = (".yaml", ".csv")


def starter_files() -> dict[str, bytes]:
    """The starter's files by name: site.yaml and one file per collection."""
    starter = resources.files(__package__).joinpath("starter")
    return {f.name: f.read_bytes() for f in sorted(starter.iterdir(), key=lambda f: f.name)
            if f.name.endswith(SUFFIXES)}


def init(directory: Path) -> Path:
    """Write the starter into DIRECTORY/data/ (DIRECTORY made if need be) and return that path.
    A directory that holds anything, even hidden files, is refused: nothing is ever overwritten."""
    if directory.exists() and not directory.is_dir():
        raise CatalogueError(f"{directory} is a file: give catalogue init a new or empty directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise CatalogueError(f"{directory} is not empty: catalogue init writes a new catalogue only into "
                             "a new or empty directory")
    data = directory / DATA
    data.mkdir(parents=True)
    for name, content in starter_files().items():
        (data / name).write_bytes(content)
    return data
