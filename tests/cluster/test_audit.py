"""API auditing as kube-apiserver 1.32 does it, over real HTTP with real kubectl (a kubeconfig
this test wrote, a fresh cache), read back from the audit log file.

Sources (k8s.io/apiserver v0.32.0): pkg/endpoints/filters/audit_init.go ``withAuditInit``
(the Audit-Id header), audit.go ``WithAudit``/``processAuditEvent`` (stages, omitStages),
authn_audit.go ``WithFailedAuthenticationAudit``, authorization.go (the decision
annotations), pkg/audit/request.go ``LogRequestMetadata``/``LogRequestObject``/
``LogResponseObject``, pkg/audit/policy/checker.go (rule matching), plugin/pkg/audit/log/
backend.go (one JSON Event a line), pkg/server/options/audit.go ``ensureLogFile`` (0600)."""

from __future__ import annotations

import asyncio
import base64
import os
import stat
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from setpoint.cluster import serve
from setpoint.cluster.audit.logbackend import LogBackend
from setpoint.cluster.audit.policy import policy_from_document
from tests.conftest import kubectl_path
from tests.waiting import wait_for


class Audited:
    """A server auditing by ``policy`` into ``log``; kubectl against it."""

    def __init__(self, running: Any, log: Path, tmp: Path) -> None:
        self.running = running
        self.log = log
        config = tmp / "kubeconfig"
        config.write_bytes(Path(running.kubeconfig).read_bytes())
        config.chmod(0o600)
        self.base = [kubectl_path(), "--kubeconfig", str(config),
                     "--cache-dir", str(tmp / f"cache-{uuid.uuid4().hex[:8]}")]
        self.home = tmp

    async def kubectl(self, *args: str, stdin: str | None = None) -> tuple[int | None, str, str]:
        proc = await asyncio.create_subprocess_exec(
            *self.base, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)})
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin is not None else None), 60)
        return proc.returncode, out.decode(), err.decode()

    def events(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self.log.read_bytes().splitlines()]

    async def event(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first logged event ``match`` accepts, once it is written."""
        found: list[dict[str, Any]] = []

        def written() -> bool:
            found[:] = [e for e in self.events() if match(e)]
            return bool(found)

        await wait_for(written, timeout=10)
        return found[0]


def policy(*rules: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **fields}


@pytest.fixture
def audited(tmp_path: Path) -> Callable[[dict[str, Any]], Any]:
    def start(document: dict[str, Any]) -> Any:
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def running() -> AsyncIterator[Audited]:
            log = tmp_path / "logs" / "audit.log"
            async with serve(audit_policy=policy_from_document(document),
                             audit_log=LogBackend(str(log))) as cluster:
                yield Audited(cluster, log, tmp_path)

        return running()

    return start


async def test_every_answer_has_an_audit_id_and_echoes_the_clients(tmp_path: Path) -> None:
    """audit_init.go withAuditInit: a new UUID per request, or the request's own Audit-ID
    header echoed as it came; on every answer, auditing on or off (the filter is always in
    the chain), errors included."""
    async with serve() as running:
        headers = {"Authorization": f"Bearer {running.token}"}
        import ssl

        ctx = ssl.create_default_context(cafile=str(running.ca_file))
        async with aiohttp.ClientSession(headers=headers) as session:
            ids = []
            for path in ("/api/v1/namespaces/default", "/api/v1/namespaces/nope", "/version"):
                async with session.get(running.url + path, ssl=ctx) as resp:
                    ids.append(resp.headers["Audit-Id"])
            assert all(uuid.UUID(i).version == 4 for i in ids)
            assert len(set(ids)) == 3
            async with session.get(running.url + "/api/v1/namespaces",
                                   headers={"Audit-ID": "my own id"}, ssl=ctx) as resp:
                assert resp.headers["Audit-Id"] == "my own id"
            async with session.get(running.url + "/api/v1/namespaces", ssl=ctx,
                                   headers={"Authorization": "Bearer wrong"}) as resp:
                assert resp.status == 401 and resp.headers["Audit-Id"]


async def test_metadata_level_logs_who_did_what_with_kubectl(audited: Any) -> None:
    """request.go LogRequestMetadata and audit.go: RequestReceived then ResponseComplete,
    one JSON Event a line, with the request's URI, verb, user, source IPs, user agent,
    objectRef and response code; no request or response body at Metadata; the
    authorization decision annotated (authorization.go). The log file is 0600 in a 0700
    directory (options/audit.go ensureLogFile)."""
    async with audited(policy({"level": "Metadata"})) as a:
        code, _, err = await a.kubectl("create", "configmap", "cm1", "-n", "default",
                                       "--from-literal=k=v")
        assert code == 0, err
        done = await a.event(lambda e: e["verb"] == "create" and e["stage"] == "ResponseComplete"
                             and e.get("objectRef", {}).get("resource") == "configmaps")
        assert stat.S_IMODE(a.log.stat().st_mode) == 0o600
        assert stat.S_IMODE(a.log.parent.stat().st_mode) == 0o700
        assert done["kind"] == "Event" and done["apiVersion"] == "audit.k8s.io/v1"
        assert done["level"] == "Metadata"
        assert done["requestURI"].startswith("/api/v1/namespaces/default/configmaps?")
        assert done["user"]["username"] == "setpoint-admin"
        assert "system:masters" in done["user"]["groups"]
        assert done["sourceIPs"] == ["127.0.0.1"]
        assert done["userAgent"].startswith("kubectl/")
        assert done["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                     "name": "cm1", "apiVersion": "v1"}
        assert done["responseStatus"] == {"metadata": {}, "code": 201}
        assert "requestObject" not in done and "responseObject" not in done
        assert done["annotations"] == {"authorization.k8s.io/decision": "allow",
                                       "authorization.k8s.io/reason": ""}
        received = [e for e in a.events() if e["auditID"] == done["auditID"]]
        assert [e["stage"] for e in received] == ["RequestReceived", "ResponseComplete"]
        assert received[0]["stageTimestamp"] == received[0]["requestReceivedTimestamp"]
        assert received[1]["stageTimestamp"] >= received[1]["requestReceivedTimestamp"]


async def test_levels_bodies_and_rule_order(audited: Any) -> None:
    """checker.go: the first matching rule decides (resources by group, resourceNames,
    namespaces, verbs); None logs nothing; Request adds the request object, RequestResponse
    the response object too (request.go LogRequestObject/LogResponseObject), managedFields
    left out with omitManagedFields; a failure's Status is copied into responseStatus."""
    document = policy(
        {"level": "None", "resources": [{"group": "", "resources": ["configmaps"],
                                          "resourceNames": ["quiet"]}]},
        {"level": "RequestResponse", "verbs": ["create", "get"],
         "resources": [{"group": "", "resources": ["configmaps"]}], "namespaces": ["default"],
         "omitManagedFields": True},
        {"level": "Request", "resources": [{"group": "", "resources": ["secrets"]}]},
        omitStages=["RequestReceived"])
    async with audited(document) as a:
        assert (await a.kubectl("create", "configmap", "loud", "-n", "default",
                                "--from-literal=k=v"))[0] == 0
        assert (await a.kubectl("create", "secret", "generic", "s1", "-n", "default",
                                "--from-literal=k=v"))[0] == 0
        code, _, err = await a.kubectl("get", "configmap", "missing", "-n", "default")
        assert code == 1 and "NotFound" in err
        missing = await a.event(lambda e: e.get("objectRef", {}).get("name") == "missing")
        assert missing["responseStatus"]["code"] == 404
        assert missing["responseStatus"]["reason"] == "NotFound"
        assert missing["responseStatus"]["message"] == 'configmaps "missing" not found'
        created = await a.event(lambda e: e["verb"] == "create"
                                and e["objectRef"]["resource"] == "configmaps")
        assert created["stage"] == "ResponseComplete"  # RequestReceived omitted
        assert created["level"] == "RequestResponse"
        assert created["requestObject"]["data"] == {"k": "v"}
        assert created["responseObject"]["metadata"]["name"] == "loud"
        assert "managedFields" not in created["responseObject"]["metadata"]
        assert created["responseObject"]["metadata"]["uid"]
        secret = await a.event(lambda e: e["objectRef"]["resource"] == "secrets")
        assert secret["level"] == "Request"
        assert secret["requestObject"]["data"] == {"k": "dg=="}
        assert "responseObject" not in secret
        assert all(e["stage"] != "RequestReceived" for e in a.events())
        # the rule before the others: a GET of the named configmap is not audited at all;
        # its create is (a create's attributes have no name: the rule does not match it)
        assert (await a.kubectl("create", "configmap", "quiet", "-n", "default"))[0] == 0
        assert (await a.kubectl("get", "configmap", "quiet", "-n", "default"))[0] == 0
        assert (await a.kubectl("get", "configmap", "loud", "-n", "default"))[0] == 0
        await a.event(lambda e: e["verb"] == "get" and e["objectRef"].get("name") == "loud")
        named = [e["verb"] for e in a.events() if e["objectRef"].get("name") == "quiet"]
        assert named == ["create"]


async def test_a_watch_logs_response_started_then_complete(audited: Any) -> None:
    """audit.go: a long-running request (a watch) logs ResponseStarted when its answer
    begins and ResponseComplete when it ends, both with the same auditID."""
    async with audited(policy({"level": "Metadata", "verbs": ["watch"]})) as a:
        # (kubectl gives up the watch after a second: the watch then ends)
        await a.kubectl("get", "configmaps", "-n", "default", "--watch", "--request-timeout=1s")
        started = await a.event(lambda e: e["stage"] == "ResponseStarted")
        done = await a.event(lambda e: e["stage"] == "ResponseComplete"
                             and e["auditID"] == started["auditID"])
        assert started["verb"] == done["verb"] == "watch"
        assert started["responseStatus"]["code"] == 200


async def test_failed_authentication_is_one_response_started_event(audited: Any) -> None:
    """authn_audit.go WithFailedAuthenticationAudit: no user, ResponseStarted, the message
    naming the credentials tried (getAuthMethods), code 401."""
    async with audited(policy({"level": "Metadata"})) as a:
        import ssl

        ctx = ssl.create_default_context(cafile=str(a.running.ca_file))
        async with aiohttp.ClientSession() as session, session.get(
                a.running.url + "/api/v1/pods", ssl=ctx,
                headers={"Authorization": "Bearer wrong"}) as resp:
            assert resp.status == 401
            audit_id = resp.headers["Audit-Id"]
        event = await a.event(lambda e: e["auditID"] == audit_id)
        assert event["stage"] == "ResponseStarted"
        assert event["user"] == {}
        assert event["responseStatus"] == {
            "metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401}
        assert len([e for e in a.events() if e["auditID"] == audit_id]) == 1


async def test_impersonation_records_both_users(audited: Any) -> None:
    """request.go LogImpersonatedUser: ``user`` is who authenticated, ``impersonatedUser``
    whom the request acts as (the audit filter precedes impersonation's)."""
    async with audited(policy({"level": "Metadata",
                               "resources": [{"resources": ["namespaces"]}]})) as a:
        code, _, err = await a.kubectl("get", "namespace", "default", "--as=jane",
                                       "--as-group=devs")
        assert code == 1 and "Forbidden" in err
        event = await a.event(lambda e: e["stage"] == "ResponseComplete")
        assert event["user"]["username"] == "setpoint-admin"
        assert event["impersonatedUser"]["username"] == "jane"
        assert "devs" in event["impersonatedUser"]["groups"]
        assert event["responseStatus"]["code"] == 403
        assert event["annotations"]["authorization.k8s.io/decision"] == "forbid"


async def test_pod_security_annotates_the_audit_event(audited: Any) -> None:
    """PodSecurity (pod-security-admission admission.go EvaluatePod, through the plugin's
    audit.AddAuditAnnotations with the ``pod-security.kubernetes.io/`` prefix): the enforce
    policy, and the audit level's violations, on an admitted pod."""
    doc = policy({"level": "Metadata", "resources": [{"resources": ["pods"]}]})
    async with audited(doc) as a:
        ns = f"psa-{uuid.uuid4().hex[:6]}"
        manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/audit": "restricted"}}}
        assert (await a.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest)))[0] == 0
        code, _, err = await a.kubectl("run", "p", "-n", ns, "--image=nginx")
        assert code == 0, err
        event = await a.event(lambda e: e["verb"] == "create"
                              and e["stage"] == "ResponseComplete")
        annotations = event["annotations"]
        assert annotations["pod-security.kubernetes.io/enforce-policy"] == "baseline:latest"
        assert annotations["pod-security.kubernetes.io/audit-violations"].startswith(
            'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false')


