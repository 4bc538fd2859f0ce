"""Built-in defaulting and validation, checked against the real apiserver's recordings."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from setpoint.cluster.registry import defaults, validation
from setpoint.cluster.registry.builtin import builtin_resources
from setpoint.cluster.registry.strategy import Strategy
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "golden"
RTS = {(rt.group, rt.kind): rt for rt in builtin_resources()}
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}


def golden_body(scenario: str, step: str) -> Any:
    path = GOLDEN / f"{scenario}.json"
    if not path.exists():
        pytest.skip("conformance corpus not available")
    for s in json.loads(path.read_text())["steps"]:
        if s["name"] == step:
            return s["response"]["body"]
    raise KeyError(step)


def create(key: tuple[str, str], obj: dict[str, Any]) -> tuple[ResourceType, dict[str, Any]]:
    rt = RTS[key]
    obj.setdefault("metadata", {})
    if rt.namespaced:
        obj["metadata"].setdefault("namespace", "test-ns")
    defaults.apply_defaults(rt, obj)
    defaults.reset_status_on_create(rt, obj)
    return rt, obj


def rejection(key: tuple[str, str], obj: dict[str, Any]) -> dict[str, Any] | None:
    rt, obj = create(key, obj)
    causes = validation.validate(rt, obj)
    if not causes:
        return None
    return errors.invalid(rt.kind, obj["metadata"].get("name", ""), causes, rt.group).to_status()


# -- defaults ------------------------------------------------------------------------------

def test_deployment_defaults_match_the_apiserver() -> None:
    _, obj = create(("apps", "Deployment"), {"metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": copy.deepcopy(TEMPLATE)}})
    want = golden_body("deployment-generation", "create")
    assert obj["spec"] == want["spec"]
    assert obj["status"] == want["status"] == {}


def test_pod_defaults_match_the_apiserver_apart_from_admission() -> None:
    _, obj = create(("", "Pod"), {"metadata": {"name": "p1", "labels": {"app": "x"}}, "spec": {
        "containers": [{"name": "c", "image": "busybox:1.36"}]}})
    want = golden_body("field-selectors-pods", "create-p1")
    admitted = {"volumes", "serviceAccountName", "serviceAccount", "tolerations", "priority",
                "preemptionPolicy"}
    assert obj["spec"] == {k: v for k, v in want["spec"].items() if k not in admitted} | {
        "containers": obj["spec"]["containers"]}
    container = {k: v for k, v in want["spec"]["containers"][0].items() if k != "volumeMounts"}
    assert obj["spec"]["containers"] == [container]
    assert obj["status"] == want["status"]


@pytest.mark.parametrize(("image", "policy"), [
    ("busybox", "Always"), ("busybox:latest", "Always"), ("busybox:1.36", "IfNotPresent"),
    ("localhost:5000/app", "Always"), ("app@sha256:" + "a" * 64, "IfNotPresent"),
])
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    _, obj = create(("", "Pod"), {"metadata": {"name": "p"},
                                  "spec": {"containers": [{"name": "c", "image": image}]}})
    assert obj["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_namespace_defaults_label_finalizer_and_phase() -> None:
    _, obj = create(("", "Namespace"), {"metadata": {"name": "${ns}-extra",
                                                     "labels": {"team": "a"}}})
    want = golden_body("namespace-crud", "create")
    assert obj["metadata"]["labels"] == want["metadata"]["labels"]
    assert obj["spec"] == want["spec"]
    assert obj["status"] == want["status"]


def test_secret_string_data_merges_into_data() -> None:
    _, obj = create(("", "Secret"), {"metadata": {"name": "s1"}, "data": {"a": "eA=="},
                                     "stringData": {"a": "override", "b": "bbb"}})
    want = golden_body("secret-crud", "create-with-stringdata")
    assert obj["data"] == want["data"]
    assert obj["type"] == "Opaque"
    assert "stringData" not in obj


def test_crd_defaults_and_initial_status() -> None:
    want = golden_body("crd-create-established-discovery", "create-crd")
    spec = copy.deepcopy(want["spec"])
    del spec["conversion"]
    _, obj = create(("apiextensions.k8s.io", "CustomResourceDefinition"),
                    {"metadata": {"name": "widgets"}, "spec": spec})
    assert obj["spec"] == want["spec"]
    assert obj["status"] == want["status"]


def test_core_event_gets_go_zero_fields() -> None:
    _, obj = create(("", "Event"), {"metadata": {"name": "e"}, "reason": "R"})
    assert obj["eventTime"] is None
    assert obj["reportingComponent"] == "" and obj["source"] == {}


def test_service_defaults() -> None:
    _, obj = create(("", "Service"), {"metadata": {"name": "s"}, "spec": {
        "selector": {"app": "x"}, "ports": [{"port": 80}]}})
    spec = obj["spec"]
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == (
        "ClusterIP", "None", "Cluster")
    # ipFamilyPolicy and ipFamilies are the service allocator's (admission/services.py), not
    # SetDefaults_Service's: see tests/cluster/fidelity/test_managed_fields.py
    assert "ipFamilyPolicy" not in spec and "ipFamilies" not in spec
    assert obj["status"] == {"loadBalancer": {}}


def test_workload_templates_and_jobs() -> None:
    _, job = create(("batch", "Job"), {"metadata": {"name": "j"}, "spec": {
        "template": copy.deepcopy(TEMPLATE)}})
    assert {k: job["spec"][k] for k in ("completions", "parallelism", "backoffLimit",
                                        "completionMode", "suspend", "podReplacementPolicy")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
        "suspend": False, "podReplacementPolicy": "TerminatingOrFailed"}
    assert job["metadata"]["labels"] == {"app": "web"}
    assert job["spec"]["template"]["metadata"]["creationTimestamp"] is None
    _, sts = create(("apps", "StatefulSet"), {"metadata": {"name": "s"}, "spec": {
        "template": copy.deepcopy(TEMPLATE), "volumeClaimTemplates": [
            {"metadata": {"name": "d"},
             "spec": {"resources": {"requests": {"storage": "1024Mi"}}}}]}})
    claim = sts["spec"]["volumeClaimTemplates"][0]
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert claim["status"] == {"phase": "Pending"}
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}


def test_pod_resources_are_canonical_and_qos_computed() -> None:
    _, pod = create(("", "Pod"), {"metadata": {"name": "p"}, "spec": {"containers": [{
        "name": "c", "image": "x",
        "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"}}}]}})
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "1", "memory": "1Gi"},
                         "requests": {"cpu": "1", "memory": "1Gi"}}
    assert pod["status"]["qosClass"] == "Guaranteed"


def test_bad_quantity_is_the_decoders_400() -> None:
    with pytest.raises(StatusError) as info:
        create(("", "Pod"), {"metadata": {"name": "p"}, "spec": {"containers": [{
            "name": "c", "image": "x", "resources": {"limits": {"cpu": "lots"}}}]}})
    assert info.value.code == 400
    assert info.value.message.startswith('Pod in version "v1" cannot be handled as a Pod: '
                                         "quantities must match the regular expression")


def test_webhook_defaults() -> None:
    _, obj = create(("admissionregistration.k8s.io", "MutatingWebhookConfiguration"), {
        "metadata": {"name": "w"}, "webhooks": [{"name": "a.b.c", "rules": [{}],
                                                  "clientConfig": {"service": {"name": "s"}}}]})
    hook = obj["webhooks"][0]
    assert (hook["failurePolicy"], hook["matchPolicy"], hook["timeoutSeconds"],
            hook["reinvocationPolicy"], hook["namespaceSelector"], hook["objectSelector"]) == (
        "Fail", "Equivalent", 10, "Never", {}, {})
    assert hook["rules"][0]["scope"] == "*"
    assert hook["clientConfig"]["service"]["port"] == 443


# -- validation: create --------------------------------------------------------------------

CASES = [
    ("configmap-invalid", "invalid-name-uppercase", ("", "ConfigMap"),
     {"metadata": {"name": "Bad_Name"}}),
    ("configmap-invalid", "name-too-long", ("", "ConfigMap"), {"metadata": {"name": "a" * 261}}),
    ("configmap-invalid", "missing-name", ("", "ConfigMap"), {"metadata": {}}),
    ("configmap-invalid", "invalid-data-key", ("", "ConfigMap"),
     {"metadata": {"name": "badkey"}, "data": {"bad key!": "v"}}),
    ("configmap-invalid", "duplicate-data-and-binarydata-key", ("", "ConfigMap"),
     {"metadata": {"name": "dupkey"}, "data": {"k": "v"}, "binaryData": {"k": "dg=="}}),
    ("configmap-invalid", "invalid-label-value", ("", "ConfigMap"),
     {"metadata": {"name": "badlabel", "labels": {"a": "has space"}}}),
    ("configmap-invalid", "invalid-label-key", ("", "ConfigMap"),
     {"metadata": {"name": "badlabelkey", "labels": {"-bad/key/": "v"}}}),
    ("configmap-invalid", "several-errors-at-once", ("", "ConfigMap"),
     {"metadata": {"name": "several", "labels": {"a": "x y"}, "annotations": {"bad key": "v"}},
      "data": {"bad key!": "v"}}),
    ("namespace-crud", "invalid-name", ("", "Namespace"), {"metadata": {"name": "Bad_NS"}}),
    ("namespace-crud", "name-too-long", ("", "Namespace"), {"metadata": {"name": "a" * 65}}),
    ("deployment-generation", "selector-mismatch", ("apps", "Deployment"),
     {"metadata": {"name": "bad"}, "spec": {"selector": {"matchLabels": {"app": "other"}},
                                             "template": TEMPLATE}}),
    ("deployment-generation", "missing-selector", ("apps", "Deployment"),
     {"metadata": {"name": "bad2"}, "spec": {"template": TEMPLATE}}),
    ("secret-crud", "tls-missing-keys", ("", "Secret"),
     {"metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "stringData": {"foo": "bar"}}),
    ("secret-crud", "dockerconfig-invalid", ("", "Secret"),
     {"metadata": {"name": "dcfg"}, "type": "kubernetes.io/dockerconfigjson",
      "stringData": {".dockerconfigjson": "not json"}}),
    ("lease", "invalid-duration", ("coordination.k8s.io", "Lease"),
     {"metadata": {"name": "bad"}, "spec": {"leaseDurationSeconds": 0}}),
    ("lease", "negative-transitions", ("coordination.k8s.io", "Lease"),
     {"metadata": {"name": "bad2"}, "spec": {"leaseTransitions": -1}}),
]


@pytest.mark.parametrize(("scenario", "step", "key", "body"), CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_create_is_rejected_as_the_apiserver_rejects_it(
        scenario: str, step: str, key: tuple[str, str], body: dict[str, Any]) -> None:
    want = golden_body(scenario, step)
    got = rejection(key, copy.deepcopy(body))
    assert got == want


def test_events_v1_require_event_time_and_a_known_type() -> None:
    base = {"regarding": {"kind": "ConfigMap", "name": "target", "namespace": "test-ns"},
            "reason": "Tested", "note": "n", "type": "Normal", "action": "Test",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1"}
    rt, obj = create(("events.k8s.io", "Event"), {"metadata": {"name": "target.2"}, **base})
    want = golden_body("events-core-and-v1", "v1-create-without-eventtime")
    assert [c.to_dict() for c in validation.validate(rt, obj)] == want["details"]["causes"]
    rt, obj = create(("events.k8s.io", "Event"), {
        "metadata": {"name": "target.4"}, **base, "type": "Strange",
        "eventTime": "2024-01-01T00:00:00.000000Z"})
    want = golden_body("events-core-and-v1", "v1-invalid-type")
    assert [c.to_dict() for c in validation.validate(rt, obj)] == want["details"]["causes"]


def test_two_controller_owners_are_invalid() -> None:
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "<uid:owner>",
             "controller": True},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "other",
             "uid": "00000000-0000-0000-0000-000000000001", "controller": True}]
    got = rejection(("", "ConfigMap"), {"metadata": {"name": "bad", "ownerReferences": refs}})
    assert got is not None
    want = golden_body("gc-background-orphan", "two-controllers-invalid")
    assert re.sub(r"\(0x[0-9a-f]{6,}\)", "(0x<ptr>)", got["message"]) == want["message"]


def test_pods_need_named_containers_with_images() -> None:
    rt, pod = create(("", "Pod"), {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c"}, {"name": "c", "image": "x", "ports": [{"containerPort": 70000}]}]}})
    assert [(c.field, c.reason) for c in validation.validate(rt, pod)] == [
        ("spec.containers[0].image", "FieldValueRequired"),
        # validateContainers: validateContainerCommon (ports) before the duplicate name
        ("spec.containers[1].ports[0].containerPort", "FieldValueInvalid"),
        ("spec.containers[1].name", "FieldValueDuplicate"),
    ]
    rt, pod = create(("", "Pod"), {"metadata": {"name": "p"}, "spec": {}})
    assert [c.field for c in validation.validate(rt, pod)] == ["spec.containers"]


def test_job_template_must_not_restart_always_and_gets_a_selector() -> None:
    """batch/validation/validation.go validateJobSpec (1.32): the defaulted Always is
    answered with Required and the valid values."""
    rt, job = create(("batch", "Job"), {"metadata": {"name": "j", "uid": "u-1"}, "spec": {
        "template": copy.deepcopy(TEMPLATE)}})
    causes = validation.validate(rt, job)
    assert [(c.field, c.message) for c in causes] == [
        ("spec.template.spec.restartPolicy",
         'Required value: valid values: "OnFailure", "Never"')]
    assert job["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}


def test_custom_resources_get_metadata_validation() -> None:
    rt = ResourceType(group="example.com", version="v1", resource="widgets", kind="Widget",
                      crd={"spec": {}}, strategy=Strategy())
    causes = validation.validate(rt, {"metadata": {"name": "Bad_Name", "namespace": "n"}})
    assert [c.field for c in causes] == ["metadata.name"]
    assert validation.validate(rt, {"metadata": {"name": "ok", "namespace": "n"}}) == []


def test_unknown_finalizer_without_domain_is_invalid_for_built_ins() -> None:
    got = rejection(("", "ConfigMap"), {"metadata": {"name": "f", "finalizers": ["mine"]}})
    assert got is not None
    assert got["details"]["causes"][0]["message"] == (
        'Invalid value: "mine": name is neither a standard finalizer name nor is it fully '
        "qualified")


# -- validation: update --------------------------------------------------------------------

def stored(key: tuple[str, str], obj: dict[str, Any]) -> dict[str, Any]:
    _, obj = create(key, obj)
    obj["metadata"].update({"uid": "u", "resourceVersion": "1"})
    return obj


def test_deployment_selector_is_immutable() -> None:
    old = stored(("apps", "Deployment"), {"metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": copy.deepcopy(TEMPLATE)}})
    new = copy.deepcopy(old)
    new["spec"]["selector"]["matchLabels"]["x"] = "y"
    new["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    causes = validation.validate_update(RTS[("apps", "Deployment")], new, old)
    want = golden_body("deployment-generation", "selector-immutable")
    assert [c.to_dict() for c in causes] == want["details"]["causes"]


def test_secret_type_and_immutable_data() -> None:
    rt = RTS[("", "Secret")]
    old = stored(("", "Secret"), {"metadata": {"name": "s1"}, "data": {"a": "eA=="}})
    new = copy.deepcopy(old)
    new["type"] = "kubernetes.io/basic-auth"
    want = golden_body("secret-crud", "change-type")
    assert [c.to_dict() for c in validation.validate_update(rt, new, old)] == (
        want["details"]["causes"])
    old = stored(("", "Secret"), {"metadata": {"name": "s3"}, "data": {"a": "eA=="},
                                  "immutable": True})
    new = copy.deepcopy(old)
    new["data"]["a"] = "eQ=="
    want = golden_body("secret-crud", "update-immutable-data")
    assert [c.to_dict() for c in validation.validate_update(rt, new, old)] == (
        want["details"]["causes"])


def test_update_repeats_metadata_causes_as_the_apiserver_does() -> None:
    rt = RTS[("", "ConfigMap")]
    old = stored(("", "ConfigMap"), {"metadata": {"name": "cm1"}})
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"a": "x y"}
    want = golden_body("dry-run", "dry-invalid")
    assert [c.to_dict() for c in validation.validate_update(rt, new, old)] == (
        want["details"]["causes"])
    old["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    old["metadata"]["finalizers"] = ["example.com/hold"]
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"].append("example.com/new")
    want = golden_body("finalizers-delete", "add-finalizer-rejected")
    assert [c.to_dict() for c in validation.validate_update(rt, new, old)] == (
        want["details"]["causes"])


def test_pod_spec_is_mostly_immutable() -> None:
    rt = RTS[("", "Pod")]
    old = stored(("", "Pod"), {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "a"}]}})
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "b"
    new["spec"]["activeDeadlineSeconds"] = 30
    assert validation.validate_update(rt, new, old) == []
    new["spec"]["restartPolicy"] = "Never"
    [cause] = validation.validate_update(rt, new, old)
    assert cause.field == "spec" and cause.message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`")


def test_a_status_update_checks_the_metadata_update_once_and_reports_it_twice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod's ``/status`` write meets ``ValidateObjectMetaUpdate`` twice in the apiserver
    (rest.BeforeUpdate's ``validateCommonFields``, k8s.io/apiserver/pkg/registry/rest/
    update.go, then ``ValidatePodStatusUpdate``, pkg/apis/core/validation/validation.go),
    so a bad change is reported twice; the two checks give the same causes, so they are
    made once."""
    from setpoint.machinery import names

    rt = RTS[("", "Pod")]
    old: dict[str, Any] = {
           "apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "test-ns", "uid": "u1",
                        "resourceVersion": "5", "creationTimestamp": "2024-01-01T00:00:00Z"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]},
           "status": {"phase": "Pending"}}
    new = copy.deepcopy(old)
    new["metadata"]["uid"] = "u2"
    new["status"]["phase"] = "Running"
    calls: list[int] = []
    real = names.validate_object_meta_update

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(names, "validate_object_meta_update", counting)
    causes = validation.validate_status_subresource_update(rt, new, old)
    uid_causes = [c for c in causes if c.field == "metadata.uid"]
    assert len(uid_causes) == 2 and uid_causes[0] == uid_causes[1]
    assert len(calls) == 1


