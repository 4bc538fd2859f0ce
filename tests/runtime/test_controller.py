"""Controllers end to end on the embedded server: the Widget operator of the benchmark."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.cluster import RunningCluster
from setpoint.resources import CustomResource, Model
from setpoint.runtime import Context, Controller, Request, Result, TerminalError
from setpoint.testing import present
from tests.runtime.conftest import (
    CONFIGMAP,
    WIDGET,
    RequestLog,
    make_manager,
    widget,
)
from tests.runtime.widgets import widget_controller
from tests.waiting import quiet_period, wait_for

pytestmark = pytest.mark.usefixtures("widgets_crd")

N = 20


class ColouredWidgetSpec(Model):
    size: int = 1
    message: str = ""
    colour: str  # a field the class requires and the CRD on the server does not know


class ColouredWidget(CustomResource, group="bench.setpoint.dev", version="v1",
                     kind="Widget"):
    spec: ColouredWidgetSpec


async def all_ready(client: Client, n: int) -> bool:
    items = (await client.list(WIDGET, namespace="default")).items
    return len(items) == n and all((w.get("status") or {}).get("ready") for w in items)


def writes_by_verb(requests: RequestLog) -> Counter[str]:
    return Counter(r.method for r in requests.writes())


async def test_widget_operator_converges_with_two_writes_per_change(
        cluster: RunningCluster, client: Client) -> None:
    requests = RequestLog()
    manager = make_manager(cluster, [widget_controller()], requests)
    async with manager.running():
        await asyncio.gather(*(client.create(widget(f"w{i}")) for i in range(N)))
        await wait_for(lambda: all_ready(client, N))

        cms = (await client.list(CONFIGMAP, namespace="default",
                                 label_selector=None)).items
        by_name = {c["metadata"]["name"]: c for c in cms}
        w0 = await client.get(WIDGET, "w0", namespace="default")
        ref = by_name["w0-cfg"]["metadata"]["ownerReferences"][0]
        assert ref == {"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget", "name": "w0",
                       "uid": w0["metadata"]["uid"], "controller": True,
                       "blockOwnerDeletion": True}
        assert by_name["w0-cfg"]["data"] == {"message": "hello", "size": "1"}
        assert w0["status"]["observedGeneration"] == w0["metadata"]["generation"]
        await quiet_period()  # late echoes of our own writes must not cause writes
        assert len(requests.writes()) == 2 * N, writes_by_verb(requests)

        requests.records.clear()
        await asyncio.gather(*(client.patch(WIDGET, f"w{i}", {"spec": {"message": "bye"}},
                                            namespace="default") for i in range(N)))

        async def all_updated() -> bool:
            cms = (await client.list(CONFIGMAP, namespace="default")).items
            done = [c for c in cms if c["metadata"]["name"].endswith("-cfg")
                    and c["data"]["message"] == "bye"]
            return len(done) == N

        await wait_for(all_updated)
        await wait_for(lambda: len(requests.writes()) >= 2 * N)
        await quiet_period()
        assert len(requests.writes()) == 2 * N, writes_by_verb(requests)

        requests.records.clear()
        await quiet_period()  # idle: no request but watches
        assert requests.non_watch() == []


async def test_deleting_an_owned_object_brings_it_back(
        cluster: RunningCluster, client: Client) -> None:
    manager = make_manager(cluster, [widget_controller()])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: all_ready(client, 1))
        await client.delete(CONFIGMAP, "w-cfg", namespace="default")

        async def recreated() -> bool:
            try:
                await client.get(CONFIGMAP, "w-cfg", namespace="default")
            except Exception:
                return False
            return True

        await wait_for(recreated)


async def test_errors_are_retried_with_backoff_and_counted(
        cluster: RunningCluster, client: Client) -> None:
    attempts: list[str] = []
    ctrl = Controller.for_(WIDGET, name="flaky")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        attempts.append(obj["metadata"]["name"])
        if len(attempts) < 3:
            raise RuntimeError("not yet")
        return Result()

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: len(attempts) == 3)
        text = manager.metrics.exposition().decode()
        assert 'controller_runtime_reconcile_errors_total{controller="flaky"} 2.0' in text
        assert 'controller_runtime_reconcile_total{controller="flaky",result="success"} 1.0' \
            in text
        assert 'workqueue_retries_total{controller="flaky",name="flaky"} 2.0' in text


async def test_a_conflict_is_one_line_with_the_object_reason_and_next_retry(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A 409 is routine (controller-runtime requeues it with backoff): one line, no
    traceback, naming the object, the reason and when it is tried again."""
    attempts: list[str] = []
    ctrl = Controller.for_(WIDGET, name="stale")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        attempts.append(obj["metadata"]["name"])
        if len(attempts) < 3:  # a write from a stale read: the server answers 409 Conflict
            stale = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}}
            await ctx.client.update(stale)
        return Result()

    caplog.set_level(logging.INFO, logger="setpoint")
    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: len(attempts) == 3)
    retries = [r for r in caplog.records if "reconcile_retry" in r.getMessage()]
    assert len(retries) == 2
    for record in retries:
        line = record.getMessage()
        assert record.exc_info is None and record.levelno == logging.WARNING
        assert "namespace=default name=w" in line and "reason=Conflict" in line
        assert "retry_in=" in line and "Operation cannot be fulfilled" in line
        assert " at 0x" not in line and "Error(" not in line
    assert not [r for r in caplog.records if r.exc_info]