async def test_webhooks_annotate_the_audit_event(audited: Any, tmp_path: Path) -> None:
    """mutating/dispatcher.go webhookAnnotator: each mutating call's
    ``mutation.webhook.admission.k8s.io/round_0_index_<i>`` (configuration, webhook,
    mutated; <i> the webhook's place among all mutating webhooks) and, at level Request,
    its JSON patch under ``patch.webhook.admission.k8s.io/``; a webhook's own
    ``auditAnnotations`` under ``<webhook name>/<key>`` (both dispatchers); a validating
    webhook that fails open ``failed-open.validating.webhook.admission.k8s.io/round_0_index_<i>``
    (validating/dispatcher.go)."""
    from aiohttp import web

    from tests.hookserver import Hooks

    hooks = Hooks(tmp_path / "hooks")
    await hooks.start()
    try:
        hooks.on("/noop", lambda r: {"allowed": True})
        hooks.on("/mutate", lambda r: {
            "allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(orjson.dumps([
                {"op": "add", "path": "/data/seen", "value": "yes"}])).decode()})
        hooks.on("/validate", lambda r: {"allowed": True,
                                         "auditAnnotations": {"checked": "all-good"}})
        hooks.on("/broken", lambda r: web.Response(status=500, text="down"))

        def hook(name: str, path: str, **extra: Any) -> dict[str, Any]:
            return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                    "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle},
                    "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                               "operations": ["CREATE"], "resources": ["configmaps"]}],
                    **extra}

        configs = [
            {"apiVersion": "admissionregistration.k8s.io/v1",
             "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
             "webhooks": [hook("noop.example.com", "/noop"),
                          hook("m.example.com", "/mutate")]},
            {"apiVersion": "admissionregistration.k8s.io/v1",
             "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"},
             "webhooks": [hook("broken.example.com", "/broken", failurePolicy="Ignore"),
                          hook("v.example.com", "/validate")]}]
        doc = policy({"level": "Request", "resources": [{"resources": ["configmaps"]}],
                      "verbs": ["create"]})
        async with audited(doc) as a:
            code, _, err = await a.kubectl("apply", "-f", "-",
                                           stdin=yaml.safe_dump_all(configs))
            assert code == 0, err
            code, _, err = await a.kubectl("create", "configmap", "hooked", "-n", "default",
                                           "--from-literal=k=v")
            assert code == 0, err
            event = await a.event(lambda e: e["stage"] == "ResponseComplete")
            annotations = event["annotations"]
            assert annotations["mutation.webhook.admission.k8s.io/round_0_index_0"] == (
                '{"configuration":"m","webhook":"noop.example.com","mutated":false}')
            assert annotations["mutation.webhook.admission.k8s.io/round_0_index_1"] == (
                '{"configuration":"m","webhook":"m.example.com","mutated":true}')
            assert annotations["patch.webhook.admission.k8s.io/round_0_index_1"] == (
                '{"configuration":"m","webhook":"m.example.com","patch":[{"op":"add",'
                '"path":"/data/seen","value":"yes"}],"patchType":"JSONPatch"}')
            assert "patch.webhook.admission.k8s.io/round_0_index_0" not in annotations
            assert annotations["v.example.com/checked"] == "all-good"
            assert annotations[
                "failed-open.validating.webhook.admission.k8s.io/round_0_index_0"] == (
                "broken.example.com")
    finally:
        await hooks.stop()


