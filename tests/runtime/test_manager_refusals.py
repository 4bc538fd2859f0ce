"""A list or watch the server refuses (403: the operator's RBAC not granted yet) is retried
with backoff, as controller-runtime's informers retry it, and only a cache that has not
synced within ``cache_sync_timeout`` stops the manager.

client-go (v0.32.0) tools/cache/reflector.go: ``Reflector.Run`` is
``wait.BackoffUntil(func() { if err := r.ListAndWatch(stopCh); err != nil {
r.watchErrorHandler(r, err) } }, r.backoffManager, true, stopCh)``: every error, a 403
too, goes to the ``WatchErrorHandler`` (``DefaultWatchErrorHandler`` logs it: "failed to
list ...") and the reflector tries again after its backoff (800 ms doubling to 30 s).
controller-runtime pkg/internal/controller/controller.go ``startEventSourcesAndQueueLocked``
waits for each source's ``WaitForSync`` within ``CacheSyncTimeout`` (pkg/config/controller.go:
two minutes by default) and only then fails the controller's start ("failed to wait for
%s caches to sync"), which stops the manager (pkg/manager/internal.go, ``errChan``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

import aiohttp
import pytest

from setpoint.client import Client, ClusterConfig, Kind, load_kubeconfig
from setpoint.client.auth import TokenAuth
from setpoint.cluster import RunningCluster
from setpoint.resources import generate_rbac
from setpoint.runtime import Context, Controller, Manager, ManagerSettings, manager_permissions
from setpoint.runtime._informer import Informer
from setpoint.runtime._objects import kind_key
from setpoint.runtime._startup import CacheSyncTimeout, StartupRefused
from tests.runtime.conftest import WIDGET, RequestLog, widget
from tests.runtime.widgets import widget_controller
from tests.waiting import wait_for

pytestmark = pytest.mark.usefixtures("widgets_crd")

SECRET = Kind("v1", "Secret")
ACCOUNT = "op"
USER = f"system:serviceaccount:default:{ACCOUNT}"
WIDGETS_RULE = ('the cache needs the rule apiGroups=["bench.setpoint.dev"] '
                'resources=["widgets"] verbs=["list","watch"]')
SECRETS_RULE = 'the cache needs the rule apiGroups=[""] resources=["secrets"] ' \
               'verbs=["list","watch"]'


async def service_account(cluster: RunningCluster, client: Client) -> ClusterConfig:
    """The cluster's kubeconfig as the ServiceAccount ``default/op``, bound to nothing."""
    await client.create({"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": ACCOUNT, "namespace": "default"}})
    answer = await client.request(
        "POST", f"/api/v1/namespaces/default/serviceaccounts/{ACCOUNT}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 3600}})
    return dataclasses.replace(load_kubeconfig(cluster.kubeconfig),
                               auth=TokenAuth(answer["status"]["token"]),
                               client_certificate_data=None, client_key_data=None)


async def grant(client: Client, manager: Manager) -> None:
    """Apply the roles ``setpoint generate rbac`` writes for the manager, bound to ``op``
    (applied again, they grow to what it now declares)."""
    for document in generate_rbac(manager_permissions(manager), name=ACCOUNT,
                                  namespace="default", service_account=ACCOUNT):
        await client.apply(document, field_manager="test", force=True,
                           namespace=document["metadata"].get("namespace"))


def as_account(config: ClusterConfig, controllers: list[Any],
               requests: RequestLog | None = None, **settings: Any) -> Manager:
    manager = Manager(controllers, config=config, settings=ManagerSettings(
        name=ACCOUNT, graceful_shutdown_timeout=5.0, **settings))
    if requests is not None:
        manager.client.transport.on_request = requests
    return manager


def ready(manager: Manager) -> bool:
    return manager.ready  # read anew each time (mypy would narrow the property)


def has_synced(informer: Informer) -> bool:
    return informer.has_synced


def refusals_logged(caplog: pytest.LogCaptureFixture, resource: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.getMessage().startswith("informer_refused") and resource in r.getMessage()]


def refused_lists(requests: RequestLog, resource: str) -> int:
    return sum(1 for r in requests.records if r.code == 403 and r.method == "GET"
               and r.path.endswith(f"/{resource}"))


def secrets_controller(seen: list[str]) -> Controller[Any]:
    ctrl = Controller.for_(SECRET, name="secrets")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> None:
        seen.append(obj["metadata"]["name"])

    return ctrl


async def test_a_refused_watch_is_retried_and_rbac_granted_later_lets_the_manager_start(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """The operator starts before its roles are applied (a Deployment applied before its
    RBAC): its start does not fail, each refused list is logged once with the reason and the
    rule that would end it, and once the roles are granted the caches sync, the start
    returns and the controller reconciles."""
    caplog.set_level(logging.WARNING, logger="setpoint.runtime._manager")
    requests = RequestLog()
    manager = as_account(await service_account(cluster, client), [widget_controller()],
                         requests)
    starting = asyncio.create_task(manager.start())
    try:
        await wait_for(lambda: refused_lists(requests, "widgets") >= 2)  # retried
        assert not starting.done() and not ready(manager)
        (first, *_) = refusals_logged(caplog, "widgets")
        assert first.startswith(
            "informer_refused kind=Widget.bench.setpoint.dev/v1 verb=list code=403 error=")
        assert first.count("403 Forbidden") == 1  # one line: the reason once, then the fix
        assert (f'403 Forbidden: widgets.bench.setpoint.dev is forbidden: User \\"{USER}\\" '
                'cannot list resource \\"widgets\\" in API group \\"bench.setpoint.dev\\" at '
                "the cluster scope") in first
        assert WIDGETS_RULE.replace('"', '\\"') in first
        assert ("its controllers declare get, list, watch, create, update, patch, delete on "
                "widgets.bench.setpoint.dev: bind this user to the roles `setpoint generate "
                "rbac` writes for them") in first

        await grant(client, manager)
        await asyncio.wait_for(starting, 30)
        # logged once per refusal: as many lines as refused lists of widgets
        assert len(refusals_logged(caplog, "widgets")) == refused_lists(requests, "widgets")
        assert ready(manager) and manager.error is None
        await client.create(widget("late"))
        await wait_for(lambda: manager.cache.get(Kind("v1", "ConfigMap"), "late-cfg",
                                                 "default"))
    finally:
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await manager.stop()


async def test_a_refusal_that_outlasts_the_cache_sync_timeout_stops_the_start_naming_it(
        cluster: RunningCluster, client: Client) -> None:
    """Never granted, the start fails once ``cache_sync_timeout`` has run out, with the
    refusal and its fix in one line (a ``TimeoutError``, as controller-runtime's), and the
    manager is stopped."""
    manager = as_account(await service_account(cluster, client), [widget_controller()],
                         cache_sync_timeout=1.5)
    with pytest.raises(StartupRefused) as info:
        await asyncio.wait_for(manager.start(), 30)
    assert isinstance(info.value, CacheSyncTimeout | TimeoutError)
    text = str(info.value)
    assert text.startswith(
        'controller "widget": timed out after 1.5s waiting for cache to be synced for Kind '
        "Widget.bench.setpoint.dev/v1: 403 Forbidden: widgets.bench.setpoint.dev is "
        f'forbidden: User "{USER}" cannot list resource "widgets"'), text
    assert WIDGETS_RULE in text
    # every kind of the controller still refused is named
    assert '; and for Kind ConfigMap.v1: 403 Forbidden: configmaps is forbidden' in text
    assert manager.informers[kind_key(WIDGET)].refusal is not None
    await asyncio.wait_for(manager.wait(), 5)  # stopped
    assert not manager.ready


async def readyz(port: int | None) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}/readyz?verbose") as resp:
        return resp.status, await resp.text()


async def test_an_added_controller_whose_watch_is_refused_runs_once_granted(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A controller added to a running manager whose kind (Secrets) the operator's roles do
    not cover yet: its informer is refused and retried, the manager keeps running and
    its ``/readyz`` stays ready (controller-runtime has no readiness check on caches at all:
    pkg/manager/internal.go serves only the checks given to ``AddReadyzCheck``), and once
    the roles that now include it are applied it reconciles."""
    caplog.set_level(logging.WARNING, logger="setpoint.runtime._manager")
    manager = as_account(await service_account(cluster, client), [widget_controller()],
                         http_port=0)
    await grant(client, manager)
    seen: list[str] = []
    async with manager.running():
        manager.add(secrets_controller(seen))
        # what says it runs (``cluster up``'s "workloads running") waits for its caches
        controllers_running = asyncio.create_task(manager.wait_for_controllers())
        secrets = manager.informers[kind_key(SECRET)]
        await wait_for(lambda: refusals_logged(caplog, "secrets"))
        assert SECRETS_RULE.replace('"', '\\"') in refusals_logged(caplog, "secrets")[0]
        assert ready(manager) and manager.error is None and not has_synced(secrets)
        status, text = await readyz(manager.http_port)
        assert (status, text.splitlines()[-1]) == (200, "healthz check passed"), text
        assert "[+]cache-sync ok" in text.splitlines()
        assert not controllers_running.done()

        await client.create({"apiVersion": "v1", "kind": "Secret",
                             "metadata": {"name": "s", "namespace": "default"}})
        await grant(client, manager)
        assert await asyncio.wait_for(controllers_running, 30) is True
        await wait_for(lambda: "s" in seen)
        assert has_synced(secrets) and manager.error is None


async def test_an_added_controller_refused_past_the_timeout_stops_the_manager_naming_it(
        cluster: RunningCluster, client: Client) -> None:
    """Added with its own ``cache_sync_timeout`` (the manager's is two minutes), the refusal
    that outlasts it stops the manager with an error naming the controller and its kind."""
    manager = as_account(await service_account(cluster, client), [widget_controller()])
    await grant(client, manager)
    await manager.start()
    try:
        manager.add(secrets_controller([]).with_options(cache_sync_timeout=1.0))
        # never running: the manager stopped first, with the error
        assert await asyncio.wait_for(manager.wait_for_controllers(), 30) is False
        await asyncio.wait_for(manager.wait(), 30)
    finally:
        await manager.stop()
    assert isinstance(manager.error, StartupRefused)
    assert str(manager.error).startswith(
        'controller "secrets": timed out after 1s waiting for cache to be synced for Kind '
        f'Secret.v1: 403 Forbidden: secrets is forbidden: User "{USER}" cannot list '
        'resource "secrets"')
    assert SECRETS_RULE in str(manager.error)


# -- each controller's own CacheSyncTimeout ---------------------------------------------------
# controller-runtime pkg/controller/controller.go ``NewTypedUnmanaged``: a controller's
# ``Options.CacheSyncTimeout`` defaults to the manager's ``Controller.CacheSyncTimeout``, then
# to two minutes; pkg/internal/controller/controller.go ``startEventSourcesAndQueueLocked``
# waits for each of its sources within it, and pkg/internal/source/kind.go ``WaitForSync``
# fails with "timed out waiting for cache to be synced for Kind ...".

async def grant_only_widgets(client: Client, config: ClusterConfig) -> None:
    """Grant ``op`` what the Widget controller declares, nothing for Secrets."""
    await grant(client, as_account(config, [widget_controller()]))


async def test_a_controllers_own_cache_sync_timeout_fails_the_start_naming_it_and_its_kind(
        cluster: RunningCluster, client: Client) -> None:
    """The manager would wait two minutes; the Secrets controller's own timeout, one second,
    is what fails the start while the server refuses its list, and the error names that
    controller and its kind, not the Widget controller whose caches synced."""
    config = await service_account(cluster, client)
    await grant_only_widgets(client, config)
    manager = as_account(config, [
        widget_controller(), secrets_controller([]).with_options(cache_sync_timeout=1.0)])
    assert manager.settings.cache_sync_timeout == 120.0
    with pytest.raises(StartupRefused) as info:
        await asyncio.wait_for(manager.start(), 30)
    text = str(info.value)
    assert text == (
        'controller "secrets": timed out after 1s waiting for cache to be synced for Kind '
        f'Secret.v1: 403 Forbidden: secrets is forbidden: User "{USER}" cannot list resource '
        f'"secrets" in API group "" at the cluster scope; {SECRETS_RULE}; its controllers '
        "declare get, list, watch, create, update, patch, delete on secrets: bind this "
        "user to the roles `setpoint generate rbac` writes for them"), text
    assert has_synced(manager.informers[kind_key(WIDGET)])
    await asyncio.wait_for(manager.wait(), 5)  # stopped
    assert not manager.ready


async def test_a_controllers_longer_cache_sync_timeout_outlasts_the_managers(
        cluster: RunningCluster, client: Client) -> None:
    """A controller's own timeout replaces the manager's, longer too: refused for longer
    than the manager's 0.3 s (two refused lists are at least 0.8 s apart), the start still
    waits, and roles granted then let it start."""
    config = await service_account(cluster, client)
    requests = RequestLog()
    manager = as_account(config, [widget_controller().with_options(cache_sync_timeout=60.0)],
                         requests, cache_sync_timeout=0.3)
    starting = asyncio.create_task(manager.start())
    try:
        await wait_for(lambda: refused_lists(requests, "widgets") >= 2)
        assert not starting.done()
        await grant(client, manager)
        await asyncio.wait_for(starting, 30)
        assert ready(manager) and manager.error is None
    finally:
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await manager.stop()


def test_a_cache_sync_timeout_must_be_positive() -> None:
    for wrong in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="cache_sync_timeout must be a number of seconds"):
            widget_controller().with_options(cache_sync_timeout=wrong)
