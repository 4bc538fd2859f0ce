"""The answers of the repository's CRD scenarios (tests/conformance_extra/crd-*.yaml) that their
own self-checks (statuses and polls) cannot see: causes, messages and Warning headers.

The scenarios are recorded against ``setpoint cluster up`` with the shared corpus's record.py,
as tests/cluster/test_conformance_extra.py does; each expectation below cites the Go source
(apiextensions-apiserver, apiserver, apimachinery v0.32.0) the scenario's notes name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED, kubectl_path
from tests.support import ServerProcess

CONFORMANCE = SHARED / "conformance"
EXTRA = Path(__file__).resolve().parents[2] / "conformance_extra"
SCENARIOS = ["crd-cel-runtime-rules", "crd-cel-ratcheting", "crd-invalid-definitions",
             "crd-schema-types-formats", "crd-status-scale-edges", "crd-printer-columns-types",
             "crd-multiversion-served-storage", "crd-delete-with-instances",
             "crd-schema-change-read", "crd-kubectl-explain-apply"]

pytestmark = [
    pytest.mark.skipif(not CONFORMANCE.exists(), reason="shared/ is not beside the repo"),
    pytest.mark.timeout(240),
]

Steps = dict[str, dict[str, Any]]


# crd-kubectl-explain-apply spends half the recording in kubectl's own start-up and discovery
# (ten runs, each with a fresh cache): a record.py of its own records it beside the rest,
# against the same server (each scenario's CRDs are in a group named after its namespace)
SHARDS = [["crd-kubectl-explain-apply"],
          [name for name in SCENARIOS if name != "crd-kubectl-explain-apply"]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Steps]:
    tmp = tmp_path_factory.mktemp("crd-scenarios")
    out = tmp / "out"
    with ServerProcess(tmp / "server", "--no-workloads") as server:
        runs = [subprocess.Popen(
            [sys.executable, str(CONFORMANCE / "record.py"), str(server.kubeconfig),
             str(EXTRA), str(out), "--kubectl", kubectl_path(), "--settle-timeout", "5",
             "--only", *shard],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for shard in SHARDS]
        logs = [run.communicate(timeout=200)[0] for run in runs]
    for run, log in zip(runs, logs, strict=True):
        assert run.returncode == 0, log[-3000:]
        assert "WARN" not in log, log[-3000:]
    return {name: {s["name"]: s for s in json.loads((out / f"{name}.json").read_text())["steps"]}
            for name in SCENARIOS}


def _causes(step: dict[str, Any]) -> list[tuple[str, str, str]]:
    body = step["response"]["body"]
    return [(c.get("reason", ""), c.get("field", ""), c["message"])
            for c in body["details"]["causes"]]


def _message(step: dict[str, Any]) -> str:
    return str(step["response"]["body"]["message"])


def test_cel_runtime_failures_are_worded_as_the_validator_words_them(
        recorded: dict[str, Steps]) -> None:
    """pkg/apiserver/schema/cel/validation.go validateExpressions and fieldErrorForReason."""
    cel = recorded["crd-cel-runtime-rules"]
    assert sorted(_causes(cel["forbidden-and-required"])) == [
        ("FieldValueForbidden", "spec.size", "Forbidden: size too big"),
        ("FieldValueRequired", "spec.name", "Required value: name needed")]
    assert _causes(cel["duplicate-reason"]) == [
        ("FieldValueDuplicate", "spec", 'Duplicate value: "object"')]
    assert _causes(cel["default-message"]) == [
        ("FieldValueInvalid", "spec", 'Invalid value: "object": failed rule: self.size != 8')]
    assert _causes(cel["message-expression-error-falls-back"])[0][2].endswith(
        ": nine is fallback")
    assert _causes(cel["message-expression-blank-falls-back"])[0][2].endswith(
        ": six is fallback")
    assert _causes(cel["message-expression-with-reason"]) == [
        ("FieldValueForbidden", "spec", "Forbidden: size 5 is unlucky")]
    # cel-go interpreter/attributes.go missingKey names the key
    assert _causes(cel["runtime-error"]) == [
        ("FieldValueInvalid", "spec",
         'Invalid value: "object": no such key: k evaluating rule: needs label k')]
    assert _causes(cel["root-rule"]) == [
        ("FieldValueInvalid", "<nil>", 'Invalid value: "object": name is reserved')]
    assert _causes(cel["blocking-error"]) == [
        ("FieldValueTypeInvalid", "spec.size",
         'Invalid value: "string": spec.size in body must be of type integer: "string"'),
        ("FieldValueInvalid", "<nil>",
         'Invalid value: "null": some validation rules were not checked because the object '
         "was invalid; correct the existing errors to complete validation")]
    assert _causes(cel["entry-changed"]) == [
        ("FieldValueInvalid", "spec.entries[0]",
         'Invalid value: "object": entry value is immutable')]
    # validateMap: an additionalProperties value is a key of its map, not a child
    assert _causes(cel["negative-limit"]) == [
        ("FieldValueInvalid", "spec.limits[mem]",
         'Invalid value: "integer": limit must not be negative')]


def test_ratcheted_rule_failures_are_warnings(recorded: dict[str, Steps]) -> None:
    """validation.go validateExpressions addErr and apiserver pkg/cel/common/equality.go: an
    unchanged value's failure is a Warning, on a 200 and on a 422 alike."""
    steps = recorded["crd-cel-ratcheting"]
    name = 'spec: Invalid value: "object": name must start with w'
    tag = 'spec.tags[1]: Invalid value: "string": tag too short'

    def port(i: int) -> str:
        return f'spec.ports[{i}]: Invalid value: "object": port too low'

    assert steps["create-now-refused"]["response"]["warnings"] == []
    assert sorted(steps["label-only-update"]["response"]["warnings"]) == sorted(
        [name, tag, port(0)])
    assert steps["change-tags"]["response"]["warnings"] == [port(0)]
    assert sorted(f"{f}: {m}" for _, f, m in _causes(steps["change-tags"])) == sorted(
        [name, tag])
    assert sorted(steps["reorder-ports"]["response"]["warnings"]) == sorted(
        [name, tag, port(1)])
    assert steps["change-port"]["response"]["warnings"] == [tag]
    assert steps["fix-all"]["response"]["warnings"] == []


