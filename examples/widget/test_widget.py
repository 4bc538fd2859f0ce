"""The Widget operator on a fresh embedded cluster, with the Setpoint testing kit."""

from __future__ import annotations

import asyncio

from examples.widget.api import Widget, WidgetSpec
from examples.widget.operator import manager
from setpoint.client import Client
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.testing import Faults, OperatorRunner, SetpointCluster, present
from setpoint.testing.plugin import ManagerLauncher, Waiter


async def test_a_widget_gets_its_config_map_and_ready_status(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install(Widget)
    await run_manager(manager)
    created = await k8s.create(Widget(name="w", spec=WidgetSpec(size=3, message="hello")))

    ready = await wait_for(Widget, "w", lambda w: w.status.ready)
    assert ready.status.observed_generation == created.metadata.generation
    cm = await k8s.get(ConfigMap, "w-cfg")
    assert cm.data == {"message": "hello", "size": "3"}
    (owner,) = present(cm.metadata.owner_references)
    assert (owner.kind, owner.name, owner.uid, owner.controller) == \
        ("Widget", "w", created.metadata.uid, True)


async def test_changing_the_message_updates_the_config_map_and_status(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install(Widget)
    await run_manager(manager)
    await k8s.create(Widget(name="w", spec=WidgetSpec(message="one")))
    await wait_for(Widget, "w", lambda w: w.status.ready)

    changed = await k8s.patch(Widget, "w", {"spec": {"message": "two"}})
    await wait_for(ConfigMap, "w-cfg", lambda cm: cm.data["message"] == "two")
    await wait_for(Widget, "w", lambda w: w.status.observed_generation ==
                   changed.metadata.generation)


async def test_deleting_a_widget_deletes_its_config_map(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install(Widget)
    await run_manager(manager)
    await k8s.create(Widget(name="w", spec=WidgetSpec(message="bye")))
    await wait_for(ConfigMap, "w-cfg")

    await k8s.delete(Widget, "w")
    await wait_for(ConfigMap, "w-cfg", gone=True)


def config_map_names(runner: OperatorRunner) -> list[str]:
    """The widgets' ConfigMaps in the operator's cache."""
    assert runner.manager is not None
    names = (present(cm.metadata.name) for cm in runner.manager.cache.list(ConfigMap))
    return sorted(name for name in names if name.endswith("-cfg"))


async def test_a_crashed_operator_converges_after_restart_without_duplicates(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    await setpoint_cluster.install(Widget)
    runner = await run_manager(manager)
    # status writes hang, so the crash lands between the ConfigMap and the status
    stuck = faults.latency(30, verb="patch", resource="widgets/status")
    await asyncio.gather(*(k8s.create(Widget(name=f"w{i}", spec=WidgetSpec(message="m")))
                           for i in range(5)))
    await wait_for(lambda: config_map_names(runner) == [f"w{i}-cfg" for i in range(5)])
    before = {cm.metadata.name: cm.metadata.uid for cm in (await k8s.list(ConfigMap)).items
              if present(cm.metadata.name).endswith("-cfg")}
    await runner.crash()
    stuck.remove()

    await runner.restart()
    for i in range(5):
        await wait_for(Widget, f"w{i}", lambda w: w.status.ready)
    after = {cm.metadata.name: cm.metadata.uid for cm in (await k8s.list(ConfigMap)).items
             if present(cm.metadata.name).endswith("-cfg")}
    assert after == before  # the same five ConfigMaps, none made again
    assert runner.starts == 2


async def test_a_failed_config_map_create_is_retried(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    await setpoint_cluster.install(Widget)
    failure = faults.fail(verb="create", resource="configmaps", status=500, times=2)
    await run_manager(manager)
    await k8s.create(Widget(name="w", spec=WidgetSpec(message="again")))

    await wait_for(Widget, "w", lambda w: w.status.ready)
    assert failure.hits == 2
    assert present((await k8s.get(ConfigMap, "w-cfg")).data)["message"] == "again"


async def test_the_operator_works_with_exactly_the_rbac_generated_for_it(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install(Widget)
    await run_manager(manager, rbac=True)  # its own service account, its generated roles
    await k8s.create(Widget(name="w", spec=WidgetSpec(message="least privilege")))
    await wait_for(Widget, "w", lambda w: w.status.ready)
    assert present((await k8s.get(ConfigMap, "w-cfg")).data)["message"] == "least privilege"
