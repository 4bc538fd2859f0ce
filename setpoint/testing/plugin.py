"""The Setpoint pytest plugin (registered through the ``pytest11`` entry point).

Fixtures, for tests of operators::

    async def test_widget_gets_its_config_map(setpoint_cluster, k8s, run_manager, wait_for):
        await setpoint_cluster.install(Widget)
        await run_manager(manager)
        await k8s.create(Widget(name="w", spec=WidgetSpec(message="hi")))
        await wait_for(Widget, "w", lambda w: w.status.ready)

- ``setpoint_cluster``: a fresh embedded cluster for the test (a few milliseconds to
  start); with ``@pytest.mark.setpoint_cluster(scope="module")`` one embedded cluster
  shared by the module, a namespace per test; with ``pytest --kubeconfig=FILE`` the
  cluster of that file, a namespace per test (deleted afterwards).
- ``setpoint_client`` (alias ``k8s``): a :class:`~setpoint.client.Client` in the test's
  namespace.
- ``run_manager``: ``await run_manager(manager_or_controllers, **settings)`` starts the
  operator in the background and returns its :class:`OperatorRunner` (``crash()``,
  ``restart()``, ``stop()``); every operator still running is stopped gracefully when
  the test ends. Its webhooks are registered with the embedded cluster while it runs;
  ``rbac=True`` runs it as its own service account with exactly its generated RBAC.
- ``wait_for``: ``await wait_for(Kind, name, condition)`` (or ``gone=True``) follows one
  object; ``await wait_for(predicate)`` polls any sync or async predicate.
- ``faults``: puts a fault-injection proxy between the operators started afterwards and
  the server (:class:`~setpoint.testing.faults.Faults`).
- ``setpoint_workloads``: runs the embedded cluster's simulated nodes, scheduler, kubelets
  and workload controllers beside it for the test, so pods get scheduled and become Ready
  (on an external cluster: nothing, it has its own). Nodes and pods are then changed with
  :mod:`setpoint.workloads.nodeops` (add, cordon, taint, make NotReady) and
  :mod:`setpoint.workloads.faults` (restart a container, fail a pod) over ``k8s``;
  ``@pytest.mark.setpoint_workload_settings(node_monitor_grace_period_seconds=5,
  node_lease_duration_seconds=2)`` shortens how long a stopped kubelet takes to be noticed.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

# Only pytest is imported here: the plugin loads in every pytest run where Setpoint is
# installed, so the SDK and the embedded server are imported by the fixtures that use them.
if TYPE_CHECKING:
    from setpoint.client import Client
    from setpoint.testing.clusters import SetpointCluster
    from setpoint.testing.faults import Faults
    from setpoint.testing.runner import OperatorRunner

MARKER = "setpoint_cluster"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("setpoint")
    group.addoption(
        "--kubeconfig", action="store", default=None, metavar="FILE",
        help="run Setpoint tests against the cluster of this kubeconfig instead of a fresh "
             "embedded cluster per test",
    )
    group.addoption(
        "--setpoint-runtime", action="store", default=None, choices=("simulated", "process"),
        help="the container runtime of setpoint_workloads' kubelets: simulated (default) or "
             "process (real programs for cataloged images, see docs/process-runtime.md)",
    )
    parser.addini("setpoint_runtime", "default of --setpoint-runtime", default="simulated")


def pytest_configure(config: pytest.Config) -> None:
    _refuse_a_kubeconfig_read_as_a_path(config)
    config.addinivalue_line(
        "markers", f"{MARKER}(scope='module'): share one embedded cluster across the "
        "module's tests (each test gets its own namespace)")
    config.addinivalue_line(
        "markers", "setpoint_runtime(name): the container runtime of setpoint_workloads' "
        "kubelets for this test (simulated or process)")
    config.addinivalue_line(
        "markers", "setpoint_workload_settings(**fields): WorkloadSettings fields of "
        "setpoint_workloads for this test (e.g. node_monitor_grace_period_seconds=5)")


ASYNC_FIXTURES = frozenset({"setpoint_cluster", "setpoint_client", "k8s", "setpoint_workloads",
                            "faults", "run_manager", "wait_for"})
"""The fixtures that only a coroutine test can use."""


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str,
                              obj: object) -> Generator[None, Any, None]:
    """Mark ``async def`` tests that use Setpoint's fixtures ``asyncio``, as
    ``asyncio_mode = "auto"`` would: in pytest-asyncio's default strict mode (a project
    with no pytest configuration yet) every one of them otherwise fails as "async def
    functions are not natively supported", which names neither the setting nor the
    marker. Innermost (``trylast``), so that pytest-asyncio's wrapper, around it, sees the
    marker when it makes its coroutine items."""
    outcome = yield
    if not inspect.iscoroutinefunction(obj):
        return
    items = outcome.get_result()
    for item in items if isinstance(items, list) else [items]:
        if (isinstance(item, pytest.Function) and item.get_closest_marker("asyncio") is None
                and ASYNC_FIXTURES.intersection(item.fixturenames)):
            item.add_marker(pytest.mark.asyncio)


def _refuse_a_kubeconfig_read_as_a_path(config: pytest.Config) -> None:
    """pytest finds its rootdir and configuration file before plugins add their options, so
    in ``--kubeconfig FILE`` (two words) it takes FILE for a test path: with FILE outside
    the project it misses the project's pyproject.toml (``asyncio_mode = "auto"``), and
    every test fails as "async def functions are not natively supported"."""
    args = [str(a) for a in config.invocation_params.args]
    if "--kubeconfig" not in args[:-1] or config.inipath is not None:
        return
    value = args[args.index("--kubeconfig") + 1]
    raise pytest.UsageError(
        f"pytest read --kubeconfig's {value} as a test path when it looked for its "
        f"configuration file, and found none (rootdir {config.rootpath}): write "
        f"--kubeconfig={value}")


def _external(config: pytest.Config) -> Path | None:
    value = config.getoption("kubeconfig", default=None)
    return Path(value).expanduser() if value else None


@pytest.fixture(scope="module")
def setpoint_cluster_module(request: pytest.FixtureRequest) -> Iterator[Path]:
    """The kubeconfig of a cluster shared by the module's tests: an embedded cluster in a
    background thread, or the ``--kubeconfig`` cluster."""
    external = _external(request.config)
    if external is not None:
        yield external
        return
    from setpoint.testing.clusters import ThreadedCluster

    shared = ThreadedCluster().start()
    try:
        yield shared.kubeconfig
    finally:
        shared.stop()


def _wants_shared(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return False
    scope = marker.kwargs.get("scope", marker.args[0] if marker.args else "function")
    if scope not in ("function", "module"):
        raise pytest.UsageError(f"@pytest.mark.{MARKER}(scope=...) takes 'function' or "
                                f"'module', not {scope!r}")
    return bool(scope == "module")


def _runtime(request: pytest.FixtureRequest) -> str:
    """The container runtime the test's kubelets use (marker, option, ini)."""
    marker = request.node.get_closest_marker("setpoint_runtime")
    return (str(marker.args[0]) if marker and marker.args else
            request.config.getoption("setpoint_runtime", default=None) or
            request.config.getini("setpoint_runtime") or "simulated")


