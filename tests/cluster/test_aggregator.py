"""The embedded server as an API aggregator (kube-aggregator, Kubernetes 1.32).

One cluster and one extension API server (``aggregated_backend.Backend``) for the module,
registered as kube-aggregator expects: a selectorless Service, its Endpoints naming the
backend's address, and an APIService with the backend's CA.
Sources: k8s.io/kube-aggregator pkg/apiserver/handler_proxy.go (proxying, 503s),
handler_apis.go (/apis, /apis/<group>), handler_discovery.go (aggregated discovery),
pkg/controllers/status/{local,remote}/*_available_controller.go (the Available condition),
k8s.io/apiserver pkg/util/proxy/proxy.go ``ResolveEndpoint`` (endpoint routing),
client-go transport ``SetAuthProxyHeaders`` (X-Remote-*), and
pkg/controlplane/controller/clusterauthenticationtrust (the authentication ConfigMap).
"""

from __future__ import annotations

import asyncio
import os
import ssl
import stat
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import aiohttp
import orjson
import pytest
import pytest_asyncio

from setpoint.cluster import RunningCluster, serve
from setpoint.machinery.certificates import issue
from tests.cluster.aggregated_backend import (
    BACKEND_OBJECT_META,
    FLUNDER_DESCRIPTION,
    GROUP,
    GV,
    OPENAPI_HASH,
    VERSION,
    Backend,
)
from tests.cluster.conftest import API
from tests.conftest import kubectl_path
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
FLUNDERS = f"/apis/{GV}/namespaces/default/flunders"
AUTH_CM = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


@dataclass
class Env:
    cluster: RunningCluster
    api: API
    backend: Backend
    workdir: Path


async def register(api: API, name: str, namespace: str, service: str, *, port: int | None,
                   ca_bundle: str, endpoint_port: int | None = None,
                   group: str = GROUP, version: str = VERSION) -> None:
    """A selectorless Service (port 443, name https), its Endpoints when ``port`` is given,
    and the APIService for ``group/version``."""
    status, body = await api.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    assert status in (201, 409), body
    status, body = await api.post(f"/api/v1/namespaces/{namespace}/services", {
        "metadata": {"name": service},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}})
    assert status == 201, body
    if port is not None:
        status, body = await api.post(f"/api/v1/namespaces/{namespace}/endpoints", {
            "metadata": {"name": service},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                         "ports": [{"name": "https", "port": endpoint_port or port}]}]})
        assert status == 201, body
    status, body = await api.post(APISERVICES, {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": name},
        "spec": {"group": group, "version": version, "caBundle": ca_bundle,
                 "service": {"namespace": namespace, "name": service, "port": 443},
                 "groupPriorityMinimum": 1000, "versionPriority": 15}})
    assert status == 201, body


