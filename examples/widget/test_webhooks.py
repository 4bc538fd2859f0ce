"""The Widget webhooks, called by a fresh embedded cluster as a real one would call them."""

from __future__ import annotations

import logging

import pytest

from examples.widget.api import Widget, WidgetSpec
from examples.widget.webhooks import manager
from setpoint.client import Client, InvalidError
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter


async def test_a_widget_without_a_message_is_greeted_and_a_huge_one_refused(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, caplog: pytest.LogCaptureFixture) -> None:
    await setpoint_cluster.install(Widget)
    await run_manager(manager)

    created = await k8s.create(Widget(name="w", spec=WidgetSpec(size=2)))
    assert created.spec.message == "hello w"  # the defaulter's patch
    await wait_for(Widget, "w", lambda w: w.status.ready)

    with pytest.raises(InvalidError) as refused:
        await k8s.create(Widget(name="huge", spec=WidgetSpec(size=500)))
    assert refused.value.message.endswith(
        'Widget.bench.setpoint.dev "huge" is invalid: spec.size: Invalid value: 500: '
        "must be at most 100")
    assert [c.field for c in refused.value.causes] == ["spec.size"]

    with caplog.at_level(logging.WARNING, logger="setpoint.client"):
        await k8s.patch(Widget, "w", {"spec": {"message": " "}})
    assert "the message is blank: the ConfigMap will carry nothing" in caplog.text
