"""apiequality.Semantic.DeepEqual of metav1.Time and MicroTime members: instants, at the
precision each is serialized.

Source: k8s.io/apimachinery pkg/api/equality/semantic.go (``func(a, b metav1.Time) bool {
return a.UTC() == b.UTC() }``, the same for MicroTime); pkg/apis/meta/v1/time_proto.go
(a stored Time keeps whole seconds: ``Nanos`` is not written) and micro_time_proto.go
(MicroTime truncated to microseconds).
"""

from __future__ import annotations

import pytest

from setpoint.cluster.registry.gomembers import go_zeros
from setpoint.machinery.equality import semantic_equal
from setpoint.machinery.schema import definitions

CONDITION = "io.k8s.api.core.v1.PodCondition"  # lastTransitionTime: metav1.Time
EVENT = "io.k8s.api.events.v1.Event"  # eventTime: metav1.MicroTime


@pytest.mark.parametrize(("a", "b", "equal"), [
    ("2024-01-01T00:00:00Z", "2024-01-01T01:00:00+01:00", True),  # one instant, two zones
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00.000Z", True),
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z", False),
    ("2024-01-01T00:00:00Z", None, False),
    (None, None, True),
])
def test_a_time_compares_as_an_instant(a: str | None, b: str | None, equal: bool) -> None:
    schema = definitions().get(CONDITION).properties["lastTransitionTime"]
    assert semantic_equal(a, b, schema) is equal


def test_a_micro_time_keeps_its_microseconds() -> None:
    schema = definitions().get(EVENT).properties["eventTime"]
    assert semantic_equal("2024-01-01T00:00:00.000001Z", "2024-01-01T00:00:00.000001Z",
                          schema)
    assert not semantic_equal("2024-01-01T00:00:00.000001Z", "2024-01-01T00:00:00.000002Z",
                              schema)


def test_a_non_pointer_member_is_its_zero_value_when_absent_a_pointer_one_is_nil() -> None:
    """k8s.io/api core/v1/types.go: Container ``Stdin bool `json:"stdin,omitempty"```,
    SecurityContext ``Privileged *bool``."""
    container = definitions().get("io.k8s.api.core.v1.Container")
    assert semantic_equal({"name": "c"}, {"name": "c", "stdin": False}, container, go_zeros,
                          "io.k8s.api.core.v1.Container")
    assert not semantic_equal({"name": "c"}, {"name": "c", "stdin": True}, container,
                              go_zeros, "io.k8s.api.core.v1.Container")
    context = container.properties["securityContext"]
    assert not semantic_equal({}, {"privileged": False}, context, go_zeros)
