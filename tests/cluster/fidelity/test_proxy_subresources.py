"""``pods/proxy``, ``services/proxy``, ``nodes/proxy`` and the upgrade the pod streams need,
checked against kube-apiserver 1.32 over HTTP.

Sources (k8s.io/kubernetes 1.32 unless named): pkg/registry/core/pod/strategy.go
``ResourceLocation`` (and ``getPodIP``); pkg/registry/core/service/storage/storage.go
``ResourceLocation`` and ``isValidAddress``; pkg/registry/core/node/strategy.go
``ResourceLocation`` and ``isProxyableHostname``; apimachinery pkg/util/net
``SplitSchemeNamePort``; apimachinery pkg/util/proxy upgradeaware.go ``ServeHTTP``
(``UpgradeRequired``, ``proxyRedirectsforRootPath``) and transport.go ``RoundTrip`` ("error
trying to reach service", X-Forwarded-Uri, ``rewriteURL``) with ``corsRemovingTransport``;
apimachinery pkg/apis/meta/v1/conversion.go ``Convert_Slice_string_To_Slice_int32`` (portforward's
``ports``, decoded by handlers/rest.go ``ConnectResource`` before the pod is read).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import pytest
import pytest_asyncio
from aiohttp import web

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
MERGE = "application/merge-patch+json"


def _status(answer: Any) -> tuple[str, str]:
    return answer["reason"], answer["message"]


async def _node(api: API, name: str, address: str, runtime: str = "") -> None:
    status, out = await api.post("/api/v1/nodes", {"metadata": {"name": name}})
    assert status == 201, out
    node_status: dict[str, Any] = {"addresses": [{"type": "InternalIP", "address": address}],
                                   "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}
    if runtime:
        node_status["nodeInfo"] = {"containerRuntimeVersion": runtime}
    status, out = await api.patch(f"/api/v1/nodes/{name}/status", {"status": node_status},
                                  MERGE)
    assert status == 200, out


async def _pod(api: API, name: str, node: str, ip: str, **container: Any) -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", **container}]}
    if node:
        spec["nodeName"] = node
    status, out = await api.post(f"{NS}/pods", {"metadata": {"name": name}, "spec": spec})
    assert status == 201, out
    if ip:
        status, out = await api.patch(f"{NS}/pods/{name}/status",
                                      {"status": {"podIP": ip, "podIPs": [{"ip": ip}]}},
                                      MERGE)
        assert status == 200, out


async def _service(api: API, name: str, port_name: str, pod: str, ip: str,
                   target_port: int) -> None:
    status, out = await api.post(f"{NS}/services", {
        "metadata": {"name": name},
        "spec": {"ports": [{"name": port_name, "port": 80}]}})
    assert status == 201, out
    status, out = await api.put(f"{NS}/endpoints/{name}", {
        "metadata": {"name": name},
        "subsets": [{"addresses": [{"ip": ip, "targetRef": {
            "kind": "Pod", "namespace": "default", "name": pod}}],
            "ports": [{"name": port_name, "port": target_port}]}]})
    assert status in (200, 201), out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(module_api: API) -> AsyncIterator[dict[str, Any]]:
    """A simulated node and a pod on it; a node and a pod on loopback; a backend on
    loopback behind the service ``web`` (port ``http``); ``dead``, a service whose endpoint
    has nothing listening."""
    seen: dict[str, Any] = {}

    async def backend(request: web.Request) -> web.StreamResponse:
        if request.path == "/ws":
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            async for message in ws:
                await ws.send_str(f"echo {message.data}")
            return ws
        if request.path == "/redirect":
            raise web.HTTPFound(request.query["to"])
        seen.update(path=request.path_qs, method=request.method,
                    headers={k.lower(): v for k, v in request.headers.items()},
                    body=await request.text())
        return web.Response(text=f"backend {request.method} {request.path_qs}",
                            headers={"Access-Control-Allow-Origin": "*", "X-Backend": "yes"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", backend)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    with socket.socket() as probe:  # a port with nothing listening, once closed
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    await _node(module_api, "sim", "10.1.2.3", "simulated://1.0")
    await _node(module_api, "lo", "127.0.0.1")
    await _pod(module_api, "simpod", "sim", "10.244.0.5", ports=[{"containerPort": 8080}])
    await _pod(module_api, "lopod", "lo", "127.0.0.1")
    await _pod(module_api, "unscheduled", "", "")
    await _pod(module_api, "two", "sim", "10.244.0.6")
    await _service(module_api, "web", "http", "lopod", "127.0.0.1", port)
    await _service(module_api, "dead", "", "lopod", "127.0.0.1", closed_port)
    await _service(module_api, "stranger", "", "simpod", "10.9.9.9", 80)
    yield {"seen": seen, "closed_port": closed_port, "port": port}
    await runner.cleanup()


async def test_services_proxy_passes_the_request_and_the_answer(
        module_api: API, world: dict[str, Any]) -> None:
    """The service port's name picks the endpoint port; a port number is turned into the
    service port's name first. The caller's credentials stay behind (the authentication
filter deletes Authorization), X-Forwarded-Uri is
    the path asked for, and the backend's CORS headers are removed from its answer."""
    url = module_api.cluster.url + f"{NS}/services/web:http/proxy/a/b?x=1"
    async with module_api.session.get(url, ssl=module_api.ssl,
                                      headers={"X-Caller": "me"}) as resp:
        assert (resp.status, await resp.text()) == (200, "backend GET /a/b?x=1")
        assert resp.headers["X-Backend"] == "yes"
        assert "Access-Control-Allow-Origin" not in resp.headers
    seen = world["seen"]
    assert seen["headers"]["x-caller"] == "me"
    assert "authorization" not in seen["headers"]
    assert seen["headers"]["x-forwarded-uri"] == f"{NS}/services/web:http/proxy/a/b"
    # (the reverse proxy keeps the request's Host: the API server's)
    assert seen["headers"]["host"] == module_api.cluster.url.split("://", 1)[1]
    status, text = await module_api.post(f"{NS}/services/http:web:80/proxy/post", {"a": 1})
    assert (status, text) == (200, "backend POST /post")
    assert seen["body"] == '{"a":1}'


