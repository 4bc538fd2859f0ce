"""The one maturity check that acts: delete a pod of an instance and watch whether the
operator looks again.

KubePlus asks operators to "subscribe to Pod restart events for your Custom Resources and
ensure that the required Custom Resource guarantees are maintained on the Pod" (robustness
against side-car injection, which recreates pods). Deleting a pod is what such a restart
is to the API, on any cluster. The operator has looked again when, after the deletion, it
rewrites the instance's status or records an event about it; an operator that writes the
same status it had, and no event, cannot be told from one that did nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from setpoint.client import Client, Kind, NotFoundError
from setpoint.platform.maturity import Verdict, verdict
from setpoint.platform.operatorfacts import Obj, OperatorFacts, meta, ref

POD = Kind("v1", "Pod")
EVENT = Kind("v1", "Event")


def _changed(before: Any, after: Any) -> list[str]:
    before = before if isinstance(before, dict) else {}
    after = after if isinstance(after, dict) else {}
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


async def _event_uids(client: Client, instance: Obj) -> set[str]:
    uid = meta(instance).get("uid")
    listed = await client.list_all(EVENT, namespace=meta(instance).get("namespace"))
    return {str(meta(e).get("uid")) for e in listed.items
            if (e.get("involvedObject") or e.get("regarding") or {}).get("uid") == uid}


async def _status_rewritten(client: Client, kind: Kind, instance: Obj,
                            before: Any, resource_version: str) -> list[str]:
    """The status fields changed by the first status write after ``resource_version``."""
    m = meta(instance)
    async with client.watch(kind, namespace=m.get("namespace"), name=m.get("name"),
                            resource_version=resource_version) as changes:
        async for event_type, obj in changes:
            if event_type == "MODIFIED":
                changed = _changed(before, obj.get("status"))
                if changed:
                    return changed
    return []


def _depth(facts: OperatorFacts, instance: Obj, pod: Obj) -> int:
    """Owner hops from ``pod`` up to ``instance`` (a pod of an unowned object: one more).
    The closest pod is the instance's most directly: a StatefulSet's before a
    Deployment's, whose pods hang below a ReplicaSet."""
    uid, hops, current = meta(instance).get("uid"), 0, pod
    by_uid = {meta(o).get("uid"): o for o in facts.objects}
    while hops < 10:
        refs = meta(current).get("ownerReferences") or []
        if not refs:
            return hops + 1
        hops += 1
        if any(r.get("uid") == uid for r in refs):
            return hops
        parent = by_uid.get(refs[0].get("uid"))
        if parent is None:
            return hops + 1
        current = parent
    return hops


async def pod_restart(client: Client, facts: OperatorFacts, instance: Obj,
                      reaction_period: float) -> Verdict:
    """Delete the pod closest to ``instance`` and wait up to ``reaction_period`` seconds
    for the operator to rewrite the instance's status or record an event about it."""
    pods = facts.pods_of(instance)
    if not pods:
        return verdict("pod-restarts", "skip", [f"{ref(instance)} has no pods to restart"])
    pod = min(pods, key=lambda p: (_depth(facts, instance, p), str(meta(p).get("name"))))
    m = meta(instance)
    kind = Kind(str(instance.get("apiVersion")), str(instance.get("kind")))
    current = await client.get(kind, str(m.get("name")), namespace=m.get("namespace"))
    events_before = await _event_uids(client, current)
    with contextlib.suppress(NotFoundError):
        await client.delete(POD, str(meta(pod).get("name")), namespace=meta(pod).get("namespace"))
    evidence = [f"deleted Pod {meta(pod).get('namespace')}/{meta(pod).get('name')}"]
    changed: list[str] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(reaction_period):
            changed = await _status_rewritten(client, kind, current, current.get("status"),
                                              str(meta(current).get("resourceVersion")))
    if changed:
        return verdict("pod-restarts", "pass", [
            *evidence, f"{ref(current)}: the operator rewrote status ({', '.join(changed)})"])
    new_events = await _event_uids(client, current) - events_before
    if new_events:
        return verdict("pod-restarts", "pass", [
            *evidence, f"{ref(current)}: {len(new_events)} new events about it"])
    return verdict("pod-restarts", "fail", [
        *evidence, f"{ref(current)}: no status write and no event within "
                   f"{reaction_period:g} s"])