async def available(api: API, name: str) -> dict[str, Any] | None:
    _, apiservice = await api.get(f"{APISERVICES}/{name}")
    for condition in (apiservice.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Available":
            return dict(condition)
    return None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    workdir = tmp_path_factory.mktemp("aggregator")
    async with serve(state_dir=workdir / "state") as cluster:
        headers = {"Authorization": f"Bearer {cluster.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            api = API(cluster, session)
            _, cm = await api.get(AUTH_CM)
            backend = Backend(workdir, cm["data"])
            await backend.start()
            await register(api, f"{VERSION}.{GROUP}", "wardle", "wardle-api",
                           port=backend.port, ca_bundle=backend.ca_bundle)
            await wait_for(lambda: _reason(api, f"{VERSION}.{GROUP}", "Passed"))
            try:
                yield Env(cluster, api, backend, workdir)
            finally:
                await backend.stop()


async def _reason(api: API, name: str, reason: str) -> bool:
    condition = await available(api, name)
    return condition is not None and condition["reason"] == reason


# -- the front proxy's identity --------------------------------------------------------------

async def test_the_authentication_configmap_publishes_the_requestheader_trust(env: Env) -> None:
    """clusterauthenticationtrust: the client CA, the requestheader CA, allowed names and
    headers as JSON lists."""
    _, cm = await env.api.get(AUTH_CM)
    data = cm["data"]
    assert data["client-ca-file"] == env.cluster.ca_file.read_text()
    assert "BEGIN CERTIFICATE" in data["requestheader-client-ca-file"]
    assert data["requestheader-client-ca-file"] != data["client-ca-file"]
    assert orjson.loads(data["requestheader-allowed-names"]) == ["front-proxy-client"]
    assert orjson.loads(data["requestheader-username-headers"]) == ["X-Remote-User"]
    assert orjson.loads(data["requestheader-group-headers"]) == ["X-Remote-Group"]
    assert orjson.loads(data["requestheader-extra-headers-prefix"]) == ["X-Remote-Extra-"]


async def test_the_front_proxy_keys_are_private_files(env: Env) -> None:
    state = env.workdir / "state"
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    for name in ("front-proxy-ca.crt", "front-proxy-client.crt", "front-proxy-client.key"):
        assert stat.S_IMODE(os.stat(state / name).st_mode) == 0o600, name


async def test_the_backend_trusts_only_the_front_proxy_certificate(env: Env) -> None:
    """The requestheader CA signs the proxy's certificate and nothing a caller holds: a
    client without it, or with another CA's certificate, is refused by the backend."""
    url = f"https://127.0.0.1:{env.backend.port}{FLUNDERS}"
    trust = ssl.create_default_context(cadata=__import__("base64").b64decode(
        env.backend.ca_bundle).decode())
    trust.check_hostname = False
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):
            async with session.get(url, ssl=trust) as resp:
                await resp.read()
        other = issue(["front-proxy-client"], ca_name="front-proxy-ca")
        (env.workdir / "other.crt").write_bytes(other.cert_pem)
        (env.workdir / "other.key").write_bytes(other.key_pem)
        trust.load_cert_chain(env.workdir / "other.crt", env.workdir / "other.key")
        with pytest.raises(aiohttp.ClientError):
            async with session.get(url, ssl=trust) as resp:
                await resp.read()
    assert all(seen.client_cn == "front-proxy-client" for seen in env.backend.seen)


# -- proxying ----------------------------------------------------------------------------------

async def test_get_and_list_are_proxied_with_the_callers_identity_not_its_credentials(
        env: Env) -> None:
    """handler_proxy.go: the user as X-Remote-User, one X-Remote-Group per group; the
    Authorization header stays with the aggregator (filters/authentication.go); the
    caller's address is appended to X-Forwarded-For (net/http/httputil reverseproxy.go)."""
    env.backend.seen.clear()
    status, listed = await env.api.get(FLUNDERS + "?limit=5")
    assert status == 200, listed
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one"]
    status, one = await env.api.get(f"{FLUNDERS}/one")
    assert (status, one["kind"]) == (200, "Flunder")
    first = env.backend.requests_to(FLUNDERS)[0]
    assert (first.method, first.path, first.query) == ("GET", FLUNDERS, {"limit": "5"})
    assert first.client_cn == "front-proxy-client"
    assert first.values("X-Remote-User") == ["setpoint-admin"]
    assert first.values("X-Remote-Group") == ["system:masters", "system:authenticated"]
    assert first.values("Authorization") == []
    # httputil.ReverseProxy appends the caller's address
    assert first.values("X-Forwarded-For") == ["127.0.0.1"]


async def test_the_backend_gets_the_requests_audit_id(env: Env) -> None:
    """apiserver pkg/util/proxy/proxy.go ``NewRequestForProxy``: the proxied request's
    Audit-ID is set to the request's own (the caller's, as audit_init.go takes it, or the
    one the aggregator made), so both servers' audit events carry the same ID; the answer
    carries it (audit_init.go) before whatever the backend's headers add (ReverseProxy)."""
    env.backend.seen.clear()
    status, _ = await env.api.get(f"{FLUNDERS}/one", headers={"Audit-ID": "agg-audit-1"})
    assert status == 200
    assert env.backend.requests_to(f"{FLUNDERS}/one")[-1].values("Audit-Id") == ["agg-audit-1"]
    async with env.api.session.get(
            env.api.cluster.url + f"{FLUNDERS}/one", ssl=env.api.ssl,
            headers={"Authorization": f"Bearer {env.api.cluster.token}"}) as resp:
        assert resp.status == 200
        ours = resp.headers.getall("Audit-Id")[0]
    assert uuid.UUID(ours).version == 4
    assert env.backend.requests_to(f"{FLUNDERS}/one")[-1].values("Audit-Id") == [ours]


async def test_an_impersonated_user_reaches_the_backend_authorized_here_first(
        env: Env) -> None:
    """The aggregator's handler runs after impersonation and authorization: the backend is
    told the impersonated user and never sees Impersonate-* headers; a user RBAC does not
    allow is refused here with the Forbidden Status, the backend never asked."""
    env.backend.seen.clear()
    status, body = await env.api.get(FLUNDERS, headers={
        "Impersonate-User": "alice", "Impersonate-Group": "system:masters"})
    assert status == 200, body
    [seen] = env.backend.requests_to(FLUNDERS)
    assert seen.values("X-Remote-User") == ["alice"]
    assert "system:masters" in seen.values("X-Remote-Group")
    assert seen.values("Impersonate-User") == []
    env.backend.seen.clear()
    status, body = await env.api.get(FLUNDERS, headers={"Impersonate-User": "mallory"})
    assert status == 403, body
    assert body["reason"] == "Forbidden"
    assert body["details"] == {"group": GROUP, "kind": "flunders"}
    assert env.backend.requests_to(FLUNDERS) == []


async def test_a_watch_streams_through_the_proxy(env: Env) -> None:
    api = env.api
    watches = env.backend.watches()
    async with api.session.get(f"{env.cluster.url}{FLUNDERS}?watch=true",
                               ssl=api.ssl) as resp:
        assert resp.status == 200
        first = orjson.loads(await asyncio.wait_for(resp.content.readline(), 30))
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "one")
        await wait_for(lambda: env.backend.watches() > watches)
        env.backend.publish({"type": "MODIFIED", "object": {
            "apiVersion": GV, "kind": "Flunder",
            "metadata": {"name": "one", "namespace": "default", "resourceVersion": "2"}}})
        second = orjson.loads(await asyncio.wait_for(resp.content.readline(), 30))
        assert (second["type"], second["object"]["metadata"]["resourceVersion"]) == (
            "MODIFIED", "2")


