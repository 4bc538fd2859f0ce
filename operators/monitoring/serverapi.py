"""What the running servers say, over their HTTP APIs: Prometheus' active targets,
Alertmanager's gossip cluster, a blackbox exporter's probe. Every call has a short timeout
and returns None when the server cannot be asked (not started, simulated, unreachable):
the status then keeps saying what it last knew, and the controller asks again later."""

from __future__ import annotations

from typing import Any

import aiohttp

TIMEOUT = aiohttp.ClientTimeout(total=5)


async def get_json(url: str, params: dict[str, str] | None = None) -> Any | None:
    try:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as session, \
                session.get(url, params=params) as response:
            if response.status != 200:
                return None
            return await response.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None


async def get_text(url: str, params: dict[str, str] | None = None) -> str | None:
    try:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as session, \
                session.get(url, params=params) as response:
            return await response.text() if response.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, UnicodeDecodeError):
        return None


async def prometheus_targets(address: str) -> list[dict[str, Any]] | None:
    """``GET /api/v1/targets?state=active``: ``{job, instance, health, lastError}`` each."""
    body = await get_json(f"http://{address}/api/v1/targets", {"state": "active"})
    if not isinstance(body, dict) or body.get("status") != "success":
        return None
    out = []
    for target in (body.get("data") or {}).get("activeTargets") or ():
        labels = target.get("labels") or {}
        out.append({"job": str(labels.get("job", "")),
                    "instance": str(labels.get("instance", "")),
                    "health": str(target.get("health", "unknown")),
                    "last_error": target.get("lastError") or None})
    return sorted(out, key=lambda t: (t["job"], t["instance"]))


async def alertmanager_cluster(address: str) -> dict[str, Any] | None:
    """``GET /api/v2/status``'s ``cluster``: ``{status, peers: [{name, address}]}``."""
    body = await get_json(f"http://{address}/api/v2/status")
    cluster = body.get("cluster") if isinstance(body, dict) else None
    return cluster if isinstance(cluster, dict) else None


async def probe_success(exporter: str, module: str, target: str) -> bool | None:
    """What the blackbox exporter's ``/probe`` says of ``target`` (its probe_success)."""
    text = await get_text(f"http://{exporter}/probe", {"module": module, "target": target})
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("probe_success "):
            return line.split()[1] == "1"
    return None
