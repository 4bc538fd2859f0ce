"""Shared pieces of the benchmarks: a server process, an HTTP client, timing helpers."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

ROOT = Path(__file__).resolve().parent.parent


def child_environment() -> dict[str, str]:
    """The environment for a timed child process: unbuffered, and writing bytecode, since an
    installed package runs from cached bytecode (some CI images set PYTHONDONTWRITEBYTECODE,
    which would time compiling every module at every start)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class Server:
    """``setpoint cluster up --memory --port 0`` in its own process; with ``data``, on SQLite
    in that file instead (``--data``, kept across restarts of servers given it)."""

    def __init__(self, *extra: str, source: Path = ROOT,
                 launcher: tuple[str, ...] = ("-m", "setpoint.cli.main"),
                 data: Path | None = None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="setpoint-bench-")
        self.kubeconfig = Path(self._tmp.name) / "kubeconfig"
        self.extra = extra
        self.storage = ("--memory",) if data is None else ("--data", str(data))
        self.source = source  # the tree whose ``setpoint`` runs: it comes first on sys.path
        self.launcher = launcher  # what python runs: the CLI, or a wrapper (a profiler)
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_seconds = 0.0

    def start(self) -> Server:
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, *self.launcher, "cluster", "up", *self.storage, "--port",
             "0", "--kubeconfig", str(self.kubeconfig), *self.extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=self.source,
            env=child_environment())
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(b"Press Ctrl+C"):
                break
        else:
            raise RuntimeError("server did not start")
        self.startup_seconds = time.perf_counter() - started
        config = yaml.safe_load(self.kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url = cluster["server"]
        self.token = config["users"][0]["user"]["token"]
        self.ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        return self

    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_mib(self) -> float:
        """The server process's resident memory now (VmRSS)."""
        with open(f"/proc/{self.pid()}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:  # a loaded machine may take a while to stop a thousand pods' controllers
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._tmp.cleanup()

    def session(self, limit: int = 64) -> aiohttp.ClientSession:
        ctx = ssl.create_default_context(cadata=self.ca)
        return aiohttp.ClientSession(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.token}",
                     "Content-Type": "application/json"},
            connector=aiohttp.TCPConnector(ssl=ctx, limit=limit),
            json_serialize=lambda o: orjson.dumps(o).decode())


async def run_concurrently(n: int, concurrency: int,
                           work: Callable[[int], Awaitable[Any]]) -> float:
    """Run work(0..n-1) with ``concurrency`` workers; return the elapsed seconds."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await work(i)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def median_min_max(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def spread(values: list[float], digits: int = 2) -> str:
    """``median (min-max)`` of a measure's runs (just the value for one run, ``-`` for none)."""
    if not values:
        return "-"
    med, lo, hi = median_min_max(values)
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def ratio(mine: list[float], theirs: list[float], digits: int = 2) -> str:
    """The ratio of two measures' medians, as ``1.23x`` (``-`` when one is missing)."""
    if not mine or not theirs:
        return "-"
    return f"{statistics.median(mine) / statistics.median(theirs):.{digits}f}x"


def bare_interpreter_s() -> float:
    """The machine's speed: how long a bare interpreter takes to start and exit (every
    benchmark reports it beside its results, since machines differ by 2x)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def summary(values: list[float]) -> dict[str, float]:
    """A measure's runs as ``{"median", "min", "max"}``."""
    med, lo, hi = median_min_max(values)
    return {"median": med, "min": lo, "max": hi}


def summarize_runs(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each measure of several runs (dicts with the same keys) as its :func:`summary`."""
    return {key: summary([run[key] for run in runs]) for key in runs[0]}
