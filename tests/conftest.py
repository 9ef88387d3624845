"""Fixtures: the sample catalogue copied into a temporary folder, and tree helpers; one
line at the end for the tests skipped because a program is not installed. Temporary
files go to a RAM file system where the machine has one (see RAM_TEMP)."""
from __future__ import annotations

import gc
import os
import random
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import settings

from golden_files import served_files
from servers import missing_required

# No deadline for a random example: how long one takes is the machine's load, not the code's
# (under a processor hog a 0.03 ms example once took 309 ms and failed the run).
settings.register_profile("catalogue", deadline=None)
settings.load_profile("catalogue")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data"

# Every build publishes with syncfs (generator/sitebuild/publish.py), which waits for every
# dirty page of the file system it is on, other programs' included, and on a busy disk file
# system even a build's plain file writes were three times slower. On tmpfs the same calls run
# and return at once, so the tests' temporary folders (pytest's tmp_path, the tempfile module,
# the servers and builds they start) go there, unless TMPDIR names a folder: except for the
# tests that run Deno (the Netlify Edge Function), which reads nothing under /dev (its
# --allow-read notwithstanding): theirs stay where TMPDIR or the system puts them (on_disk).
RAM_TEMP = Path("/dev/shm")
RAM_TEMP_FREE = 2 << 30  # bytes free at least (the suite writes a few hundred MB at most)
DISK_TEMP = "CATALOGUE_TEST_DISK_TMPDIR"  # (the folder on disk, as the first process found it, for the workers)
RUN_SEED = "CATALOGUE_TEST_SEED"  # (one run's seed, for every process of the run; set it to run one again)


def ram_temp() -> Path | None:
    """The tmpfs for temporary files, if this machine has one with room and TMPDIR is unset."""
    if os.environ.get("TMPDIR") or not (RAM_TEMP.is_dir() and os.access(RAM_TEMP, os.W_OK | os.X_OK)):
        return None
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            tmpfs = any(line.split()[1:3] == [str(RAM_TEMP), "tmpfs"] for line in mounts)
        stat = os.statvfs(RAM_TEMP)
    except OSError:
        return None
    return RAM_TEMP if tmpfs and stat.f_bavail * stat.f_frsize >= RAM_TEMP_FREE else None


def run_seed() -> int:
    """The run's seed for what a test draws afresh each run (and names in its id)."""
    return int(os.environ[RUN_SEED])


os.environ.setdefault(RUN_SEED, str(random.randrange(1_000_000)))
if DISK_TEMP not in os.environ:  # (the first process of the run; pytest-xdist's workers inherit both)
    os.environ[DISK_TEMP] = tempfile.gettempdir()
    if (_ram := ram_temp()) is not None:
        os.environ["TMPDIR"] = str(_ram)  # (the processes the tests start)
        tempfile.tempdir = str(_ram)  # (this one's tempfile, and so pytest's tmp_path: set before it is used)


def on_disk(item: pytest.Item) -> bool:
    """Whether a test runs Deno on its temporary files: the Netlify host's."""
    params = getattr(item, "callspec", None)
    return item.path.name == "test_netlify.py" or (params is not None and "netlify" in params.params.values())


class Temporary:
    """pytest's tmp_path_factory (and so tmp_path), made on disk while a test that runs Deno
    runs (pytest_runtest_protocol), in RAM otherwise. The folders on disk are deleted once a
    module's tests that run Deno are over (its module-scoped fixtures with them), in a thread
    while the tests go on: deleted as the worker ended, they kept the run waiting 4 to 6 s at
    its end (the Netlify host's site of 10,000 offsets is 14,000 files)."""

    def __init__(self) -> None:
        self.ram: pytest.TempPathFactory | None = None
        self.disk: pytest.TempPathFactory | None = None
        self.on_disk = False
        self.deleting: list[threading.Thread] = []

    def __getattr__(self, name: str):
        return getattr(self.disk if self.on_disk else self.ram, name)

    def make_disk(self, config: pytest.Config, disk: str) -> None:
        base = Path(tempfile.mkdtemp(prefix="pytest-disk-", dir=disk))
        self.disk = pytest.TempPathFactory(base, 3, "all", config.trace.get("tmpdir"), _ispytest=True)

    def throw_away_disk(self) -> None:
        thread = threading.Thread(target=shutil.rmtree, args=(self.disk.getbasetemp(),),
                                  kwargs={"ignore_errors": True}, daemon=True)
        thread.start()
        self.deleting.append(thread)
        self.disk = None

    def wait_deleted(self) -> None:
        if self.disk is not None:
            self.throw_away_disk()
        for thread in self.deleting:
            thread.join()


TEMPORARY = Temporary()


