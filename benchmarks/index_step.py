"""The build's query-index step alone (sitebuild/queries.py), made again from a built site's
pages without building the site: what a change to an indexer or a writer costs and whether
it writes the same bytes, in a minute rather than a million-book build and its deletion.

    python benchmarks/index_step.py SITE DATA [--processes 2] [--profile FILE]

SITE is a site `catalogue build --data DATA --out SITE` made with query settings (a run of
`query_rate.py --keep`, say). Every collection's index files are made as a fresh build
makes them (no previous generation: nothing taken over), every stretch's parts from the
pages of the published generation (a build's parts make them from the records they spool
as they cut the pages: the same bytes), into a scratch folder beside SITE, not into the
site, and left there until the next run has timed its own (files made soon after many
were deleted are made many times slower: deleted first, they would be timed too).
Reports the wall and processor seconds (this process's, and its forked processes'), then
compares every file made with the published one at the same path: the files that differ,
are missing or are extra (none, where the change keeps the format). --profile keeps
cProfile's statistics of this process (the threads' work is not in them: time the whole
with the figures).
"""
from __future__ import annotations

import argparse
import cProfile
import filecmp
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.catalogue.load import read_catalogue  # noqa: E402
from generator.sitebuild import state  # noqa: E402
from generator.sitebuild.publish import Generation, Site  # noqa: E402
from generator.sitebuild.queries import Job, write_query_indexes  # noqa: E402
from query_rate import index_paths  # noqa: E402

SCRATCH_NUMBER = 999_999  # (names this run's parts files in the published state: removed after)


class _Aside(Generation):
    """The published generation, its pages read where they lie, the files made written under
    `out` instead (at the same paths)."""

    def __init__(self, published: Path, store: Path, out: Path) -> None:
        super().__init__(published, store, SCRATCH_NUMBER)
        self._prefix = f"{out}/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--profile", type=Path, help="write cProfile's statistics of the main process here")
    args = parser.parse_args()
    site = Site(args.site)
    published = site.published()
    if published is None:
        raise SystemExit(f"no published site in {args.site}")
    settings = read_catalogue(args.data, None, "api").settings
    out = args.site.absolute().with_name(args.site.name + "-index-step")
    stale = out.with_name(out.name + "-stale")  # (the last run's files, deleted after this run's are made)
    if out.exists():
        shutil.rmtree(stale, ignore_errors=True)  # (an interrupted run's)
        os.rename(out, stale)
    job = Job(site, _Aside(published, site.store, out), None, settings, state.counts(published))
    profile = cProfile.Profile() if args.profile else None
    started, before = time.monotonic(), os.times()
    try:
        if profile:
            profile.runcall(write_query_indexes, job, args.processes)
            profile.dump_stats(args.profile)
        else:
            write_query_indexes(job, args.processes)
    finally:
        for parts in state.state_dir(published).glob(f"query-parts-*-{SCRATCH_NUMBER}"):
            parts.unlink()
    after = os.times()
    own = after.user - before.user + after.system - before.system
    forked = after.children_user - before.children_user + after.children_system - before.children_system
    print(f"the index step: {time.monotonic() - started:.1f} s, processor {own:.1f} s here and {forked:.1f} s "
          f"in its forked processes ({args.processes} processes)")
    made, there = set(index_paths(out)), set(index_paths(published))
    differ = [path for path in sorted(made & there) if not filecmp.cmp(out / path, published / path, shallow=False)]
    print(f"{len(made):,} files: {len(differ)} differ from the site's, {len(there - made)} missing, "
          f"{len(made - there)} extra" + "".join(f"\n  differs: {path}" for path in differ[:20]))
    shutil.rmtree(stale, ignore_errors=True)


if __name__ == "__main__":
    main()
