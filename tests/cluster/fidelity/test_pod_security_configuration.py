"""PodSecurity configured as kube-apiserver's ``--admission-control-config-file`` configures it:
an AdmissionConfiguration whose PodSecurity plugin names a PodSecurityConfiguration file
(k8s.io/apiserver pkg/admission/config.go ``ReadAdmissionConfiguration``: a plugin's ``path``
relative to the configuration file; k8s.io/pod-security-admission admission/api/load/load.go,
v1/defaults.go, validation/validation.go), and the plugin's defaults and exemptions as
admission/admission.go applies them (``exemptNamespace``, ``exemptUser``,
``exemptRuntimeClass``, ``prioritizePods``, ``exemptNamespaceWarning``)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from setpoint.cluster import serve
from setpoint.cluster.admission.admissionconfig import (
    AdmissionConfigError,
    read_admission_configuration,
)
from tests.cluster.conftest import API

MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")

ADMISSION_CONFIGURATION = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: {path}
"""
POD_SECURITY = """\
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
  warn: restricted
  warn-version: v1.30
exemptions:
  usernames: [ci-bot]
  namespaces: [legacy]
  runtimeClasses: [kata]
"""
RESTRICTED_REASONS = ("allowPrivilegeEscalation != false, unrestricted capabilities, "
                      "runAsNonRoot != true, seccompProfile")


