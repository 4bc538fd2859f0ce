"""Create and update validation of flowcontrol.apiserver.k8s.io/v1 FlowSchemas and
PriorityLevelConfigurations over HTTP, compared with kube-apiserver 1.32's causes.

Sources (kubernetes v1.32): pkg/apis/flowcontrol/validation/validation.go (ValidateFlowSchema,
ValidateFlowSchemaSpec, ValidateFlowSchemaPolicyRulesWithSubjects, ValidateFlowSchemaSubject,
ValidateFlowSchemaResourcePolicyRule, ValidateFlowSchemaNonResourcePolicyRule,
ValidateNonResourceURLPath, ValidateFlowSchemaStatus, ValidatePriorityLevelConfiguration,
ValidatePriorityLevelConfigurationSpec, ValidateLimitedPriorityLevelConfiguration,
ValidateExemptPriorityLevelConfiguration, ValidateLimitResponse,
ValidatePriorityLevelQueuingConfiguration, ValidateIfMandatoryPriorityLevelConfigurationObject);
k8s.io/apiserver pkg/util/shufflesharding (RequiredEntropyBits, MaxHashBits = 60);
pkg/apis/flowcontrol/v1/defaults.go (matchingPrecedence 1000, queuing 64/8/50).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

FLOW_SCHEMAS = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
LEVELS = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
REQ, INV, UNSUP, FORB, DUP = ("FieldValueRequired", "FieldValueInvalid",
                              "FieldValueNotSupported", "FieldValueForbidden",
                              "FieldValueDuplicate")


def schema(name: str, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 5000,
        "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                   "resourceRules": [{"verbs": ["get"], "apiGroups": [""],
                                      "resources": ["pods"], "namespaces": ["default"]}]}]}
    base.update(spec)
    return {"metadata": {"name": name}, "spec": base}


def rule(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"subjects": [{"kind": "Group", "group": {"name": "g"}}]}
    base.update(fields)
    return base


def level(name: str, **limited: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"nominalConcurrencyShares": 10,
                            "limitResponse": {"type": "Queue", "queuing": {
                                "queues": 16, "handSize": 4, "queueLengthLimit": 20}}}
    base.update(limited)
    return {"metadata": {"name": name}, "spec": {"type": "Limited", "limited": base}}


def queuing(**fields: Any) -> dict[str, Any]:
    return {"type": "Queue", "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 20,
                                         **fields}}


RES = "spec.rules[0].resourceRules[0]"
SUBJ = "spec.rules[0].subjects[0]"
LIM = "spec.limited"
Q = "spec.limited.limitResponse.queuing"

CASES: list[tuple[str, str, dict[str, Any], dict[tuple[str, str], int]]] = [
    # ValidateFlowSchemaSpec (matchingPrecedence defaults to 1000 when absent)
    ("fs-no-spec", FLOW_SCHEMAS, {"metadata": {"name": "fs-no-spec"}},
     {("spec.priorityLevelConfiguration.name", REQ): 1}),
    ("fs-precedence-high", FLOW_SCHEMAS, schema("fs-precedence-high", matchingPrecedence=10001),
     {("spec.matchingPrecedence", INV): 1}),
    ("fs-precedence-negative", FLOW_SCHEMAS, schema("fs-precedence-neg", matchingPrecedence=-3),
     {("spec.matchingPrecedence", INV): 1}),
    ("fs-precedence-one", FLOW_SCHEMAS, schema("fs-precedence-one", matchingPrecedence=1),
     {("spec.matchingPrecedence", INV): 1}),
    ("fs-distinguisher", FLOW_SCHEMAS,
     schema("fs-distinguisher", distinguisherMethod={"type": "ByGroup"}),
     {("spec.distinguisherMethod.type", UNSUP): 1}),
    ("fs-level-name", FLOW_SCHEMAS,
     schema("fs-level-name", priorityLevelConfiguration={"name": "Not_A_Name"}),
     {("spec.priorityLevelConfiguration.name", INV): 1}),
    # ValidateFlowSchemaPolicyRulesWithSubjects
    ("fs-empty-rule", FLOW_SCHEMAS, schema("fs-empty-rule", rules=[{}]),
     {("spec.rules[0].subjects", REQ): 1, ("spec.rules[0]", REQ): 1}),
    # ValidateFlowSchemaSubject: the kind's member Required, the others Forbidden
    ("fs-subject-union", FLOW_SCHEMAS, schema("fs-subject-union", rules=[rule(
        subjects=[{"kind": "ServiceAccount", "user": {"name": "u"}, "group": {"name": "g"}}],
        nonResourceRules=[{"verbs": ["*"], "nonResourceURLs": ["*"]}])]),
     {(f"{SUBJ}.serviceAccount", REQ): 1, (f"{SUBJ}.user", FORB): 1,
      (f"{SUBJ}.group", FORB): 1}),
    ("fs-subject-kind", FLOW_SCHEMAS, schema("fs-subject-kind", rules=[rule(
        subjects=[{"kind": "Robot"}],
        nonResourceRules=[{"verbs": ["*"], "nonResourceURLs": ["*"]}])]),
     {(f"{SUBJ}.kind", UNSUP): 1}),
    ("fs-subject-sa", FLOW_SCHEMAS, schema("fs-subject-sa", rules=[rule(
        subjects=[{"kind": "ServiceAccount", "serviceAccount": {"name": ""}},
                  {"kind": "User", "user": {"name": ""}}],
        nonResourceRules=[{"verbs": ["*"], "nonResourceURLs": ["*"]}])]),
     {(f"{SUBJ}.serviceAccount.name", REQ): 1, (f"{SUBJ}.serviceAccount.namespace", REQ): 1,
      ("spec.rules[0].subjects[1].user.name", REQ): 1}),
    # ValidateFlowSchemaResourcePolicyRule
    ("fs-resource-required", FLOW_SCHEMAS, schema("fs-resource-required", rules=[rule(
        resourceRules=[{"verbs": []}])]),
     {(f"{RES}.verbs", REQ): 1, (f"{RES}.apiGroups", REQ): 1, (f"{RES}.resources", REQ): 1,
      (f"{RES}.namespaces", REQ): 1}),
    ("fs-resource-wildcards", FLOW_SCHEMAS, schema("fs-resource-wildcards", rules=[rule(
        resourceRules=[{"verbs": ["*", "create"], "apiGroups": ["*", "tak"],
                        "resources": ["*", "tok"], "namespaces": ["*", "default"]}])]),
     {(f"{RES}.verbs", INV): 1, (f"{RES}.apiGroups", INV): 1, (f"{RES}.resources", INV): 1,
      (f"{RES}.namespaces", INV): 1}),
    ("fs-resource-verb-namespace", FLOW_SCHEMAS, schema("fs-resource-verb-ns", rules=[rule(
        resourceRules=[{"verbs": ["get", "fly"], "apiGroups": [""], "resources": ["pods"],
                        "namespaces": ["Bad_NS"]}])]),
     {(f"{RES}.verbs", UNSUP): 1, (f"{RES}.namespaces[0]", INV): 1}),
    # ValidateFlowSchemaNonResourcePolicyRule and ValidateNonResourceURLPath
    ("fs-non-resource", FLOW_SCHEMAS, schema("fs-non-resource", rules=[rule(
        nonResourceRules=[{"verbs": ["get"], "nonResourceURLs": [
            "", "healthz", "/a b", "/a//b", "/a*", "/*/x/*", "/ok/*", "/"]},
            {"verbs": ["*"], "nonResourceURLs": ["*", "/x"]}])]),
     {**{(f"spec.rules[0].nonResourceRules[0].nonResourceURLs[{i}]", INV): 1
         for i in range(6)},
      ("spec.rules[0].nonResourceRules[1].nonResourceURLs", INV): 1}),
    # ValidatePriorityLevelConfigurationSpec
    ("pl-no-spec", LEVELS, {"metadata": {"name": "pl-no-spec"}}, {("spec.type", UNSUP): 1}),
    ("pl-limited-missing", LEVELS,
     {"metadata": {"name": "pl-limited-missing"}, "spec": {"type": "Limited"}},
     {(LIM, REQ): 1}),
    ("pl-exempt-name", LEVELS, {"metadata": {"name": "pl-exempt-name"}, "spec": {
        "type": "Exempt", "limited": {"limitResponse": {"type": "Reject"}}}},
     {("spec.type", INV): 1, (LIM, FORB): 1}),
    ("pl-limited-with-exempt", LEVELS, {**level("pl-limited-with-exempt"), "spec": {
        **level("x")["spec"], "exempt": {}}}, {("spec.exempt", FORB): 1}),
    # ValidateLimitedPriorityLevelConfiguration
    ("pl-percents", LEVELS, level("pl-percents", nominalConcurrencyShares=-1,
                                  lendablePercent=101, borrowingLimitPercent=-5),
     {(f"{LIM}.nominalConcurrencyShares", INV): 1, (f"{LIM}.lendablePercent", INV): 1,
      (f"{LIM}.borrowingLimitPercent", INV): 1}),
    # ValidateLimitResponse
    ("pl-response-type", LEVELS, level("pl-response-type", limitResponse={"type": "Drop"}),
     {(f"{LIM}.limitResponse.type", UNSUP): 1}),
    ("pl-reject-queuing", LEVELS,
     level("pl-reject-queuing", limitResponse={"type": "Reject", "queuing": {}}),
     {(Q, FORB): 1}),
    ("pl-queue-missing", LEVELS, level("pl-queue-missing", limitResponse={"type": "Queue"}),
     {(Q, REQ): 1}),
    # ValidatePriorityLevelQueuingConfiguration (zero is defaulted, so negatives here)
    ("pl-queuing-negative", LEVELS, level("pl-queuing-negative", limitResponse=queuing(
        queues=-1, handSize=-1, queueLengthLimit=-1)),
     {(f"{Q}.queues", INV): 1, (f"{Q}.handSize", INV): 1, (f"{Q}.queueLengthLimit", INV): 1}),
    ("pl-queues-max", LEVELS,
     level("pl-queues-max", limitResponse=queuing(queues=10000001, handSize=2)),
     {(f"{Q}.queues", INV): 1}),
    ("pl-hand-over-queues", LEVELS,
     level("pl-hand-over-queues", limitResponse=queuing(queues=4, handSize=5)),
     {(f"{Q}.handSize", INV): 1}),
    ("pl-entropy", LEVELS,
     level("pl-entropy", limitResponse=queuing(queues=1000, handSize=7)),
     {(f"{Q}.handSize", INV): 1}),
]


@pytest.mark.parametrize(("case", "path", "body", "causes"), CASES,
                         ids=[c[0] for c in CASES])
def test_flowcontrol_create_is_validated(kube: Kube, case: str, path: str,
                                         body: dict[str, Any],
                                         causes: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", path, body) == Counter(causes)


def test_flow_schema_status_is_reset_on_create_and_validated_on_its_endpoint(kube: Kube) -> None:
    """PrepareForCreate resets the status (pkg/registry/flowcontrol/flowschema/strategy.go:
    ``fl.Status = flowcontrol.FlowSchemaStatus{}``, written ``{}``); a /status write meets
    ValidateFlowSchemaStatusUpdate, which is ValidateFlowSchemaStatus."""
    conditions = [{"type": "Dangling", "status": "True"}, {"type": "Dangling"}, {"status": "x"}]
    status, created = kube.call("POST", FLOW_SCHEMAS,
                                {**schema("fs-status"), "status": {"conditions": conditions}})
    assert (status, created["status"]) == (201, {}), created
    try:
        # (a patch: the APF configuration controller may have written the status already)
        assert kube.reject("PATCH", f"{FLOW_SCHEMAS}/fs-status/status",
                           {"status": {"conditions": conditions}},
                           "application/merge-patch+json") == Counter({
            ("status.conditions[1].type", DUP): 1, ("status.conditions[2].type", REQ): 1})
    finally:
        kube.call("DELETE", f"{FLOW_SCHEMAS}/fs-status")


def test_flow_schema_without_spec_is_gos_422(kube: Kube) -> None:
    """The whole Status of a FlowSchema with no spec: defaulting gives it precedence 1000,
    so the only cause is ValidateFlowSchemaSpec's missing priority level."""
    status, answer = kube.call("POST", FLOW_SCHEMAS, {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "no-spec"}})
    assert status == 422
    assert answer["reason"] == "Invalid"
    assert answer["details"] == {
        "name": "no-spec", "group": "flowcontrol.apiserver.k8s.io", "kind": "FlowSchema",
        "causes": [{"reason": REQ, "message": "Required value: must reference a priority level",
                    "field": "spec.priorityLevelConfiguration.name"}]}
    assert answer["message"] == (
        'FlowSchema.flowcontrol.apiserver.k8s.io "no-spec" is invalid: '
        "spec.priorityLevelConfiguration.name: Required value: must reference a priority level")