async def test_an_upgrade_request_is_joined_to_the_backends_connection(env: Env) -> None:
    """handler_proxy.go hands an upgrade request (``httpstream.IsUpgradeRequest``) to the
    UpgradeAwareHandler with the X-Remote-* headers set on it beforehand; upgradeaware.go
    ``tryUpgrade`` dials the backend, and on its 101 joins the connections, so exec's
    WebSocket (or SPDY) reaches the extension server, which is never shown the caller's
    credentials."""
    env.backend.seen.clear()
    url = f"{env.cluster.url}{FLUNDERS}/one/exec?command=true&stdout=true"
    async with env.api.session.ws_connect(url, ssl=env.api.ssl,
                                          protocols=("v5.channel.k8s.io",)) as ws:
        assert ws.protocol == "v5.channel.k8s.io"
        await ws.send_bytes(b"\x01hello")
        message = await asyncio.wait_for(ws.receive(), 30)
        assert message.data == b"echo:\x01hello"
    [seen] = env.backend.requests_to(f"{FLUNDERS}/one/exec")
    assert seen.query == {"command": "true", "stdout": "true"}
    assert seen.values("Upgrade") == ["websocket"]
    assert seen.values("X-Remote-User") == ["setpoint-admin"]
    assert seen.values("X-Forwarded-For") == ["127.0.0.1"]
    assert seen.values("Authorization") == []


async def test_an_upgrade_the_backend_does_not_accept_is_answered_as_the_proxy_does(
        env: Env) -> None:
    """upgradeaware.go ``tryUpgrade``: an error answer (>= 400) to an upgrade is handed back
    as the backend wrote it; any other answer but 101 is the responder's 503
    ``invalid upgrade response: status code <n>``."""
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    status, body = await env.api.get(f"{FLUNDERS}/missing/exec", headers=upgrade)
    assert (status, body["reason"]) == (404, "NotFound")
    status, body = await env.api.get(f"{FLUNDERS}/one", headers=upgrade)
    assert (status, body) == (503, "invalid upgrade response: status code 200\n")