@pytest_asyncio.fixture
async def setpoint_cluster(request: pytest.FixtureRequest) -> AsyncIterator[SetpointCluster]:
    """The test's cluster (see the module docstring)."""
    from setpoint.testing.clusters import fresh_cluster, namespaced_cluster

    if _external(request.config) is not None or _wants_shared(request):
        kubeconfig = request.getfixturevalue("setpoint_cluster_module")
        async with namespaced_cluster(kubeconfig, request.node.name) as cluster:
            yield cluster
    else:
        if _runtime(request) != "process":
            async with fresh_cluster() as cluster:
                yield cluster
            return
        from setpoint.workloads.loopbacknet import claim_loopback_network

        # real processes need addresses of their own: a loopback block no other cluster
        # on this machine holds, its Service range as --service-cluster-ip-range
        with claim_loopback_network() as network:
            async with fresh_cluster(service_cluster_ip_range=network.services) as cluster:
                cluster.loopback_network = network.index
                yield cluster


@pytest_asyncio.fixture
async def setpoint_client(setpoint_cluster: SetpointCluster) -> Client:
    """A client of the test's cluster, in the test's namespace."""
    return setpoint_cluster.client()


@pytest_asyncio.fixture
async def k8s(setpoint_client: Client) -> Client:
    """Short for ``setpoint_client``."""
    return setpoint_client


