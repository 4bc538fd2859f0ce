"""How an HPA's proposal becomes the replicas it sets: stabilization, rate limits, bounds.

A port of kube-controller-manager 1.32's ``pkg/controller/podautoscaler/horizontal.go``
normalization: without ``spec.behavior`` (``normalizeDesiredReplicas``) the highest
recommendation of the downscale stabilization window
(``--horizontal-pod-autoscaler-downscale-stabilization``, 5 minutes) and a scale-up of at
most twice the replicas (at least 4); with it (``normalizeDesiredReplicasWithBehaviors``)
each direction's stabilization window and policies over the scale events of their periods.
Each result comes with the AbleToScale and ScalingLimited reasons and messages Go sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
INT32_MAX = 2**31 - 1

READY = ("ReadyForNewScale", "recommended size matches current size")
DOWN_STABILIZED = ("ScaleDownStabilized", "recent recommendations were higher than current "
                   "one, applying the highest recent recommendation")
UP_STABILIZED = ("ScaleUpStabilized", "recent recommendations were lower than current one, "
                 "applying the lowest recent recommendation")
WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica "
            "count")
TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum "
            "scale rate")
DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the "
              "maximum scale rate")


@dataclass
class ScaleEvent:
    change: int
    at: float
    outdated: bool = False


@dataclass
class Normalized:
    replicas: int
    able_to_scale: tuple[str, str]
    limited: bool
    limited_reason: tuple[str, str]


@dataclass
class AutoscalerHistory:
    """What the controller remembers of one HPA between syncs (lost with the process, as
    kube-controller-manager's maps are)."""

    recommendations: list[tuple[int, float]] = field(default_factory=list)
    scale_up_events: list[ScaleEvent] = field(default_factory=list)
    scale_down_events: list[ScaleEvent] = field(default_factory=list)

    def record_initial(self, current: int, now: float) -> None:
        """``recordInitialRecommendation``."""
        if not self.recommendations:
            self.recommendations.append((current, now))

    def _replace_or_append(self, value: int, now: float, old_index: int | None) -> None:
        if old_index is None:
            self.recommendations.append((value, now))
        else:
            self.recommendations[old_index] = (value, now)

    def stabilize(self, desired: int, window: float, now: float) -> int:
        """``stabilizeRecommendation``: the highest recommendation of the window."""
        best, old = desired, None
        for i, (value, at) in enumerate(self.recommendations):
            if at < now - window:
                old = i
            elif value > best:
                best = value
        self._replace_or_append(desired, now, old)
        return best

    def stabilize_with_behavior(self, desired: int, current: int, up: Obj, down: Obj,
                                now: float) -> tuple[int, tuple[str, str]]:
        """``stabilizeRecommendationWithBehaviors``."""
        up_window = int(up.get("stabilizationWindowSeconds") or 0)
        down_window = int(down.get("stabilizationWindowSeconds") or 0)
        if desired >= current:
            delay, pick, reason = up_window, min, UP_STABILIZED
        else:
            delay, pick, reason = down_window, max, DOWN_STABILIZED
        obsolete = now - max(up_window, down_window)
        best, old = desired, None
        for i, (value, at) in enumerate(self.recommendations):
            if at > now - delay:
                best = pick(value, best)
            if at < obsolete:
                old = i
        self._replace_or_append(desired, now, old)
        return best, reason

    def store_scale_event(self, behavior: Obj | None, previous: int, new: int,
                          now: float) -> None:
        """``storeScaleEvent``: only kept when the HPA has a behavior to apply them to."""
        if behavior is None:
            return
        if new > previous:
            events, rules, change = self.scale_up_events, behavior.get("scaleUp") or {}, \
                new - previous
        else:
            events, rules, change = self.scale_down_events, behavior.get("scaleDown") or {}, \
                previous - new
        longest = max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or ()),
                      default=0)
        for event in events:
            if event.at < now - longest:
                event.outdated = True
        fresh = ScaleEvent(change, now)
        for i, event in enumerate(events):
            if event.outdated:
                events[i] = fresh
                return
        events.append(fresh)


