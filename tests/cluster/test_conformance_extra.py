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

from tests.conftest import SHARED, kubectl_path
from tests.support import ServerProcess

CONFORMANCE = SHARED / "conformance"
EXTRA = Path(__file__).resolve().parents[1] / "conformance_extra"

pytestmark = [
    pytest.mark.skipif(not CONFORMANCE.exists(), reason="shared/ is not beside the repo"),
    pytest.mark.timeout(300),
]


def test_extra_scenarios_hold_on_the_embedded_server(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ServerProcess(tmp_path / "server", "--no-workloads") as server:
        proc = subprocess.run(
            [sys.executable, str(CONFORMANCE / "record.py"), str(server.kubeconfig),
             str(EXTRA), str(out), "--kubectl", kubectl_path(), "--settle-timeout", "5"],
            capture_output=True, text=True, timeout=240, check=False,
        )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "WARN" not in log, log[-3000:]
    recorded = {p.stem for p in out.glob("*.json")}
    assert recorded >= {p.stem for p in EXTRA.glob("*.yaml")}, recorded
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
