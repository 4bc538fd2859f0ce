"""Whether a policy's matchConstraints or a binding's matchResources select a request.

k8s.io/apiserver pkg/admission/plugin/policy/matching/matching.go ``Matcher.Matches``: the
namespace and object selectors first (a selector's error is kept until the rules matched),
then excludeResourceRules, then resourceRules (none: every request), each rule as the
webhooks' ``rules.Matcher`` with ``resourceNames`` naming the object; with ``matchPolicy:
Equivalent`` a rule may match an equivalent resource (another version, or a group sharing
the storage), which is then the resource the policy sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.admission.webhook import equivalence
from setpoint.cluster.admission.webhook import matching as webhook_matching
from setpoint.cluster.registry.admissionpoints import AdmissionPoint
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Reader


class MatchError(Exception):
    """A selector or a resource that cannot be evaluated: the policy's configuration error."""


def _named_rule_matches(rule: Obj, point: AdmissionPoint, group: str, version: str) -> bool:
    if not webhook_matching.rule_matches(rule, point, group, version):
        return False
    names = rule.get("resourceNames") or []
    return not names or point.name in names  # an empty name list always matches


def _resource_rules(rules: list[Obj], match_policy: str, point: AdmissionPoint,
                    registry: Registry) -> ResourceType | None:
    """matchesResourceRules: the resource a rule matched, the request's before equivalents."""
    requested = point.rt
    if any(_named_rule_matches(r, point, requested.group, requested.version) for r in rules):
        return requested
    if match_policy != "Equivalent":
        return None
    equivalents = equivalence.equivalent_resources(registry, requested)
    for rule in rules:
        for other in equivalents:
            if (other.group, other.version) != (requested.group, requested.version) \
                    and _named_rule_matches(rule, point, other.group, other.version):
                return other
    return None


def matches(criteria: Obj, point: AdmissionPoint, store: Reader, registry: Registry
            ) -> ResourceType | None:
    """The resource the criteria select the request as, or None; MatchError when a selector
    fails for a request the rules select."""
    selector_error: str | None = None
    try:
        if not webhook_matching.namespace_selector(store, criteria, point, point.obj):
            return None
    except StatusError as exc:
        selector_error = exc.message
    try:
        if not webhook_matching.object_selector(criteria, point.obj, point.old):
            return None
    except StatusError as exc:
        selector_error = selector_error or exc.message
    match_policy = str(criteria.get("matchPolicy") or "Exact")
    if _resource_rules(criteria.get("excludeResourceRules") or [], match_policy, point,
                       registry) is not None:
        return None
    rules = criteria.get("resourceRules") or []
    matched = (_resource_rules(rules, match_policy, point, registry) if rules else point.rt)
    if matched is None:
        return None
    if selector_error is not None:
        raise MatchError(selector_error)
    return matched
