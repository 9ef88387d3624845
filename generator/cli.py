"""The `catalogue` command: a thin layer over the library (compose.build, sitebuild.pipeline.check,
the hosts' servers and deploy, the write service, tokens and synthetic catalogues)."""
from __future__ import annotations

import dataclasses
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .api.serving import DEFAULT_LISTEN, LOCAL, PORT, WRITE_PORT
from .api.urls import API, PREVIEW
from .catalogue.settings import LINKS
from .errors import CatalogueError
from .hosts.registry import OPTIONS as HOST_OPTIONS, local_options, servers

if TYPE_CHECKING:
    from .hosts.deploy import Comparison
    from .sitebuild import Summary
    from .writes import service

# Each command imports what it needs of the library when it runs: `catalogue serve` and the
# write service start without the build pipeline, a build without the write service or the
# importer (every test that starts a server or a rebuild starts such a process).
SERVERS = servers()

IMPORT_FORMATS = ("yaml", "csv")  # importer/output.py's FORMATS (tests/test_cli.py compares them)

BASE_URL_HELP = "Override site.yaml's base_url (also read from CATALOGUE_BASE_URL)."
ENDPOINT_HELP = "An S3-compatible endpoint (R2, MinIO, a local server); default: AWS S3."


def _publish_options(command):
    """The write service's publishing beyond this machine (write-service and serve --data)."""
    for option in reversed((
            click.option("--publish", "publish_url", metavar="s3://BUCKET[/PREFIX]",
                         help="Publish each rebuild to this bucket (as `catalogue deploy` does, only what changed), "
                              "and bring it up to the published site on start."),
            click.option("--endpoint-url", help=f"With --publish: {ENDPOINT_HELP[0].lower()}{ENDPOINT_HELP[1:]}"),
            click.option("--invalidate", "distribution", metavar="DISTRIBUTION_ID",
                         help="With --publish: after each publish, one CloudFront invalidation of the paths that "
                              "changed in this distribution."))):
        command = option(command)
    return command


def _destination(publish_url: str | None, endpoint_url: str | None, distribution: str | None):
    """The --publish options as the write service takes them (None without --publish)."""
    from .writes.service import Destination

    if publish_url is None:
        if endpoint_url or distribution:
            raise click.UsageError("--endpoint-url and --invalidate go with --publish s3://BUCKET[/PREFIX]")
        return None
    return Destination(publish_url, endpoint_url, distribution)


class _Progress:
    """Progress lines on stderr, at most one a second, for catalogues big enough to wait for."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def __call__(self, resource: str, done: int, finished: bool) -> None:
        now = time.monotonic()
        if now - self.last >= 1.0:
            click.echo(f"  {resource}: {done:,} records{' (done)' if finished else ''}", err=True)
            self.last = now


def _summary_lines(summary: Summary) -> list[str]:
    per = ", ".join(f"{name} {count:,}" for name, count in summary.records.items())
    return [f"records: {per}",
            f"files: {summary.files:,}, {summary.bytes / 1e6:,.1f} MB, {summary.seconds:.2f} s"]


def _run(action):
    try:
        return action()
    except CatalogueError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)


def host_options(command):
    """The options of `catalogue build` the hosts declare (hosts/registry.py), in their order."""
    for option in reversed(HOST_OPTIONS):
        command = click.option(f"--{option.name.replace('_', '-')}", option.name, default=option.default,
                               show_default=True, help=option.help)(command)
    return command


@click.group()
@click.version_option(package_name="catalogue-generator")
def main() -> None:
    """Build the catalogue's static JSON API from the data directory."""


@main.command()
@click.argument("directory", type=click.Path(path_type=Path))
def init(directory: Path) -> None:
    """Start a new catalogue in DIRECTORY (new or empty): DIRECTORY/data/ with a commented
    site.yaml and a few sample records of every collection, ready to build and serve."""
    from .catalogue.starter import init as init_catalogue
    from .sitebuild import check as check_data

    data = _run(lambda: init_catalogue(directory))
    summary = _run(lambda: check_data(data, None, None))
    click.echo(f"created {data}/ (site.yaml; {_summary_lines(summary)[0]})")
    click.echo("next:")
    if directory.resolve() != Path.cwd().resolve():
        click.echo(f"  cd {directory}")
    click.echo("  catalogue build    # publishes site/api/v1/")
    click.echo("  catalogue serve    # serves it on http://127.0.0.1:8000/api/v1/")


