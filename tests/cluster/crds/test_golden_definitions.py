"""CRDs of the recorded scenarios: validation, status, printer columns, defaults on read."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from setpoint.cluster.apiextensions.schema import (
    CustomResourceSchema,
    column_definitions,
    crd_status,
    default_crd,
    initial_status,
    prepare_update_status,
    printer_columns,
    row_cells,
    strict_decoding_error,
    validate_crd,
)

from .conformance import causes_of, multiset, scenario

CRD_SCENARIOS = ["crd-create-established-discovery", "crd-schema-validation",
                 "crd-pruning-preserve", "crd-defaulting", "crd-cel-validation",
                 "crd-printer-columns-table", "status-subresource-cr"]


def _crd_creates(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    steps, golden = scenario(name)
    return [(s["body"], golden[i]) for i, s in enumerate(steps)
            if s.get("method") == "POST" and s.get("path", "").endswith("definitions")]


def test_every_recorded_crd_create_gets_the_recorded_verdict() -> None:
    checked = 0
    for name in CRD_SCENARIOS:
        for body, gold in _crd_creates(name):
            causes = validate_crd(body)
            if gold["response"]["status"] == 201:
                assert causes == [], (name, causes)
            else:
                assert multiset(causes) == causes_of(gold), name
            checked += 1
    assert checked == len(CRD_SCENARIOS) + 1


def test_kubectl_workflow_crd_is_valid() -> None:
    steps, _ = scenario("kubectl-crd-cr-workflow")
    crd = yaml.safe_load(steps[0]["stdin"])
    assert validate_crd(crd) == []


def test_create_response_defaults_and_initial_status_match_the_recording() -> None:
    body, gold = _crd_creates("crd-create-established-discovery")[0]
    recorded = gold["response"]["body"]
    crd = default_crd(body)
    assert crd["spec"] == recorded["spec"]
    assert initial_status(crd) == recorded["status"]
    body, gold = _crd_creates("crd-schema-validation")[0]
    assert default_crd(body)["spec"]["names"]["listKind"] == "ThingList"


def test_established_status_matches_the_recording() -> None:
    steps, golden = scenario("crd-create-established-discovery")
    crd = default_crd(steps[0]["body"])
    crd["status"] = initial_status(crd)
    status = crd_status(crd, now="2024-01-01T00:00:00Z")
    recorded = golden[1]["response"]["body"]["status"]
    for c in status["conditions"]:
        c["lastTransitionTime"] = "<time>"
    assert status == recorded


def test_a_taken_plural_is_not_accepted() -> None:
    steps, _ = scenario("crd-create-established-discovery")
    crd = default_crd(steps[0]["body"])
    other = copy.deepcopy(crd)
    other["metadata"]["name"] = "others." + crd["spec"]["group"]
    other["status"] = crd_status(other, now="t0")
    status = crd_status(crd, now="t1", others=[other])
    # naming_controller.go calculateNamesAndConditions checks plural, singular, short names,
    # kind and list kind in turn; with all of them taken the last conflict names the reason
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("NamesAccepted", "False", "ListKindConflict"), ("Established", "False", "NotAccepted")]
    # nothing is granted but the categories, which are copied whatever the conflicts
    assert status["acceptedNames"] == {"plural": "", "kind": "", "categories": ["conformance"]}


def test_printer_columns_table_matches_the_recording() -> None:
    steps, golden = scenario("crd-printer-columns-table")
    crd = steps[0]["body"]
    version = crd["spec"]["versions"][0]
    columns: list[Mapping[str, Any]] = list(printer_columns(version))
    table = golden[6]["response"]["body"]
    assert column_definitions(columns) == table["columnDefinitions"]
    now = datetime(2024, 1, 1, tzinfo=UTC)
    created = (now - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    r1 = {"metadata": {"name": "r1", "creationTimestamp": created},
          **{k: v for k, v in steps[3]["body"].items() if k != "metadata"},
          "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    r2 = {"metadata": {"name": "r2", "creationTimestamp": created},
          **{k: v for k, v in steps[4]["body"].items() if k != "metadata"}}
    rows = [row_cells(columns, r, now) for r in (r1, r2)]
    expected = [[c if c != "<age>" else "5m" for c in row["cells"]] for row in table["rows"]]
    assert rows == expected


def test_a_version_without_columns_gets_the_age_column() -> None:
    columns = printer_columns({"name": "v1"})
    assert [(c["name"], c["type"], c["jsonPath"]) for c in columns] == [
        ("Age", "date", ".metadata.creationTimestamp")]


def test_strict_decoding_lists_the_unknown_fields_like_the_recording() -> None:
    steps, golden = scenario("crd-pruning-preserve")
    schema = CustomResourceSchema(steps[0]["body"], "v1")
    obj = copy.deepcopy(steps[5]["body"])
    message = golden[5]["response"]["body"]["message"]
    assert message.endswith(strict_decoding_error(schema.prune_and_report(obj)))


def test_a_default_added_later_shows_on_read() -> None:
    steps, golden = scenario("crd-defaulting")
    crd = copy.deepcopy(steps[0]["body"])
    schema = CustomResourceSchema(crd, "v1")
    stored = schema.default(copy.deepcopy(steps[3]["body"]))
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["shape"] = {"type": "string", "default": "round"}
    old = {**steps[0]["body"], "status": initial_status(steps[0]["body"])}
    crd["status"] = prepare_update_status(crd, old)
    assert validate_crd(crd, old=old) == []
    read = CustomResourceSchema(crd, "v1").default(copy.deepcopy(stored))
    assert read["spec"] == golden[8]["response"]["body"]["spec"]
