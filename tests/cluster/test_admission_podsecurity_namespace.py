"""PodSecurity's check of a namespace's existing pods when its enforce level rises
(k8s.io/pod-security-admission v0.32.0 admission/admission.go EvaluatePodsInNamespace,
prioritizePods, decoratePodWarnings), on the server's own store: one pod of each controller
is checked before the controllers' other pods, at most ``namespaceMaxPodsToCheck``; the
warnings name the first pod of each reason by name and count the others."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.cluster.admission.podsecurity import admission
from setpoint.cluster.admission.podsecurity.admission import PodSecurity
from setpoint.cluster.admission.podsecurity.levels import BASELINE, LATEST, LevelVersion
from setpoint.cluster.storage import Store


def _pod(name: str, owner: str | None = None, /, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"u-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": owner, "uid": owner, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def test_one_pod_per_controller_first_then_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(None)
    for name in ("rs-a", "rs-b", "rs-c"):
        store.put("/pods", _pod(name, "rs", hostNetwork=True))
    privileged: dict[str, Any] = {"containers": [{"name": "c", "image": "i",
                                  "securityContext": {"privileged": True}}]}
    store.put("/pods", _pod("z-solo", **privileged))
    store.put("/pods", _pod("solo", **privileged))
    plugin = PodSecurity(store)
    baseline = LevelVersion(BASELINE, LATEST)
    assert plugin.evaluate_pods_in_namespace("ns", baseline) == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "rs-a (and 2 other pods): host namespaces",
        "solo (and 1 other pod): privileged",
    ]
    monkeypatch.setattr(admission, "NAMESPACE_MAX_PODS_TO_CHECK", 3)
    assert plugin.evaluate_pods_in_namespace("ns", baseline) == [
        "new PodSecurity enforce level only checked against the first 3 of 5 existing pods",
        'existing pods in namespace "ns" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "rs-a: host namespaces",
        "solo (and 1 other pod): privileged",
    ]
