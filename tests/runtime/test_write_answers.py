"""A reconcile's writes answer typed objects validated when first read
(setpoint/client/answers.py): a reconcile that drops them (the Widget example) pays
nothing, one that reads them, now or later, reads the server's answer to that write."""

from __future__ import annotations

from typing import Any

from setpoint.client import Client
from setpoint.client.answers import is_unread
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import Context, Controller, Result
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter
from tests.runtime.widgets import Widget, WidgetSpec, config_map_for


async def test_a_reconciles_answers_read_later_are_the_servers_answers_to_its_writes(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install(Widget)
    answers: list[tuple[Any, Any]] = []
    ctrl = Controller.for_(Widget, name="answers").owns(ConfigMap)

    @ctrl.reconcile
    async def reconcile(ctx: Context[Widget], widget: Widget) -> Result:
        def wanted(cm: ConfigMap) -> None:
            cm.data = config_map_for(widget).data

        config_map, _ = await ctx.create_or_update(config_map_for(widget), wanted)
        widget.status.observed_generation = widget.metadata.generation
        status = await ctx.update_status(widget)
        answers.append((config_map, status))
        return Result()

    await run_manager(ctrl)
    await k8s.create(Widget(name="w", spec=WidgetSpec(message="one")))
    await wait_for(Widget, "w", lambda w: w.status.observed_generation == 1)
    await wait_for(lambda: len(answers) == 1)
    first_config_map, first_status = answers[0]
    assert is_unread(first_config_map) and is_unread(first_status)
    server_config_map = await k8s.get(ConfigMap, "w-cfg")
    assert isinstance(first_config_map, ConfigMap)
    assert first_config_map.data == {"message": "one", "size": "1"}
    assert first_config_map.metadata.resource_version == \
        server_config_map.metadata.resource_version
    assert type(first_config_map) is ConfigMap

    # a later write to the same objects does not change an answer held and not yet read
    await k8s.patch(Widget, "w", {"spec": {"message": "two"}})
    await wait_for(Widget, "w", lambda w: w.status.observed_generation == 2)
    await wait_for(lambda: len(answers) == 2)
    assert is_unread(first_status)
    assert type(first_status) is not Widget and isinstance(first_status, Widget)
    assert first_status.status.observed_generation == 1
    assert first_status.spec.message == "one"
    second_config_map, second_status = answers[1]
    assert second_config_map.data["message"] == "two"
    assert second_status.status.observed_generation == 2
