"""Everyday kubectl 1.32 workflows against the embedded server, each step's output and exit
status as a kube-apiserver 1.32 cluster gives them (one server for the module; each test
writes objects of its own names and deletes them)."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from setpoint.client import Kind, PatchType
from setpoint.machinery.metatime import meta_time
from setpoint.runtime import Manager
from setpoint.workloads import nodelifecycle
from setpoint.workloads.settings import WorkloadSettings
from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl
from tests.conftest import kubectl_path
from tests.waiting import quiet_period, wait_for
from tests.workloads.podsim import workload_cluster

EVENT = Kind("events.k8s.io/v1", "Event")
NODE = Kind("v1", "Node")

pytestmark = pytest.mark.asyncio(loop_scope="module")

# kubectl's can-i --list table for any authenticated user: what the bootstrap ClusterRoles
# system:basic-user, system:discovery and system:public-info-viewer grant
# (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), sorted by kubectl
# (staging/src/k8s.io/kubectl/pkg/cmd/auth/cani.go printStatus: BreakdownRule,
# CompactRules, SortableRuleSlice); the non-resource URLs two roles share are listed twice.
AUTHENTICATED_RULES = """\
selfsubjectreviews.authentication.k8s.io        []                  []               [create]
selfsubjectaccessreviews.authorization.k8s.io   []                  []               [create]
selfsubjectrulesreviews.authorization.k8s.io    []                  []               [create]
                                                [/api/*]            []               [get]
                                                [/api]              []               [get]
                                                [/apis/*]           []               [get]
                                                [/apis]             []               [get]
                                                [/healthz]          []               [get]
                                                [/healthz]          []               [get]
                                                [/livez]            []               [get]
                                                [/livez]            []               [get]
                                                [/openapi/*]        []               [get]
                                                [/openapi]          []               [get]
                                                [/readyz]           []               [get]
                                                [/readyz]           []               [get]
                                                [/version/]         []               [get]
                                                [/version/]         []               [get]
                                                [/version]          []               [get]
                                                [/version]          []               [get]
"""
HEADER = ("Resources                                       Non-Resource URLs   Resource Names"
          "   Verbs\n")


async def test_can_i_list_of_an_administrator_is_rbacs_rules(
        module_api: API, module_kubectl: Kubectl) -> None:
    """``kubectl auth can-i --list`` as a ``system:masters`` user: the privileged-group
    authorizer allows everything but resolves no rules (pkg/kubeapiserver/authorizer/
    reload.go appends it to the authorizers only; k8s.io/apiserver pkg/authorization/
    authorizerfactory/builtin.go gives it no RulesFor), so the SelfSubjectRulesReview is RBAC's
    RulesFor (plugin/pkg/auth/authorizer/rbac/rbac.go): cluster-admin's ``*`` rules through the
    cluster-admin binding to system:masters, beside the rules every authenticated user holds."""
    code, out, err = await module_kubectl("auth", "can-i", "--list")
    assert (code, err) == (0, "")
    assert out == (HEADER
                   + "*.*                                             []                  []"
                     "               [*]\n"
                   + "                                                [*]                 []"
                     "               [*]\n"
                   + AUTHENTICATED_RULES)
    code, out, err = await module_kubectl("auth", "can-i", "--list", "--as", "audit-bob")
    assert (code, err, out) == (0, "", HEADER + AUTHENTICATED_RULES)


async def test_describe_node_shows_the_node_controllers_events(tmp_path: Path) -> None:
    """``kubectl describe node``'s Events as kube-controller-manager's node lifecycle
    controller records them: ``RegisteredNode`` when it first sees a node
    (pkg/controller/nodelifecycle/node_lifecycle_controller.go monitorNodeHealth, through
    pkg/controller/util/node/controller_utils.go RecordNodeEvent: ``Node %s event: %s``) and
    ``NodeNotReady`` when its own update turns an observed ``Ready=True`` into Unknown after
    the grace period (``currentReadyCondition.Status != True && observedReadyCondition.Status
    == True`` before RecordNodeStatusChange), both from the ``node-controller`` event source
    (NewNodeLifecycleController's recorder). A kubelet posting ``Ready=False`` is no such
    transition: the observed condition is already False, so node-controller says nothing."""
    def fast_lifecycle(manager: Manager, _settings: WorkloadSettings) -> None:
        nodelifecycle.install(manager, WorkloadSettings(
            node_monitor_grace_period_seconds=1.0, node_monitor_period_seconds=0.0))

    async with workload_cluster([fast_lifecycle], simulate=False) as env:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "audit-n1"}}
        await env.client.create(node)

        async def reasons() -> list[str]:
            events = await env.client.list(EVENT, namespace="default")
            return sorted(e.get("reason", "") for e in events
                          if (e.get("regarding") or {}).get("name") == "audit-n1")

        assert await wait_for(reasons) == ["RegisteredNode"]

        async def post_ready(status: str) -> None:
            await env.client.patch_status(NODE, "audit-n1", {"status": {"conditions": [{
                "type": "Ready", "status": status, "reason": "KubeletReady",
                "lastHeartbeatTime": meta_time(), "lastTransitionTime": meta_time()}]}},
                patch_type=PatchType.STRATEGIC)

        async def ready() -> str:
            node = await env.client.get(NODE, "audit-n1")
            return next((c["status"] for c in node.get("status", {}).get("conditions", ())
                         if c["type"] == "Ready"), "")

        await post_ready("False")  # the kubelet says NotReady: not node-controller's news
        await wait_for(lambda: _is(ready, "Unknown"))
        await quiet_period()
        assert await reasons() == ["RegisteredNode"]
        await post_ready("True")  # Ready again, then silent: the controller turns it Unknown
        await wait_for(lambda: _is(ready, "True"))
        await wait_for(lambda: _is(ready, "Unknown"))
        assert await wait_for(lambda: _two(reasons)) == ["NodeNotReady", "RegisteredNode"]
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_bytes(env.cluster.kubeconfig.read_bytes())
        kubeconfig.chmod(0o600)
        proc = await asyncio.create_subprocess_exec(
            kubectl_path(), "--kubeconfig", str(kubeconfig), "--cache-dir",
            str(tmp_path / "cache"), "describe", "node", "audit-n1",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert (proc.returncode, err) == (0, b"")
        events = out.decode().split("\nEvents:\n", 1)[1].splitlines()
        rows = sorted(" ".join(line.split()[:2] + line.split()[3:]) for line in events[2:])
        assert rows == [
            "Normal NodeNotReady node-controller Node audit-n1 status is now: NodeNotReady",
            "Normal RegisteredNode node-controller Node audit-n1 event: Registered Node "
            "audit-n1 in Controller"]


async def _is(value: Callable[[], Awaitable[str]], wanted: str) -> bool:
    return await value() == wanted


async def _two(reasons: Callable[[], Awaitable[list[str]]]) -> list[str] | None:
    found = await reasons()
    return found if len(found) == 2 else None


async def test_list_fields_without_omitempty_read_back_null(
        module_api: API, module_kubectl: Kubectl) -> None:
    """Go writes a nil slice of a field without ``omitempty`` as ``null``, and a built-in's
    empty list is stored as protobuf without items, which decodes to nil: so kube-apiserver
    answers ``"endpoints": null, "ports": null`` for an EndpointSlice without them
    (k8s.io/api discovery/v1/types.go: ``json:"endpoints"``, ``json:"ports"``, the
    EndpointSlice controller's placeholder for a Service without ready pods), ``"rules": null``
    for a Role or ClusterRole (rbac/v1 ``json:"rules"``), ``"limits": null`` for a
    LimitRange (core/v1 LimitRangeSpec ``json:"limits"``) and ``"drivers": null`` for a
    CSINode (storage/v1 CSINodeSpec ``json:"drivers"``), absent or sent as ``[]`` alike;
    and an endpoint's ``conditions`` struct is always written."""
    ns = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
    for name, extra in (("aud-es-none", {}), ("aud-es-empty", {"endpoints": [], "ports": []}),
                        ("aud-es-one", {"endpoints": [{"addresses": ["10.0.0.1"]}]})):
        status, out = await module_api.post(ns, {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name}, "addressType": "IPv4", **extra})
        assert status == 201, out
    status, out = await module_api.post(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "aud-role"}, "rules": []})
    assert (status, out["rules"]) == (201, None), out
    status, out = await module_api.post(
        "/api/v1/namespaces/default/limitranges",
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "aud-lr"}})
    assert (status, out["spec"]) == (201, {"limits": None}), out
    status, out = await module_api.post(
        "/apis/storage.k8s.io/v1/csinodes?dryRun=All",
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "aud-csi"},
         "spec": {}})
    assert (status, out["spec"]) == (201, {"drivers": None}), out
    try:
        for name in ("aud-es-none", "aud-es-empty"):
            code, out, err = await module_kubectl("get", "endpointslice", name, "-o", "yaml")
            assert code == 0, err
            assert out.startswith("addressType: IPv4\napiVersion: discovery.k8s.io/v1\n"
                                  "endpoints: null\nkind: EndpointSlice\n"), out
            assert out.endswith("\nports: null\n"), out
        code, out, err = await module_kubectl("get", "endpointslice", "aud-es-one", "-o",
                                              "jsonpath={.endpoints}")
        assert (code, out) == (0, '[{"addresses":["10.0.0.1"],"conditions":{}}]'), err
        code, out, err = await module_kubectl("get", "role", "aud-role", "-o", "yaml")
        assert (code, out.endswith("\nrules: null\n")) == (0, True), out + err
        code, out, err = await module_kubectl("get", "limitrange", "aud-lr", "-o", "yaml")
        assert (code, out.endswith("\nspec:\n  limits: null\n")) == (0, True), out + err
    finally:
        code, _, err = await module_kubectl(
            "delete", "endpointslice", "aud-es-none", "aud-es-empty", "aud-es-one")
        assert code == 0, err
        code, _, err = await module_kubectl("delete", "role/aud-role", "limitrange/aud-lr")
        assert code == 0, err


def _csr_request() -> str:
    """A PEM certificate request for CN=aud-user, O=devs, base64 (as spec.request)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aud-user"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "devs")])
    request = x509.CertificateSigningRequestBuilder().subject_name(name).sign(
        key, hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


async def test_csr_records_its_requesting_user(module_api: API,
                                               module_kubectl: Kubectl) -> None:
    """A CertificateSigningRequest's spec names the user who created it, whatever the body
    said (pkg/registry/certificates/certificates/strategy.go csrStrategy.PrepareForCreate:
    username, uid, groups and extra cleared, then taken from the request's user): ``kubectl
    get csr`` shows it as REQUESTOR (printers.go printCertificateSigningRequest) and
    ``kubectl describe csr`` as *Requesting User*."""
    status, out = await module_api.post("/apis/certificates.k8s.io/v1/certificatesigningrequests", {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "aud-csr"},
        "spec": {"request": _csr_request(), "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["client auth"], "username": "mallory", "groups": ["system:nodes"],
                 "extra": {"k": ["v"]}}})
    assert status == 201, out
    try:
        spec = out["spec"]
        assert (spec["username"], spec["groups"], "extra" in spec) == (
            "setpoint-admin", ["system:masters", "system:authenticated"], False), spec
        code, printed, err = await module_kubectl("get", "csr", "aud-csr")
        assert code == 0, err
        assert printed.splitlines()[1].split()[2:6] == [
            "kubernetes.io/kube-apiserver-client", "setpoint-admin", "<none>", "Pending"], printed
        code, printed, err = await module_kubectl("describe", "csr", "aud-csr")
        assert code == 0, err
        assert "\nRequesting User:    setpoint-admin\n" in printed, printed
    finally:
        code, _, err = await module_kubectl("delete", "csr", "aud-csr")
        assert code == 0, err


async def test_kubectl_certificate_approve_writes_only_the_conditions(
        module_api: API, module_kubectl: Kubectl) -> None:
    """``kubectl certificate approve`` PUTs the CSR (as protobuf) to its ``approval``
    subresource; csrApprovalStrategy (pkg/registry/certificates/certificates/strategy.go)
    keeps the stored spec and status but the conditions, and populateConditionTimestamps
    gives the new condition its lastUpdateTime and lastTransitionTime."""
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    status, out = await module_api.post(path, {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "aud-approve"},
        # a signer nobody runs: the status stays as approval writes it (a built-in signer's
        # certificate would follow: tests/cluster/test_csr_signing.py)
        "spec": {"request": _csr_request(), "signerName": "example.com/audit-signer",
                 "usages": ["client auth"]}})
    assert status == 201, out
    try:
        code, printed, err = await module_kubectl("certificate", "approve", "aud-approve")
        assert (code, printed, err) == (
            0, "certificatesigningrequest.certificates.k8s.io/aud-approve approved\n", "")
        status, out = await module_api.get(f"{path}/aud-approve/approval")
        assert status == 200, out
        [condition] = out["status"]["conditions"]
        assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
            "type": "Approved", "status": "True", "reason": "KubectlApprove",
            "message": "This CSR was approved by kubectl certificate approve."}
        assert condition["lastUpdateTime"] and condition["lastTransitionTime"]
        code, printed, err = await module_kubectl("get", "csr", "aud-approve")
        assert printed.splitlines()[1].split()[-1] == "Approved", printed + err
        # a spec sent to the approval subresource is not written
        out["spec"]["usages"] = ["digital signature", "client auth"]
        status, updated = await module_api.put(f"{path}/aud-approve/approval", out)
        assert (status, updated["spec"]["usages"]) == (200, ["client auth"]), updated
    finally:
        code, _, err = await module_kubectl("delete", "csr", "aud-approve")
        assert code == 0, err

