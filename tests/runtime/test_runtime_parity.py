"""What a controller-runtime user sees of a manager: metrics names and labels, and the
probes' named checks, as controller-runtime v0.20 serves them."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from setpoint.client import Client, Kind, NotFoundError
from setpoint.cluster import RunningCluster
from setpoint.runtime import (
    AlreadyOwnedError,
    Context,
    Controller,
    Manager,
    OperationResult,
    Result,
)
from setpoint.runtime._cache import Cache
from setpoint.runtime._leaderelection import LEASE
from setpoint.runtime._metrics import Metrics
from setpoint.runtime._ownership import set_owner_reference
from setpoint.runtime._workqueue import WorkQueue
from setpoint.runtime._writer import Writer
from tests.runtime.conftest import WIDGET, make_manager, widget
from tests.waiting import wait_for


async def fetch(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}{path}") as resp:
        return resp.status, await resp.text()


def samples(metrics: Metrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples called ``name``, by their sorted labels."""
    found: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


async def test_a_held_item_shows_in_the_unfinished_work_gauges() -> None:
    """controller-runtime registers ``workqueue_unfinished_work_seconds`` and
    ``workqueue_longest_running_processor_seconds`` {name, controller} beside the other
    workqueue metrics, with the queue histograms' buckets from 10 ns to 1000 s
    (controller-runtime pkg/metrics/workqueue.go: ExponentialBuckets(10e-9, 10, 12);
    client-go util/workqueue/metrics.go updateUnfinishedWork)."""
    now = [100.0]
    metrics = Metrics()
    queue: WorkQueue[str] = WorkQueue("q", metrics=metrics.queue("q"), clock=lambda: now[0])
    metrics.track_unfinished_work("q", queue.unfinished_work)
    labels = (("controller", "q"), ("name", "q"))
    assert samples(metrics, "workqueue_unfinished_work_seconds") == {labels: 0.0}
    queue.add("a")
    queue.add("b")
    await queue.get()
    now[0] += 3.0
    await queue.get()
    now[0] += 1.0
    assert samples(metrics, "workqueue_unfinished_work_seconds") == {labels: 5.0}
    assert samples(metrics, "workqueue_longest_running_processor_seconds") == {labels: 4.0}
    queue.done("a")
    queue.done("b")
    assert samples(metrics, "workqueue_longest_running_processor_seconds") == {labels: 0.0}
    queued_for = samples(metrics, "workqueue_queue_duration_seconds_bucket")
    buckets = [dict(key)["le"] for key in queued_for]
    assert buckets == [f"{10.0 ** e}" for e in range(-8, 4)] + ["+Inf"]


class Panic(BaseException):
    """Not an Exception: what escapes ``except Exception``, as a Go panic escapes
    error handling."""


@pytest.mark.usefixtures("widgets_crd")
async def test_a_panicking_reconcile_is_counted_retried_and_keeps_its_worker(
        cluster: RunningCluster, client: Client) -> None:
    """controller-runtime recovers a reconciler's panic: ``controller_runtime_reconcile_
    panics_total{controller}`` counts it, and it is an error (retried with backoff); the
    worker lives on (pkg/internal/controller/controller.go, Reconcile's recover). Each
    controller's series exist from the start at 0 (initMetrics)."""
    attempts: list[str] = []
    ctrl = Controller.for_(WIDGET, name="panicky").with_options(max_concurrent_reconciles=1)

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        attempts.append(obj["metadata"]["name"])
        if len(attempts) == 1:
            raise Panic("index out of range")
        return Result()

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        label = (("controller", "panicky"),)
        assert samples(manager.metrics, "controller_runtime_reconcile_panics_total") == {
            label: 0.0}
        await client.create(widget("w"))
        await wait_for(lambda: len(attempts) == 2)
        assert samples(manager.metrics, "controller_runtime_reconcile_panics_total") == {
            label: 1.0}
        assert samples(manager.metrics, "controller_runtime_reconcile_errors_total") == {
            label: 1.0}
        # the one worker survived the panic: it ran the retry
        await wait_for(lambda: samples(manager.metrics, "controller_runtime_reconcile_total")
                       .get((("controller", "panicky"), ("result", "success"))) == 1.0)


