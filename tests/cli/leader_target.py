"""A leader-elected operator for the ``setpoint run`` shutdown tests: it watches ConfigMaps
and holds a short lease (``leader-target-leader``) with a 5 s grace period."""

from __future__ import annotations

from typing import Any

from setpoint.client import Kind
from setpoint.runtime import Context, Controller, Manager, ManagerSettings

config_maps = Controller.for_(Kind("v1", "ConfigMap"), name="configmaps")


@config_maps.reconcile
async def reconcile(ctx: Context[dict[str, Any]], cm: dict[str, Any]) -> None:
    return None


manager = Manager([config_maps], settings=ManagerSettings(
    name="leader-target", leader_election=True, lease_duration=4.0, renew_deadline=3.0,
    retry_period=0.5, graceful_shutdown_timeout=5.0, cache_sync_timeout=120.0))
