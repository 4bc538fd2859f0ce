"""The repository's own scenarios (tests/conformance_extra), in the shared corpus's format,
recorded against the embedded server with the corpus's record.py.

They have no golden recording from a real kube-apiserver yet (the lead records them with the
corpus's workflow); until then each one checks itself: every ``expect`` status and every
``poll`` condition (``until``) must hold, which record.py reports as a WARN line. Their notes
cite the Go sources each expectation comes from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.fidelity.test_crd_scenarios import SCENARIOS as CRD_SCENARIOS
from tests.conftest import SHARED, kubectl_path
from tests.support import ServerProcess

CONFORMANCE = SHARED / "conformance"
EXTRA = Path(__file__).resolve().parents[1] / "conformance_extra"

pytestmark = [
    pytest.mark.skipif(not CONFORMANCE.exists(), reason="shared/ is not beside the repo"),
    pytest.mark.timeout(600),
]


# tests/cluster/fidelity/test_crd_scenarios.py records these and fails on their WARN lines
# itself: recording them here too would only run them twice
OWN = sorted({p.stem for p in EXTRA.glob("*.yaml")} - set(CRD_SCENARIOS))


def test_extra_scenarios_hold_on_the_embedded_server(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ServerProcess(tmp_path / "server", "--no-workloads") as server:
        proc = subprocess.run(
            [sys.executable, str(CONFORMANCE / "record.py"), str(server.kubeconfig),
             str(EXTRA), str(out), "--kubectl", kubectl_path(), "--settle-timeout", "5",
             "--only", *OWN],
            capture_output=True, text=True, timeout=540, check=False,
        )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "WARN" not in log, log[-3000:]
    recorded = {p.stem for p in out.glob("*.json")}
    assert recorded >= set(OWN), recorded
    steps = {s["name"]: s for s in json.loads(
        (out / "protobuf-null-slices.json").read_text())["steps"]}
    # the answers the polls cannot reach: a write's, a dry run's, a LIST's, a watch event's
    assert steps["create-clusterrole-without-rules"]["response"]["body"]["rules"] is None
    assert steps["dry-run-clusterrole-with-empty-rules"]["response"]["body"]["rules"] is None
    assert [i["rules"] for i in steps["list-clusterrole"]["response"]["body"]["items"]] \
        == [None]
    assert [e["object"]["rules"] for e in steps["read-added"]["events"]] == [None], \
        steps["read-added"]
    assert steps["update-clusterrole-with-empty-rules"]["response"]["body"]["rules"] is None
    assert steps["create-endpointslice-without-endpoints"]["response"]["body"]["ports"] is None
    _assert_new_scenarios_answers(out)
    _assert_kinds_answers(out)
    _assert_admission_and_strategy_answers(out)


def _steps(out: Path, scenario: str) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in json.loads((out / f"{scenario}.json").read_text())["steps"]}


def _message(step: dict[str, Any]) -> str:
    body = step["response"]["body"]
    assert isinstance(body, dict), step
    return str(body["message"])


def _assert_new_scenarios_answers(out: Path) -> None:
    """What the statuses and polls cannot check: the answers' words and representations."""
    ct = _steps(out, "content-types-yaml-table")
    # ErrorNegotiated: the 404 Status in YAML, keys sorted as goyaml.v2 sorts them
    assert ct["yaml-error-answer"]["response"]["content_type"] == "application/yaml"
    assert ct["yaml-error-answer"]["response"]["body"] == (
        "apiVersion: v1\ncode: 404\ndetails:\n  kind: configmaps\n  name: missing\n"
        "kind: Status\nmessage: configmaps \"missing\" not found\nmetadata: {}\n"
        "reason: NotFound\nstatus: Failure\n")
    assert str(ct["get-yaml"]["response"]["body"]).startswith("apiVersion: v1\nkind: Service\n")
    assert "key \"a\" already set in map" in _message(ct["yaml-duplicate-strict"])
    for step in ("protobuf-accept", "protobuf-list", "protobuf-not-found"):
        response = ct[step]["response"]
        assert response["content_type"] == "application/vnd.kubernetes.protobuf", step
        assert str(response["body"]).startswith("k8s\x00"), step
    assert ct["yaml-unknown-warn"]["response"]["warnings"] == [
        'unknown field "extra"', 'unknown field "metadata.bogus"']
    rbac = _steps(out, "rbac-role-binding-validation")
    assert _message(rbac["change-roleref"]).endswith(": cannot change roleRef")
    assert "subjects[2].name: Invalid value: \"\": user name cannot be empty" in _message(
        rbac["binding-bad-subject"])
    secrets = _steps(out, "secret-types-validation")
    assert _message(secrets["unset-immutable"]).endswith(
        "immutable: Forbidden: field is immutable when `immutable` is set")
    assert _message(secrets["basic-auth-empty"]).endswith(
        "[data[username]: Required value, data[password]: Required value]")
    jobs = _steps(out, "job-validation-defaults")
    assert jobs["orphan-delete"]["response"]["warnings"][0].startswith(
        "child pods are preserved by default when jobs are deleted")
    sts = _steps(out, "statefulset-scale-and-update")
    assert sts["get-scale"]["response"]["body"]["status"]["selector"] == "app=db"
    ssa = _steps(out, "ssa-deployment-managers")
    assert [c["field"] for c in ssa["bob-conflicts"]["response"]["body"]["details"]["causes"]] \
        == [".spec.replicas", '.spec.template.spec.containers[name="main"].image']
    assert _message(ssa["no-field-manager"]).endswith(
        "fieldManager: Required value: is required for apply patch")
    watch = _steps(out, "watch-pods-services-selectors")
    # the cacher: leaving the selector is a DELETED of the old object, coming back an ADDED
    assert [e["type"] for e in watch["label-events"]["events"]] == ["DELETED", "ADDED"]
    assert watch["label-events"]["events"][0]["object"]["metadata"]["labels"] == {"app": "a"}
    gc = _steps(out, "gc-foreground-ownerrefs")
    assert "Only one reference can have Controller set to true" in _message(gc["bad-owner-refs"])