async def test_services_proxy_refusals(module_api: API, world: dict[str, Any]) -> None:
    """A service port left out matches only an unnamed endpoint port; the kubernetes
    service's endpoints are no pods (no targetRef); an endpoint whose pod has another IP
    is skipped; a port number the service lacks, an unknown scheme, a missing service."""
    cases = [
        ("web/proxy/", 503, "ServiceUnavailable", 'no endpoints available for service "web"'),
        ("web:81/proxy/", 503, "ServiceUnavailable",
         'no service port 81 found for service "web"'),
        ("kubernetes:443/proxy/", 503, "ServiceUnavailable",
         'no endpoints available for service "kubernetes:443"'),
        ("stranger/proxy/", 503, "ServiceUnavailable",
         'no endpoints available for service "stranger"'),
        ("ftp:web:80/proxy/", 400, "BadRequest", 'invalid service request "ftp:web:80"'),
        ("nosuch/proxy/", 404, "NotFound", 'endpoints "nosuch" not found'),
        ("nosuch:80/proxy/", 404, "NotFound", 'services "nosuch" not found'),
    ]
    for path, code, reason, message in cases:
        status, answer = await module_api.get(f"{NS}/services/{path}")
        assert (status, _status(answer)) == (code, (reason, message)), path


async def test_services_proxy_to_nothing_listening_is_unavailable(
        module_api: API, world: dict[str, Any]) -> None:
    status, answer = await module_api.get(f"{NS}/services/dead/proxy/")
    assert (status, _status(answer)) == (503, (
        "ServiceUnavailable", "error trying to reach service: dial tcp "
        f"127.0.0.1:{world['closed_port']}: connect: connection refused"))


async def test_pods_proxy_locations(module_api: API, world: dict[str, Any]) -> None:
    """Only a global unicast pod IP is proxied to (no loopback, no IP yet); the pod in the
    simulation answers the transport's 503 with the first container port it would use."""
    cases = [
        ("lopod/proxy/x", 400, "BadRequest", "address not allowed"),
        ("unscheduled/proxy/x", 400, "BadRequest", "address not allowed"),
        ("nosuch/proxy/x", 404, "NotFound", 'pods "nosuch" not found'),
        ("a:b:c:d/proxy/x", 400, "BadRequest", 'invalid pod request "a:b:c:d"'),
        ("simpod/proxy/x", 503, "ServiceUnavailable",
         "error trying to reach service: dial tcp 10.244.0.5:8080: nothing listens there: "
         "pod simpod runs in the simulation"),
        ("two:9000/proxy/", 503, "ServiceUnavailable",
         "error trying to reach service: dial tcp 10.244.0.6:9000: nothing listens there: "
         "pod two runs in the simulation"),
    ]
    for path, code, reason, message in cases:
        status, answer = await module_api.get(f"{NS}/pods/{path}")
        assert (status, _status(answer)) == (code, (reason, message)), path


async def test_a_bare_proxy_path_is_redirected_to_its_slash(
        module_api: API, world: dict[str, Any]) -> None:
    """proxyRedirectsforRootPath: a GET of ``.../proxy`` is 301 to ``.../proxy/`` (its
    query kept), once the location is known (a missing pod is still 404)."""
    url = module_api.cluster.url + f"{NS}/pods/simpod/proxy?a=1"
    async with module_api.session.get(url, ssl=module_api.ssl,
                                      allow_redirects=False) as resp:
        assert resp.status == 301
        assert resp.headers["Location"] == f"{NS}/pods/simpod/proxy/?a=1"
    status, answer = await module_api.get(f"{NS}/pods/nosuch/proxy")
    assert (status, answer["reason"]) == (404, "NotFound")