async def test_a_backend_slower_than_the_request_timeout_gets_the_timeout_status(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """filters/timeout.go: a request that is not long-running and has no answer within the
    request timeout (60 s; shortened here) is answered 504 Timeout by the apiserver."""
    from setpoint.cluster.aggregator import proxy

    monkeypatch.setattr(proxy, "REQUEST_TIMEOUT_S", 0.3)
    status, body = await env.api.get(f"{FLUNDERS}/slow")
    assert status == 504, body
    assert (body["reason"], body["message"]) == (
        "Timeout", "Timeout: request did not complete within the allotted timeout")


# -- availability --------------------------------------------------------------------------------

async def test_an_apiservice_without_endpoints_is_unavailable_and_answers_503(
        env: Env) -> None:
    """remote_available_controller.go: MissingEndpoints / ServiceNotFound; the proxy then
    answers ``http.Error(w, "service unavailable", 503)``."""
    api = env.api
    await register(api, "v1.missing.example.com", "missing", "nobody", port=None,
                   ca_bundle=env.backend.ca_bundle, group="missing.example.com",
                   version="v1")
    await wait_for(lambda: _reason(api, "v1.missing.example.com", "EndpointsNotFound"))
    condition = await available(api, "v1.missing.example.com")
    assert condition is not None and condition["status"] == "False"
    assert condition["message"] == 'cannot find endpoints for service/nobody in "missing"'
    status, body = await api.get("/apis/missing.example.com/v1/widgets")
    assert (status, body) == (503, "service unavailable\n")
    await api.post("/api/v1/namespaces/missing/endpoints", {
        "metadata": {"name": "nobody"}, "subsets": []})
    await wait_for(lambda: _reason(api, "v1.missing.example.com", "MissingEndpoints"))
    condition = await available(api, "v1.missing.example.com")
    assert condition is not None
    assert condition["message"] == ('endpoints for service/nobody in "missing" have no '
                                    'addresses with port name "https"')
    status, _ = await api.delete("/api/v1/namespaces/missing/services/nobody")
    assert status == 200
    await wait_for(lambda: _reason(api, "v1.missing.example.com", "ServiceNotFound"))
    condition = await available(api, "v1.missing.example.com")
    assert condition is not None
    assert condition["message"] == 'service/nobody in "missing" is not present'
    # kubectl's table: pkg/registry/apiservice/etcd/etcd.go ConvertToTable
    out = await _kubectl(env, "get", "apiservices", "v1.missing.example.com",
                         f"{VERSION}.{GROUP}", "--no-headers")
    rows = [line.split()[:-1] for line in out.splitlines()]  # (the age last)
    assert rows == [["v1.missing.example.com", "missing/nobody", "False", "(ServiceNotFound)"],
                    [f"{VERSION}.{GROUP}", "wardle/wardle-api", "True"]]


async def test_a_backend_that_does_not_answer_fails_the_discovery_check(env: Env) -> None:
    api = env.api
    closed = _free_port()
    await register(api, "v1.down.example.com", "down", "down-api", port=closed,
                   ca_bundle=env.backend.ca_bundle, group="down.example.com", version="v1")
    await wait_for(lambda: _reason(api, "v1.down.example.com", "FailedDiscoveryCheck"))
    condition = await available(api, "v1.down.example.com")
    assert condition is not None and condition["status"] == "False"
    url = f"https://127.0.0.1:{closed}/apis/down.example.com/v1"
    assert condition["message"].startswith(f'failing or missing response from {url}: ')
    assert "connection refused" in condition["message"]
    status, body = await api.get("/apis/down.example.com/v1/things")
    assert (status, body) == (503, "service unavailable\n")
    # the group is still listed, its version without resources (Stale)
    _, groups = await api.get("/apis")
    assert "down.example.com" in [g["name"] for g in groups["groups"]]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- discovery --------------------------------------------------------------------------------

async def test_the_group_is_listed_in_apis_and_served_at_apis_group(env: Env) -> None:
    """handler_apis.go: /apis lists the APIService's group, /apis/<group> is the APIGroup
    built from its APIServices, /apis/<group>/<version> is the backend's answer."""
    _, groups = await env.api.get("/apis")
    [wardle] = [g for g in groups["groups"] if g["name"] == GROUP]
    assert wardle["preferredVersion"] == {"groupVersion": GV, "version": VERSION}
    status, group = await env.api.get(f"/apis/{GROUP}")
    assert status == 200
    assert group == {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
                     "versions": [{"groupVersion": GV, "version": VERSION}],
                     "preferredVersion": {"groupVersion": GV, "version": VERSION}}
    status, resources = await env.api.get(f"/apis/{GV}")
    assert (status, resources["kind"]) == (200, "APIResourceList")


async def _aggregated_version(api: API, accept_version: str) -> dict[str, Any] | None:
    accept = f"application/json;g=apidiscovery.k8s.io;v={accept_version};as=APIGroupDiscoveryList"
    _, doc = await api.get("/apis", headers={"Accept": accept})
    for item in doc["items"]:
        if item["metadata"]["name"] == GROUP:
            return dict(item["versions"][0])
    return None


async def test_aggregated_discovery_carries_the_backends_resources(env: Env) -> None:
    """handler_discovery.go: a backend without aggregated discovery is asked for its legacy
    APIResourceList, converted; the entry is Current."""
    for version in ("v2", "v2beta1"):
        entry = await wait_for(partial(_current, env.api, version))
        assert entry["version"] == VERSION
        [flunders] = entry["resources"]
        assert flunders["resource"] == "flunders"
        assert flunders["scope"] == "Namespaced"
        assert flunders["shortNames"] == ["fl"]
        assert flunders["subresources"][0]["subresource"] == "status"


async def _current(api: API, version: str) -> dict[str, Any] | None:
    entry = await _aggregated_version(api, version)
    return entry if entry and entry["freshness"] == "Current" and entry["resources"] else None


async def test_kubectl_sees_and_reads_the_aggregated_group(env: Env) -> None:
    await wait_for(lambda: _current(env.api, "v2"))
    out = await _kubectl(env, "api-resources", f"--api-group={GROUP}", "-o", "name")
    assert out.split() == [f"flunders.{GROUP}"]
    raw = orjson.loads(await _kubectl(env, "get", "--raw", f"{FLUNDERS}/one"))
    assert raw["metadata"]["name"] == "one"
    out = await _kubectl(env, "get", "flunders", "-n", "default", "-o", "name")
    assert out.split() == [f"flunder.{GROUP}/one"]


async def test_kubectl_get_watch_streams_through_the_proxy(env: Env) -> None:
    await wait_for(lambda: _current(env.api, "v2"))
    watches = env.backend.watches()
    proc = await _kubectl_process(env, "get", "flunders", "-n", "default", "--watch",
                                  "-o", "name")
    try:
        assert proc.stdout is not None
        first = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert first.decode().strip() == f"flunder.{GROUP}/one"
        await wait_for(lambda: env.backend.watches() > watches)  # (after its LIST)
        env.backend.publish({"type": "ADDED", "object": {
            "apiVersion": GV, "kind": "Flunder",
            "metadata": {"name": "two", "namespace": "default", "resourceVersion": "3"}}})
        line = b""
        while b"/two" not in line:  # the watch's own ADDED of "one" may come first
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert line.decode().strip() == f"flunder.{GROUP}/two"
    finally:
        proc.kill()
        await proc.wait()


async def test_kubectl_top_reads_metrics_from_an_aggregated_metrics_api(env: Env) -> None:
    """``kubectl top`` checks discovery for metrics.k8s.io, then lists PodMetrics: both
    through the aggregator, from a backend registered as metrics-server registers."""
    api = env.api
    status, body = await api.post(APISERVICES, {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
                 "caBundle": env.backend.ca_bundle,
                 "service": {"namespace": "wardle", "name": "wardle-api", "port": 443},
                 "groupPriorityMinimum": 100, "versionPriority": 100}})
    assert status == 201, body
    await wait_for(lambda: _reason(api, "v1beta1.metrics.k8s.io", "Passed"))

    async def metrics_discovered() -> bool:
        accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        _, doc = await api.get("/apis", headers={"Accept": accept})
        return any(item["metadata"]["name"] == "metrics.k8s.io"
                   and item["versions"][0]["resources"] for item in doc["items"])

    await wait_for(metrics_discovered)
    out = await _kubectl(env, "api-resources", "--api-group=metrics.k8s.io", "-o", "name")
    assert out.split() == ["nodes.metrics.k8s.io", "pods.metrics.k8s.io"]
    out = await _kubectl(env, "top", "pod", "-n", "default", "--no-headers")
    assert out.split() == ["web", "25m", "64Mi"]


