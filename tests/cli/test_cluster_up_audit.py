"""``setpoint cluster up --audit-policy-file --audit-log-path``: kube-apiserver's flags of the
same names (k8s.io/apiserver pkg/server/options/audit.go). A policy it cannot use stops the
start with one line naming the field, worded as pkg/audit/policy/reader.go
``LoadPolicyFromBytes`` and pkg/apis/audit/validation/validation.go ``ValidatePolicy`` word
it; a good one audits what real kubectl does, to a file or (``-``) standard output."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cluster_up_mistakes import cluster_up
from tests.conftest import kubectl_path
from tests.support import ServerProcess
from tests.waiting import wait_for

GOOD = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/readyz", "/healthz*"]
- level: Metadata
"""


@pytest.mark.parametrize(("policy", "message"), [
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n",
     'rules[0].level: Unsupported value: "Everything": supported values: "None", '
     '"Metadata", "Request", "RequestResponse"'),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- verbs: [get]\n",
     "rules[0].level: Required value"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules:\n"
     "- level: Metadata\n",
     'omitStages[0]: Invalid value: "Done": allowed stages are '
     "RequestReceived,ResponseStarted,ResponseComplete,Panic"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
     "  nonResourceURLs: [healthz, /api/*/x]\n",
     '[rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must '
     "begin with a '/' character, rules[0].nonResourceURLs[1]: Invalid value: \"/api/*/x\": "
     "non-resource URL wildcards '*' must be the final character of the rule]"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
     "  namespaces: [a]\n  nonResourceURLs: [/x]\n",
     'rules[0].nonResourceURLs: Invalid value: []string{"/x"}: rules cannot apply to both '
     "regular resources and non-resource URLs"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
     "  resources: [{group: apps/v1, resources: [deployments]}]\n",
     'rules[0].resources.group: Invalid value: "apps/v1": a lowercase RFC 1123 subdomain'),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
     "  resources: [{resourceNames: [x]}]\n",
     'rules[0].resources.resourceNames: Invalid value: []string{"x"}: using resourceNames '
     "requires at least one resource"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n",
     "loaded illegal policy with 0 rules"),
    ("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: Metadata\n",
     'failed decoding: no kind "Policy" is registered for version "audit.k8s.io/v1beta1"'),
], ids=["level", "no-level", "omit-stage", "urls", "urls-and-namespaces", "group",
        "resource-names", "no-rules", "version"])
def test_a_policy_it_cannot_use_is_one_line_naming_the_field(
        tmp_path: Path, policy: str, message: str) -> None:
    """validation.go validateLevel, validateOmitStages, validateNonResourceURLs,
    validateResources, validatePolicyRule; reader.go (no rules; the group version)."""
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    result = cluster_up(tmp_path, "--memory", "--audit-policy-file", str(path),
                        "--audit-log-path", str(tmp_path / "audit.log"))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: --audit-policy-file: {message}"), lines[0]
    assert lines[0].endswith(f": from file {path}")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "audit.log").exists()  # (read before the log is opened)


def test_a_missing_policy_file_is_one_line(tmp_path: Path) -> None:
    result = cluster_up(tmp_path, "--memory", "--audit-policy-file", str(tmp_path / "nope"),
                        "--audit-log-path", "-")
    assert result.returncode == 1
    assert result.stderr == (f'error: --audit-policy-file: failed to read file path '
                             f'"{tmp_path / "nope"}": No such file or directory\n')


def _kubectl(server: ServerProcess, tmp_path: Path, *args: str) -> str:
    config = tmp_path / "kubectl-config"
    config.write_bytes(server.kubeconfig.read_bytes())
    config.chmod(0o600)
    result = subprocess.run(
        [kubectl_path(), "--kubeconfig", str(config), "--cache-dir",
         str(tmp_path / f"cache-{uuid.uuid4().hex[:8]}"), *args],
        capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    return result.stdout


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"kind":"Event"')]


def test_kubectl_is_audited_to_the_log_file(tmp_path: Path) -> None:
    """plugin/pkg/audit/log/backend.go: one JSON Event a line; the events still queued are
    written when the server stops (SIGTERM); the policy's None rule and omitStages hold."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    log = tmp_path / "audit" / "audit.log"
    with ServerProcess(tmp_path / "server", "--no-workloads", "--audit-policy-file", str(policy),
                       "--audit-log-path", str(log)) as server:
        _kubectl(server, tmp_path, "get", "namespaces")
    events = _events(log.read_text())
    listed = [e for e in events if e["verb"] == "list"
              and e.get("objectRef", {}).get("resource") == "namespaces"]
    assert listed and listed[0]["stage"] == "ResponseComplete"
    assert listed[0]["userAgent"].startswith("kubectl/")
    assert not [e for e in events if e["stage"] == "RequestReceived"]
    assert not [e for e in events if e["requestURI"] in ("/readyz", "/healthz")]
    assert oct(log.stat().st_mode & 0o777) == "0o600"


async def test_a_dash_logs_to_standard_output(tmp_path: Path) -> None:
    """options/audit.go getWriter: ``-`` is os.Stdout."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    with ServerProcess(tmp_path / "server", "--no-workloads", "--audit-policy-file", str(policy),
                       "--audit-log-path", "-") as server:
        _kubectl(server, tmp_path, "get", "namespace", "default")
        out = tmp_path / "server" / "server.log"
        await wait_for(lambda: any(
            e["verb"] == "get" and e.get("objectRef", {}).get("name") == "default"
            for e in _events(out.read_text())), timeout=10)