async def test_an_unexpected_error_has_one_traceback_per_object_per_distinct_error(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[str] = []
    ctrl = Controller.for_(WIDGET, name="buggy")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        attempts.append(obj["metadata"]["name"])
        if len(attempts) <= 3:
            raise RuntimeError("the same bug")
        if len(attempts) == 4:
            raise KeyError("another bug")
        return Result()

    caplog.set_level(logging.INFO, logger="setpoint")
    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: len(attempts) == 5)
    failed = [r for r in caplog.records if "reconcile_failed" in r.getMessage()]
    assert len(failed) == 4
    assert [r.exc_info is not None for r in failed] == [True, False, False, True]
    assert all("retry_in=" in r.getMessage() for r in failed)


async def test_terminal_errors_are_not_retried(
        cluster: RunningCluster, client: Client) -> None:
    attempts: list[str] = []
    ctrl = Controller.for_(WIDGET, name="terminal")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        attempts.append(obj["metadata"]["name"])
        raise TerminalError("spec is invalid")

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: attempts)
        await quiet_period()
        assert attempts == ["w"]


@pytest.mark.parametrize("wrong", [True, {"requeue_after": 5}, 5.0],
                         ids=["bool", "dict", "seconds"])
async def test_a_reconcile_returning_no_result_is_a_retried_error_naming_the_fix(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture,
        wrong: object) -> None:
    """A reconcile that returns what kopf or a habit suggests (a bool, a dict, seconds)
    instead of a Result or None is an error of that reconcile, retried with backoff like
    any other, its line naming the function, what it returned and what to return. Before,
    the wrong value failed past the error handling and ended the controller's worker
    without a word: nothing was reconciled again."""
    attempts: list[str] = []
    ctrl = Controller.for_(WIDGET, name="wrong-result")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Any:
        attempts.append(obj["metadata"]["name"])
        return wrong if len(attempts) == 1 else None

    caplog.set_level(logging.INFO, logger="setpoint")
    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: attempts == ["w", "w"])  # retried: the worker lives on
        await client.create(widget("v"))
        await wait_for(lambda: "v" in attempts)
    failed = [r for r in caplog.records if "reconcile_failed" in r.getMessage()]
    assert len(failed) == 1
    line = failed[0].getMessage()
    assert f"returned {wrong!r} ({type(wrong).__name__})" in line, line
    assert "reconcile_returning_no_result" in line and __file__ in line, line
    assert "return None or a Result (Result(requeue_after=SECONDS)" in line, line
    assert failed[0].exc_info is None  # the controller's own frames say nothing


