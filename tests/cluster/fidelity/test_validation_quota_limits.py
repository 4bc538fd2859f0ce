"""ResourceQuota and LimitRange validation over HTTP, with kube-apiserver 1.32's
(field, reason) causes and messages.

Sources: pkg/apis/core/validation/validation.go (ValidateResourceQuota,
ValidateResourceQuotaSpec, validateResourceQuotaScopes,
validateScopedResourceSelectorRequirement, ValidateResourceQuotaUpdate,
ValidateResourceQuotaResourceName, validateResourceName, ValidateResourceQuantityValue,
ValidateLimitRange, validateLimitRangeTypeName, validateLimitRangeResourceName,
validateContainerResourceName), pkg/apis/core/helper/helpers.go (standard resources, quota
resources and scopes, IsResourceQuotaScopeValidForResource), pkg/apis/core/v1/defaults.go
(SetDefaults_LimitRangeItem: a Container item's default from max, defaultRequest from default
then min, before validation).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

QUOTAS = "/api/v1/namespaces/default/resourcequotas"
LIMITS = "/api/v1/namespaces/default/limitranges"
INV, REQ, FORB, DUP = ("FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden",
                       "FieldValueDuplicate")

QUOTA_CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("negative", {"hard": {"pods": "-1"}}, {("spec.hard[pods]", INV): 1}),
    ("fractional-count", {"hard": {"pods": "1500m"}}, {("spec.hard[pods]", INV): 1}),
    # a bare unknown name is neither a standard resource nor a quota resource
    ("unknown-name", {"hard": {"gpus": "1"}}, {("spec.hard[gpus]", INV): 2}),
    # storage is a standard resource, not a quota one (requests.storage is)
    ("storage", {"hard": {"storage": "1Gi"}}, {("spec.hard[storage]", INV): 1}),
    ("unsupported-scope", {"hard": {"pods": "1"}, "scopes": ["Everything"]},
     {("spec.scopes", INV): 1}),
    # BestEffort counts pods only: services and cpu are misapplied (one cause each)
    ("misapplied-scope", {"hard": {"pods": "1", "services": "1", "cpu": "1"},
                          "scopes": ["BestEffort"]}, {("spec.scopes", INV): 2}),
    ("conflicting-scopes", {"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]},
     {("spec.scopes", INV): 1}),
    ("selector-values", {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In"}]}},
     {("spec.scopeSelector.matchExpressions.values", REQ): 1}),
    ("selector-exists-only", {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "BestEffort", "operator": "In", "values": ["x"]}]}},
     {("spec.scopeSelector.matchExpressions.operator", INV): 1}),
]


@pytest.mark.parametrize(("case", "spec", "expected"), QUOTA_CASES,
                         ids=[c[0] for c in QUOTA_CASES])
def test_quota_create_is_validated(kube: Kube, case: str, spec: dict[str, Any],
                                   expected: dict[tuple[str, str], int]) -> None:
    body = {"metadata": {"name": case}, "spec": spec}
    assert kube.reject("POST", QUOTAS, body) == Counter(expected)


def test_quota_messages_are_kubernetes_words(kube: Kube) -> None:
    assert kube.messages("POST", QUOTAS, {"metadata": {"name": "words"}, "spec": {
        "hard": {"gpus": "1", "pods": "-1"}, "scopes": ["Bogus"]}}) == {
        "spec.hard[gpus]": ['Invalid value: "gpus": must be a standard resource type or fully '
                            'qualified', 'Invalid value: "gpus": must be a standard resource '
                                         'for quota'],
        "spec.hard[pods]": ['Invalid value: "-1": must be greater than or equal to 0'],
        "spec.scopes": ['Invalid value: []core.ResourceQuotaScope{"Bogus"}: unsupported scope']}


def test_quota_scopes_are_immutable(kube: Kube) -> None:
    """ValidateResourceQuotaUpdate: the scopes may not change; the hard limits may."""
    status, body = kube.call("POST", QUOTAS, {"metadata": {"name": "scoped"},
                                              "spec": {"hard": {"pods": "1"}}})
    assert status == 201, body
    status, body = kube.call("PATCH", f"{QUOTAS}/scoped", {"spec": {"hard": {"pods": "2"}}},
                             MERGE)
    assert status == 200, body
    assert kube.messages("PATCH", f"{QUOTAS}/scoped", {"spec": {"scopes": ["Terminating"]}},
                         MERGE) == {"spec.scopes": [
                             'Invalid value: []core.ResourceQuotaScope{"Terminating"}: field is '
                             'immutable']}


LIMIT_CASES: list[tuple[str, list[dict[str, Any]], dict[tuple[str, str], int]]] = [
    ("unknown-type", [{"type": "Node"}], {("spec.limits[0].type", INV): 1}),
    ("duplicate-type", [{"type": "Pod"}, {"type": "Pod"}], {("spec.limits[1].type", DUP): 1}),
    ("pod-default", [{"type": "Pod", "default": {"cpu": "1"}}],
     {("spec.limits[0].default", FORB): 1}),
    ("claim-without-storage", [{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}],
     {("spec.limits[0].limits", REQ): 1}),
    ("container-resource", [{"type": "Container", "max": {"storage": "1Gi"}}],
     # (the max is defaulted into default and defaultRequest, each named again)
     {("spec.limits[0].max[storage]", INV): 1, ("spec.limits[0].default[storage]", INV): 1,
      ("spec.limits[0].defaultRequest[storage]", INV): 1}),
    # min > max: also above the defaults drawn from max
    ("min-above-max", [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}}],
     {("spec.limits[0].min[cpu]", INV): 1, ("spec.limits[0].defaultRequest[cpu]", INV): 1,
      ("spec.limits[0].default[cpu]", INV): 1}),
    ("request-above-limit", [{"type": "Container", "default": {"cpu": "1"},
                              "defaultRequest": {"cpu": "2"}}],
     {("spec.limits[0].defaultRequest[cpu]", INV): 1}),
    ("ratio-below-one", [{"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}}],
     {("spec.limits[0].maxLimitRequestRatio[cpu]", INV): 1}),
    ("ratio-above-span", [{"type": "Container", "max": {"cpu": "4"}, "min": {"cpu": "1"},
                           "maxLimitRequestRatio": {"cpu": "8"}}],
     {("spec.limits[0].maxLimitRequestRatio[cpu]", INV): 1}),
]


@pytest.mark.parametrize(("case", "limits", "expected"), LIMIT_CASES,
                         ids=[c[0] for c in LIMIT_CASES])
def test_limit_range_create_is_validated(kube: Kube, case: str, limits: list[dict[str, Any]],
                                         expected: dict[tuple[str, str], int]) -> None:
    body = {"metadata": {"name": case}, "spec": {"limits": limits}}
    assert kube.reject("POST", LIMITS, body) == Counter(expected)


def test_limit_range_messages_are_kubernetes_words(kube: Kube) -> None:
    quantity = ('resource.Quantity{i:resource.int64Amount{value:8, scale:0}, '
                'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"8", Format:"DecimalSI"}')
    assert kube.messages("POST", LIMITS, {"metadata": {"name": "words"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "4"}, "min": {"cpu": "1"},
         "maxLimitRequestRatio": {"cpu": "8"}}]}}) == {
        "spec.limits[0].maxLimitRequestRatio[cpu]": [
            f"Invalid value: {quantity}: ratio 8 is greater than max/min = 4.000000"]}


def test_valid_limit_range_is_defaulted_and_kept(kube: Kube) -> None:
    status, body = kube.call("POST", LIMITS, {"metadata": {"name": "fine"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}]}})
    assert status == 201, body
    assert body["spec"]["limits"][0]["defaultRequest"] == {"cpu": "2"}
