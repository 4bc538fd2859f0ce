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

from examples.widget.api import Widget, WidgetSpec
from examples.widget.operator import manager
from setpoint.client import Client
from setpoint.resources.models.core_v1 import ConfigMap
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
