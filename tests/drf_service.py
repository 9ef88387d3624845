"""The DRF service (tests/drf) in a process of its own, for tests: on a free loopback
port, started so that it dies with the tests, ready once it answers."""
from __future__ import annotations

import http.client
import importlib.util
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT
from generator.system import stop_with_parent
from servers import free_port

# What the service needs (the `test` extra installs them); without them its tests skip.
MODULES = ("django", "rest_framework", "treebeard")
MISSING = [name for name in MODULES if importlib.util.find_spec(name) is None]
STARTUP = 60  # seconds: migrating and loading a catalogue of a few hundred records takes one or two


class DrfService:
    """`python -m tests.drf.serve DATA WORK PORT`: a fresh database in WORK loaded from DATA."""

    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, data_dir: Path, work: Path) -> "DrfService":
        work.mkdir(parents=True, exist_ok=True)
        port = free_port()
        log = work / f"drf-{port}.log"  # (a pipe nobody reads would fill and block it)
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.drf.serve", str(data_dir), str(work), str(port)], cwd=ROOT,
            stdout=log.open("ab"), stderr=subprocess.STDOUT, preexec_fn=stop_with_parent)
        service = cls(process, port, log)
        service._wait()
        return service

    def _wait(self) -> None:
        """Until the API root answers (the port opens only once the catalogue is loaded)."""
        deadline = time.monotonic() + STARTUP
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/api/v1/")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            finally:
                connection.close()
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the DRF service did not start:\n{self.log.read_text(errors='replace')}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=15)