async def test_a_request_past_its_deadline_completes_with_the_timeout(
        audited: Any, tmp_path: Path) -> None:
    """A handler cut off by the request deadline (filters/timeout.go, ``?timeout=`` from
    kubectl's --request-timeout) still has its ResponseComplete, with the 504 Timeout Status
    its client was sent (audit.go: every request audited at RequestReceived completes)."""
    from tests.hookserver import Hooks

    hooks = Hooks(tmp_path / "hooks")
    await hooks.start()
    release = asyncio.Event()

    async def slow(_review: dict[str, Any]) -> dict[str, Any]:
        await release.wait()
        return {"allowed": True}

    try:
        hooks.on("/slow", slow)
        config = {"apiVersion": "admissionregistration.k8s.io/v1",
                  "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "slow"},
                  "webhooks": [{"name": "slow.example.com", "sideEffects": "None",
                                "admissionReviewVersions": ["v1"], "timeoutSeconds": 30,
                                "clientConfig": {"url": hooks.url("/slow"),
                                                 "caBundle": hooks.ca_bundle},
                                "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                           "operations": ["CREATE"],
                                           "resources": ["configmaps"]}]}]}
        doc = policy({"level": "Metadata", "resources": [{"resources": ["configmaps"]}]})
        async with audited(doc) as a:
            assert (await a.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(config)))[0] == 0
            code, _, _ = await a.kubectl("create", "configmap", "late", "-n", "default",
                                         "--request-timeout=1s")
            assert code == 1
            event = await a.event(lambda e: e["stage"] == "ResponseComplete")
            release.set()
            assert event["verb"] == "create"
            assert event["responseStatus"]["code"] == 504
            assert event["responseStatus"]["reason"] == "Timeout"
    finally:
        release.set()
        await hooks.stop()


