"""No edge host refuses a request DRF answers (docs/spec/query.md §6): the requests an edge
host's old cap of 48 files refused (a page of 100 records scattered over more page files
than that, a quoted phrase of two common words whose candidates lay on hundreds of pages),
answered on the Worker (workerd), the Netlify function (Deno) and CloudFront's handler
(Node) byte for byte as the DRF service (tests/drf) answers them."""
from __future__ import annotations

import collections
import csv
import json
import os
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import DISK_TEMP
from drf_service import DrfService, Pair
from generator.api.meta import PAGE_TOO_LARGE
from generator.catalogue import synth
from generator.compose import build
from generator.hosts.files import templates
from generator.hosts.router import answer_values
from query_probes import with_settings
from servers import Server, runnable, server_params
from test_query_js import python_reads

EDGE = [param for param in server_params() if param.values[0] in ("cloudflare", "netlify", "cloudfront")]
OLD_CAP = 48  # the files main's Worker and Netlify function read for a page put together


@pytest.fixture(scope="module")
def built():
    """A catalogue of 1,500 books (titles from a 2,000-word vocabulary), its DRF service and its
    site (base_url the service's own), on disk, where Deno reads (conftest.on_disk)."""
    with tempfile.TemporaryDirectory(dir=os.environ[DISK_TEMP]) as folder:
        yield from _built(Path(folder))


def _built(work: Path):
    synth.write(work / "plain", 1500, seed=5, vocabulary=2000)
    data = with_settings(work / "plain", work / "data")
    drf = DrfService.launch(data, work / "drf")
    try:
        build(data, work / "site", base_url=drf.url)
        drf.wait()
        yield drf, work / "site", data
    finally:
        drf.stop()


@pytest.fixture(scope="module", params=EDGE)
def pair(built, request):
    drf, site, _ = built
    host = Server(site, kind=request.param)
    try:
        yield Pair(drf, host)
    finally:
        host.stop()


def requests(data) -> tuple[list[str], list[str]]:
    """Pages of 100 scattered over the collection; phrases of two common title words, and a
    common word with white space around it (the old hosts checked every record holding the
    words on its page: hundreds of pages)."""
    with (data / "books.csv").open(encoding="utf-8") as f:
        titles = [row["title"].split() for row in csv.DictReader(f)]
    counts = collections.Counter(word for title in titles for word in set(title))
    common = [word for word, _ in counts.most_common(8)]
    pairs = collections.Counter((a, b) for title in titles for a, b in zip(title, title[1:])
                                if a in common and b in common)
    phrases = [f'"{a} {b}"' for (a, b), _ in pairs.most_common(2)]
    phrases += [f'"{common[0]} {common[1]}"', f'"{common[2]} {common[0][:2]}"', f'"{common[0]}\t{common[1]}"',
                f'"{common[0]} "', f'" {common[1]}"', f'" {common[0]} "']
    scattered = [{"search": common[0], "ordering": "-price", "limit": 100}, "ordering=pages,-price&limit=100&offset=700",
                 {"search": common[1], "ordering": "title", "limit": 100, "offset": 40}]
    return ([q if isinstance(q, str) else urlencode(q) for q in scattered],
            [urlencode({"search": phrase}) for phrase in phrases])


def test_the_requests_the_old_cap_refused_are_answered_as_drf_answers_them(built, pair):
    _, site, data = built
    generation = (site / "current").resolve()
    scattered, phrases = requests(data)
    for query in scattered:
        read = python_reads(generation, "books", query)
        assert len(read) > OLD_CAP, (query, len(read))  # (a request the old hosts answered 400)
    counts = []
    for query in scattered + phrases:
        answer = pair.same(f"/api/v1/books/?{query}")
        assert answer.status == 200, query
        counts.append(json.loads(answer.body)["count"])
    assert all(counts[:len(scattered)]) and any(counts[len(scattered):]), counts


# The guard of pages.js.j2: a page put together with limits this small, in Node.
GUARD = """
import {readFileSync} from "node:fs";
const root = process.argv[2];
const read = async (key) => {
  try { return {bytes: new Uint8Array(readFileSync(root + "/" + key)), modified: null}; } catch (error) { return null; }
};
const answers = [];
for (const [query, caps] of JSON.parse(readFileSync(0, "utf8"))) {
  const sizes = [];  // (each file the guard let through, in order: its bytes, or null for a missing one)
  const logged = async (key) => {
    const found = await read(key);
    sizes.push(found === null ? null : found.bytes.byteLength);
    return found;
  };
  const counted = readsAtMost(logged, {reads: caps.reads ?? Infinity, held: caps.held});
  try {
    const made = await assemblePage(counted, readPaging("books", query, await siteInfo(read)), {bytes: Infinity, ...caps});
    answers.push([200, "", counted.files, sizes]);
  } catch (error) {
    if (error instanceof PageTooLarge) answers.push([400, pageTooLarge(error.message), counted.files, sizes]);
    else if (error instanceof TooManyReads) answers.push([400, tooManyReads({reads: Infinity, ...caps}), counted.files, sizes]);
    else throw error;
  }
}
process.stdout.write(JSON.stringify(answers));
"""


