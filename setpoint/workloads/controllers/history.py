"""ControllerRevisions: the template history of StatefulSets and DaemonSets.

A port of ``pkg/controller/history``. A revision stores the patch that restores its
owner's pod template (``{"spec": {"template": {..., "$patch": "replace"}}}``), a revision
number, the template's labels plus ``controller.kubernetes.io/hash``, and is named
``<owner>-<hash>``. The hash is FNV-32a of the data (and the owner's collision count),
written with the apimachinery's safe alphabet, so the same template always maps to the same
revision (the exact digits differ from Kubernetes', whose hash covers Go's printing of the
object). The data's keys are in Go's map order, which ``kubectl rollout undo`` relies on;
orphaned revisions the owner's selector matches are adopted (``claim_revisions``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import orjson

from setpoint.client import AlreadyExistsError, Kind, NotFoundError
from setpoint.machinery.objects import Obj
from setpoint.runtime import Manager
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.runtime._ownership import controller_of, owner_reference
from setpoint.workloads.controllers.controllerref import claim, recheck_owner
from setpoint.workloads.controllers.podcontrol import selector_of

CONTROLLER_REVISION = Kind("apps/v1", "ControllerRevision")
HASH_LABEL = "controller.kubernetes.io/hash"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_PREFIX = 223


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: no vowels, no look-alike characters."""
    return "".join(SAFE_ALPHABET[ord(ch) % len(SAFE_ALPHABET)] for ch in text)


def template_patch(owner: Mapping[str, Any]) -> Obj:
    """``getPatch``: the data a revision stores for ``owner``'s pod template.

    Go builds it as a ``map[string]interface{}`` and marshals that, so every object's keys
    are written sorted (pkg/controller/statefulset/stateful_set_utils.go and
    pkg/controller/daemon/update.go ``getPatch``); the server keeps a RawExtension's bytes,
    and kubectl's ``rollout undo`` compares them byte for byte with its own marshalling of
    the owner (k8s.io/kubectl/pkg/polymorphichelpers/rollback.go ``statefulsetMatch``,
    ``daemonSetMatch``) to skip a rollback to the current template."""
    template = clone(dict((owner.get("spec") or {}).get("template") or {}))
    template["$patch"] = "replace"
    data: Obj = _keys_sorted({"spec": {"template": template}})
    return data


def _keys_sorted(value: Any) -> Any:
    """``value`` with every object's keys in Go's map marshalling order (bytewise)."""
    if isinstance(value, dict):
        return {key: _keys_sorted(value[key])
                for key in sorted(value, key=lambda k: str(k).encode())}
    if isinstance(value, list):
        return [_keys_sorted(item) for item in value]
    return value


def revision_hash(data: Obj, collision_count: int = 0) -> str:
    """``HashControllerRevision``: a short, stable name suffix for ``data``."""
    payload = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        payload += str(collision_count).encode()
    return safe_encode(str(fnv32a(payload)))


def revision_name(owner_name: str, hash_: str) -> str:
    return f"{owner_name[:MAX_PREFIX]}-{hash_}"


def new_revision(owner: Mapping[str, Any], revision: int, collision_count: int) -> Obj:
    """``NewControllerRevision`` for ``owner``'s current template."""
    data = template_patch(owner)
    template_labels = ((owner.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels = dict(template_labels.get("labels") or {})
    hash_ = revision_hash(data, collision_count)
    labels[HASH_LABEL] = hash_
    metadata: Obj = {"name": revision_name(name_of(owner), hash_),
                     "namespace": namespace_of(owner), "labels": labels,
                     "ownerReferences": [owner_reference(owner)]}
    annotations = meta(owner).get("annotations") or {}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": metadata,
            "data": data, "revision": revision}


def owned_revisions(manager: Manager, owner: Mapping[str, Any]) -> list[Obj]:
    """The revisions ``owner`` controls, oldest revision number first."""
    uid = meta(owner).get("uid")
    revisions = [r for r in manager.cache.owned_by(CONTROLLER_REVISION, str(uid))
                 if any(ref.get("uid") == uid and ref.get("controller")
                        for ref in meta(r).get("ownerReferences") or [])]
    revisions.sort(key=lambda r: (int(r.get("revision") or 0), name_of(r)))
    return revisions


async def claim_revisions(manager: Manager, owner: Obj, owner_kind: Kind, *,
                          release: bool) -> None:
    """Adopt the orphaned revisions of ``owner``'s namespace that its selector matches, as
    a StatefulSet's ``adoptOrphanRevisions`` (pkg/controller/statefulset/
    stateful_set.go) and a DaemonSet's ``controlledHistories`` (pkg/controller/daemon/
    update.go, ``ClaimControllerRevisions``, which with ``release`` also lets go of owned
    ones that stopped matching) do: a set deleted with ``--cascade=orphan`` and created
    again keeps its history."""
    candidates = [r for r in manager.cache.list_raw(CONTROLLER_REVISION,
                                                    namespace=namespace_of(owner))
                  if controller_of(r) is None]
    if release:
        candidates += owned_revisions(manager, owner)
    if not candidates:
        return
    await claim(manager.client, owner, CONTROLLER_REVISION, candidates,
                selector_of((owner.get("spec") or {}).get("selector")),
                can_adopt=recheck_owner(manager.client, owner, owner_kind),
                record=manager.writer.record)


def equal_revision(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("data") == b.get("data")


async def ensure_update_revision(manager: Manager, owner: Obj, revisions: list[Obj],
                                 collision_count: int) -> tuple[Obj, int]:
    """The revision of ``owner``'s current template, created if needed (an equal older one
    is reused and renumbered to be the latest); and the collision count, raised when a
    different revision already holds the name."""
    next_number = max((int(r.get("revision") or 0) for r in revisions), default=0) + 1
    wanted = new_revision(owner, next_number, collision_count)
    equal = [r for r in revisions if equal_revision(r, wanted)]
    if equal:
        latest = equal[-1]
        if latest is revisions[-1] or int(latest.get("revision") or 0) == next_number - 1:
            return latest, collision_count
        body = clone(latest)
        body["revision"] = next_number
        updated: Obj = await manager.client.update(body)
        manager.writer.record(updated)
        return updated, collision_count
    while True:
        try:
            created: Obj = await manager.client.create(wanted)
        except AlreadyExistsError:
            existing = await manager.client.get(CONTROLLER_REVISION, name_of(wanted),
                                                namespace=namespace_of(owner))
            if equal_revision(existing, wanted):
                return existing, collision_count
            collision_count += 1
            wanted = new_revision(owner, next_number, collision_count)
            continue
        manager.writer.record(created)
        return created, collision_count


async def truncate_history(manager: Manager, revisions: list[Obj], live: set[str],
                           limit: int) -> None:
    """Delete the oldest revisions beyond ``limit`` that no pod nor the status names."""
    history = [r for r in revisions if name_of(r) not in live]
    for revision in history[:max(0, len(history) - limit)]:
        with contextlib.suppress(NotFoundError):
            await manager.client.delete(CONTROLLER_REVISION, name_of(revision),
                                        namespace=namespace_of(revision))
