"""The `catalogue` command: a thin layer over build.build() and build.check()."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from . import build as pipeline
from . import nginx
from . import synth as synthetic
from .errors import CatalogueError

BASE_URL_HELP = "Override site.yaml's base_url (also read from CATALOGUE_BASE_URL)."


class _Progress:
    """Progress lines on stderr, at most one a second, for catalogues big enough to wait for."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def __call__(self, resource: str, done: int, finished: bool) -> None:
        now = time.monotonic()
        if now - self.last >= 1.0:
            click.echo(f"  {resource}: {done:,} records{' (done)' if finished else ''}", err=True)
            self.last = now


def _summary_lines(summary: pipeline.Summary) -> list[str]:
    per = ", ".join(f"{name} {count:,}" for name, count in summary.records.items())
    return [f"records: {per}",
            f"files: {summary.files:,}, {summary.bytes / 1e6:,.1f} MB, {summary.seconds:.2f} s"]


def _run(action):
    try:
        return action()
    except CatalogueError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)


@click.group()
@click.version_option(package_name="catalogue-generator")
def main() -> None:
    """Build the catalogue's static JSON API from the data directory."""


@main.command()
@click.option("--data", "data_dir", default="data", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The catalogue's data directory.")
@click.option("--out", "out_dir", default="site", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Where the site is published.")
@click.option("--base-url", envvar="CATALOGUE_BASE_URL", help=BASE_URL_HELP)
@click.option("--listen", default=pipeline.DEFAULT_LISTEN, show_default=True,
              help="Address of the server block written to OUT/nginx/.")
def build(data_dir: Path, out_dir: Path, base_url: str | None, listen: str) -> None:
    """Build and publish the whole API under OUT/api/v1/ (atomically), and OUT/nginx/."""
    summary = _run(lambda: pipeline.build(data_dir, out_dir, base_url, _Progress(), listen))
    for line in _summary_lines(summary):
        click.echo(line)
    click.echo(f"published: {out_dir}/api/v1/")


@main.command()
@click.option("--data", "data_dir", default="data", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The catalogue's data directory.")
@click.option("--base-url", envvar="CATALOGUE_BASE_URL", help=BASE_URL_HELP)
def check(data_dir: Path, base_url: str | None) -> None:
    """Check the data as a build would, writing nothing."""
    summary = _run(lambda: pipeline.check(data_dir, base_url, _Progress()))
    click.echo(_summary_lines(summary)[0])
    click.echo("the data is valid")


@main.command()
@click.option("--site", "site_dir", default="site", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="A built site.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535),
              help="Loopback port to listen on.")
def serve(site_dir: Path, port: int) -> None:
    """Serve a built site with nginx in the foreground until Ctrl-C."""
    sys.exit(_run(lambda: nginx.serve(site_dir, port)))


@main.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--books", required=True, type=click.IntRange(1), help="Number of books.")
@click.option("--seed", default=1, show_default=True, type=int, help="Same seed, same catalogue.")
@click.option("--format", "fmt", default="csv", show_default=True, type=click.Choice(["csv", "yaml"]),
              help="Format of the six collection files.")
def synth(out: Path, books: int, seed: int, fmt: str) -> None:
    """Write a realistic synthetic catalogue of BOOKS books to OUT."""
    started = time.monotonic()
    counts = synthetic.write(out, books, seed, fmt)
    click.echo(", ".join(f"{name} {count:,}" for name, count in counts.items())
               + f" written to {out} in {time.monotonic() - started:.1f} s")
