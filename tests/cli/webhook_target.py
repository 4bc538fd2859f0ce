"""A module with webhooks, for the ``setpoint generate webhooks`` tests."""

from __future__ import annotations

from typing import Any

from setpoint.client import Kind
from setpoint.runtime import AdmissionContext, Manager, ManagerSettings, Webhook

config_maps = Webhook.for_(Kind("v1", "ConfigMap"))


@config_maps.default
async def default(ctx: AdmissionContext[dict[str, Any]], cm: dict[str, Any]) -> None:
    cm["metadata"].setdefault("labels", {})["defaulted-by"] = "webhook-target"


@config_maps.validate
async def validate(ctx: AdmissionContext[dict[str, Any]], cm: dict[str, Any], old: Any,
                   operation: str) -> None:
    return None


manager = Manager(webhooks=[config_maps], settings=ManagerSettings(webhook_port=0))