async def test_nodes_proxy_locations(module_api: API, world: dict[str, Any]) -> None:
    cases = [
        ("lo/proxy/healthz", 400, "BadRequest", "address not allowed"),
        ("nosuch/proxy/healthz", 404, "NotFound", 'nodes "nosuch" not found'),
        ("sim/proxy/healthz", 503, "ServiceUnavailable",
         "error trying to reach service: dial tcp 10.1.2.3:10250: nothing listens there: "
         'the kubelet of node "sim" is simulated'),
        ("sim:9100/proxy/metrics", 503, "ServiceUnavailable",
         "error trying to reach service: dial tcp 10.1.2.3:9100: nothing listens there: "
         'the kubelet of node "sim" is simulated'),
    ]
    for path, code, reason, message in cases:
        status, answer = await module_api.get(f"/api/v1/nodes/{path}")
        assert (status, _status(answer)) == (code, (reason, message)), path


async def test_pod_streams_need_an_upgrade(module_api: API, world: dict[str, Any]) -> None:
    """exec, attach and portforward are UpgradeRequired: without ``Connection: Upgrade`` the
    answer is 400 once the pod, container and node are found, before any dial."""
    for sub in ("exec?command=ls", "attach?stdout=true", "portforward?ports=80"):
        for method in ("GET", "POST"):
            status, answer = await module_api.request(method, f"{NS}/pods/simpod/{sub}")
            assert (status, _status(answer)) == (
                400, ("BadRequest", "Upgrade request required")), (method, sub)
    status, answer = await module_api.post(f"{NS}/pods/unscheduled/exec?command=ls", None)
    assert (status, answer["message"]) == (400, "pod unscheduled does not have a host assigned")


async def test_portforward_ports_are_decoded_before_the_pod_is_read(
        module_api: API, world: dict[str, Any]) -> None:
    cases = [("80,abc", 'parsing "abc": invalid syntax'),
             ("70000", 'parsing "70000": value out of range'),
             ("-1", 'parsing "-1": invalid syntax')]
    for ports, why in cases:
        status, answer = await module_api.post(f"{NS}/pods/nosuch/portforward?ports={ports}",
                                               None)
        assert (status, _status(answer)) == (400, (
            "BadRequest", f"cannot convert to []int32: strconv.ParseUint: {why}")), ports


async def test_kubectl_reads_through_the_service_proxy(
        module_kubectl: Kubectl, world: dict[str, Any]) -> None:
    """``kubectl get --raw``, the natural client of the proxy subresources: the backend's
    body printed, a refusal as kubectl words a Status."""
    code, out, err = await module_kubectl("get", "--raw", f"{NS}/services/web:http/proxy/hi")
    assert (code, out.strip()) == (0, "backend GET /hi"), err
    code, out, err = await module_kubectl("get", "--raw",
                                          f"{NS}/services/kubernetes/proxy/")
    assert code == 1
    assert err.strip() == ('Error from server (ServiceUnavailable): no endpoints available '
                           'for service "kubernetes"')


async def test_a_redirect_to_the_backend_comes_back_under_the_proxy_path(
        module_api: API, world: dict[str, Any]) -> None:
    """transport.go ``rewriteURL``: a Location on the backend itself (a path from the root,
    or the backend's own address) is put under the proxy's path; another host, or a
    relative path, is left as it is."""
    prefix = f"{NS}/services/web:http/proxy"
    cases = [("/login", f"{prefix}/login"),
             (f"http://127.0.0.1:{world['port']}/a/b/?x=1", f"{prefix}/a/b/?x=1"),
             ("http://elsewhere.example/x", "http://elsewhere.example/x"),
             ("next/page", "next/page")]
    for sent, expected in cases:
        url = module_api.cluster.url + f"{prefix}/redirect?to={quote(sent, safe='')}"
        async with module_api.session.get(url, ssl=module_api.ssl,
                                          allow_redirects=False) as resp:
            assert (resp.status, resp.headers["Location"]) == (302, expected), sent


async def test_an_upgrade_through_the_service_proxy_is_joined_to_the_backend(
        module_api: API, world: dict[str, Any]) -> None:
    """upgradeaware.go ``tryUpgrade``: a WebSocket is joined to the backend's once it
    answers 101; a backend that answers an upgrade with neither 101 nor an error is the
    responder's 500 ``invalid upgrade response``."""
    base = module_api.cluster.url + f"{NS}/services/web:http/proxy"
    async with module_api.session.ws_connect(f"{base}/ws", ssl=module_api.ssl) as ws:
        await ws.send_str("hi")
        assert (await ws.receive_str()) == "echo hi"
    async with module_api.session.get(f"{base}/plain", ssl=module_api.ssl, headers={
            "Connection": "Upgrade", "Upgrade": "something"}) as resp:
        answer = await resp.json()
    assert (resp.status, answer["message"]) == (500, "invalid upgrade response: status code 200")
