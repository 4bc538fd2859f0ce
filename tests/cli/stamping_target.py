"""A leader-elected operator for the SIGSTOP test: it stamps each ConfigMap labelled
``stamp=true`` with the process's identity and the ``data.v`` it reconciled, under a short
lease (``stamping-leader``). The identity comes from ``STAMPING_IDENTITY``."""

from __future__ import annotations

import os
from typing import Any

from setpoint.client import Kind
from setpoint.runtime import Context, Controller, Manager, ManagerSettings

IDENTITY = os.environ["STAMPING_IDENTITY"]
config_maps = Controller.for_(Kind("v1", "ConfigMap"), name="stamper")


@config_maps.reconcile
async def reconcile(ctx: Context[dict[str, Any]], cm: dict[str, Any]) -> None:
    meta = cm["metadata"]
    if (meta.get("labels") or {}).get("stamp") != "true":
        return
    await ctx.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": meta["name"], "namespace": meta["namespace"], "annotations": {
            "reconciled-by": IDENTITY, "reconciled-v": (cm.get("data") or {}).get("v", "")}}},
        owner=False)


# each process its own field manager (name) and identity, one lease for both
manager = Manager([config_maps], settings=ManagerSettings(
    name=f"stamper-{IDENTITY}", identity=IDENTITY, leader_election=True,
    leader_election_id="stamping-leader", lease_duration=4.0, renew_deadline=3.0,
    retry_period=0.5, graceful_shutdown_timeout=5.0, cache_sync_timeout=120.0))