def test_crd_definition_errors(recorded: dict[str, Steps]) -> None:
    """validation.go ValidateCustomResourceDefinition*: one cause per broken rule."""
    steps = recorded["crd-invalid-definitions"]
    root = "spec.validation.openAPIV3Schema"
    assert sorted((r, f) for r, f, _ in _causes(steps["list-map-bad-keys"])) == sorted([
        ("FieldValueInvalid", f"{root}.properties[ports].x-kubernetes-list-map-keys"),
        ("FieldValueRequired", f"{root}.properties[ports].items.properties[port].default"),
        ("FieldValueRequired", f"{root}.properties[ports].items.properties[port].default"),
        ("FieldValueRequired", f"{root}.properties[ports].items.properties[name].default"),
        ("FieldValueForbidden", f"{root}.properties[ports].items.properties[name].nullable"),
        ("FieldValueInvalid", f"{root}.properties[hosts].items.x-kubernetes-map-type"),
        ("FieldValueNotSupported", f"{root}.properties[kinds].x-kubernetes-list-type")])
    # a $ref (or preserve-unknown-fields false) fails structuralschema.NewStructural: no
    # structural check runs, so the missing types go unreported
    assert not [c for c in _causes(steps["non-structural-schema"])
                if c[0] == "FieldValueRequired" and c[1].endswith(".type")]
    assert sorted((r, f) for r, f, _ in _causes(steps["structural-incomplete"])) == [
        ("FieldValueRequired", f"{root}.properties[spec].properties[a].type"),
        ("FieldValueRequired", f"{root}.properties[spec].properties[list].items"),
        ("FieldValueRequired", f"{root}.properties[spec].type")]
    # rule checks are schema errors: with any of them the rules are not compiled
    assert [f for _, f, _ in _causes(steps["cel-rule-fields"])] == [
        f"{root}.properties[spec].x-kubernetes-validations[{i}].{k}" for i, k in
        enumerate(["rule", "message", "messageExpression", "reason", "fieldPath"])]
    assert ("FieldValueInvalid",
            f"{root}.properties[spec].x-kubernetes-validations[2].optionalOldSelf",
            "Invalid value: true: may not be set if oldSelf is not used in rule") in _causes(
        steps["cel-compile-errors"])
    compile_errors = {f: m for _, f, m in _causes(steps["cel-compile-errors"])}
    rules = f"{root}.properties[spec].x-kubernetes-validations"
    assert "compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 1\n" \
        " | ....^" in compile_errors[f"{rules}[0].rule"]
    assert compile_errors[f"{rules}[5].rule"].endswith(
        "compilation failed: ERROR: <input>:1:4: invalid argument to has() macro\n"
        " | has(self)\n | ...^")
    assert sorted(f for _, f, _ in _causes(steps["bad-subresources-and-columns"])) == sorted([
        "spec.subresources.scale.specReplicasPath", "spec.subresources.scale.statusReplicasPath",
        "spec.subresources.scale.labelSelectorPath", "spec.additionalPrinterColumns[0].type",
        "spec.additionalPrinterColumns[1].format", "spec.additionalPrinterColumns[2].JSONPath"])