async def test_an_object_that_does_not_fit_its_class_is_one_terminal_line_naming_the_fix(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """The class grew a required field the CRD on the server lacks (the CRD was not
    applied again): the object cannot be decoded, which no retry fixes. One line names
    the object, the class, the field and the fix, not a retried multi-line pydantic error
    with the controller's traceback; the reconcile is never called with a half object."""
    attempts: list[str] = []
    ctrl = Controller.for_(ColouredWidget, name="coloured")

    @ctrl.reconcile
    async def reconcile(ctx: Context[ColouredWidget], obj: ColouredWidget) -> None:
        attempts.append(str(obj.metadata.name))

    caplog.set_level(logging.INFO, logger="setpoint")
    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: any("reconcile_failed" in r.getMessage()
                                   for r in caplog.records))
        await quiet_period()
    assert attempts == []
    failed = [r for r in caplog.records if "reconcile_failed" in r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info is None
    line = failed[0].getMessage()
    assert "reconcile_failed_terminal" in line, line
    assert (f"Widget default/w does not fit class {__name__}.ColouredWidget: spec.colour: "
            f"Field required: the CRD on the server is not the class's; apply what "
            f"`setpoint generate crds {__name__}` writes") in line, line


async def test_a_terminal_error_keeps_the_backoff_of_earlier_failures(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A TerminalError is not retried, but the item is not forgotten either: its failures
    so far still count, so a failure after the object's next change backs off from there
    (the second retry, not the first again).
    Source: sigs.k8s.io/controller-runtime v0.20 pkg/internal/controller/controller.go
    (reconcileHandler: a terminal error only counts TerminalReconcileErrors; Forget is called
    on success and before RequeueAfter, never on an error)."""
    attempts: list[int] = []
    ctrl = Controller.for_(WIDGET, name="terminal-backoff")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        attempts.append(obj["metadata"]["generation"])
        if len(attempts) == 2:
            raise TerminalError("spec is invalid")
        if len(attempts) in (1, 3):
            raise RuntimeError("not yet")
        return Result()

    caplog.set_level(logging.INFO, logger="setpoint")
    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: len(attempts) == 2)
        await client.patch(WIDGET, "w", {"spec": {"message": "fixed"}}, namespace="default")
        await wait_for(lambda: len(attempts) == 4)
    failed = [getattr(r, "fields", {}) for r in caplog.records
              if getattr(r, "event", "") == "reconcile_failed"]
    assert [f.get("retries") for f in failed] == [1, 2]
    assert attempts == [1, 1, 2, 2]


async def test_requeue_after_reconciles_again_later(
        cluster: RunningCluster, client: Client) -> None:
    times: list[float] = []
    ctrl = Controller.for_(WIDGET, name="poller")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        times.append(asyncio.get_running_loop().time())
        return Result(requeue_after=0.1)

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))
        await wait_for(lambda: len(times) >= 3)
        assert times[2] - times[1] >= 0.09


async def test_pods_mapped_by_label_enqueue_their_instance(
        cluster: RunningCluster, client: Client) -> None:
    seen: list[Request] = []
    ctrl = Controller.for_(WIDGET, name="by-label").watches(
        CONFIGMAP, map_to_owner_by_label="app.kubernetes.io/instance")

    class Recorder:
        async def reconcile(self, request: Request) -> Result:
            seen.append(request)
            return Result()

    ctrl.reconciler(Recorder())
    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "anything", "namespace": "default",
            "labels": {"app.kubernetes.io/instance": "target"}}})
        await wait_for(lambda: Request("default", "target") in seen)


async def test_finalizers_and_conditions_through_the_context(
        cluster: RunningCluster, client: Client) -> None:
    ctrl = Controller.for_(WIDGET, name="finalizing")
    cleaned: list[str] = []

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, Any]], obj: dict[str, Any]) -> Result:
        if ctx.deleting:
            cleaned.append(obj["metadata"]["name"])
            await ctx.remove_finalizer("bench.setpoint.dev/cleanup")
            return Result()
        await ctx.add_finalizer("bench.setpoint.dev/cleanup")
        ctx.set_condition("Ready", True, reason="Configured", message="all good")
        await ctx.update_status(obj)
        return Result()

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w"))

        async def has_condition() -> dict[str, Any] | None:
            w = await client.get(WIDGET, "w", namespace="default")
            conditions = (w.get("status") or {}).get("conditions") or []
            return w if conditions else None

        w = await wait_for(has_condition)
        assert w["metadata"]["finalizers"] == ["bench.setpoint.dev/cleanup"]
        condition = w["status"]["conditions"][0]
        assert condition["type"] == "Ready" and condition["status"] == "True"
        assert condition["observedGeneration"] == w["metadata"]["generation"]
        assert condition["lastTransitionTime"]
        await client.delete(WIDGET, "w", namespace="default")

        async def gone() -> bool:
            return not (await client.list(WIDGET, namespace="default")).items

        await wait_for(gone)
        assert cleaned == ["w"]


async def test_dict_and_typed_objects_reach_the_reconciler(
        cluster: RunningCluster, client: Client) -> None:
    from tests.runtime.widgets import Widget

    got: list[Any] = []
    ctrl = Controller.for_(Widget, name="typed")

    @ctrl.reconcile
    async def reconcile(ctx: Context[Widget], obj: Widget) -> None:
        got.append(obj)

    manager = make_manager(cluster, [ctrl])
    async with manager.running():
        await client.create(widget("w", message="typed!"))
        await wait_for(lambda: got)
        assert isinstance(got[0], Widget) and got[0].spec.message == "typed!"
        assert present(manager.cache.get(Widget, "w", "default")).spec.message == "typed!"
        assert manager.cache.get(Kind("bench.setpoint.dev/v1", "Widget"), "w",
                                 "default")["spec"]["message"] == "typed!"
