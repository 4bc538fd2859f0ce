"""``setpoint cluster up --audit-policy-file --audit-log-path``: kube-apiserver's flags of the
same names (k8s.io/apiserver pkg/server/options/audit.go). A policy it cannot use stops the
start with one line naming the field, worded as pkg/audit/policy/reader.go
``LoadPolicyFromBytes`` and pkg/apis/audit/validation/validation.go ``ValidatePolicy`` word
it; a good one audits what real kubectl does, to a file or (``-``) standard output."""

from __future__ import annotations

import asyncio
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
    """plugin/pkg/audit/log/backend.go: one JSON Event a line, each written as its stage
    passes (``--audit-log-mode=blocking``, the default), all of them there once the server
    has stopped (SIGTERM); the policy's None rule and omitStages hold."""
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


@pytest.mark.parametrize(("flags", "message"), [
    (["--audit-log-maxage", "-1"], "--audit-log-maxage -1 can't be a negative number"),
    (["--audit-log-maxbackup=-2", "--audit-log-maxsize=-3"],
     "[--audit-log-maxbackup -2 can't be a negative number, "
     "--audit-log-maxsize -3 can't be a negative number]"),
    (["--audit-log-format", "yaml"],
     'invalid audit log format yaml, allowed formats are "legacy,json"'),
    (["--audit-log-mode", "sometimes"],
     'invalid audit log mode sometimes, allowed modes are "batch,blocking,blocking-strict"'),
    (["--audit-log-mode=batch", "--audit-log-batch-buffer-size=0"],
     "invalid audit batch log buffer size 0, must be a positive number"),
    (["--audit-log-mode=batch", "--audit-log-batch-throttle-enable",
      "--audit-log-batch-throttle-qps=0"],
     "invalid audit batch log throttle QPS 0, must be a positive number"),
    (["--audit-log-truncate-max-event-size=10", "--audit-log-truncate-max-batch-size=5"],
     "invalid audit truncate log max batch size 5, must be greater than max event size (10)"),
    (["--audit-log-version", "audit.k8s.io/v1beta1"],
     'invalid group version, allowed versions are ["audit.k8s.io/v1"]'),
    (["--audit-log-maxage", "ten"],
     'invalid argument "ten" for "--audit-log-maxage" flag: strconv.ParseInt: parsing "ten": '
     "invalid syntax"),
    (["--audit-webhook-config-file", "hook.yaml", "--audit-webhook-initial-backoff", "5"],
     'invalid argument "5" for "--audit-webhook-initial-backoff" flag: time: missing unit in '
     'duration "5"'),
    (["--audit-webhook-config-file", "hook.yaml", "--audit-webhook-mode=batch",
      "--audit-webhook-batch-max-size=0"],
     "invalid audit batch webhook max batch size 0, must be a positive number"),
    (["--audit-log-truncate-enabled=maybe"],
     'invalid argument "maybe" for "--audit-log-truncate-enabled" flag: strconv.ParseBool: '
     'parsing "maybe": invalid syntax'),
], ids=["maxage", "maxbackup-and-maxsize", "format", "mode", "buffer", "qps", "truncate",
        "version", "int-syntax", "duration", "webhook-batch", "bool"])
def test_audit_flags_kube_apiserver_refuses_are_one_line_in_its_words(
        tmp_path: Path, flags: list[str], message: str) -> None:
    """options/audit.go ``AuditLogOptions.Validate`` (negative maxage, maxbackup, maxsize;
    the format), ``validateBackendBatchOptions``, ``AuditTruncateOptions.Validate``,
    ``validateGroupVersionString``, ``AuditWebhookOptions.Validate`` (checked only when
    the webhook has a config file), several errors as ``utilerrors.NewAggregate`` joins
    them; pflag's own for a value it cannot parse. Nothing starts, no log file is made."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    result = cluster_up(tmp_path, "--memory", "--audit-policy-file", str(policy),
                        "--audit-log-path", str(tmp_path / "audit.log"), *flags)
    assert result.returncode == 1
    assert result.stderr == f"error: {message}\n"
    assert not (tmp_path / "audit.log").exists()


def test_a_webhook_config_file_it_cannot_read_is_one_line(tmp_path: Path) -> None:
    """``newUntruncatedBackend``: "initializing audit webhook: " and client-go's error."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    missing = tmp_path / "nope.yaml"
    result = cluster_up(tmp_path, "--memory", "--audit-policy-file", str(policy),
                        "--audit-webhook-config-file", str(missing))
    assert result.returncode == 1
    assert result.stderr == ("error: --audit-webhook-config-file: initializing audit webhook: "
                             f"stat {missing}: no such file or directory\n")