@pytest.mark.skipif(not runnable("node"), reason="node is not installed")
def test_past_a_host_s_limits_a_page_answers_the_400_that_says_so(built, tmp_path):
    """Where a platform would fail (more bytes held than its memory allows, more files than it
    may read), the host answers 400 instead: a plain page names the largest it can send, and
    that page is then answered; a search says what the host reads at most."""
    _, site, data = built
    path = guard_module(tmp_path)
    generation = str((site / "current").resolve())
    held = 40_000  # (bytes: a few page files)
    first, = run(path, generation, [("limit=100&offset=7", {"held": held})])
    assert first[0] == 400, first
    largest = int(json.loads(first[1])["detail"].split("at most ")[1].split(" ")[0])
    assert 0 < largest < 100
    again, = run(path, generation, [(f"limit={largest}&offset=7", {"held": held})])
    assert again[0] == 200
    scattered = requests(data)[0][0]
    status, body, files, _ = run(path, generation, [(scattered, {"reads": 20, "held": 1 << 30})])[0]
    assert (status, files) == (400, 20)  # ((20 - 2) pages of 12 would hold the page of 100: not too large)
    assert json.loads(body)["detail"].startswith("This host reads at most 20 files, 1024 MB to answer one request")


@pytest.mark.skipif(not runnable("node"), reason="node is not installed")
def test_past_a_host_s_file_cap_a_plain_page_names_the_largest_its_reads_hold(built, tmp_path):
    """A plain page longer than a host's files allow (the cap of reads, memory ample) is
    refused before it reads a page: the 400 names the largest page the cap holds wherever it
    starts (reads - 2 default pages: span 0's index, for the count, and one page more for an
    offset off the grid), and that page is then answered within the cap."""
    from generator.api.serving import SiteInfo

    _, site, _ = built
    generation = (site / "current").resolve()
    size = SiteInfo.of_generation(generation).page_size
    path = guard_module(tmp_path)
    for reads in (6, 9):
        caps = {"reads": reads, "held": 1 << 30}
        refused, = run(path, str(generation), [("limit=100&offset=7", caps)])
        assert refused[0] == 400 and refused[2] == 1, refused  # (the page index, for the count: no page)
        largest = (reads - 2) * size
        assert json.loads(refused[1])["detail"] == PAGE_TOO_LARGE.format(largest=largest)
        answered, = run(path, str(generation), [(f"limit={largest}&offset=7", caps)])
        assert answered[0] == 200 and answered[2] <= reads, answered


@pytest.mark.skipif(not runnable("node"), reason="node is not installed")
def test_past_a_host_s_memory_for_a_single_page_file_the_least_page_is_named(built, tmp_path):
    """A host whose memory holds the page index but no page file: the 400 names 1, the least
    limit a client can ask for (0 DRF reads as the default page size)."""
    _, site, _ = built
    path = guard_module(tmp_path)
    refused, = run(path, str((site / "current").resolve()), [("limit=100&offset=7", {"held": 1})])
    assert refused[0] == 400 and json.loads(refused[1])["detail"] == PAGE_TOO_LARGE.format(largest=1), refused


@pytest.mark.skipif(not runnable("node"), reason="node is not installed")
def test_past_a_host_s_memory_a_missing_file_holds_no_byte(tmp_path):
    """The memory cap counts the bytes of the files read, and a file that is not there holds
    none: a request that reads one (an offset past the last span: its span's index is
    missing, read before the first span's, on a site without query settings) is answered
    with the cap at exactly the bytes it holds before its last read, and refused a byte below."""
    synth.write(tmp_path / "data", 30, seed=5)
    build(tmp_path / "data", tmp_path / "site")
    path = guard_module(tmp_path)
    generation = str((tmp_path / "site" / "current").resolve())
    query = "limit=5&offset=20000"
    status, _, _, sizes = run(path, generation, [(query, {"held": 1 << 30})])[0]
    assert status == 200 and None in sizes[:-1], sizes  # (a missing file read, then more)
    held = sum(size or 0 for size in sizes[:-1])  # (the guard checks before each read what it holds already)
    at_cap, below = run(path, generation, [(query, {"held": held}), (query, {"held": held - 1})])
    assert at_cap[0] == 200 and at_cap[3] == sizes, at_cap
    assert below[0] == 400, below


def guard_module(directory: Path) -> Path:
    """pages.js.j2 with GUARD, in a module of its own."""
    values = answer_values("no-cache")
    code = values["querystring"] + "\n" + values["query"] + "\n" + templates().get_template("pages.js.j2").render(values)
    path = directory / "guard.mjs"
    path.write_text(code + GUARD, encoding="utf-8")
    return path


def run(path, generation: str, requests: list) -> list:
    done = subprocess.run(["node", str(path), generation], input=json.dumps(requests), capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def test_the_random_queries_benchmark_reads_and_judges_as_the_hosts_declare(built, capsys, monkeypatch):
    """benchmarks/edge_queries.py (the national-scale check's random queries) runs on a built
    site: each edge host's declared limits found, none refusing a query of this catalogue,
    and a query reading more files than a host's cap judged refused by it."""
    from generator.hosts import cloudflare, cloudfront, netlify

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import edge_queries

    _, site, data = built
    limits = edge_queries.host_limits()
    assert limits == {"cloudflare": cloudflare.LIMITS, "cloudfront": cloudfront.LIMITS, "netlify": netlify.LIMITS}
    edge_queries.report(site, data, 40, 3, [])
    assert capsys.readouterr().out.splitlines()[-1].endswith("refused by cloudflare 0, cloudfront 0, netlify 0")
    cap = limits["cloudflare"]
    assert not edge_queries.refused_by(cap, int(cap.reads) + 1, cap.held)  # (site.json outside the count)
    assert edge_queries.refused_by(cap, int(cap.reads) + 2, 0) and edge_queries.refused_by(cap, 2, cap.held + 1)