@pytest.fixture(scope="session")
def tmp_path_factory(tmp_path_factory: pytest.TempPathFactory) -> Temporary:
    TEMPORARY.ram = tmp_path_factory
    return TEMPORARY


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    """A test that runs Deno (and the fixtures it sets up) gets its temporary folders on disk."""
    disk = os.environ[DISK_TEMP]
    if not on_disk(item) or disk == tempfile.gettempdir():
        return (yield)
    if TEMPORARY.disk is None:
        TEMPORARY.make_disk(item.config, disk)
    ram = os.environ["TMPDIR"]
    TEMPORARY.on_disk, os.environ["TMPDIR"], tempfile.tempdir = True, disk, disk
    try:
        return (yield)
    finally:
        TEMPORARY.on_disk, os.environ["TMPDIR"], tempfile.tempdir = False, ram, ram
        if nextitem is None or (nextitem.path != item.path and not on_disk(nextitem)):
            TEMPORARY.throw_away_disk()  # (the module's fixtures are torn down: nothing uses them)


# The modules whose groups take five seconds and more in few tests (properties, fuzzing, a run
# killed under xdist, Chromium, a Worker, builds), longest first: under xdist they are handed
# out before the others (which go by their number of tests), so that none is left to run
# alone at the end. Ordered by their seconds on three workers; when two of them were last,
# the run's end waited 5 s for the last worker.
LONG_FIRST = ("tests/sitebuild/test_state.py", "tests/hosts/test_openapi_fuzz.py", "tests/hosts/test_hostile_text.py",
              "tests/hosts/test_deploy.py", "tests/importer/test_from_drf.py", "tests/api/backends/test_search.py",
              "tests/importer/test_freeze.py", "tests/hosts/test_cloudflare.py", "tests/hosts/test_querystring_js.py",
              "tests/test_interrupted.py", "tests/sitebuild/test_edit_sequences.py", "tests/sitebuild/test_team.py",
              "tests/hosts/test_cloudfront.py", "tests/sitebuild/test_publish.py", "tests/test_package.py",
              "tests/hosts/test_browser.py", "tests/sitebuild/test_hostile.py", "tests/hosts/test_pages_js.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n 3 --dist loadgroup`, as pyproject.toml runs the suite), the tests
    of one module sharing one value of its module-scoped parameters (a server kind, a
    catalogue) go to the same worker, so that each server or build a module's fixtures start
    is started once, not once per worker; the groups are handed out longest first (LONG_FIRST,
    then by their number of tests), each group's tests in their order. First of the hooks
    (tryfirst): pytest-xdist's own, registered after this file, reads the marks it adds."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker is None:
            params = getattr(item, "callspec", None)
            shared = []
            if params is not None:
                definitions = item._fixtureinfo.name2fixturedefs
                shared = [f"{name}={params.params[name]}" for name in params.params
                          if name in definitions and definitions[name][-1].scope != "function"]
            group = " ".join([item.nodeid.split("::")[0], *shared])
            item.add_marker(pytest.mark.xdist_group(group))
        else:
            group = marker.args[0] if marker.args else marker.kwargs.get("name", "")
        groups.setdefault(group, []).append(item)
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        order = sorted(groups.values(), key=handed_out)
        items[:] = [item for tests in order for item in tests]


def handed_out(tests: list[pytest.Item]) -> tuple[int, int]:
    """A group's place in the order xdist hands groups out: LONG_FIRST's in its order, then the
    others by their number of tests, most first."""
    module = tests[0].nodeid.split("::")[0]
    return (LONG_FIRST.index(module), 0) if module in LONG_FIRST else (len(LONG_FIRST), -len(tests))


class GroupNames:
    """pytest-xdist hands out a group as one unit when each test's node id ends in "@group",
    which its own hook appends in each worker; since pytest 9.2 a node's id is structured and
    that change is lost (pytest-xdist issue 1386), so every test was handed out alone and a
    module's servers and builds were started on both workers. After xdist's hook (trylast),
    the suffix is set where it did not take."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not (hasattr(config, "workerinput") and config.getvalue("loadgroup")):
            return
        for item in items:
            marker = item.get_closest_marker("xdist_group")
            group = marker.args[0] if marker.args else marker.kwargs.get("name", "default")
            if item.nodeid.endswith(f"@{group}"):
                continue  # (xdist's own change took)
            if hasattr(item, "_id"):  # (pytest 9.2 and later: the structured id, "@group" after any params)
                last = item._id.names[-1] + (f"[{item._id.params}]" if item._id.params is not None else "")
                item._id = type(item._id)(path=item._id.path, names=(*item._id.names[:-1], f"{last}@{group}"))
            else:
                item._nodeid = f"{item.nodeid}@{group}"


def pytest_configure(config: pytest.Config) -> None:
    if missing := missing_required():  # (at once: each test would wait GUARD seconds for a server that cannot start)
        raise pytest.UsageError(f"CATALOGUE_REQUIRE names {', '.join(missing)}, not installed here (.ci/run installs "
                                f"each)")
    config.pluginmanager.register(GroupNames(), "catalogue-group-names")
    config.add_cleanup(TEMPORARY.wait_deleted)
    if not hasattr(config, "workerinput"):
        write_bytecode()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules, plugins and collected tests live as long as the process: the cyclic
    garbage collector need not walk them again in each of its full passes, nor in the children
    a worker forks for a build (the workers' collections took 9.3 s of the run, 7.0 s since)."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Before the process ends: the collector's final passes need not walk what the tests left
    (a worker of a few hundred MB took 1.7 s to end, 0.2 s frozen; the run waits for each)."""
    gc.freeze()


def write_bytecode() -> None:
    """Let the suite's processes cache their bytecode where PYTHONDONTWRITEBYTECODE is set (as
    on this machine), before any worker starts: each worker and each process a test starts
    inherits this. Otherwise every one of the few hundred processes the suite starts compiled
    every project module it imported again (about 50 ms each), and every pytest process (the
    workers, the runs tests make of pytest) rewrote the asserts of every test module and of
    the plugins' packages again: pytest reads its cached rewrites anyway but writes them only
    where bytecode may be written (3.6 s of processor time to collect the suite, 1.6 s with
    them cached)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


def many_users(root: Path, users: int, page_sizes: tuple[int, int], bio: str = "") -> Path:
    """The sample catalogue with `users` users (each with `bio`) and no bookshelves, built into
    root/site with base_url https://ketab.example.ir: the site."""
    import uuid
    from generator.sitebuild import build

    data = root / "data"
    shutil.copytree(SAMPLE, data)
    (data / "users.yaml").unlink()
    lines = ["id,username,bio"] + [f"{uuid.UUID(int=n + 1, version=4)},user.{n},{bio}" for n in range(users)]
    (data / "users.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (data / "bookshelves.csv").write_text("id,user,title\n", encoding="utf-8")
    (data / "site.yaml").write_text(f"base_url: https://ketab.example.ir\npage_sizes: [{page_sizes[0]}, {page_sizes[1]}]\n",
                                    encoding="utf-8")
    build(data, root / "site")
    return root / "site"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A private copy of the sample catalogue that a test may edit."""
    target = tmp_path / "data"
    shutil.copytree(SAMPLE, target)
    return target


def served(out: Path) -> dict[str, bytes]:
    """Every file a server sees under out/api, as relative path -> bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for p in served_files(out)}


def published_files(site: Path) -> set[str]:
    """Every file a host may be given of the published generation: what its api/ and _meta/
    hold, links followed, as paths relative to it (counted without the code under test)."""
    root = site / "current"
    return {os.path.relpath(os.path.join(directory, name), root)
            for top in ("api", "_meta") for directory, _dirs, names in os.walk(root / top, followlinks=True)
            for name in names}


def site_state(out: Path) -> dict[str, object]:
    """Everything in an output directory, links and build state included, but the trash
    (what a build threw away, on its way out: a process of its own may be deleting it, so it is
    not walked into)."""
    state: dict[str, object] = {}
    for p in sorted(_entries(out, out / ".build" / "trash")):
        key = str(p.relative_to(out))
        if p.is_symlink():
            state[key] = ("link", str(p.readlink()))
        elif p.is_file():
            state[key] = ("file", p.read_bytes(), p.stat().st_mtime_ns)
        else:
            state[key] = ("dir",)
    return state


def _entries(top: Path, left_out: Path) -> list[Path]:
    """Every file, directory and link below `top` (links not followed), none within the
    directory `left_out` (itself listed)."""
    found = []
    for directory, dirs, names in os.walk(top):
        found += [Path(directory, name) for name in dirs + names]
        dirs[:] = [d for d in dirs if Path(directory, d) != left_out]
    return found


def pytest_terminal_summary(terminalreporter) -> None:
    """One line per program whose tests were skipped because it is not installed."""
    missing: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        if reason.endswith(" is not installed"):
            program = reason.removeprefix("Skipped: ").removesuffix(" is not installed")
            missing[program] = missing.get(program, 0) + 1
    for program, count in sorted(missing.items()):
        terminalreporter.write_line(f"skipped {count} tests against {program}: it is not installed here "
                                    f"({HOW.get(program, '')}.ci/run installs it and sets "
                                    f"CATALOGUE_REQUIRE={program})")


HOW = {"cloudflare": "workerd: `make node_modules`, which `make test` runs where npm is, or a first "
                     "`catalogue serve --server cloudflare`; ",
       "deno": "`.venv/bin/pip install deno`; ", "chromium": "the system's chromium package; ",
       "wrangler": "`make node_modules`; ", "rsync": "the system's rsync package; ",
       "moto": "the test extra: `make .venv/.installed-test`; "}