@pytest.mark.usefixtures("widgets_crd")
async def test_probes_answer_with_named_checks_as_controller_runtime(
        cluster: RunningCluster) -> None:
    """controller-runtime's healthz handler (pkg/healthz/healthz.go): ``ok`` unless
    ``?verbose`` lists the checks; a failing check makes the endpoint always verbose with
    the reason withheld; ``?exclude=`` skips one; ``/readyz/<name>`` runs one and says
    why it fails. Checks are added by name (``AddHealthzCheck``, ``AddReadyzCheck``)."""
    manager = make_manager(cluster, [], http_port=0, http_host="127.0.0.1")
    broken: list[str] = []
    manager.add_readyz_check("database", lambda: broken[0] if broken else None)
    manager.add_healthz_check("deadlock", lambda: None)
    with pytest.raises(ValueError, match="already a check named"):
        manager.add_readyz_check("database", lambda: None)
    async with manager.running():
        port = manager.http_port or 0
        assert await fetch(port, "/readyz") == (200, "ok")
        assert await fetch(port, "/readyz?verbose") == (200, (
            "[+]shutdown ok\n[+]webhook ok\n[+]cache-sync ok\n[+]database ok\n"
            "healthz check passed\n"))
        assert await fetch(port, "/healthz?verbose=1") == (200, (
            "[+]ping ok\n[+]shutdown ok\n[+]deadlock ok\nhealthz check passed\n"))
        broken.append("connection refused")
        assert await fetch(port, "/readyz") == (500, (
            "[+]shutdown ok\n[+]webhook ok\n[+]cache-sync ok\n"
            "[-]database failed: reason withheld\nhealthz check failed\n"))
        assert await fetch(port, "/readyz/database") == (
            500, "internal server error: connection refused\n")
        assert await fetch(port, "/readyz/cache-sync") == (200, "ok")
        assert await fetch(port, "/readyz/nothing") == (404, "404 page not found\n")
        assert await fetch(port, "/readyz?exclude=database&exclude=other&verbose") == (
            200, "[+]shutdown ok\n[+]webhook ok\n[+]cache-sync ok\n"
                 "[+]database excluded: ok\n"
                 'warn: some health checks cannot be excluded: no matches for "other"\n'
                 "healthz check passed\n")
        assert await fetch(port, "/healthz") == (200, "ok")


def test_the_manager_settings_default_to_controller_runtimes() -> None:
    """controller-runtime's manager defaults (pkg/manager/manager.go: defaultLeaseDuration
    15 s, defaultRenewDeadline 10 s, defaultRetryPeriod 2 s, defaultGracefulShutdownPeriod
    30 s)."""
    settings = Manager().settings
    assert (settings.lease_duration, settings.renew_deadline, settings.retry_period,
            settings.graceful_shutdown_timeout) == (15.0, 10.0, 2.0, 30.0)


