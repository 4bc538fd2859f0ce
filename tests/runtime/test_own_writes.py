"""A controller's own writes are not reconciled again, and nothing else is ever dropped.

The Widget operator's status write is a merge patch without a resourceVersion, so its
answer may already hold a spec someone changed while it was in flight. Level-triggered
means that spec is reconciled, whatever order the answer and the watch events arrive in
(controller-runtime reconciles on every event and has no echo suppression at all:
pkg/internal/controller/controller.go; client-go's reflector hands out each watch event
once: tools/cache/reflector.go). These tests run the example operator through the testing
kit's fault proxy.
"""

from __future__ import annotations

from typing import Any

from examples.widget.api import Widget, WidgetSpec
from examples.widget.operator import manager
from setpoint.client import Client
from setpoint.machinery.objects import Obj
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import EnqueueForObject, EventSource, Request
from setpoint.runtime._objects import KindKey
from setpoint.runtime._ownwrites import EVERYTHING, Origin, OwnWrite
from setpoint.testing import Faults, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter
from setpoint.testing.waiting import wait_for as wait_until

WATCH_LAG = 3.0
"""How late the watch of Widgets comes back after it is cut."""
STATUS_LAG = 1.0
"""How long the operator's status write is held before it reaches the server."""


def reconciled(message: str) -> object:
    def check(w: Widget) -> bool:
        return w.status.observed_generation == w.metadata.generation and \
            w.spec.message == message
    return check


async def test_a_spec_changed_during_a_status_write_is_reconciled(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    """The status answer carries the user's new spec (a newer generation) and the watch
    event of the change comes late, after a cut watch is re-opened: the change must still
    be reconciled, not taken for the echo of the operator's own write."""
    await setpoint_cluster.install(Widget)
    await run_manager(manager)
    held = faults.latency(STATUS_LAG, verb="patch", resource="widgets/status", times=1)
    await k8s.create(Widget(name="w", spec=WidgetSpec(message="one")))
    await wait_until(lambda: held.hits == 1)  # the status write is on its way, held

    faults.latency(WATCH_LAG, verb="watch", resource="widgets")
    assert faults.drop_watches(resource="widgets") >= 1
    changed = await k8s.patch(Widget, "w", {"spec": {"message": "two"}})
    assert changed.metadata.generation == 2

    await wait_for(Widget, "w", reconciled("two"), timeout=WATCH_LAG + 10)
    await wait_for(ConfigMap, "w-cfg", lambda cm: cm.data["message"] == "two")


# -- the rules alone ----------------------------------------------------------------------

ORIGIN = Origin("widget", Request("default", "w"), KindKey("bench.setpoint.dev/v1", "Widget"),
                generation=1)


def widget_at(rv: int, generation: int = 1, message: str = "one", **status: Any) -> Obj:
    return {"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "resourceVersion": str(rv),
                         "generation": generation, "labels": {"app": "w"}},
            "spec": {"message": message}, "status": dict(status)}


def status_write(answer: Obj, patch: Obj) -> OwnWrite:
    return OwnWrite.of(ORIGIN, answer, {"status": patch}, status=True)


def test_a_status_answer_holding_only_the_write_is_an_echo() -> None:
    answer = widget_at(11, ready=True)
    assert status_write(answer, {"ready": True}).is_echo(widget_at(10), answer)


def test_a_status_answer_carrying_a_new_spec_is_not_an_echo() -> None:
    answer = widget_at(12, generation=2, message="two", ready=True)
    assert not status_write(answer, {"ready": True}).is_echo(widget_at(10), answer)


def test_a_generation_newer_than_the_reconcile_saw_is_never_an_echo() -> None:
    """Even when the cache already held the new spec, and even for a write whose answer is
    wholly ours (an update with a precondition)."""
    answer = widget_at(12, generation=2, message="two", ready=True)
    before = widget_at(11, generation=2, message="two")
    assert not status_write(answer, {"ready": True}).is_echo(before, answer)
    assert not OwnWrite.of(ORIGIN, answer, EVERYTHING).is_echo(before, answer)


def test_someone_elses_status_field_or_label_is_not_an_echo() -> None:
    answer = widget_at(12, ready=True, phase="Degraded")
    assert not status_write(answer, {"ready": True}).is_echo(widget_at(10), answer)
    relabelled = widget_at(12, ready=True)
    relabelled["metadata"]["labels"] = {"app": "other"}
    assert not status_write(relabelled, {"ready": True}).is_echo(widget_at(10), relabelled)


def test_an_answer_of_an_object_the_cache_did_not_hold_is_an_echo_only_when_created() -> None:
    answer = widget_at(11, ready=True)
    assert not status_write(answer, {"ready": True}).is_echo(None, answer)
    assert OwnWrite.of(ORIGIN, answer, EVERYTHING).is_echo(None, answer)


def test_another_version_than_the_answer_is_not_the_echo() -> None:
    answer = widget_at(11, ready=True)
    assert not status_write(answer, {"ready": True}).is_echo(widget_at(10),
                                                             widget_at(12, ready=True))


def test_only_the_writing_controllers_own_request_is_left_out() -> None:
    answer = widget_at(11, ready=True)
    write = status_write(answer, {"ready": True})
    queued: list[Request] = []
    for controller in ("widget", "other"):
        EventSource(EnqueueForObject(), [], queued.append, controller=controller).on_own_write(
            widget_at(10), answer, write)
    assert queued == [Request("default", "w")]