async def test_the_official_python_client_lists_through_the_aggregator(env: Env) -> None:
    from kubernetes import client, config

    def read() -> tuple[list[str], list[str]]:
        api_client = config.new_client_from_config(config_file=str(env.cluster.kubeconfig))
        with api_client:
            groups = client.ApisApi(api_client).get_api_versions()
            listed = cast(dict[str, Any], client.CustomObjectsApi(
                api_client).list_namespaced_custom_object(GROUP, VERSION, "default",
                                                          "flunders"))
        return [g.name for g in groups.groups], [i["metadata"]["name"]
                                                 for i in listed["items"]]

    names, items = await asyncio.to_thread(read)
    assert GROUP in names
    assert items == ["one"]


async def test_a_changed_apiservice_is_discovered_again_from_aggregated_discovery(
        env: Env) -> None:
    """handler_discovery.go asks for ``/apis`` in apidiscovery v2 first: once the backend
    serves it, a change of the APIService brings its resources in."""
    env.backend.aggregated = True
    try:
        status, body = await env.api.patch(
            f"{APISERVICES}/{VERSION}.{GROUP}", {"metadata": {"labels": {"touched": "1"}}},
            "application/merge-patch+json")
        assert status == 200, body

        await wait_for(lambda: _discovered_resources_are(env.api, ["fischers"]))
    finally:
        env.backend.aggregated = False
        await env.api.patch(f"{APISERVICES}/{VERSION}.{GROUP}",
                            {"metadata": {"labels": {"touched": "2"}}},
                            "application/merge-patch+json")
        # the module's other tests expect the backend's own resources again, in any order
        await wait_for(lambda: _discovered_resources_are(env.api, ["flunders"]))