def test_a_webhook_config_file_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    """clientcmd's 'error loading config file "F": yaml: line N: ...' (client-go
    tools/clientcmd/loader.go LoadFromFile), on one line with the column, not PyYAML's five."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    config = tmp_path / "webhook.yaml"
    config.write_text("apiVersion: v1\nclusters: [\n  - name: x\n")
    result = cluster_up(tmp_path, "--memory", "--audit-policy-file", str(policy),
                        "--audit-webhook-config-file", str(config))
    assert (result.returncode, result.stderr.splitlines()) == (1, [
        "error: --audit-webhook-config-file: initializing audit webhook: error loading config "
        f'file "{config}": yaml: line 3, column 3: expected the node content, but found '
        "'-'"]), result.stderr


async def test_cluster_up_rotates_a_legacy_log(tmp_path: Path) -> None:
    """The log flags reach the backend: ``--audit-log-format=legacy`` lines
    (format.go ``EventString``); a file that the next line would take to
    ``--audit-log-maxsize`` (1 MiB) is moved aside first (lumberjack
    ``openExistingOrNew``) as ``audit-<time>.log``, and only ``--audit-log-maxbackup``
    backups are kept (``millRunOnce``: the older one goes)."""
    import re

    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    log = tmp_path / "audit" / "audit.log"
    log.parent.mkdir(mode=0o700)
    log.write_bytes(b"#" * (1024 * 1024 - 10) + b"\n")
    older = log.parent / "audit-2001-02-03T04-05-06.789.log"
    older.write_text("old\n")
    with ServerProcess(tmp_path / "server", "--no-workloads", "--audit-policy-file", str(policy),
                       "--audit-log-path", str(log), "--audit-log-format=legacy",
                       "--audit-log-maxsize=1", "--audit-log-maxbackup=1") as server:
        _kubectl(server, tmp_path, "get", "namespace", "default", "-o", "name")
        await wait_for(lambda: not older.exists(), timeout=10)
    lines = log.read_text().splitlines()
    assert lines and all(" AUDIT: id=" in line for line in lines)
    assert any('stage="ResponseComplete"' in line and 'method="get"' in line
               and 'uri="/api/v1/namespaces/default"' in line for line in lines)
    backups = [p for p in log.parent.iterdir() if p != log]
    assert len(backups) == 1, backups
    assert re.fullmatch(r"audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log", backups[0].name)
    assert backups[0].read_bytes().startswith(b"###")


async def test_cluster_up_sends_events_to_the_audit_webhook(tmp_path: Path) -> None:
    """``--audit-webhook-config-file`` (a kubeconfig naming a local HTTPS receiver, its CA
    and token) with ``--audit-webhook-batch-max-wait``: kubectl's requests reach the
    receiver as ``audit.k8s.io/v1`` EventLists (webhook.go ``processEvents``), batched
    (buffered.go), the queued rest sent when the server stops (``Shutdown``)."""
    from tests.auditreceiver import Receiver

    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    receiver = Receiver(tmp_path / "receiver")
    await receiver.start()
    try:
        config = receiver.kubeconfig(tmp_path / "webhook.yaml")
        with ServerProcess(tmp_path / "server", "--no-workloads", "--audit-policy-file",
                           str(policy), "--audit-webhook-config-file", str(config),
                           "--audit-webhook-batch-max-wait=200ms") as server:
            await asyncio.to_thread(_kubectl, server, tmp_path, "get", "namespace", "default")

            def got() -> bool:
                return any(e["verb"] == "get" and e.get("objectRef", {}).get("name") == "default"
                           for e in receiver.events())

            await wait_for(got, timeout=20)
        assert all(b["kind"] == "EventList" for b in receiver.bodies)
        assert receiver.headers[0]["Authorization"] == "Bearer audit-token"
        assert not [e for e in receiver.events() if e["stage"] == "RequestReceived"]
    finally:
        await receiver.stop()


def test_the_deprecated_backoff_flag_warns_as_pflag_does(tmp_path: Path) -> None:
    """options/audit.go ``MarkDeprecated("audit-webhook-batch-initial-backoff", …)``: pflag
    says so when it is used, and its value is read as the new flag's (a Go duration)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(GOOD)
    result = cluster_up(tmp_path, "--memory", "--audit-policy-file", str(policy),
                        "--audit-webhook-config-file", str(tmp_path / "hook.yaml"),
                        "--audit-webhook-batch-initial-backoff=soon")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "Flag --audit-webhook-batch-initial-backoff has been deprecated, Deprecated, use "
        "--audit-webhook-initial-backoff instead.",
        'error: invalid argument "soon" for "--audit-webhook-batch-initial-backoff" flag: '
        'time: invalid duration "soon"']