def write_configuration(directory: Path, pod_security: str,
                        path: str = "pod-security.yaml") -> Path:
    (directory / "pod-security").mkdir(exist_ok=True)
    (directory / "pod-security" / "pod-security.yaml").write_text(pod_security)
    config = directory / "admission.yaml"
    config.write_text(ADMISSION_CONFIGURATION.format(path=f"pod-security/{path}"))
    return config


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def configured(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[API]:
    config = write_configuration(tmp_path_factory.mktemp("admission"), POD_SECURITY)
    async with serve(admission_config=read_admission_configuration(config)) as running:
        headers = {"Authorization": f"Bearer {running.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            api = API(running, session)
            for runtime_class in ("kata", "runc"):
                status, body = await api.post("/apis/node.k8s.io/v1/runtimeclasses", {
                    "metadata": {"name": runtime_class}, "handler": runtime_class})
                assert status == 201, body
            # the users exempt or not may create pods (the admission is what differs)
            status, body = await api.post("/apis/rbac.authorization.k8s.io/v1/"
                                          "clusterrolebindings", {
                "metadata": {"name": "bots"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "cluster-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                              "name": name} for name in ("ci-bot", "ci-bot-2")]})
            assert status == 201, body
            yield api


def pod(name: str, *, privileged: bool = False, runtime_class: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "busybox:1.36"}
    if privileged:
        container["securityContext"] = {"privileged": True}
    spec: dict[str, Any] = {"containers": [container]}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return {"metadata": {"name": name}, "spec": spec}


async def create_pod(api: API, namespace: str, body: dict[str, Any],
                     headers: dict[str, str] | None = None) -> tuple[int, Any, list[str]]:
    """(status, answer, warnings) of a pod's create."""
    async with api.session.post(
            f"{api.cluster.url}/api/v1/namespaces/{namespace}/pods", json=body,
            headers=headers or {}, ssl=api.ssl) as resp:
        return resp.status, await resp.json(), resp.headers.getall("Warning", [])


async def namespace(api: API, name: str, labels: dict[str, str] | None = None) -> list[str]:
    """Create a namespace; its warnings."""
    async with api.session.post(f"{api.cluster.url}/api/v1/namespaces", json={
            "metadata": {"name": name, "labels": labels or {}}}, ssl=api.ssl) as resp:
        assert resp.status == 201, await resp.text()
        return resp.headers.getall("Warning", [])


def warning_texts(headers: list[str]) -> list[str]:
    """The texts of ``299 - "<text>"`` Warning headers (quoted-string escapes undone)."""
    return [re.sub(r"\\(.)", r"\1", h.split(" ", 2)[2][1:-1]) for h in headers]


@MODULE_LOOP
async def test_the_configured_defaults_apply_to_unlabeled_namespaces(configured: API) -> None:
    """``defaults``: enforce baseline refuses a privileged pod in a namespace without labels;
    warn restricted, pinned to v1.30, warns about a baseline pod."""
    await namespace(configured, "plain")
    status, answer, _ = await create_pod(configured, "plain", pod("root", privileged=True))
    assert (status, answer["message"]) == (
        403, 'pods "root" is forbidden: violates PodSecurity "baseline:latest": privileged '
        '(container "app" must not set securityContext.privileged=true)'), answer
    status, answer, warnings = await create_pod(configured, "plain", pod("app"))
    assert status == 201, answer
    assert warning_texts(warnings) == [
        'would violate PodSecurity "restricted:v1.30": allowPrivilegeEscalation != false '
        '(container "app" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "app" must set securityContext.capabilities.'
        'drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set '
        "securityContext.runAsNonRoot=true), seccompProfile (pod or container \"app\" must "
        'set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")']


@MODULE_LOOP
async def test_exempt_users_namespaces_and_runtime_classes_pass(configured: API) -> None:
    """``exemptUser``, ``exemptNamespace``, ``exemptRuntimeClass``: no check, no warning;
    an exempt namespace's labels draw ``exemptNamespaceWarning``."""
    await namespace(configured, "apps")
    status, answer, warnings = await create_pod(configured, "apps", pod("bot", privileged=True),
                                                {"Impersonate-User": "ci-bot"})
    assert (status, warnings) == (201, []), answer
    status, answer, warnings = await create_pod(
        configured, "apps", pod("vm", privileged=True, runtime_class="kata"))
    assert (status, warnings) == (201, []), answer
    # another user, another runtime class: checked
    status, answer, _ = await create_pod(configured, "apps", pod("human", privileged=True),
                                         {"Impersonate-User": "ci-bot-2"})
    assert (status, answer["message"]) == (
        403, 'pods "human" is forbidden: violates PodSecurity "baseline:latest": privileged '
        '(container "app" must not set securityContext.privileged=true)'), answer
    status, answer, _ = await create_pod(
        configured, "apps", pod("other-class", privileged=True, runtime_class="runc"))
    assert status == 403, answer

    warnings = await namespace(configured, "legacy", {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/audit": "privileged",
        "pod-security.kubernetes.io/warn-version": "v1.29"})
    assert warning_texts(warnings) == [
        'namespace "legacy" is exempt from Pod Security, and the policy '
        "(enforce=restricted:latest, warn=restricted:v1.29) will be ignored"]
    status, answer, warnings = await create_pod(configured, "legacy",
                                                pod("root", privileged=True))
    assert (status, warnings) == (201, []), answer


@MODULE_LOOP
async def test_a_stricter_enforce_label_leaves_exempt_runtime_class_pods_out(
        configured: API) -> None:
    """``EvaluatePodsInNamespace`` over ``prioritizePods``: pods of an exempt runtime class
    are not dry-run against the namespace's new enforce level."""
    await namespace(configured, "dry")
    for body in (pod("vm", privileged=True, runtime_class="kata"), pod("app")):
        status, answer, _ = await create_pod(configured, "dry", body)
        assert status == 201, answer
    async with configured.session.patch(
            f"{configured.cluster.url}/api/v1/namespaces/dry",
            json={"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
            headers={"Content-Type": "application/merge-patch+json"},
            ssl=configured.ssl) as resp:
        assert resp.status == 200, await resp.text()
        warnings = warning_texts(resp.headers.getall("Warning", []))
    assert warnings == [
        'existing pods in namespace "dry" violate the new PodSecurity enforce level '
        '"restricted:latest"', f"app: {RESTRICTED_REASONS}"]


@pytest.mark.parametrize(("pod_security", "message"), [
    ("defaults: {enforce: strict, audit-version: v2.0}\n",
     '[defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, '
     'restricted, defaults.audit-version: Invalid value: "v2.0": must be "latest" or "v1.x"]'),
    ("exemptions: {namespaces: [a, a, Bad], usernames: ['']}\n",
     '[exemptions.namespaces[1]: Duplicate value: "a", exemptions.namespaces[2]: Invalid '
     "value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric "
     "characters or '-', and must start and end with an alphanumeric character (e.g. "
     "'my-name',  or '123-abc', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?'), exemptions.usernames[0]: Invalid value: \"\": "
     "username must not be empty]"),
    ("exemptions: {user: [x]}\n", 'strict decoding error: unknown field "exemptions.user"'),
], ids=["defaults", "exemptions", "unknown-field"])
def test_a_bad_configuration_is_refused_with_go_messages(
        tmp_path: Path, pod_security: str, message: str) -> None:
    """validation.go ``ValidatePodSecurityConfiguration`` (enforce, warn, audit, then the
    namespaces, runtime classes and user names), load.go's strict decoding."""
    header = textwrap.dedent("""\
        apiVersion: pod-security.admission.config.k8s.io/v1
        kind: PodSecurityConfiguration
        """)
    config = write_configuration(tmp_path, header + pod_security)
    with pytest.raises(AdmissionConfigError) as refused:
        read_admission_configuration(config)
    assert str(refused.value) == (
        f'{config}: couldn\'t init admission plugin "PodSecurity": {message}')


def test_a_missing_plugin_file_is_named(tmp_path: Path) -> None:
    config = write_configuration(tmp_path, POD_SECURITY, path="absent.yaml")
    with pytest.raises(AdmissionConfigError) as refused:
        read_admission_configuration(config)
    assert str(refused.value) == (
        "unable to read admission control configuration from "
        f'"{tmp_path / "pod-security" / "absent.yaml"}" [No such file or directory]: '
        "pass a readable file")


async def pod_security_samples(api: API) -> dict[str, float]:
    """The ``pod_security_*`` samples of ``/metrics``, by their text left of the value."""
    status, text = await api.get("/metrics")
    assert status == 200, text
    samples = {}
    for line in text.splitlines():
        if line.startswith("pod_security_"):
            series, value = line.rsplit(" ", 1)
            samples[series] = float(value)
    return samples


def evaluation(decision: str, mode: str, level: str, version: str,
               resource: str = "pod") -> str:
    return (f'pod_security_evaluations_total{{decision="{decision}",mode="{mode}",'
            f'policy_level="{level}",policy_version="{version}",request_operation="create",'
            f'resource="{resource}",subresource=""}}')


def changes(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


@MODULE_LOOP
async def test_each_modes_judgement_is_counted_on_metrics(configured: API) -> None:
    """metrics/metrics.go ``RecordEvaluation`` as admission.go's ``EvaluatePod`` calls it:
    the enforce decision, the audit mode's violations (what kube-apiserver's audit events
    carry as ``pod-security.kubernetes.io/audit-violations``), the warn mode's (not on a
    refused request), for pods and (audit and warn only) pod templates; a version newer than
    1.32 is ``future``; ``RecordExemption`` for an exempt user."""
    await namespace(configured, "counted", {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": "v1.99",
        "pod-security.kubernetes.io/warn": "restricted"})
    before = await pod_security_samples(configured)
    assert before[evaluation("allow", "enforce", "privileged", "latest")] >= 0  # populateCache
    status, answer, warnings = await create_pod(configured, "counted", pod("app"))
    assert (status, len(warnings)) == (201, 1), answer
    status, answer, _ = await create_pod(configured, "counted", pod("root", privileged=True))
    assert status == 403, answer
    status, answer, _ = await create_pod(configured, "counted", pod("bot", privileged=True),
                                         {"Impersonate-User": "ci-bot"})
    assert status == 201, answer
    assert changes(before, await pod_security_samples(configured)) == {
        evaluation("allow", "enforce", "baseline", "latest"): 1,
        evaluation("deny", "enforce", "baseline", "latest"): 1,
        evaluation("deny", "audit", "restricted", "future"): 2,
        # (the warn label's level, at the configured default warn-version)
        evaluation("deny", "warn", "restricted", "v1.30"): 1,
        'pod_security_exemptions_total{request_operation="create",resource="pod",'
        'subresource=""}': 1}

    # a pod template: audit and warn only, counted as a controller's
    before = await pod_security_samples(configured)
    status, answer = await configured.post("/apis/apps/v1/namespaces/counted/deployments", {
        "metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
                "containers": [{"name": "app", "image": "busybox:1.36"}]}}}})
    assert status == 201, answer
    assert changes(before, await pod_security_samples(configured)) == {
        evaluation("deny", "audit", "restricted", "future", resource="controller"): 1,
        evaluation("deny", "warn", "restricted", "v1.30", resource="controller"): 1}