def test_a_controller_reference_to_the_same_owner_by_name_is_refreshed_in_place() -> None:
    """controller-runtime's ``SetControllerReference`` knows an owner by group, kind and
    name (``referSameObject``), not uid or version: an owner created again under its name,
    or read at another version, replaces its reference in place (``upsertOwnerRef``)
    instead of failing as "already owned"; another owner still fails, with
    controller-runtime's message (pkg/controller/controllerutil/controllerutil.go)."""
    child: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "c", "namespace": "ns", "ownerReferences": [
                 {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "s1"},
                 {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "old",
                  "controller": True, "blockOwnerDeletion": True}]}}
    recreated = {"apiVersion": "example.com/v2", "kind": "Widget",
                 "metadata": {"name": "w", "namespace": "ns", "uid": "new"}}
    set_owner_reference(recreated, child)
    assert child["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "s1"},
        {"apiVersion": "example.com/v2", "kind": "Widget", "name": "w", "uid": "new",
         "controller": True, "blockOwnerDeletion": True}]
    another = {"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "x", "namespace": "ns", "uid": "x1"}}
    with pytest.raises(AlreadyOwnedError,
                       match=r"^Object ns/c is already owned by another Widget controller w$"):
        set_owner_reference(another, child)


@pytest.mark.usefixtures("widgets_crd")
async def test_create_or_update_and_create_or_patch_as_controllerutil(
        client: Client) -> None:
    """controller-runtime's ``CreateOrPatch`` merge-patches what the mutate function
    changed, the status through its subresource, and says which: ``created``, ``updated``,
    ``updatedStatus``, ``updatedStatusOnly``, ``unchanged``. Both it and ``CreateOrUpdate``
    fail when the mutate function changes the name or namespace ("MutateFn cannot mutate
    object name and/or object namespace"): the write would land on another object
    (pkg/controller/controllerutil/controllerutil.go)."""
    writer = Writer(client, Cache(), {}, "parity")

    def setting(size: int | None = None, ready: bool | None = None) -> Any:
        def mutate(obj: dict[str, Any]) -> None:
            if size is not None:
                obj["spec"]["size"] = size
            if ready is not None:
                obj.setdefault("status", {})["ready"] = ready
        return mutate

    steps = [(None, OperationResult.CREATED), (setting(size=2), OperationResult.UPDATED),
             (setting(ready=True), OperationResult.UPDATED_STATUS_ONLY),
             (setting(size=3, ready=False), OperationResult.UPDATED_STATUS),
             (setting(size=3, ready=False), OperationResult.UNCHANGED)]
    for mutate, expected in steps:
        _, done = await writer.create_or_patch(widget("p"), mutate)
        assert done is expected
    stored = await client.get(WIDGET, "p", namespace="default")
    assert (stored["spec"]["size"], stored["status"]) == (3, {"ready": False})

    def rename(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = "elsewhere"
        obj["spec"]["size"] = 9

    for write in (writer.create_or_update, writer.create_or_patch):
        for name in ("p", "new"):  # an update, then a create
            with pytest.raises(ValueError, match="name or namespace"):
                await write(widget(name), rename)
    with pytest.raises(NotFoundError):
        await client.get(WIDGET, "elsewhere", namespace="default")
    assert (await client.get(WIDGET, "p", namespace="default"))["spec"]["size"] == 3


async def test_a_typed_mutate_may_not_rename_or_move_what_it_mutates(client: Client) -> None:
    """The same rule for a typed object, whose name and namespace are read from its
    metadata rather than from a dump of the whole object: a rename or a move of a typed
    ConfigMap fails, on create and on update, and sends nothing
    (pkg/controller/controllerutil/controllerutil.go, ``mutate``)."""
    from setpoint.resources.models.core_v1 import ConfigMap

    writer = Writer(client, Cache(), {}, "parity")
    await writer.create_or_update(ConfigMap(name="cm", namespace="default", data={"a": "1"}))

    def rename(cm: ConfigMap) -> None:
        cm.metadata.name = "elsewhere"
        cm.data = {"a": "2"}

    def move(cm: ConfigMap) -> None:
        cm.metadata.namespace = "kube-system"
        cm.data = {"a": "2"}

    def keep(cm: ConfigMap) -> None:
        cm.data = {"a": "3"}

    for write in (writer.create_or_update, writer.create_or_patch):
        for name in ("cm", "new"):  # an update, then a create
            for mutate in (rename, move):
                with pytest.raises(ValueError, match="name or namespace"):
                    await write(ConfigMap(name=name, namespace="default"), mutate)
    for gone, namespace in (("elsewhere", "default"), ("new", "default"),
                            ("cm", "kube-system"), ("new", "kube-system")):
        with pytest.raises(NotFoundError):
            await client.get(ConfigMap, gone, namespace=namespace)
    _, done = await writer.create_or_update(ConfigMap(name="cm", namespace="default"), keep)
    assert done is OperationResult.UPDATED
    assert (await client.get(ConfigMap, "cm", namespace="default")).data == {"a": "3"}


@pytest.mark.usefixtures("widgets_crd")
async def test_a_manager_keeps_its_lease_on_stop_unless_told_to_release_it(
        cluster: RunningCluster, client: Client) -> None:
    """controller-runtime's ``LeaderElectionReleaseOnCancel`` (pkg/manager/manager.go):
    off, a graceful stop leaves the lease to expire; the manager setting
    ``leader_election_release_on_cancel`` says the same (on by default here)."""
    manager = make_manager(cluster, [], leader_election=True, leader_election_id="kept",
                           identity="keeper", leader_election_release_on_cancel=False)
    async with manager.running():
        await wait_for(lambda: manager.leader)
        assert samples(manager.metrics, "leader_election_master_status") == {
            (("name", "kept"),): 1.0}
    lease = await client.get(LEASE, "kept", namespace="default")
    assert lease["spec"]["holderIdentity"] == "keeper"


@pytest.mark.usefixtures("widgets_crd")
async def test_a_new_leader_records_a_leader_election_event_on_its_lease(
        cluster: RunningCluster, client: Client) -> None:
    """client-go's leaderelection.go ``acquire`` calls ``Lock.RecordEvent("became
    leader")``; LeaseLock.RecordEvent (resourcelock/leaselock.go) records a Normal
    ``LeaderElection`` event about the Lease, its message prefixed with the identity:
    what the generated leader election Role's events create/patch is for."""
    manager = make_manager(cluster, [], leader_election=True, leader_election_id="told",
                           identity="teller")

    async def recorded() -> list[dict[str, Any]]:
        events = await client.list(Kind("v1", "Event"), namespace="default")
        return [e for e in events if e["involvedObject"].get("name") == "told"]

    async with manager.running():
        await wait_for(lambda: manager.leader)
        [event] = await wait_for(recorded)
    lease = await client.get(LEASE, "told", namespace="default")
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal", "LeaderElection", "teller became leader")
    assert {k: event["involvedObject"][k] for k in ("apiVersion", "kind", "namespace",
                                                    "uid")} == {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "namespace": "default",
        "uid": lease["metadata"]["uid"]}


async def test_every_delayed_add_counts_as_a_retry() -> None:
    """client-go's delaying queue counts ``workqueue_retries_total`` in ``AddAfter``
    (util/workqueue/delaying_queue.go), which controller-runtime calls for a rate-limited
    retry and for ``RequeueAfter`` alike (pkg/internal/controller/controller.go,
    reconcileHandler): a polling controller's retries are its requeues."""
    metrics = Metrics()
    queue: WorkQueue[str] = WorkQueue("q", metrics=metrics.queue("q"))
    queue.add_after("polled", 30.0)
    queue.add_rate_limited("failed")
    queue.add_after("now", 0)
    assert samples(metrics, "workqueue_retries_total") == {
        (("controller", "q"), ("name", "q")): 3.0}
    queue.shutdown()