def test_custom_resource_value_errors(recorded: dict[str, Steps]) -> None:
    """apiserver/validation/validation.go kubeOpenAPIResultToFieldErrors."""
    steps = recorded["crd-schema-types-formats"]
    assert sorted((r, f) for r, f, _ in _causes(steps["types-wrong"])) == sorted([
        ("FieldValueTypeInvalid", "spec.port"), ("FieldValueNotSupported", "spec.mode"),
        ("FieldValueTooLong", "spec.code"), ("FieldValueInvalid", "spec.tags"),
        ("FieldValueInvalid", "spec.labels"), ("FieldValueInvalid", "spec.ratio"),
        ("FieldValueInvalid", "spec.step")])
    assert ("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items") in \
        _causes(steps["too-many"])
    assert {f for _, f, _ in _causes(steps["formats-wrong"])} == {
        f"spec.{k}" for k in ("when", "day", "id", "blob", "ip", "net", "mail")}


def test_scale_and_status_edges(recorded: dict[str, Steps]) -> None:
    """registry/customresource/etcd.go ScaleREST and strategy.go validateScaleStatus."""
    steps = recorded["crd-status-scale-edges"]
    assert _message(steps["scale-without-replicas"]) == (
        'Internal error occurred: the spec replicas field ".spec.replicas" does not exist')
    assert _message(steps["scale-patch-leaves-unset"]) == (
        'the spec replicas field ".spec.replicas" cannot be empty')
    assert ("FieldValueInvalid", ".status.replicas",
            "Invalid value: -1: should be a non-negative integer") in _causes(
        steps["status-invalid"])
    assert _causes(steps["status-put-without-rv"]) == [
        ("FieldValueInvalid", "metadata.resourceVersion",
         "Invalid value: 0x0: must be specified for an update")]


def test_tables_and_deprecation_warnings(recorded: dict[str, Steps]) -> None:
    """tableconvertor.go cellForJSONValue; customresource_handler.go deprecation warnings."""
    table = recorded["crd-printer-columns-types"]["table"]["response"]["body"]
    cells = {row["cells"][0]: row["cells"] for row in table["rows"]}
    assert cells["alpha"][1:8] == ["a.example", 8, 0.25, True, cells["alpha"][5], "80",
                                   "hunter2"]
    assert cells["beta"][1:8] == ["42", None, None, None, None, None, None]
    versions = recorded["crd-multiversion-served-storage"]
    warned = versions["create-v1beta1"]["response"]["warnings"]
    assert warned == [  # (record.py writes the scenario's namespace as ${ns})
        "${ns}.example.com/v1beta1 Robot is deprecated; use ${ns}.example.com/v2 Robot"]
    assert versions["get-v1"]["response"]["warnings"] == ["robots v1 retire in 2030"]
    assert versions["list-v2"]["response"]["warnings"] == []
    deletion = recorded["crd-delete-with-instances"]
    assert _message(deletion["create-while-terminating"]) == (
        "create not allowed while custom resource definition is terminating")


def test_reads_serve_the_object_pruned_and_defaulted_by_the_served_schema(
        recorded: dict[str, Steps]) -> None:
    """customresource_handler.go crdConversionRESTOptionsGetter: the storage decoder and
    converter prune with the schema, the defaulter defaults; etcd keeps the old fields."""
    steps = recorded["crd-schema-change-read"]
    assert steps["v1-keeps-legacy"]["response"]["body"]["spec"] == {"cards": 52, "legacy": "old"}
    assert steps["v2-prunes-legacy"]["response"]["body"]["spec"] == {"cards": 52}
    assert [i["spec"] for i in steps["v1-list"]["response"]["body"]["items"]] == [
        {"cards": 52, "suit": "hearts"}]


def test_explain_shows_an_embedded_resources_type_meta(recorded: dict[str, Steps]) -> None:
    """controller/openapi/builder/builder.go addEmbeddedProperties (OpenAPI v3): an embedded
    resource publishes apiVersion and kind as required, described strings and metadata as an
    ObjectMeta, which kubectl explain prints."""
    steps = recorded["crd-kubectl-explain-apply"]
    out = steps["explain-embedded"]["stdout"]
    assert "  apiVersion\t<string> -required-\n    apiVersion defines the versioned schema" \
        in out, out
    assert "  kind\t<string> -required-\n    kind is a string value representing the type " \
        "of this object. In CamelCase." in out, out
    assert "  metadata\t<ObjectMeta>\n    Standard object's metadata." in out, out