async def _discovered_resources_are(api: API, resources: list[str]) -> bool:
    entry = await _current(api, "v2")
    return entry is not None and [r["resource"] for r in entry["resources"]] == resources


async def _kubectl_process(env: Env, *args: str) -> asyncio.subprocess.Process:
    home = env.workdir / "home"
    home.mkdir(exist_ok=True)
    return await asyncio.create_subprocess_exec(
        kubectl_path(), "--kubeconfig", str(env.cluster.kubeconfig), "--cache-dir",
        str(env.workdir / f"cache-{uuid.uuid4().hex[:8]}"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})


async def _kubectl(env: Env, *args: str) -> str:
    proc = await _kubectl_process(env, *args)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {out.decode()}{err.decode()}"
    return out.decode()


# -- the APIService API ------------------------------------------------------------------------

async def test_an_invalid_apiservice_is_refused_with_the_aggregators_field_errors(
        env: Env) -> None:
    """pkg/apis/apiregistration/validation ValidateAPIService: the name, the priorities and
    a remote APIService's trust; defaults.go gives the Service port 443."""
    status, body = await env.api.post(APISERVICES, {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "wrong"},
        "spec": {"group": "bad.example.com", "version": "v1", "caBundle": "Y2E=",
                 "insecureSkipTLSVerify": True, "service": {"namespace": "x", "name": "y"},
                 "groupPriorityMinimum": 0, "versionPriority": 1001}})
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("metadata.name", 'Invalid value: "wrong": must be `spec.version+"."+spec.group`: '
                          '"v1.bad.example.com"'),
        ("spec.groupPriorityMinimum", "Invalid value: 0: must be positive and less than "
                                      "20000"),
        ("spec.versionPriority", "Invalid value: 1001: must be positive and less than 1000"),
        ("spec.insecureSkipTLSVerify", "Invalid value: true: may not be true if caBundle is "
                                       "present")]
    status, created = await env.api.post(APISERVICES, {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.defaulted.example.com"},
        "spec": {"group": "defaulted.example.com", "version": "v1",
                 "insecureSkipTLSVerify": True, "service": {"namespace": "x", "name": "y"},
                 "groupPriorityMinimum": 100, "versionPriority": 100}})
    assert status == 201, created
    assert created["spec"]["service"]["port"] == 443


