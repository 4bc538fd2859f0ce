"""Node operations over the API, for the CLI and the testing kit.

Everything here is an ordinary write to a Node, so it works from any client: adding a node
(as a kubelet registers one), cordoning (``spec.unschedulable``), tainting (``spec.taints``,
with kubectl's rule that a taint is identified by key and effect), and the readiness faults
the simulated kubelet and node lifecycle controller act on (the ``sim.setpoint.dev/node-ready``
annotation, see :mod:`setpoint.workloads.nodes`).

    await nodeops.add_node(client, cpu="2", zone="zone-b")
    await nodeops.taint(client, "node-2", "dedicated", "db", "NoSchedule")
    await nodeops.set_not_ready(client, "node-1")          # kubelet gone: Unknown
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from setpoint.client import Client, ConflictError, PatchType
from setpoint.machinery.objects import Obj
from setpoint.workloads.nodelease import NODE
from setpoint.workloads.nodes import (
    DEFAULT_EPHEMERAL_STORAGE,
    GONE,
    NOT_READY,
    READY_ANNOTATION,
    node_address,
    node_object,
)
from setpoint.workloads.settings import WorkloadSettings

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class Taint:
    """A taint as ``kubectl taint`` writes it: ``key[=value]:Effect``."""

    key: str
    effect: str
    value: str = ""

    def as_dict(self) -> Obj:
        out: Obj = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value \
            else f"{self.key}:{self.effect}"


_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def parse_taint(text: str) -> Taint:
    """``key=value:Effect`` or ``key:Effect``; raises ValueError with kubectl's wording."""
    key_value, sep, effect = text.rpartition(":")
    if not sep or not key_value:
        raise ValueError(f"invalid taint spec: {text}")
    key, _, value = key_value.partition("=")
    if effect not in EFFECTS:
        raise ValueError(f"invalid taint effect: {effect}, unsupported taint effect")
    if not _QUALIFIED.match(key) or len(key.rpartition("/")[2]) > 63:
        raise ValueError(f"invalid taint spec: {text}, name part must consist of alphanumeric "
                         "characters, '-', '_' or '.'")
    return Taint(key, effect, value)


def _index_of(name: str, prefix: str) -> int | None:
    if name.startswith(prefix) and name[len(prefix):].isdigit():
        return int(name[len(prefix):])
    return None


async def add_node(
    client: Client, name: str | None = None, *, cpu: str | None = None,
    memory: str | None = None, pods: int | None = None, zone: str | None = None,
    labels: Mapping[str, str] | None = None, taints: Sequence[Taint | Mapping[str, Any]] = (),
    ephemeral_storage: str = DEFAULT_EPHEMERAL_STORAGE,
    settings: WorkloadSettings | None = None,
) -> Obj:
    """Register a node as a kubelet would; returns it. Without ``name``, the next free
    ``node-N``; without ``zone``, the zone round-robin gives node N. Defaults come from
    ``settings`` (the cluster's defaults when None). Raises ``AlreadyExistsError``."""
    settings = settings or WorkloadSettings()
    existing = [str(n["metadata"]["name"]) for n in (await client.list(NODE)).items]
    indexes = [i for i in (_index_of(n, settings.name_prefix) for n in existing) if i]
    index = _index_of(name, settings.name_prefix) if name else None
    if index is None:
        index = max(indexes, default=0) + 1 if name is None else len(existing) + 1
    name = name or f"{settings.name_prefix}{index}"
    if zone is None and settings.zones:
        zone = settings.zones[(index - 1) % len(settings.zones)]
    body = node_object(
        name, address=node_address(index), cpu=cpu or settings.node_cpu,
        memory=memory or settings.node_memory,
        pods=pods if pods is not None else settings.node_pods, zone=zone, labels=labels,
        taints=[t.as_dict() if isinstance(t, Taint) else dict(t) for t in taints],
        ephemeral_storage=ephemeral_storage)
    created: Obj = await client.create(body)
    return created


async def _patch(client: Client, name: str, patch: Obj) -> Obj:
    result: Obj = await client.patch(NODE, name, patch, patch_type=PatchType.MERGE)
    return result


async def cordon(client: Client, name: str) -> Obj:
    """Mark the node unschedulable (``kubectl cordon``)."""
    return await _patch(client, name, {"spec": {"unschedulable": True}})


async def uncordon(client: Client, name: str) -> Obj:
    """Make the node schedulable again (``kubectl uncordon``)."""
    return await _patch(client, name, {"spec": {"unschedulable": None}})


async def _update_taints(client: Client, name: str, change: Any) -> Obj:
    for attempt in range(_CONFLICT_RETRIES):
        node = await client.get(NODE, name)
        taints = change([dict(t) for t in (node.get("spec") or {}).get("taints") or ()])
        node.setdefault("spec", {})["taints"] = taints or None
        try:
            result: Obj = await client.update(node)
            return result
        except ConflictError:
            if attempt == _CONFLICT_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


async def taint(client: Client, name: str, key: str, value: str = "",
                effect: str = "NoSchedule") -> Obj:
    """Add the taint, or replace the one with the same key and effect."""
    new = Taint(key, effect, value)
    if effect not in EFFECTS:
        raise ValueError(f"invalid taint effect: {effect}, unsupported taint effect")

    def change(taints: list[Obj]) -> list[Obj]:
        kept = [t for t in taints if (t.get("key"), t.get("effect")) != (key, effect)]
        return [*kept, new.as_dict()]

    return await _update_taints(client, name, change)


async def untaint(client: Client, name: str, key: str, effect: str | None = None) -> Obj:
    """Remove the taints with ``key`` (and ``effect``, when given)."""
    def change(taints: list[Obj]) -> list[Obj]:
        return [t for t in taints if t.get("key") != key
                or (effect is not None and t.get("effect") != effect)]

    return await _update_taints(client, name, change)


async def set_not_ready(client: Client, name: str, *, unreachable: bool = True) -> Obj:
    """Make the node NotReady: by default its kubelet stops (no heartbeat, no lease; once
    they are older than the node monitor grace period, the node lifecycle controller marks
    it Unknown and taints it ``unreachable``); with
    ``unreachable=False`` the kubelet keeps posting but reports ``Ready=False``
    (``not-ready`` taints)."""
    value = GONE if unreachable else NOT_READY
    return await _patch(client, name, {"metadata": {"annotations": {READY_ANNOTATION: value}}})


async def set_ready(client: Client, name: str) -> Obj:
    """Bring the node's kubelet back: it posts Ready again and its taints go away."""
    return await _patch(client, name, {"metadata": {"annotations": {READY_ANNOTATION: None}}})
