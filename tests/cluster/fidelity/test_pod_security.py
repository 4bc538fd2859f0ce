"""The PodSecurity admission plugin, on by default in kube-apiserver 1.32, with its default
configuration (every mode privileged at latest, no exemptions), over HTTP and through real
kubectl 1.32 (one server for the module; each test uses namespaces of its own).

Sources (k8s.io/pod-security-admission v0.32.0 and kubernetes v1.32):
- admission/admission.go: ValidateNamespace (invalid labels refused as Invalid; a stricter
  enforce level warns about the existing pods, EvaluatePodsInNamespace), ValidatePod
  (enforce refuses, warn warns; isSignificantPodUpdate), ValidatePodController (warnings
  only), EvaluatePod (``violates PodSecurity %q: %s``, ``would violate PodSecurity %q: %s``).
- api/helpers.go: PolicyToEvaluate, ParseLevel, ParseVersion (the label errors).
- policy/registry.go (which checks a level and version run, in which order), policy/checks.go
  (ForbiddenDetail), policy/check_*.go (each check's reason and detail).
- plugin/pkg/admission/security/podsecurity/admission.go (the plugin: warnings through
  warning.AddWarning, the refusal's Status from the library's result).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.conftest import API
from tests.conftest import kubectl_path

pytestmark = pytest.mark.asyncio(loop_scope="module")

ENFORCE = "pod-security.kubernetes.io/enforce"
WARN = "pod-security.kubernetes.io/warn"
RESTRICTED_DETAIL = (
    'allowPrivilegeEscalation != false (container "c" must set '
    "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
    '"c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or '
    'container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
    'container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")')
RESTRICTED_CONTEXT = {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                      "capabilities": {"drop": ["ALL"]},
                      "seccompProfile": {"type": "RuntimeDefault"}}


def pod(name: str, *, image: str = "nginx", **container: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": image, **container}]}}


async def namespace(api: API, labels: dict[str, str] | None = None) -> str:
    name = f"psa-{uuid.uuid4().hex[:8]}"
    status, body = await api.post("/api/v1/namespaces", {
        "metadata": {"name": name, "labels": labels or {}}})
    assert status == 201, body
    return name


async def create_pod(api: API, ns: str, body: dict[str, Any]) -> tuple[int, Any, list[str]]:
    async with api.session.post(f"{api.cluster.url}/api/v1/namespaces/{ns}/pods", json=body,
                                ssl=api.ssl) as resp:
        return resp.status, await resp.json(), resp.headers.getall("Warning", [])


@pytest.fixture
def kubectl(module_api: API, tmp_path: Path) -> Any:
    """Real kubectl with a kubeconfig this test wrote (0600) and a fresh cache."""
    config = tmp_path / "kubeconfig"
    config.write_bytes(Path(module_api.cluster.kubeconfig).read_bytes())
    config.chmod(0o600)
    base = [kubectl_path(), "--kubeconfig", str(config),
            "--cache-dir", str(tmp_path / f"cache-{uuid.uuid4().hex[:8]}")]

    async def run(*args: str, stdin: str | None = None) -> tuple[int | None, str, str]:
        proc = await asyncio.create_subprocess_exec(
            *base, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin is not None else None), 60)
        return proc.returncode, out.decode(), err.decode()

    return run


async def test_kubectl_apply_of_a_violating_pod_is_refused_with_the_enforce_message(
        module_api: API, kubectl: Any) -> None:
    """admission.go EvaluatePod: the enforce level's aggregate ForbiddenDetail in a 403
    (``apierrors.NewForbidden(pods, name, "violates PodSecurity ...")``), the restricted
    checks after the baseline ones, each sorted by ID (policy/registry.go populate)."""
    ns = await namespace(module_api, {ENFORCE: "restricted"})
    code, _out, err = await kubectl("apply", "-n", ns, "-f", "-",
                                   stdin=yaml.safe_dump(pod("x")))
    assert code == 1
    assert err == (
        'Error from server (Forbidden): error when creating "STDIN": pods "x" is forbidden: '
        f'violates PodSecurity "restricted:latest": {RESTRICTED_DETAIL}\n')
    # (warn follows a stricter enforce level without a warn label: PolicyToEvaluate)
    status, body, warnings = await create_pod(module_api, ns, pod(
        "ok", securityContext=RESTRICTED_CONTEXT))
    assert (status, warnings) == (201, []), body


async def test_kubectl_apply_in_a_warn_namespace_warns_and_creates(
        module_api: API, kubectl: Any) -> None:
    """admission.go EvaluatePod: the warn level's ``would violate PodSecurity`` warning; a
    pod controller (ValidatePodController) is warned about its template, never refused,
    even under an enforce level."""
    ns = await namespace(module_api, {WARN: "baseline", ENFORCE: "baseline"})
    privileged = pod("p", securityContext={"privileged": True})
    code, out, err = await kubectl("apply", "-n", ns, "-f", "-",
                                   stdin=yaml.safe_dump(privileged))
    assert code == 1 and err.endswith(
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged '
        '(container "c" must not set securityContext.privileged=true)\n'), err
    ns = await namespace(module_api, {WARN: "restricted", ENFORCE: "baseline"})
    code, out, err = await kubectl("apply", "-n", ns, "-f", "-",
                                   stdin=yaml.safe_dump(pod("w")))
    assert (code, out) == (0, "pod/w created\n")
    assert err == f'Warning: would violate PodSecurity "restricted:latest": {RESTRICTED_DETAIL}\n'
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                      "metadata": {"labels": {"app": "d"}},
                      "spec": {"hostNetwork": True, "containers": [
                          {"name": "c", "image": "nginx", "securityContext": {
                              **RESTRICTED_CONTEXT,
                              "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}}]}}}}
    code, out, err = await kubectl("apply", "-n", ns, "-f", "-",
                                   stdin=yaml.safe_dump(deployment))
    assert (code, out) == (0, "deployment.apps/d created\n"), err
    # (restricted's capabilities check replaces baseline's: policy/registry.go overrides)
    assert err == ('Warning: would violate PodSecurity "restricted:latest": host namespaces '
                   '(hostNetwork=true), unrestricted capabilities (container "c" must not '
                   'include "SYS_ADMIN" in securityContext.capabilities.add)\n')


async def test_kubectl_label_ns_warns_about_existing_pods(
        module_api: API, kubectl: Any) -> None:
    """admission.go ValidateNamespace and EvaluatePodsInNamespace: raising the enforce level
    warns once that existing pods violate it, then once per distinct ForbiddenReason, naming
    the first pod by name and counting the others; a server dry run warns the same and stores
    nothing."""
    ns = await namespace(module_api)
    for name in ("b", "a"):
        status, body, warnings = await create_pod(
            module_api, ns, pod(name, securityContext={"privileged": True}))
        assert (status, warnings) == (201, []), body  # (privileged by default)
    status, body, _ = await create_pod(module_api, ns, pod("h", ports=[
        {"containerPort": 80, "hostPort": 8080}]))
    assert status == 201, body
    expected = (
        f'Warning: existing pods in namespace "{ns}" violate the new PodSecurity enforce '
        'level "baseline:v1.30"\n'
        "Warning: a (and 1 other pod): privileged\n"
        "Warning: h: hostPort\n")
    code, out, err = await kubectl("label", "--dry-run=server", "ns", ns,
                                   f"{ENFORCE}=baseline", f"{ENFORCE}-version=v1.30")
    assert (code, err) == (0, expected), out
    _, stored = await module_api.get(f"/api/v1/namespaces/{ns}")
    assert ENFORCE not in stored["metadata"]["labels"]
    code, out, err = await kubectl("label", "ns", ns, f"{ENFORCE}=baseline",
                                   f"{ENFORCE}-version=v1.30")
    assert (code, out, err) == (0, f"namespace/{ns} labeled\n", expected)
    # a weaker or equal level at the same version warns nothing
    code, out, err = await kubectl("label", "--overwrite", "ns", ns, f"{ENFORCE}=privileged")
    assert (code, err) == (0, "")


async def test_invalid_labels_are_refused_as_invalid(module_api: API, kubectl: Any) -> None:
    """api/helpers.go PolicyToEvaluate: each bad label a field.Invalid of
    ``metadata.labels[<label>]``; admission.go invalidResponse: NewInvalid (422) of the
    Namespace, on create and when an update brings new errors."""
    status, body = await module_api.post("/api/v1/namespaces", {"metadata": {
        "name": "psa-bad", "labels": {ENFORCE: "strict", f"{WARN}-version": "v2.0"}}})
    assert status == 422, body
    assert body["message"] == (
        'Namespace "psa-bad" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted, '
        "metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"v2.0\": "
        'must be "latest" or "v1.x"]')
    ns = await namespace(module_api)
    code, _out, err = await kubectl("label", "ns", ns, f"{ENFORCE}=v1.30")
    assert code == 1
    assert err == (
        f'The Namespace "{ns}" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]'
        ': Invalid value: "v1.30": must be one of privileged, baseline, restricted\n')


async def test_pod_updates_are_checked_only_when_images_or_containers_change(
        module_api: API) -> None:
    """admission.go isSignificantPodUpdate: a label change of a violating pod passes; an
    image change, or a new ephemeral container (the ``ephemeralcontainers`` subresource is
    not among the ignored ones), meets the enforce level; ``status`` is ignored."""
    ns = await namespace(module_api)
    status, body, _ = await create_pod(module_api, ns, pod("u"))
    assert status == 201, body
    status, body = await module_api.patch(f"/api/v1/namespaces/{ns}", {"metadata": {
        "labels": {ENFORCE: "restricted"}}}, "application/merge-patch+json")
    assert status == 200, body
    path = f"/api/v1/namespaces/{ns}/pods/u"
    status, body = await module_api.patch(path, {"metadata": {"labels": {"a": "b"}}},
                                          "application/merge-patch+json")
    assert status == 200, body
    status, body = await module_api.patch(path, {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}, "application/strategic-merge-patch+json")
    assert status == 403, body
    assert body["message"] == (f'pods "u" is forbidden: violates PodSecurity '
                               f'"restricted:latest": {RESTRICTED_DETAIL}')
    assert body["details"] == {"name": "u", "kind": "pods"}
    status, body = await module_api.patch(f"{path}/ephemeralcontainers", {"spec": {
        "ephemeralContainers": [{"name": "dbg", "image": "busybox",
                                 "terminationMessagePolicy": "File"}]}},
        "application/strategic-merge-patch+json")
    assert status == 403, body
    assert body["message"].startswith('pods "u" is forbidden: violates PodSecurity '
                                      '"restricted:latest": allowPrivilegeEscalation != false '
                                      '(containers "c", "dbg" must set'), body


async def test_versions_select_the_checks_of_their_release(module_api: API) -> None:
    """policy/registry.go: at v1.21 restricted has no capabilities_restricted (from 1.22),
    so baseline's capabilities check stays, nor runAsUser (from 1.23); at v1.18 no
    seccompProfile_restricted (from 1.19), so the baseline annotation check stays; a version
    past the newest rule is the newest rule's (sysctls: tcp_rmem allowed from 1.32)."""
    ns = await namespace(module_api, {ENFORCE: "restricted", f"{ENFORCE}-version": "v1.21"})
    status, body, _ = await create_pod(module_api, ns, pod(
        "v", securityContext={"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                              "runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]},
                              "seccompProfile": {"type": "Unconfined"}}))
    assert status == 403
    assert body["message"] == (
        'pods "v" is forbidden: violates PodSecurity "restricted:v1.21": non-default '
        'capabilities (container "c" must not include "SYS_ADMIN" in '
        "securityContext.capabilities.add), seccompProfile (container \"c\" must not set "
        'securityContext.seccompProfile.type to "Unconfined")')
    ns = await namespace(module_api, {ENFORCE: "baseline", f"{ENFORCE}-version": "v1.99"})
    sysctl = pod("s")
    sysctl["spec"]["securityContext"] = {"sysctls": [{"name": "net.ipv4.tcp_rmem",
                                                      "value": "4096 87380 6291456"}]}
    status, body, _ = await create_pod(module_api, ns, sysctl)
    assert status == 201, body
    ns = await namespace(module_api, {ENFORCE: "baseline", f"{ENFORCE}-version": "v1.31"})
    sysctl["metadata"]["name"] = "s2"
    status, body, _ = await create_pod(module_api, ns, sysctl)
    assert (status, body["message"]) == (403, (
        'pods "s2" is forbidden: violates PodSecurity "baseline:v1.31": forbidden sysctls '
        "(net.ipv4.tcp_rmem)"))