# -- OpenAPI v3 ----------------------------------------------------------------------------------

async def test_the_backends_openapi_v3_paths_are_listed_and_proxied_so_kubectl_explain_works(
        env: Env) -> None:
    """kube-aggregator pkg/controllers/openapiv3/aggregator/aggregator.go (specProxier): the
    backend's /openapi/v3 paths join the server's root as the backend lists them, and a
    request for one is proxied to the backend, which answers it; the server's own paths are
    unchanged. kubectl explain (OpenAPI v3) then finds the aggregated kind."""
    async def listed() -> dict[str, Any] | None:
        _, index = await env.api.get("/openapi/v3", headers={"Accept": "application/json"})
        if isinstance(index, str):
            index = orjson.loads(index)
        return index if f"apis/{GV}" in index["paths"] else None

    index = await wait_for(listed)
    assert index["paths"][f"apis/{GV}"] == {
        "serverRelativeURL": f"/openapi/v3/apis/{GV}?hash={OPENAPI_HASH}"}
    assert index["paths"]["apis/apps/v1"]["serverRelativeURL"].startswith(
        "/openapi/v3/apis/apps/v1?hash=")
    status, doc = await env.api.get(f"/openapi/v3/apis/{GV}?hash={OPENAPI_HASH}")
    assert status == 200, doc
    assert "com.example.wardle.v1alpha1.Flunder" in doc["components"]["schemas"]
    out = await _kubectl(env, "explain", "flunders")
    assert "KIND:       Flunder" in out, out
    assert FLUNDER_DESCRIPTION in out, out
    out = await _kubectl(env, "explain", "flunders.spec.reference")
    assert "The flunder this one refers to." in out, out


# -- OpenAPI v2 ----------------------------------------------------------------------------------

async def test_the_backends_openapi_v2_is_merged_into_the_servers_own(env: Env) -> None:
    """kube-aggregator pkg/controllers/openapi/aggregator/aggregator.go: the backend's
    /openapi/v2 filtered to ``/apis/<group>/<version>/`` (what its paths reach, nothing
    else) and merged after the server's own by kube-openapi pkg/aggregator
    (``MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters``): a definition named
    as one of the server's with other content is renamed ``_v2`` with its references."""
    flunder_path = f"/apis/{GV}/namespaces/{{namespace}}/flunders/{{name}}"
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

    async def merged() -> dict[str, Any] | None:
        _, doc = await env.api.get("/openapi/v2", headers={"Accept": "application/json"})
        return doc if flunder_path in doc["paths"] else None

    doc = await wait_for(merged)
    assert f"/apis/{GROUP}/v1beta1/things" not in doc["paths"]
    assert "/apis/apps/v1/namespaces/{namespace}/deployments" in doc["paths"]
    definitions = doc["definitions"]
    flunder = definitions["com.example.wardle.v1alpha1.Flunder"]
    assert flunder["description"] == FLUNDER_DESCRIPTION
    assert flunder["properties"]["metadata"] == {"$ref": f"#/definitions/{meta}_v2"}
    assert definitions[f"{meta}_v2"]["description"] == BACKEND_OBJECT_META
    assert definitions[meta]["description"] != BACKEND_OBJECT_META  # the server's own
    assert "com.example.wardle.v1alpha1.Unused" not in definitions
    assert "com.example.wardle.v1beta1.Thing" not in definitions
    assert doc["parameters"]["name-flunder"]["in"] == "path"
    assert doc["paths"][flunder_path]["get"]["parameters"] == [
        {"$ref": "#/parameters/name-flunder"}]
    # the protobuf form kubectl up to 1.27 asks for is the same merged document
    async with env.api.session.get(
            f"{env.cluster.url}/openapi/v2", ssl=env.api.ssl,
            headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
            ) as resp:
        assert resp.status == 200
        assert b"readWardleV1alpha1NamespacedFlunder" in await resp.read()