def test_flowcontrol_messages_are_kubernetes_words(kube: Kube) -> None:
    m = kube.messages("POST", FLOW_SCHEMAS, schema(
        "fs-words", matchingPrecedence=20000, distinguisherMethod={"type": "ByGroup"},
        rules=[rule(resourceRules=[{"verbs": ["*", "get"], "apiGroups": [""],
                                    "resources": ["pods"], "clusterScope": True}],
                    nonResourceRules=[{"verbs": ["get"], "nonResourceURLs": ["/a*"]}])]))
    assert m == {
        "spec.matchingPrecedence": ["Invalid value: 20000: must not be greater than 10000"],
        "spec.distinguisherMethod.type": [
            'Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:"ByGroup"}: '
            'supported values: "ByNamespace", "ByUser"'],
        f"{RES}.verbs": ['Invalid value: []string{"*", "get"}: '
                         "if '*' is present, must not specify other verbs"],
        "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]": [
            'Invalid value: "/a*": wildcard can only do suffix matching']}
    m = kube.messages("POST", LEVELS, level("pl-words", limitResponse=queuing(
        queues=1000, handSize=7)))
    assert m == {f"{Q}.handSize": ["Invalid value: 7: required entropy bits of deckSize 1000 "
                                   "and handSize 7 should not be greater than 60"]}
    m = kube.messages("POST", FLOW_SCHEMAS, schema("fs-precedence-zero-neg",
                                                   matchingPrecedence=-1))
    assert m == {"spec.matchingPrecedence": ["Invalid value: -1: must be a positive value"]}