async def test_plain_namespaces_are_privileged(module_api: API) -> None:
    """kube-apiserver's default PodSecurityConfiguration: privileged at latest for enforce,
    audit and warn, no exemptions: pods of any kind are admitted without warnings."""
    status, body, warnings = await create_pod(module_api, "default", pod(
        f"any-{uuid.uuid4().hex[:6]}", securityContext={"privileged": True}))
    assert (status, warnings) == (201, []), body


async def test_every_pod_template_kind_is_warned_about_at_its_template(
        module_api: API) -> None:
    """admission.go DefaultPodSpecExtractor: the template of a ReplicationController,
    PodTemplate, Job and CronJob (``spec.jobTemplate.spec.template``) is checked against the
    warn level; its ``metadata`` is the template's (the seccomp annotation of baseline
    v1.18, check_seccompProfile_baseline.go seccompProfileBaseline_1_0)."""
    ns = await namespace(module_api, {WARN: "baseline", f"{WARN}-version": "v1.18"})
    template: dict[str, Any] = {"metadata": {"labels": {"app": "t"}, "annotations": {
        "seccomp.security.alpha.kubernetes.io/pod": "unconfined"}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "nginx"}]}}
    rc_template = {**template, "spec": {**template["spec"], "restartPolicy": "Always"}}
    writes = [
        ("/api/v1", "replicationcontrollers", {"metadata": {"name": "rc"}, "spec": {
            "selector": {"app": "t"}, "template": rc_template}}),
        ("/api/v1", "podtemplates", {"metadata": {"name": "pt"}, "template": template}),
        ("/apis/batch/v1", "jobs", {"metadata": {"name": "j"}, "spec": {
            "template": template}}),
        ("/apis/batch/v1", "cronjobs", {"metadata": {"name": "cj"}, "spec": {
            "schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}}),
    ]
    for prefix, resource, body in writes:
        async with module_api.session.post(
                f"{module_api.cluster.url}{prefix}/namespaces/{ns}/{resource}", json=body,
                ssl=module_api.ssl) as resp:
            assert resp.status == 201, await resp.text()
            warnings = resp.headers.getall("Warning", [])
        # (after the strategy's WarningsOnCreate: the validating admission runs after it)
        assert len(warnings) == 2 and "non-functional in v1.27+" in warnings[0], warnings
        assert warnings[1] == (
            '299 - "would violate PodSecurity \\"baseline:v1.18\\": seccompProfile '
            '(forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\\"unconfined\\")"'
        ), resource