async def test_rules_match_users_and_groups_of_who_authenticated(audited: Any) -> None:
    """checker.go ruleMatches: ``users`` by name and ``userGroups`` by any group of the user
    who authenticated; the admin's requests (system:masters) fall under the None rule, a
    service account's token is audited, its Forbidden answer included."""
    doc = policy({"level": "None", "userGroups": ["system:masters"]},
                 {"level": "Metadata", "users": ["system:serviceaccount:default:bot"]})
    async with audited(doc) as a:
        assert (await a.kubectl("create", "serviceaccount", "bot", "-n", "default"))[0] == 0
        code, token, err = await a.kubectl("create", "token", "bot", "-n", "default")
        assert code == 0, err
        code, _, err = await a.kubectl("get", "secrets", "-n", "default",
                                       f"--token={token.strip()}")
        assert code == 1 and "Forbidden" in err
        event = await a.event(lambda e: e.get("objectRef", {}).get("resource") == "secrets"
                              and e["stage"] == "ResponseComplete")
        assert event["user"]["username"] == "system:serviceaccount:default:bot"
        assert event["responseStatus"]["code"] == 403
        assert event["annotations"]["authorization.k8s.io/decision"] == "forbid"
        assert all(e["user"]["username"] == "system:serviceaccount:default:bot"
                   for e in a.events())


