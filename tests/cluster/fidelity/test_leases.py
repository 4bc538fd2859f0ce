"""Leases (coordination.k8s.io/v1): validation and the fields of a feature that is off.

Sources (kubernetes/kubernetes, release 1.32): pkg/apis/coordination/validation/validation.go
(ValidateLeaseSpec); pkg/registry/coordination/lease/strategy.go (PrepareForCreate and
PrepareForUpdate drop spec.strategy and spec.preferredHolder while the alpha
CoordinatedLeaderElection gate is off, as it is by default in 1.32).
"""

from __future__ import annotations

from tests.cluster.fidelity.builtin_server import MERGE, Kube

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def test_lease_spec_numbers(kube: Kube) -> None:
    assert kube.messages("POST", LEASES, {"metadata": {"name": "numbers"}, "spec": {
        "leaseDurationSeconds": 0, "leaseTransitions": -1}}) == {
        "spec.leaseDurationSeconds": ["Invalid value: 0: must be greater than 0"],
        "spec.leaseTransitions": ["Invalid value: -1: must be greater than or equal to 0"]}


def test_coordinated_election_fields_are_dropped(kube: Kube) -> None:
    """With the gate off a preferredHolder without a strategy is no error: both are
    dropped before validation, on create and on an update of a lease without them."""
    status, lease = kube.call("POST", LEASES, {"metadata": {"name": "gated"}, "spec": {
        "holderIdentity": "a", "preferredHolder": "b"}})
    assert status == 201, lease
    assert lease["spec"] == {"holderIdentity": "a"}
    status, lease = kube.call("PATCH", f"{LEASES}/gated", {"spec": {
        "strategy": "OldestEmulationVersion", "preferredHolder": "b"}}, MERGE)
    assert status == 200, lease
    assert lease["spec"] == {"holderIdentity": "a"}
