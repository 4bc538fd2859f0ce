"""Fixtures for end-to-end tests: the server as users run it, driven by real clients.

Every client gets its own kubeconfig (the one the server wrote), a fresh kubectl cache and a
private HOME, so no test can ever reach another cluster.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml

from setpoint.cluster import RunningCluster, serve
from tests.conftest import kubectl_path
from tests.support import ServerProcess

T = TypeVar("T")


class Kubectl:
    """Runs one kubectl binary against one server, isolated from the user's environment."""

    def __init__(self, binary: str, kubeconfig: Path, workdir: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.home = workdir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        # one fresh discovery cache per helper (per test): never a cache shared with the user
        self.cache = workdir / f"kube-cache-{uuid.uuid4().hex[:8]}"

    def env(self) -> dict[str, str]:
        """A minimal environment: no KUBECONFIG, a private HOME."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)}

    def base_args(self) -> list[str]:
        return [self.binary, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache)]

    def run(self, *args: str, stdin: str | None = None, ok: bool | None = True,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``kubectl ARGS``; ``ok=True`` asserts exit 0, ``ok=False`` asserts failure."""
        proc = subprocess.run([*self.base_args(), *args], input=stdin, capture_output=True,
                              text=True, env=self.env(), timeout=timeout, check=False)
        shown = f"kubectl {' '.join(args)}\nexit {proc.returncode}\nstdout:\n{proc.stdout}" \
                f"\nstderr:\n{proc.stderr}"
        if ok is True:
            assert proc.returncode == 0, shown
        elif ok is False:
            assert proc.returncode != 0, shown
        return proc

    def json(self, *args: str) -> Any:
        """Run ``kubectl ARGS -o json`` and parse its output."""
        return json.loads(self.run(*args, "-o", "json").stdout)

    def yaml(self, *args: str) -> Any:
        return yaml.safe_load(self.run(*args, "-o", "yaml").stdout)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """Start ``kubectl ARGS`` in the background (for ``get -w``)."""
        return subprocess.Popen([*self.base_args(), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env())


@pytest.fixture(scope="module")
def server_process(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """``setpoint cluster up --memory --port 0``, shared by one test module.

    A module whose tests need no simulated nodes, kubelets or workload controllers says
    ``WORKLOADS = False``: its server runs ``--no-workloads``, which starts and stops in a
    third of the time and runs nothing beside the tests.
    """
    flags = () if getattr(request.module, "WORKLOADS", True) else ("--no-workloads",)
    with ServerProcess(tmp_path_factory.mktemp("server"), *flags) as proc:
        yield proc


@pytest.fixture
def kubectl(server_process: ServerProcess, tmp_path: Path) -> Kubectl:
    """The kubectl on the PATH (1.32) against the module's server."""
    return Kubectl(kubectl_path(), server_process.kubeconfig, tmp_path)


@pytest.fixture(params=["1.32", "1.27", "1.33"])
def any_kubectl(request: pytest.FixtureRequest, kubectl: Kubectl,
                tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """The kubectl on the PATH (1.32), and 1.27 and 1.33 from beside it."""
    if request.param == "1.32":
        return kubectl
    return Kubectl(kubectl_path(request.param), kubectl.kubeconfig,
                   tmp_path_factory.mktemp(f"kubectl-{request.param}"))


def make_kubectl(version: str, server: ServerProcess, workdir: Path) -> Kubectl:
    return Kubectl(kubectl_path(version), server.kubeconfig, workdir)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(kubectl: Kubectl) -> Iterator[str]:
    """A fresh namespace for one test; deleted afterwards without waiting."""
    name = unique("e2e")
    # apply, not ``create namespace``: that one has a test of its own (it sends protobuf)
    kubectl.run("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\n"
                                          f"metadata: {{name: {name}}}\n")
    yield name
    kubectl.run("delete", "namespace", name, "--wait=false", ok=None)


def wait_until(condition: Callable[[], T], timeout: float = 15.0, interval: float = 0.05) -> T:
    """Poll ``condition`` until it returns a truthy value; fail the test on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: last value {value!r}")
        time.sleep(interval)


class ThreadedCluster:
    """The in-process server on its own event loop thread, for synchronous clients.

    The store belongs to the loop thread; ``call`` runs a function there.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.cluster: RunningCluster | None = None
        self._thread = threading.Thread(target=self._run, name="setpoint-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        except BaseException as exc:  # surfaced to the test thread by start()
            self._error = exc
            self._started.set()
        finally:
            self.loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with serve() as running:
            self.cluster = running
            self._started.set()
            await self._stop.wait()

    def start(self) -> RunningCluster:
        self._thread.start()
        self._started.wait(30)
        if self._error is not None:
            raise self._error
        assert self.cluster is not None, "server did not start"
        return self.cluster

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` on the server's loop thread and return its result."""

        async def invoke() -> T:
            return fn()

        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(
            invoke(), self.loop)
        return future.result(timeout=30)

    def stop(self) -> None:
        if self._stop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


@pytest.fixture
def threaded_cluster() -> Iterator[ThreadedCluster]:
    """A fresh in-process server running on a background thread."""
    tc = ThreadedCluster()
    tc.start()
    yield tc
    tc.stop()


def http_client(cluster: RunningCluster) -> httpx.Client:
    """A plain HTTPS client to the server, authenticated with its bearer token."""
    return httpx.Client(base_url=cluster.url, timeout=30,
                        verify=ssl.create_default_context(cafile=str(cluster.ca_file)),
                        headers={"Authorization": f"Bearer {cluster.token}"})