@main.command()
@click.option("--data", "data_dir", default="data", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The catalogue's data directory.")
@click.option("--out", "out_dir", default="site", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Where the site is published.")
@click.option("--base-url", envvar="CATALOGUE_BASE_URL", help=BASE_URL_HELP)
@host_options
@click.option("--links", type=click.Choice(LINKS), default="api", show_default=True,
              help="api: links are the API's URLs, as DRF wrote them; paths: each link is the URL of its "
                   "file, for a host that serves files and nothing else.")
@click.option("--announce", is_flag=True, hidden=True,
              help="Tell of the few detail documents written, on stdout, as soon as they are (for the write "
                   "service, which publishes them at once).")
def build(data_dir: Path, out_dir: Path, base_url: str | None, links: str, announce: bool, **options: str) -> None:
    """Build and publish the whole API under OUT/api/v1/ (atomically), and OUT/hosts/."""
    from . import compose
    from .system import announce_written

    summary = _run(lambda: compose.build(data_dir, out_dir, base_url, _Progress(), options, links,
                                         announce_written if announce else None))
    for line in _summary_lines(summary):
        click.echo(line)
    click.echo(f"published: {out_dir}/{API}/")


@main.command()
@click.option("--data", "data_dir", default="data", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The catalogue's data directory.")
@click.option("--base-url", envvar="CATALOGUE_BASE_URL", help=BASE_URL_HELP)
def check(data_dir: Path, base_url: str | None) -> None:
    """Check the data as a build would, writing nothing."""
    from .sitebuild import check as check_data

    summary = _run(lambda: check_data(data_dir, base_url, _Progress()))
    click.echo(_summary_lines(summary)[0])
    click.echo("the data is valid")


@main.command()
@click.option("--site", "site_dir", default="site", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="A built site.")
@click.option("--port", default=PORT, show_default=True, type=click.IntRange(1, 65535),
              help="Loopback port to listen on.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Serve a local build of this data directory instead, its links pointing here, and take "
                   "writes into it with the write service (needs --tokens).")
@click.option("--tokens", "token_file", envvar="CATALOGUE_TOKENS", type=click.Path(dir_okay=False, path_type=Path),
              help="The write service's token file (also CATALOGUE_TOKENS).")
@click.option("--write-port", default=WRITE_PORT, show_default=True, type=click.IntRange(1, 65535),
              help="Loopback port of the write service.")
@click.option("--base-url", envvar="CATALOGUE_BASE_URL",
              help="With --data: the local build's base_url (default: where it is served, http://127.0.0.1:PORT).")
@click.option("--server", "server_name", type=click.Choice(list(SERVERS)),
              help="The server to run (default: nginx when it is installed, else the built-in server): "
                   + "; ".join(f"{host.name}: {host.summary}" for host in SERVERS.values()) + ".")
@click.option("--socket", type=click.Path(dir_okay=False, path_type=Path),
              help="Listen on this Unix socket instead of the port (the built-in server; nginx's page service).")
@click.option("--page-service", is_flag=True, hidden=True,
              help="Run as nginx's page service (which nginx's serve waits for): no word of readiness.")
@_publish_options
def serve(site_dir: Path, port: int, data_dir: Path | None, token_file: Path | None, write_port: int,
          base_url: str | None, server_name: str | None, socket: Path | None, page_service: bool,
          publish_url: str | None, endpoint_url: str | None, distribution: str | None) -> None:
    """Serve a built site in the foreground until Ctrl-C; with --data, a local build of the data and writes
    (with --publish, each of its rebuilds published to a bucket too)."""
    from .hosts import nginx
    from .hosts.contract import Local, Parts, watch

    if data_dir is not None and token_file is None:
        raise click.UsageError("--data needs --tokens: the file of the tokens that may write")
    destination = _destination(publish_url, endpoint_url, distribution)
    if destination is not None and (data_dir is None or base_url is None):
        raise click.UsageError("--publish needs --data (the writes it publishes) and --base-url (the address the "
                               "bucket is served at: the links of what is published)")
    if server_name is None:
        server_name = "nginx" if nginx.installed() else "builtin"
        click.echo(f"server: {server_name}{'' if server_name == 'nginx' else ' (nginx is not installed)'}", err=True)
    write_service = f"{LOCAL}:{write_port}"
    writes = None
    if data_dir is not None:
        from .writes import service, tokens

        _run(lambda: tokens.read(token_file))  # (a missing or broken file is told now, not in the child)
        site_dir, config = _preview(data_dir, site_dir, token_file, port, write_port, base_url)
        writes = service.supervised(dataclasses.replace(config, destination=destination)).start()
    run_server = SERVERS[server_name].serve
    local = Local(port, LOCAL, write_service, socket)
    stop = threading.Event()
    if socket is None and not page_service:  # ("ready:" once every part answers; on a loaded machine
        # the write service, a process of its own, may come up well after the server)
        parts = Parts(SERVERS[server_name], local, site_dir, writes is not None)
        threading.Thread(target=watch, args=(parts, lambda line: click.echo(line, err=True), stop),
                         name="ready", daemon=True).start()
    try:
        status = _run(lambda: run_server(site_dir, local))
    finally:
        stop.set()
        if writes is not None:
            writes.stop()
    sys.exit(status)


def _preview(data_dir: Path, site_dir: Path, token_file: Path, port: int, write_port: int,
             base_url: str | None) -> tuple[Path, service.Config]:
    """A local build of the data beside the site (the site itself stays as deployed), with
    links where it is served; and the write service that publishes writes into it."""
    from . import compose
    from .hosts.contract import Local
    from .writes import service

    local = base_url or f"http://{LOCAL}:{port}"
    preview = site_dir / PREVIEW
    options = local_options(Local(port, LOCAL, f"{LOCAL}:{write_port}"))
    summary = _run(lambda: compose.build(data_dir, preview, local, _Progress(), options))
    click.echo(f"built {data_dir} into {preview} for {local}: {_summary_lines(summary)[1]}", err=True)
    return preview, service.Config(data_dir, preview, token_file, port=write_port, base_url=local,
                                   listen=options["listen"])


@main.command("write-service")
@click.option("--data", "data_dir", default="data", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The catalogue's data directory.")
@click.option("--out", "out_dir", default="site", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The site the writes are published to.")
@click.option("--tokens", "token_file", required=True, envvar="CATALOGUE_TOKENS",
              type=click.Path(dir_okay=False, path_type=Path),
              help="File of the tokens that may write (also CATALOGUE_TOKENS); see `catalogue token`.")
@click.option("--host", default=LOCAL, show_default=True, help="Address to listen on.")
@click.option("--port", default=WRITE_PORT, show_default=True, type=click.IntRange(1, 65535),
              help="Port to listen on.")
@click.option("--base-url", envvar="CATALOGUE_BASE_URL", help=BASE_URL_HELP)
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True,
              help="Address of the server block its rebuilds write to OUT/hosts/nginx/.")
@click.option("--links", type=click.Choice(LINKS),
              help="The links of its rebuilds and answers (as catalogue build --links); default: those of "
                   "the site published in OUT (api when none is).")
@_publish_options
def write_service(data_dir: Path, out_dir: Path, token_file: Path, host: str, port: int,
                  base_url: str | None, listen: str, links: str | None, publish_url: str | None,
                  endpoint_url: str | None, distribution: str | None) -> None:
    """Accept POSTs of users and bookshelves: append them to DATA and publish them (with --publish,
    to a bucket too). GET /_status on its address: what waits to be published, and since when."""
    from .hosts.publish import Publisher
    from .sitebuild.state import published_links
    from .writes import service

    links = links or published_links(out_dir) or "api"  # (a rebuild keeps the site's choice)
    destination = _destination(publish_url, endpoint_url, distribution)
    publishing = None
    if destination is not None:
        publishing = _run(lambda: Publisher(out_dir, destination.url, destination.endpoint, destination.distribution))
    _run(lambda: service.run(service.Config(data_dir, out_dir, token_file, host, port, base_url, listen,
                                            links=links, destination=destination), publishing))


@main.command()
@click.argument("target")
@click.option("--site", "site_dir", default="site", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="A built site.")
@click.option("--endpoint-url", help=ENDPOINT_HELP)
@click.option("--check", is_flag=True, help="List PREFIX/api/ and PREFIX/_meta/ and compare them with the site "
                                            "(sizes, MD5 ETags) instead of trusting the record of the last deploy: "
                                            "upload what is missing or different, delete what the site lacks.")
@click.option("--force", is_flag=True, help="Upload every file (after a change of cache_control, say); "
                                            "delete what the site lacks, as --check does.")
def deploy(target: str, site_dir: Path, endpoint_url: str | None, check: bool, force: bool) -> None:
    """Upload the published site to TARGET (s3://BUCKET[/PREFIX]): new and changed files, then deletions."""
    from .hosts.deploy import deploy as deploy_site

    report = _run(lambda: deploy_site(site_dir, target, endpoint_url, check=check, force=force))
    click.echo(f"uploaded {report.uploaded:,} files, deleted {report.deleted:,}, {report.unchanged:,} unchanged")
    if report.compared is not None:
        _compared_lines(report.compared)
    if report.invalidate:
        click.echo("paths to invalidate in a CDN in front of it:")
        for path in report.invalidate:
            click.echo(f"  {path}")


def _compared_lines(compared: Comparison, shown: int = 5) -> None:
    """What listing the bucket found (on stdout), and the first paths of each kind (on stderr)."""
    different = "uploaded anyway" if compared.reason == "--force" else f"{len(compared.different):,} different"
    click.echo(f"compared with the bucket ({compared.reason}): {compared.listed:,} of the site's files there, "
               f"{len(compared.missing):,} missing, {different}, {len(compared.extra):,} not in the site")
    for kind, paths in (("missing", compared.missing), ("different", compared.different),
                        ("not in the site", compared.extra)):
        if paths and not (kind == "different" and compared.reason == "--force"):
            more = f" (and {len(paths) - shown:,} more)" if len(paths) > shown else ""
            click.echo(f"  {kind}: {', '.join(paths[:shown])}{more}", err=True)


@main.command("import")
@click.argument("url")
@click.option("--out", default="data", show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="The data directory to write (new or empty, unless --replace).")
@click.option("--format", "fmt", default="yaml", show_default=True, type=click.Choice(IMPORT_FORMATS),
              help="Format of the collections' files (CSV where CSV can hold a collection, else YAML).")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 64),
              help="Requests under way at once.")
@click.option("--token", help="Sent as `Authorization: Token ...`, for a service that asks for one.")
@click.option("--resume", is_flag=True, help="Go on with an interrupted import into the same directory.")
@click.option("--time-zone", help="The IANA zone of site.yaml (default: inferred from the created_time offsets).")
@click.option("--replace", is_flag=True, help="Put the import in place of a data directory that holds files "
                                              "(which is kept beside it, renamed).")
@click.option("--backoff", default=0.5, show_default=True, envvar="CATALOGUE_IMPORT_BACKOFF",
              type=click.FloatRange(0), help="Seconds before a failed request's second try, doubled at each try.")
@click.option("--query", "query_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A YAML file with the service's search, ordering, filters (and search_normalise), as "
                   "site.yaml writes them: DRF does not publish them. Checked against the service, then "
                   "written into site.yaml.")
def import_(url: str, out: Path, fmt: str, concurrency: int, token: str | None, resume: bool,
            time_zone: str | None, replace: bool, backoff: float, query_file: Path | None) -> None:
    """Read the catalogue API at URL (its root, https://host/api/v1/) into a data directory."""
    from . import importer

    query = _run(lambda: importer.read_query_file(query_file)) if query_file else None
    options = importer.Options(out, fmt, concurrency, token, resume, time_zone, replace, backoff, query)
    summary = _run(lambda: importer.freeze(url, options))
    counts = ", ".join(f"{collection} {count:,}" for collection, count in summary.records.items())
    click.echo(f"imported {url} into {out} in {summary.seconds:.1f} s ({summary.rate:,.0f} records/s)")
    click.echo(f"records: {counts}")
    for note in summary.notes:
        click.echo(f"  {note}")
    if summary.replaced:
        click.echo(f"the directory that was there is kept as {summary.replaced}")


@main.group()
def token() -> None:
    """Tokens that may write (kept as hashes in a file outside the data directory)."""


@token.command("add")
@click.argument("name")
@click.option("--tokens", "token_file", required=True, envvar="CATALOGUE_TOKENS",
              type=click.Path(dir_okay=False, path_type=Path), help="The token file (also CATALOGUE_TOKENS).")
def token_add(name: str, token_file: Path) -> None:
    """Make a token for NAME and print it; only its hash is kept in the file."""
    from .writes import tokens

    click.echo(_run(lambda: tokens.add(token_file, name)))


@main.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--books", required=True, type=click.IntRange(1), help="Number of books.")
@click.option("--seed", default=1, show_default=True, type=int, help="Same seed, same catalogue.")
@click.option("--format", "fmt", default="csv", show_default=True, type=click.Choice(["csv", "yaml"]),
              help="Format of the six collection files.")
@click.option("--vocabulary", type=click.IntRange(100), default=None,
              help="Draw titles, names and other text from this many distinct words, by Zipf's law "
                   "(as real text: 200000 for a national catalogue). Default: a few hundred words.")
def synth(out: Path, books: int, seed: int, fmt: str, vocabulary: int | None) -> None:
    """Write a realistic synthetic catalogue of BOOKS books to OUT."""
    from .catalogue import synth as synthetic

    started = time.monotonic()
    counts = synthetic.write(out, books, seed, fmt, vocabulary)
    click.echo(", ".join(f"{name} {count:,}" for name, count in counts.items())
               + f" written to {out} in {time.monotonic() - started:.1f} s")