def _causes(step: dict[str, Any]) -> list[tuple[str, str]]:
    body = step["response"]["body"]
    assert isinstance(body, dict), step
    return sorted((c["reason"], c["field"]) for c in body["details"]["causes"])


def _assert_kinds_answers(out: Path) -> None:
    """The built-in kinds' scenarios (kinds-*): the causes (reason, field) and the words
    compare.py holds a real server's recording to, as their notes derive them."""
    dup = _steps(out, "kinds-duplicate-fields-merge")
    assert dup["create-warn-merges-nested"]["response"]["warnings"] == [
        'duplicate field "spec.containers"']
    assert dup["get-final"]["response"]["body"]["data"] == {
        "x": "1", "y": "2", "m2": "2", "s2": "2"}
    apps = _steps(out, "kinds-apps-selector-validation")
    assert _causes(apps["deploy-no-selector"]) == [
        ("FieldValueInvalid", "spec.template.metadata.labels"),
        ("FieldValueRequired", "spec.selector")]
    assert _causes(apps["deploy-zero-surge-and-unavailable"]) == [
        ("FieldValueInvalid", "spec.minReadySeconds"),
        ("FieldValueInvalid", "spec.revisionHistoryLimit"),
        ("FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable")]
    assert _causes(apps["ds-bad-strategy"]) == [("FieldValueNotSupported", "spec.updateStrategy")]
    assert _causes(apps["ds-zero-unavailable"]) == [
        ("FieldValueRequired", "spec.updateStrategy.rollingUpdate.maxUnavailable")]
    for step in ("deploy-change-selector", "rs-change-selector", "ds-change-selector"):
        assert _message(apps[step]).endswith(": field is immutable"), step
    ns = _steps(out, "kinds-namespace-validation")
    assert _causes(ns["finalize-bad"]) == [("FieldValueInvalid", "spec.finalizers[1]")] * 2
    assert _causes(ns["bad-finalizer-unqualified"]) == [
        ("FieldValueInvalid", "spec.finalizers")] * 2
    assert _causes(ns["long-name"]) == [("FieldValueInvalid", "metadata.labels"),
                                        ("FieldValueInvalid", "metadata.name")]
    assert _causes(ns["status-phase-bogus"]) == [("FieldValueInvalid", "status.Phase")]
    cm = _steps(out, "kinds-configmap-keys-immutable")
    assert _causes(cm["key-in-both-maps"]) == [("FieldValueInvalid", "binaryData[.]"),
                                               ("FieldValueInvalid", "data[a]")]
    assert _message(cm["binarydata-not-base64"]).endswith("illegal base64 data at input byte 3")
    assert _message(cm["secret-data-unpadded"]).endswith("illegal base64 data at input byte 0")
    assert _causes(cm["change-data-and-binarydata"]) == [("FieldValueForbidden", "binaryData"),
                                                         ("FieldValueForbidden", "data")]
    pods = _steps(out, "kinds-pod-update-rules")
    assert _causes(pods["change-restart-policy"]) == [("FieldValueForbidden", "spec")]
    assert _message(pods["change-restart-policy"]).count(
        "pod updates may not change fields other than") == 1
    assert _causes(pods["empty-image"]) == [
        ("FieldValueRequired", "spec.containers[0].image")] * 2
    assert _message(pods["deadline-nil"]).endswith(
        "must not update from a positive integer to nil value")
    assert _causes(pods["add-container"]) == [("FieldValueForbidden", "spec.containers")]
    classes = _steps(out, "kinds-priorityclass-storageclass")
    assert _causes(classes["pc-change-value-and-policy"]) == [
        ("FieldValueForbidden", "value"), ("FieldValueInvalid", "preemptionPolicy")]
    assert _causes(classes["sc-change-immutables"]) == [
        ("FieldValueForbidden", "parameters"), ("FieldValueForbidden", "provisioner"),
        ("FieldValueForbidden", "reclaimPolicy"), ("FieldValueInvalid", "volumeBindingMode")]
    storage = _steps(out, "kinds-quota-limitrange-pv")
    assert _causes(storage["pv-change-mode"]) == [("FieldValueInvalid", "volumeMode")]
    assert _causes(storage["pv-change-source"]) == [
        ("FieldValueForbidden", "spec.persistentvolumesource")]
    assert _causes(storage["limitrange-pod-default"]) == [
        ("FieldValueForbidden", "spec.limits[0].default"),
        ("FieldValueInvalid", "spec.limits[1].type")]
    events = _steps(out, "kinds-events-leases")
    assert _causes(events["v1-deprecated-set"]) == [
        ("FieldValueInvalid", "count"), ("FieldValueInvalid", "firstTimestamp"),
        ("FieldValueInvalid", "source")]
    assert _causes(events["v1-change-note"]) == [("FieldValueInvalid", "message")]
    core_event = events["v1-read-as-core"]["response"]["body"]
    assert (core_event["message"], core_event["reportingComponent"]) == (
        "hello", "example.com/ctl")
    kubectl = _steps(out, "kinds-kubectl-builtin-outputs")
    assert [kubectl[s]["stdout"] for s in (
        "apply-adopts", "apply-unchanged", "patch-no-change", "patch-change")] == [
        "deployment.apps/web configured\n", "deployment.apps/web unchanged\n",
        "deployment.apps/web patched (no change)\n", "deployment.apps/web patched\n"]
    # scale moves the spec (4), the label does not, the annotation does (5)
    assert kubectl["generation-after-annotate"]["stdout"] == "5"
    jobs = _steps(out, "kinds-jobs-cronjobs-updates")
    assert _causes(jobs["change-template"]) == [("FieldValueInvalid", "spec.template")]
    assert _causes(jobs["selector-not-generated"]) == [
        ("FieldValueInvalid", "spec.selector"),
        ("FieldValueInvalid", "spec.template.metadata.labels")]
    assert _message(jobs["cron-out-of-range"]).endswith(
        "end of range (61) above maximum (59): 61")
    scale = _steps(out, "kinds-scale-subresources")
    assert scale["negative"]["response"]["body"]["details"]["kind"] == "Scale"
    assert scale["stale-rv"]["response"]["body"]["details"]["kind"] == "replicasets"
    decoding = _steps(out, "kinds-typed-decoding-errors")
    assert _message(decoding["replicas-float"]).endswith(
        "json: cannot unmarshal number 1.0 into Go struct field DeploymentSpec.spec.replicas"
        " of type int32")
    services = _steps(out, "kinds-service-type-transitions")
    assert _causes(services["change-ip"]) == [("FieldValueInvalid", "spec.clusterIPs[0]")]
    assert _causes(services["duplicate-ports"]) == [
        ("FieldValueDuplicate", "spec.ports[1]"), ("FieldValueRequired", "spec.ports[0].name"),
        ("FieldValueRequired", "spec.ports[1].name")]
    rbac = _steps(out, "kinds-rbac-escalation")
    assert _message(rbac["escalating-role"]).split("\n")[1:] == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
        '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["x"], Verbs:["get"]}']
    assert 'user "bob" (groups=["devs" "system:authenticated"])' in _message(
        rbac["escalating-update"])


