"""Status conditions follow metav1.Condition semantics (meta.SetStatusCondition)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from setpoint.resources import Condition, ConditionedStatus
from setpoint.resources._conditions import set_condition
from setpoint.testing import present

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 1, 2, tzinfo=UTC)


def test_a_new_condition_gets_a_transition_time() -> None:
    conditions: list[Condition] = []
    assert set_condition(conditions, "Ready", True, reason="Up", now=T0)
    [c] = conditions
    assert (c.type, c.status, c.reason, c.last_transition_time) == ("Ready", "True", "Up", T0)


def test_transition_time_moves_only_when_the_status_changes() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, "Ready", False, reason="Starting", now=T0)
    assert set_condition(conditions, "Ready", False, reason="Waiting", message="m", now=T1)
    assert conditions[0].last_transition_time == T0
    assert conditions[0].reason == "Waiting"
    assert set_condition(conditions, "Ready", True, reason="Up", now=T1)
    assert conditions[0].last_transition_time == T1


def test_setting_the_same_condition_again_changes_nothing() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, "Ready", True, reason="Up", observed_generation=2, now=T0)
    assert not set_condition(conditions, "Ready", True, reason="Up", observed_generation=2,
                             now=T1)


def test_a_condition_needs_a_reason_and_a_known_status() -> None:
    with pytest.raises(ValueError, match="reason"):
        set_condition([], "Ready", True, reason="")
    with pytest.raises(ValueError, match="True, False or Unknown"):
        set_condition([], "Ready", "yes", reason="R")


def test_conditioned_status_methods_and_wire_form() -> None:
    """Setting and removing through the status are deprecated aliases of ctx.set_condition
    and ctx.remove_condition (one way to set a condition); they still work."""
    status = ConditionedStatus()
    with pytest.warns(DeprecationWarning, match="ctx.set_condition"):
        status.set_condition("Available", True, reason="MinimumReplicasAvailable",
                             observed_generation=3)
        status.set_condition("Degraded", None, reason="Unknown")
    assert status.is_true("Available") and not status.is_true("Degraded")
    assert present(status.get_condition("Degraded")).status == "Unknown"
    with pytest.warns(DeprecationWarning, match="ctx.remove_condition"):
        assert status.remove_condition("Degraded") and not status.remove_condition("Degraded")
    [wire] = status.to_dict()["conditions"]
    assert set(wire) == {"type", "status", "reason", "message", "observedGeneration",
                         "lastTransitionTime"}
    assert wire["lastTransitionTime"].endswith("Z")