def test_decoding_a_body_reads_each_schema_once_not_at_every_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in body is checked against its kind's schema value by value (what Go's
    decoder does by struct type); what the decoder needs of each schema is read once, so
    the second pod decoded costs its values, not the schema's computed properties again,
    and gives the same object."""
    from setpoint.cluster.serializer.typeddecode import decode_builtin
    from setpoint.machinery.schema import Schema, definitions

    schema = definitions().for_kind("", "v1", "Pod")
    assert schema is not None
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "labels": {"app": "web"},
                        "creationTimestamp": "2024-01-01T00:00:00+01:00"},
           "spec": {"containers": [{"name": "c", "image": "busybox",
                                    "ports": [{"containerPort": 80.0}],
                                    "resources": {"requests": {"cpu": 1}}}]},
           "status": {"conditions": [{"type": "Ready", "status": "True"}], "bogus": 1}}
    first = decode_builtin(copy.deepcopy(pod), schema, "Pod")
    reads: list[str] = []
    real = Schema.int_or_string

    def counting(self: Schema) -> bool:
        reads.append("int_or_string")
        return bool(real.fget(self))  # type: ignore[attr-defined]

    monkeypatch.setattr(Schema, "int_or_string", property(counting))
    again = decode_builtin(copy.deepcopy(pod), schema, "Pod")
    assert again == first
    assert first[0]["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]
    assert first[0]["metadata"]["creationTimestamp"] == "2023-12-31T23:00:00Z"
    assert first[0]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert first[1] == ["status.bogus"]
    assert reads == []


def test_resource_quantities_are_parsed_once_per_distinct_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``SetDefaults_ResourceList`` (pkg/apis/core/v1/defaults.go) rounds every request and
    limit up to milli-units at every write of a pod or a pod template: a value seen before
    is not parsed again; numbers and strings stay apart, and what is not a quantity is
    refused each time."""
    from setpoint.cluster.registry.podspec_defaults import canonical_resource_list
    from setpoint.machinery.quantity import Quantity, QuantityError

    parsed: list[Any] = []
    real = Quantity.from_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Quantity], value: Any) -> Quantity:
        parsed.append(value)
        return real(cls, value)  # type: ignore[no-any-return]

    monkeypatch.setattr(Quantity, "from_json", classmethod(counting))
    resources = {"cpu": "123457u", "memory": 98765431, "gpu": 2.0000001}
    first = canonical_resource_list(resources)
    again = canonical_resource_list(dict(resources))
    assert first == again == {"cpu": "124m", "memory": "98765431", "gpu": "2001m"}
    assert parsed == ["123457u", 98765431, 2.0000001]
    for bad in (True, [1], "12 apples"):
        for _ in range(2):
            with pytest.raises(QuantityError):
                canonical_resource_list({"cpu": bad})