def test_valid_flowcontrol_objects_are_accepted_and_defaulted(kube: Kube) -> None:
    status, fs = kube.call("POST", FLOW_SCHEMAS, schema(
        "fs-valid", matchingPrecedence=None, distinguisherMethod={"type": "ByNamespace"},
        rules=[rule(resourceRules=[{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                    "clusterScope": True}],
                    nonResourceRules=[{"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}]),
               rule(subjects=[{"kind": "ServiceAccount", "serviceAccount": {
                   "name": "*", "namespace": "default"}}],
                    resourceRules=[{"verbs": ["get", "list"], "apiGroups": [""],
                                    "resources": ["pods"], "namespaces": ["*"]}])]))
    assert status == 201, fs
    assert fs["spec"]["matchingPrecedence"] == 1000
    body = level("pl-valid", limitResponse={"type": "Queue", "queuing": {}},
                 nominalConcurrencyShares=0)
    status, pl = kube.call("POST", LEVELS, body)
    assert status == 201, pl
    assert pl["spec"]["limited"]["limitResponse"]["queuing"] == {
        "queues": 64, "handSize": 8, "queueLengthLimit": 50}
    assert pl["spec"]["limited"]["lendablePercent"] == 0
    # an update is validated whole again (ValidatePriorityLevelConfigurationUpdate)
    pl["spec"]["limited"]["lendablePercent"] = 200
    assert kube.reject("PUT", f"{LEVELS}/pl-valid", pl) == Counter(
        {(f"{LIM}.lendablePercent", INV): 1})


def test_bootstrap_objects_pass_validation(kube: Kube) -> None:
    """The server's own mandatory and suggested objects are valid: each written back
    unchanged is accepted."""
    for path in (FLOW_SCHEMAS, LEVELS):
        status, listed = kube.call("GET", path)
        assert status == 200
        assert listed["items"]
        for item in listed["items"]:
            item["apiVersion"], item["kind"] = listed["apiVersion"], listed["kind"][:-4]
            status, answer = kube.call("PUT", f"{path}/{item['metadata']['name']}", item)
            assert status == 200, answer


def test_mandatory_specs_are_fixed(kube: Kube) -> None:
    """internalbootstrap's MandatoryFlowSchemas / MandatoryPriorityLevelConfigurations:
    ``catch-all``'s spec is fixed; ``exempt`` level's except its spec.exempt."""
    status, fs = kube.call("GET", f"{FLOW_SCHEMAS}/catch-all")
    assert status == 200
    changed = copy.deepcopy(fs)
    changed["spec"]["matchingPrecedence"] = 9999
    assert kube.messages("PUT", f"{FLOW_SCHEMAS}/catch-all", changed) == {
        "spec": ["Invalid value: flowcontrol.FlowSchemaSpec{...}: spec of 'catch-all' must "
                 "equal the fixed value"]}
    status, pl = kube.call("GET", f"{LEVELS}/catch-all")
    changed = copy.deepcopy(pl)
    changed["spec"]["limited"]["nominalConcurrencyShares"] = 6
    assert kube.reject("PUT", f"{LEVELS}/catch-all", changed) == Counter({("spec", INV): 1})
    status, exempt = kube.call("GET", f"{LEVELS}/exempt")
    exempt["spec"]["exempt"] = {"nominalConcurrencyShares": 3, "lendablePercent": 10}
    status, answer = kube.call("PUT", f"{LEVELS}/exempt", exempt)
    assert status == 200, answer
    exempt = answer
    exempt["spec"]["exempt"]["lendablePercent"] = 101
    assert kube.reject("PUT", f"{LEVELS}/exempt", exempt) == Counter(
        {("spec.exempt.lendablePercent", INV): 1})