async def test_health_probes_without_credentials_are_the_anonymous_user(audited: Any) -> None:
    """kube-apiserver's anonymous authenticator: a probe of ``/healthz`` without credentials is
    ``system:anonymous`` in ``system:unauthenticated`` (matched by ``nonResourceURLs``, verb
    ``get``); kubectl's own probe is its user."""
    doc = policy({"level": "Metadata", "nonResourceURLs": ["/healthz"]})
    async with audited(doc) as a:
        import ssl

        ctx = ssl.create_default_context(cafile=str(a.running.ca_file))
        async with aiohttp.ClientSession() as session, session.get(
                a.running.url + "/healthz", ssl=ctx) as resp:
            assert resp.status == 200
            anonymous_id = resp.headers["Audit-Id"]
        assert (await a.kubectl("get", "--raw", "/healthz"))[0] == 0
        probe = await a.event(lambda e: e["auditID"] == anonymous_id
                              and e["stage"] == "ResponseComplete")
        assert probe["user"] == {"username": "system:anonymous",
                                 "groups": ["system:unauthenticated"]}
        assert probe["verb"] == "get" and "objectRef" not in probe
        kubectl = await a.event(lambda e: e["auditID"] != anonymous_id)
        assert kubectl["user"]["username"] == "setpoint-admin"


async def test_every_get_on_a_kept_connection_is_audited(audited: Any) -> None:
    """audit.go: each request passes the audit filter; a named GET repeated on a kept
    connection (which the server may answer from what it remembered for that connection,
    storedgets.py) is audited each time, with its own Audit-Id."""
    async with audited(policy({"level": "Metadata", "verbs": ["get"]})) as a:
        import ssl

        assert (await a.kubectl("create", "configmap", "kept", "-n", "default"))[0] == 0
        ctx = ssl.create_default_context(cafile=str(a.running.ca_file))
        headers = {"Authorization": f"Bearer {a.running.token}"}
        ids = []
        async with aiohttp.ClientSession(headers=headers) as session:
            for _ in range(3):
                async with session.get(
                        a.running.url + "/api/v1/namespaces/default/configmaps/kept",
                        ssl=ctx) as resp:
                    assert resp.status == 200
                    ids.append(resp.headers["Audit-Id"])
        assert len(set(ids)) == 3
        for audit_id in ids:
            await a.event(lambda e, i=audit_id: e["auditID"] == i
                          and e["stage"] == "ResponseComplete")
