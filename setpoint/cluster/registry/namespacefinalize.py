"""``namespaces/{name}/finalize``: the spec's finalizers replaced, nothing else.

As the apiserver's FinalizeREST (pkg/registry/core/namespace/storage/storage.go): the PUT
changes only ``spec.finalizers``; a terminating namespace whose last finalizer goes (and that
has no metadata finalizers) is removed from storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from setpoint.cluster.registry.genericstore import WriteResult
from setpoint.cluster.serializer.decode import Decoded
from setpoint.machinery import errors

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Store


def finalize_namespace(store: Store, rt: ResourceType, name: str, body: Any,
                       opts: Any) -> WriteResult:
    del opts  # dry run and field manager do not apply: the apiserver ignores them here too
    if rt.kind != "Namespace" or rt.group:
        raise errors.path_not_found()
    obj = body.obj if isinstance(body, Decoded) else body
    live = store.get(rt.storage_key, "", name)
    if live is None:
        raise errors.not_found("namespaces", name)
    if not isinstance(obj, dict):
        raise errors.bad_request("the body of a finalize request must be a Namespace")
    finalizers = (obj.get("spec") or {}).get("finalizers") or []
    new = {**live, "spec": {**(live.get("spec") or {}), "finalizers": finalizers}}
    if not finalizers:
        new["spec"].pop("finalizers")
    if new == live:
        return WriteResult(live)
    if live["metadata"].get("deletionTimestamp") and not finalizers and not live[
            "metadata"].get("finalizers"):
        store.delete(rt.storage_key, "", name)
        return WriteResult(new)
    return WriteResult(store.put(rt.storage_key, new))