def _changed_in_period(period: int, events: list[ScaleEvent], now: float) -> int:
    return sum(e.change for e in events if e.at > now - period)


def scale_up_limit(current: int, events: list[ScaleEvent], rules: Obj, now: float) -> int:
    """``calculateScaleUpLimitWithScalingRules``."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    pick = min if select == "Min" else max
    result = 0
    for policy in rules.get("policies") or ():
        start = current - _changed_in_period(int(policy.get("periodSeconds") or 0), events, now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start + value
        else:  # Percent: rounded up so that a small percentage still adds a pod
            proposed = math.ceil(start * (1 + value / 100))
        result = pick(result, proposed)
    return result


def scale_down_limit(current: int, events: list[ScaleEvent], rules: Obj, now: float) -> int:
    """``calculateScaleDownLimitWithBehaviors``."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    pick = max if select == "Min" else min
    result = INT32_MAX
    for policy in rules.get("policies") or ():
        start = current + _changed_in_period(int(policy.get("periodSeconds") or 0), events, now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start - value
        else:
            proposed = int(start * (1 - value / 100))
        result = pick(result, proposed)
    return result


def with_rules(current: int, desired: int, minimum: int, maximum: int
               ) -> tuple[int, tuple[str, str]]:
    """``convertDesiredReplicasWithRules`` (no behavior)."""
    up_limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
    if maximum > up_limit:
        allowed_max, reason = up_limit, UP_LIMIT
    else:
        allowed_max, reason = maximum, TOO_MANY
    if desired < minimum:
        return minimum, TOO_FEW
    if desired > allowed_max:
        return allowed_max, reason
    return desired, WITHIN_RANGE


def normalize(history: AutoscalerHistory, current: int, desired: int, minimum: int,
              maximum: int, downscale_window: float, now: float) -> Normalized:
    """``normalizeDesiredReplicas``: an HPA without ``spec.behavior``."""
    stabilized = history.stabilize(desired, downscale_window, now)
    able = DOWN_STABILIZED if stabilized != desired else READY
    replicas, reason = with_rules(current, stabilized, minimum, maximum)
    return Normalized(replicas, able, replicas != stabilized, reason)


def normalize_with_behavior(history: AutoscalerHistory, behavior: Obj, current: int,
                            desired: int, minimum: int, maximum: int,
                            downscale_window: float, now: float) -> Normalized:
    """``normalizeDesiredReplicasWithBehaviors``."""
    up = dict(behavior.get("scaleUp") or {})
    down = dict(behavior.get("scaleDown") or {})
    up.setdefault("stabilizationWindowSeconds", 0)
    if down.get("stabilizationWindowSeconds") is None:  # maybeInitScaleDownStabilizationWindow
        down["stabilizationWindowSeconds"] = int(downscale_window)
    stabilized, stabilized_reason = history.stabilize_with_behavior(desired, current, up,
                                                                    down, now)
    able = stabilized_reason if stabilized != desired else READY
    replicas, reason = stabilized, WITHIN_RANGE
    if stabilized > current:
        limit = max(scale_up_limit(current, history.scale_up_events, up, now), current)
        if maximum > limit:
            allowed, why = limit, UP_LIMIT
        else:
            allowed, why = maximum, TOO_MANY
        if stabilized > allowed:
            replicas, reason = allowed, why
    elif stabilized < current:
        limit = min(scale_down_limit(current, history.scale_down_events, down, now), current)
        if minimum < limit:
            allowed, why = limit, DOWN_LIMIT
        else:
            allowed, why = minimum, TOO_FEW
        if stabilized < allowed:
            replicas, reason = allowed, why
    return Normalized(replicas, able, replicas != stabilized, reason)
