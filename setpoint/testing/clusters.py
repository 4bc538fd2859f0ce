"""The cluster a test works with: a fresh embedded one, a shared one, or a real one.

- fresh (the default): an embedded cluster started in the test's own event loop for this
  test alone (a few milliseconds), the test working in ``default``;
- shared: one embedded cluster per test module, run in a background thread so that every
  test's event loop can reach it; each test gets its own namespace, deleted afterwards;
- external (``pytest --kubeconfig=FILE``): the cluster of that kubeconfig, with a
  namespace per test as in the shared case.

Whichever it is, a test sees one :class:`SetpointCluster`: a kubeconfig, a namespace, a
client factory, CRD installation, and an optional fault-injection proxy for operators.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import re
import secrets
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from setpoint.client import (
    AlreadyExistsError,
    Client,
    ClusterConfig,
    Kind,
    NotFoundError,
    UnknownResourceError,
    load_kubeconfig,
)
from setpoint.testing.proxy import ApiProxy
from setpoint.testing.waiting import wait_for

_CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
_NAMESPACE = Kind("v1", "Namespace")


class SetpointCluster:
    """One test's cluster (see the module docstring).

    ``kubeconfig`` reaches the server directly; ``namespace`` is where the test works
    (clients made by :meth:`client` default to it); ``embedded`` is the in-process
    server when there is one (``None`` for shared and external clusters).
    """

    def __init__(self, kubeconfig: Path, namespace: str, *, embedded: Any = None,
                 shared: bool = False) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.embedded = embedded
        self.shared = shared
        self._base_config = load_kubeconfig(kubeconfig)
        self._clients: list[Client] = []
        self._proxy: ApiProxy | None = None
        self.loopback_network = 0
        """The process runtime's block of loopback addresses this cluster holds."""

    def __repr__(self) -> str:
        mode = "fresh" if self.embedded is not None else "shared"
        return f"SetpointCluster({self.server!r}, namespace={self.namespace!r}, {mode})"

    @property
    def server(self) -> str:
        return self._base_config.server

    def config(self) -> ClusterConfig:
        """A client configuration reaching the server directly, in the test's namespace."""
        config = load_kubeconfig(self.kubeconfig)
        config.namespace = self.namespace
        return config

    def client(self, **options: Any) -> Client:
        """A new client in the test's namespace, closed when the test ends."""
        client = Client(self.config(), **options)
        self._clients.append(client)
        return client

    # -- operators and faults --------------------------------------------------------------

    async def proxy(self) -> ApiProxy:
        """The fault-injection proxy of this test, started on first use; operators run by
        ``run_manager`` afterwards talk to the server through it."""
        if self._proxy is None:
            proxy = ApiProxy(self.config())
            await proxy.start()
            self._proxy = proxy
        return self._proxy

    def operator_config(self) -> ClusterConfig:
        """What an operator under test connects with: through the proxy if there is one."""
        if self._proxy is not None:
            return self._proxy.client_config(self.namespace)
        return self.config()

    # -- objects ---------------------------------------------------------------------------

    async def install(self, *resources: Any, timeout: float = 10.0) -> None:
        """Create (or update) the CRDs of these CustomResource classes (or CRD dicts) and
        wait until their kinds are served. CRDs are cluster-scoped: on shared and external
        clusters they stay installed after the test."""
        from setpoint.resources import CustomResource, generate_crds

        classes = [r for r in resources if isinstance(r, type)
                   and issubclass(r, CustomResource)]
        crds = [dict(r) for r in resources if isinstance(r, dict)]
        if len(classes) + len(crds) != len(resources):
            raise TypeError("install() takes CustomResource classes or CRD dicts")
        crds += generate_crds(classes)
        client = self.client()
        for crd in crds:
            await _create_or_replace(client, crd)
        for crd in crds:
            spec = crd["spec"]
            storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
            await wait_for(functools.partial(
                served, client, f"{spec['group']}/{storage}", spec["names"]["kind"]),
                timeout=timeout, message=f"CRD {crd['metadata']['name']} to be served")

    async def close(self) -> None:
        """Close the clients and the proxy made for this test."""
        if self._proxy is not None:
            await self._proxy.stop()
            self._proxy = None
        for client in self._clients:
            await client.close()
        self._clients.clear()


