"""The ``/status`` writes of PersistentVolumes and PersistentVolumeClaims, and the
VolumeAttributesClass fields, checked against kube-apiserver 1.32.

Sources: pkg/registry/core/persistentvolume/strategy.go (persistentvolumeStatusStrategy
PrepareForUpdate: ``lastPhaseTransitionTime``, PersistentVolumeLastPhaseTransitionTime GA
and locked on in 1.32); pkg/registry/core/persistentvolumeclaim/strategy.go with
pkg/api/persistentvolumeclaim/util.go (``DropDisabledFieldsFromSpec``,
``DropDisabledFieldsFromStatus``) and pkg/api/persistentvolume/util.go
(``DropDisabledSpecFields``): VolumeAttributesClass is beta and off by default in 1.32.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

PVS = "/api/v1/persistentvolumes"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
OLD = "2020-01-01T00:00:00Z"


async def _put_status(api: API, path: str, obj: dict[str, Any],
                      status: dict[str, Any]) -> dict[str, Any]:
    code, out = await api.put(f"{path}/status", {**obj, "status": status})
    assert code == 200, out
    written: dict[str, Any] = out
    return written


async def test_pv_status_phase_change_stamps_the_transition_time(module_api: API) -> None:
    code, pv = await module_api.post(PVS, {"metadata": {"name": "pv-phase"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/x"}}})
    assert code == 201, pv
    assert pv["status"]["phase"] == "Pending" and pv["status"]["lastPhaseTransitionTime"]
    path = f"{PVS}/pv-phase"
    # same phase, a time given: the writer's time
    pv = await _put_status(module_api, path, pv,
                           {"phase": "Pending", "lastPhaseTransitionTime": OLD})
    assert pv["status"]["lastPhaseTransitionTime"] == OLD
    # same phase, no time: the stored time kept
    pv = await _put_status(module_api, path, pv, {"phase": "Pending"})
    assert pv["status"]["lastPhaseTransitionTime"] == OLD
    # a new phase without a time: stamped now
    pv = await _put_status(module_api, path, pv, {"phase": "Available"})
    stamped = pv["status"]["lastPhaseTransitionTime"]
    assert stamped not in (None, OLD)
    # a new phase with the stored time unchanged: stamped again; with a time of its own: kept
    pv = await _put_status(module_api, path, pv,
                           {"phase": "Released", "lastPhaseTransitionTime": OLD})
    assert pv["status"]["lastPhaseTransitionTime"] == OLD
    pv = await _put_status(module_api, path, pv,
                           {"phase": "Available", "lastPhaseTransitionTime": OLD})
    assert pv["status"]["lastPhaseTransitionTime"] not in (None, OLD)


async def test_volume_attributes_class_fields_are_dropped_while_the_gate_is_off(
        module_api: API) -> None:
    code, pv = await module_api.post(PVS, {"metadata": {"name": "pv-vac"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/x"}, "volumeAttributesClassName": "fast"}})
    assert code == 201, pv
    assert "volumeAttributesClassName" not in pv["spec"]
    code, pvc = await module_api.post(PVCS, {"metadata": {"name": "pvc-vac"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
        "volumeAttributesClassName": "fast"}})
    assert code == 201, pvc
    assert "volumeAttributesClassName" not in pvc["spec"]
    pvc = await _put_status(module_api, f"{PVCS}/pvc-vac", pvc, {
        "phase": "Bound", "capacity": {"storage": "1Gi"},
        "currentVolumeAttributesClassName": "fast",
        "modifyVolumeStatus": {"status": "Pending", "targetVolumeAttributesClassName": "x"},
        "allocatedResources": {"storage": "1Gi"}})
    assert "currentVolumeAttributesClassName" not in pvc["status"]
    assert "modifyVolumeStatus" not in pvc["status"]
    # RecoverVolumeExpansionFailure is beta and on in 1.32: its field stays
    assert pvc["status"]["allocatedResources"] == {"storage": "1Gi"}
    assert pvc["status"]["phase"] == "Bound"
