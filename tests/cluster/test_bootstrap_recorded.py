"""The start's bootstrap objects, stored from their recording, are what the full write path
stores.

kube-apiserver creates the system namespaces, RBAC's bootstrap roles and bindings
(pkg/registry/rbac/rest/storage_rbac.go, PostStartHook ``rbac/bootstrap-roles``), the
system PriorityClasses (pkg/registry/scheduling/rest/storage_scheduling.go,
AddSystemPriorityClasses) and the APF configuration (pkg/registry/flowcontrol/ensurer), whose
FlowSchemas' ``Dangling`` status the APF config controller then applies
(k8s.io/apiserver pkg/util/flowcontrol/apf_controller.go), through its own storage before
``/readyz`` says ready. Setpoint stores them as the full
create path recorded them (``setpoint/cluster/bootstrap/recorded.py``), filling in each
start's uid and times. Here a start from the recording and a start through the full path
(the recorder's mode) make the same writes: the same events in the same order at the same
resourceVersions, and the same objects byte for byte but for uid and times; and the
recording is the one this code makes (regenerate it with
``.venv/bin/python tools/bootstrap_recorded.py``).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import orjson

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.bootstrap import recorded
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage.store import Event

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # metav1.Time, whole seconds
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def _normalized(raw: bytes) -> tuple[bytes, str]:
    """The stored JSON with uid and times blanked (key order kept), and the uid; each
    must be set as a create sets it (a random UUID, RFC 3339 times)."""
    obj: dict[str, Any] = orjson.loads(raw)
    meta = obj["metadata"]
    uid = meta["uid"]
    assert UID.fullmatch(uid), meta
    meta["uid"] = ""
    assert TIME.fullmatch(meta["creationTimestamp"]), meta
    meta["creationTimestamp"] = ""
    for entry in meta.get("managedFields") or ():
        assert TIME.fullmatch(entry["time"]), meta
        entry["time"] = ""
    for condition in (obj.get("status") or {}).get("conditions") or ():
        assert TIME.fullmatch(condition["lastTransitionTime"]), obj
        condition["lastTransitionTime"] = ""
    return orjson.dumps(obj), uid


async def _start(*, full_path: bool) -> tuple[list[tuple[Any, ...]], APIServer]:
    server = APIServer()
    writes: list[tuple[Any, ...]] = []

    def heard(event: Event) -> None:
        assert event.raw is not None
        writes.append((event.revision, event.type, event.resource, event.namespace,
                       event.name, *_normalized(event.raw)))

    server.store.add_listener(heard)
    if full_path:
        server.ensurer.recorder = {"creates": {}, "updates": []}
    server.start()
    await server.stop()
    return writes, server


async def test_bootstrap_objects_from_the_recording_equal_the_full_write_paths() -> None:
    fast, fast_server = await _start(full_path=False)
    full, full_server = await _start(full_path=True)
    assert fast_server.ensurer.missed == 0  # every bootstrap object came from the file
    assert full_server.ensurer.missed == 150  # (all through the full path)
    assert (fast_server.ensurer.updates_replayed, full_server.ensurer.updates_replayed) \
        == (13, 0)  # the Dangling conditions the APF config controller writes
    assert len(fast) >= 150
    # the same writes, in order, at the same resourceVersions, equal objects but the uid
    assert [w[:6] for w in fast] == [w[:6] for w in full]
    fast_uids = {w[6] for w in fast}
    # one uid per object: an update keeps its object's
    assert len(fast_uids) == len({(w[2], w[3], w[4]) for w in fast})
    assert not fast_uids & {w[6] for w in full}  # each start's own
    created = {(w[2], w[3], w[4]): orjson.loads(w[5]) for w in fast if w[1] == "ADDED"}
    assert created[("rbac.authorization.k8s.io/clusterroles", "", "cluster-admin")][
        "metadata"]["managedFields"][0]["manager"] == "kube-apiserver"


async def test_the_recording_is_what_this_code_stores() -> None:
    made = await asyncio.to_thread(recorded.record, APIServer)
    on_file = orjson.loads(recorded.PATH.read_bytes())
    assert list(made) == list(on_file), (
        "stale: run .venv/bin/python tools/bootstrap_recorded.py")
    assert orjson.dumps(made) == orjson.dumps(on_file), (
        "stale: run .venv/bin/python tools/bootstrap_recorded.py")


async def test_a_restart_with_stored_webhooks_recreates_a_deleted_role_through_admission(
        tmp_path: Path) -> None:
    """A restart recreates a bootstrap role a user deleted (the ensurer creates what is
    missing); with a webhook configuration stored, admission the recording never saw could
    apply to it, so it takes the full write path; the other objects are kept as stored."""
    first = APIServer(tmp_path)
    first.start()
    assert first.ensurer.missed == 0
    rest = first.rest
    webhooks = first.resource("admissionregistration.k8s.io", "v1",
                               "validatingwebhookconfigurations")
    rest.create(webhooks, None, Decoded({"metadata": {"name": "configmaps-only"}, "webhooks": [{
        "name": "configmaps.example.com", "admissionReviewVersions": ["v1"],
        "sideEffects": "None", "clientConfig": {"url": "https://127.0.0.1:1/check"},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                   "resources": ["configmaps"]}]}]}),
        WriteOptions(field_manager="test"))
    roles = first.resource("rbac.authorization.k8s.io", "v1", "clusterroles")
    kept_uid = rest.get(roles, None, "admin")["metadata"]["uid"]
    rest.delete(roles, None, "view", DeleteOptions())
    await first.stop()

    second = APIServer(tmp_path)
    second.start()
    try:
        assert second.ensurer.missed == 1  # the deleted role, not from the recording
        assert second.ensurer.updates_replayed == 0
        view = second.rest.get(roles, None, "view")
        assert [e["manager"] for e in view["metadata"]["managedFields"]] == ["kube-apiserver"]
        assert second.rest.get(roles, None, "admin")["metadata"]["uid"] == kept_uid
    finally:
        await second.stop()