async def _create_or_replace(client: Client, obj: dict[str, Any]) -> None:
    try:
        await client.create(obj)
    except AlreadyExistsError:
        current = await client.get(_CRD, obj["metadata"]["name"])
        replacement = {**obj, "metadata": {**obj["metadata"],
                                           "resourceVersion": current["metadata"][
                                               "resourceVersion"]}}
        await client.update(replacement)


async def served(client: Client, api_version: str, kind: str) -> bool:
    """Whether the server serves (and lists) this kind now."""
    client.discovery.invalidate(api_version)
    try:
        info = await client.resolve(Kind(api_version, kind))
        await client.list(info, namespace=client.namespace if info.namespaced else None,
                          limit=1)
    except (NotFoundError, UnknownResourceError):
        return False
    return True


def namespace_name(test_name: str) -> str:
    """A valid, unique namespace name derived from a test's name."""
    base = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"{base or 'test'}-{secrets.token_hex(3)}"


@asynccontextmanager
async def fresh_cluster(workdir: Path | None = None, *,
                        service_cluster_ip_range: str | None = None
                        ) -> AsyncIterator[SetpointCluster]:
    """An embedded cluster in the running event loop, for one test (``--service-cluster-
    ip-range`` as given, the process runtime's loopback range for its tests)."""
    from setpoint.cluster import serve

    async with AsyncExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="setpoint-test-")))
        running = await stack.enter_async_context(
            serve(state_dir=_shared_secrets(), kubeconfig=workdir / "kubeconfig",
                  service_cluster_ip_range=service_cluster_ip_range))
        cluster = SetpointCluster(running.kubeconfig, "default", embedded=running)
        try:
            yield cluster
        finally:
            await cluster.close()


@asynccontextmanager
async def namespaced_cluster(kubeconfig: Path, test_name: str) -> AsyncIterator[
        SetpointCluster]:
    """A namespace of its own on an existing cluster, deleted when the block exits."""
    namespace = namespace_name(test_name)
    cluster = SetpointCluster(kubeconfig, namespace, shared=True)
    admin = cluster.client()
    await admin.create({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": namespace,
                                     "labels": {"setpoint.dev/test": "true"}}})
    try:
        yield cluster
    finally:
        try:
            await admin.delete(_NAMESPACE, namespace, propagation_policy="Background")
        except NotFoundError:
            pass
        finally:
            await cluster.close()


_secrets_dir: Path | None = None
_secrets_lock = threading.Lock()


def _shared_secrets() -> Path:
    """One directory for the CA and token of every embedded cluster of this process (making
    a CA per test would cost more than starting the server)."""
    global _secrets_dir
    with _secrets_lock:
        if _secrets_dir is None:
            # mkdtemp makes it 0700; the server writes every file in it 0600
            _secrets_dir = Path(tempfile.mkdtemp(prefix="setpoint-secrets-"))
            # at exit, not at a session's end: pytester runs sessions inside this process,
            # and a running cluster's clients still read its ca.crt
            atexit.register(remove_shared_secrets)
        return _secrets_dir


def remove_shared_secrets() -> None:
    """Delete the CA key, service-account key and admin token of this process's embedded
    clusters (when the pytest run's process exits)."""
    global _secrets_dir
    with _secrets_lock:
        if _secrets_dir is not None:
            shutil.rmtree(_secrets_dir, ignore_errors=True)
            _secrets_dir = None


class ThreadedCluster:
    """An embedded cluster served by its own thread and event loop, shareable by tests
    that each run in their own loop."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="setpoint-shared-")
        self.kubeconfig = Path(self._tmp.name) / "kubeconfig"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="setpoint-cluster",
                                         daemon=True)

    def __repr__(self) -> str:
        return f"ThreadedCluster({self.kubeconfig})"

    def start(self) -> ThreadedCluster:
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._error is not None:
            raise RuntimeError("the embedded cluster did not start") from self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)
        self._tmp.cleanup()

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        from setpoint.cluster import serve

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            async with serve(state_dir=_shared_secrets(), kubeconfig=self.kubeconfig):
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
