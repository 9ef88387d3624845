"""The build pipeline: from the catalogue to a published generation of the site.

`pipeline` is the build as a table of contents (and `check`, the same into a tally);
`part` is one process's share of it, run with the others by `team`; `spool` is the
record store pages are cut from; `state` is what a build keeps for the next one
(fingerprints, `keys` of every record, `segments` of the large CSV files, records) so
that a rebuild costs what changed; `publish` writes a generation into immutable shards
and swaps it in atomically.
"""
from __future__ import annotations

__all__ = ["Summary", "build", "check"]


def __getattr__(name: str):
    """The pipeline's names, imported when first asked for: a process that reads a build's
    state (the write service) does not import the whole pipeline."""
    if name in __all__:
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