@pytest_asyncio.fixture
async def setpoint_workloads(setpoint_cluster: SetpointCluster,
                             request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """The simulated nodes, scheduler, kubelets and controllers of the embedded cluster,
    running until the test ends: their Manager, or None on an external cluster. The
    kubelets' container runtime is ``--setpoint-runtime`` (ini ``setpoint_runtime``), or the
    test's ``@pytest.mark.setpoint_runtime("process")``; other settings are the test's
    ``@pytest.mark.setpoint_workload_settings(...)`` (a node made unreachable goes Unknown
    after ``node_monitor_grace_period_seconds``, 40 s as in kube-controller-manager)."""
    if setpoint_cluster.embedded is None:
        yield None
        return
    from setpoint.client import Client
    from setpoint.workloads.manager import build_manager
    from setpoint.workloads.settings import WorkloadSettings

    marker = request.node.get_closest_marker("setpoint_workload_settings")
    fields = dict(marker.kwargs) if marker is not None else {}
    try:
        settings = WorkloadSettings(**{**fields, "runtime": _runtime(request),
                                       "loopback_network": setpoint_cluster.loopback_network})
    except TypeError as e:
        raise pytest.UsageError(f"@pytest.mark.setpoint_workload_settings: {e}") from e
    client = Client(setpoint_cluster.config())
    running = build_manager(client, settings)
    await running.start()
    try:
        await _nodes_schedulable(running)
        yield running
    finally:
        await running.stop()
        await client.close()


async def _nodes_schedulable(manager: Any) -> None:
    """Wait (a while at most) until the nodes this manager registered are Ready and rid of
    the not-ready taint they were created with, as ``cluster up`` does, so that the test's
    first pods are scheduled at once rather than after a retry."""
    import asyncio
    import contextlib

    from setpoint.workloads.nodes import node_registration
    from setpoint.workloads.supervised import wait_nodes_ready

    registration = node_registration(manager)
    if registration is None:
        return
    created = set(await registration.start(manager.client))
    # a node kept NotReady on purpose: the test's own waits judge it
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(wait_nodes_ready(manager.client, created), 30.0)


@pytest_asyncio.fixture
async def faults(setpoint_cluster: SetpointCluster) -> Faults:
    """Fault injection for the operators this test runs (request it before starting them:
    they then reach the server through a proxy that applies these rules)."""
    return (await setpoint_cluster.proxy()).faults


class KindNotInstalledError(Exception):
    """``run_manager`` on a fresh cluster for a custom resource whose CRD the test did not
    install."""


async def _refuse_kinds_not_installed(cluster: SetpointCluster, controllers: Any) -> None:
    """A test's embedded cluster starts with no CRDs: a custom resource the test forgot to
    ``install`` would keep the operator's caches from syncing, and ``run_manager`` would
    fail only after ``cache_sync_timeout`` (two minutes) with a hint meant for a real
    cluster. Said at once instead, naming the call that fixes it. A test that starts the
    operator before its CRD on purpose passes ``cache_sync_timeout``."""
    from setpoint.resources import CustomResource
    from setpoint.testing.clusters import served

    classes = {kind for controller in controllers for kind in controller.kinds()
               if isinstance(kind, type) and issubclass(kind, CustomResource)}
    client = cluster.client()
    missing = [kind for kind in sorted(classes, key=lambda k: k.__name__)
               if not await served(client, kind.api_version, kind.kind)]
    if missing:
        names = ", ".join(kind.__name__ for kind in missing)
        raise KindNotInstalledError(
            f"the test's cluster does not serve {names}: `await setpoint_cluster.install("
            f"{names})` before run_manager (or pass cache_sync_timeout=SECONDS to start "
            f"the operator before its CRDs on purpose)")


class ManagerLauncher:
    """What the ``run_manager`` fixture is: a callable starting operators, which it stops
    when the test ends."""

    def __init__(self, cluster: SetpointCluster) -> None:
        self.cluster = cluster
        self.runners: list[OperatorRunner] = []

    def __repr__(self) -> str:
        return f"ManagerLauncher({self.runners!r})"

    async def __call__(self, target: Any, **settings: Any) -> OperatorRunner:
        """Start ``target`` (a Manager, a Controller or a list of controllers) against the
        test's cluster; ``settings`` override ManagerSettings fields."""
        from setpoint.testing.runner import OperatorRunner

        namespace = self.cluster.namespace if self.cluster.embedded is None else None
        # an external cluster cannot call webhooks on this machine's loopback
        settings.setdefault("register_webhooks", self.cluster.embedded is not None)
        runner = OperatorRunner.of(target, self.cluster.operator_config,
                                   namespace=namespace, **settings)
        if self.cluster.embedded is not None and "cache_sync_timeout" not in settings:
            await _refuse_kinds_not_installed(self.cluster, runner.controllers)
        self.runners.append(runner)
        await runner.start()
        return runner

    async def stop_all(self) -> None:
        for runner in reversed(self.runners):
            await runner.stop()


@pytest_asyncio.fixture
async def run_manager(setpoint_cluster: SetpointCluster) -> AsyncIterator[ManagerLauncher]:
    """``await run_manager(manager)``: the operator runs until the test ends."""
    launcher = ManagerLauncher(setpoint_cluster)
    try:
        yield launcher
    finally:
        await launcher.stop_all()


class Waiter:
    """What the ``wait_for`` fixture is (see :mod:`setpoint.testing.waiting`)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def __repr__(self) -> str:
        return f"Waiter({self.client!r})"

    async def __call__(self, target: Any, name: str | None = None, condition: Any = None, *,
                       namespace: str | None = None, gone: bool = False,
                       timeout: float = 10.0) -> Any:
        """``(kind, name, condition=None, *, namespace, gone)`` waits for one object;
        ``(predicate)`` for any sync or async predicate to become truthy."""
        from setpoint.client import GVR, Kind, ResourceInfo
        from setpoint.testing.waiting import wait_for as wait_for_condition
        from setpoint.testing.waiting import wait_for_object

        if isinstance(target, type | Kind | GVR | ResourceInfo):
            if name is None:
                raise TypeError("wait_for(kind, name, condition): name is missing")
            return await wait_for_object(self.client, target, name, condition,
                                         namespace=namespace, gone=gone, timeout=timeout)
        if name is not None or condition is not None:
            raise TypeError("wait_for(predicate) takes only the predicate and a timeout")
        return await wait_for_condition(target, timeout=timeout)


@pytest_asyncio.fixture
async def wait_for(setpoint_client: Client) -> Waiter:
    """Wait for an object's condition, or any predicate, with a timeout."""
    return Waiter(setpoint_client)