def _warnings(step: dict[str, Any]) -> list[str]:
    return list(step["response"]["warnings"] or [])


def _assert_admission_and_strategy_answers(out: Path) -> None:
    """The admission plugins', subresources' and per-kind strategies' answers (adm-*, pods-*,
    status-metadata-resets, kinds-strategy-warnings, ...) that their notes derive and the
    statuses alone do not show."""
    eviction = _steps(out, "pods-eviction-pdb")
    # eviction.go: the two-budget Status is returned, so the create handler's 201 carries it
    assert eviction["evict-two-budgets"]["response"]["body"]["code"] == 500
    assert eviction["evict-running"]["response"]["body"]["details"]["causes"] == [
        {"reason": "DisruptionBudget",
         "message": "The disruption budget budget is still being processed by the server."}]
    assert _message(eviction["dry-run-mismatch"]) == (
        "Non-matching dry-run options in request and content: [All] and [All All]")
    reviews = _steps(out, "authz-review-resources")
    assert _message(reviews["token-empty"]) == (
        "token is required for TokenReview in authentication")
    psa = _steps(out, "adm-pod-security-levels")
    assert _message(psa["hostnet-now-refused"]).endswith(
        'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)')
    assert _warnings(psa["enforce-over-existing"])[1] == "hostnet: host namespaces"
    quota = _steps(out, "adm-resourcequota-exceeded")
    assert _message(quota["pod-without-resources"]).endswith(
        "failed quota: q: must specify limits.memory for: c; requests.cpu for: c")
    limits = _steps(out, "adm-limitrange-defaults-bounds")
    assert _message(limits["ratio"]).endswith(
        "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000")
    policy = _steps(out, "adm-validating-admission-policy")
    assert policy["too-many"]["response"]["body"]["reason"] == "Invalid"
    assert _warnings(policy["secret-warned"])[0].startswith(
        "Validation failed for ValidatingAdmissionPolicy ")
    kinds = _steps(out, "api-update-create-and-conditional-kinds")
    # limitrange/strategy.go PrepareForCreate: a UUID name (recorded as an unknown uid)
    assert str(kinds["limitrange-unnamed"]["response"]["body"]["metadata"]["name"]).startswith(
        "<uid:")
    assert _causes(kinds["csidriver-put-without-rv"]) == [
        ("FieldValueInvalid", "metadata.resourceVersion")]
    namespaces = _steps(out, "namespaces-generate-name-status")
    for step in ("generated", "dry-run-generated"):
        meta = namespaces[step]["response"]["body"]["metadata"]
        assert meta["labels"]["kubernetes.io/metadata.name"] == meta["name"], step
    resets = _steps(out, "status-metadata-resets")
    labels = {step: resets[step]["response"]["body"]["metadata"].get("labels") for step in (
        "sts-status", "deploy-status", "policy-status", "flowschema-status",
        "apiservice-status")}
    assert labels == {"sts-status": {"changed": "by-status"}, "deploy-status": "<absent>",
                      "policy-status": "<absent>", "flowschema-status": "<absent>",
                      "apiservice-status": {"orig": "yes"}}, labels
    warned = _steps(out, "kinds-strategy-warnings")
    assert {step: _warnings(warned[step]) for step in warned} == {
        "tls-matching": [],
        "tls-other-key": ["tls: private key does not match public key"],
        "tls-not-pem": ["tls: failed to find any PEM data in certificate input"],
        "tls-update-still-bad": ["tls: private key does not match public key"],
        "ingress-annotation": ['annotation "kubernetes.io/ingress.class" is deprecated, '
                               "please use 'spec.ingressClassName' instead"],
        "ingress-update-no-warning": [],
        "serviceaccount-annotation": [MOUNTABLE_SECRETS_WARNING],
        "serviceaccount-keeps-annotation": [],
        "serviceaccount-newly-annotated": [MOUNTABLE_SECRETS_WARNING],
        "node-external-id": [
            "spec.externalID: this field is deprecated, and is unused by Kubernetes"],
        "storageclass-beta-zone": [
            "allowedTopologies[0].matchLabelExpressions[0].key: deprecated since v1.17; use "
            '"topology.kubernetes.io/zone" instead'],
        "capacity-beta-labels": [
            "nodeTopology.matchExpressions[0].key: failure-domain.beta.kubernetes.io/region is "
            'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
            "nodeTopology.matchLabels.beta.kubernetes.io/arch: deprecated since v1.14; use "
            '"kubernetes.io/arch" instead'],
        "runtimeclass-beta-os": [RUNTIMECLASS_OS_WARNING],
        "runtimeclass-update-still-warns": [RUNTIMECLASS_OS_WARNING]}


MOUNTABLE_SECRETS_WARNING = (
    "metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in v1.32+; "
    "prefer separate namespaces to isolate access to mounted secrets")
RUNTIMECLASS_OS_WARNING = (
    'scheduling.nodeSelector: deprecated since v1.14; use "kubernetes.io/os" instead')
