"""Discovery, OpenAPI and version answers over real HTTP: methods, caching headers, hashes.

Each rule cites the kube-apiserver 1.32 source it follows.
"""

from __future__ import annotations

import asyncio
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio

from setpoint.cluster import RunningCluster, serve
from tests.conftest import kubectl_path

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Client:
    def __init__(self, cluster: RunningCluster, session: aiohttp.ClientSession,
                 workdir: Path) -> None:
        self.cluster = cluster
        self.session = session
        self.workdir = workdir
        self.ssl = ssl.create_default_context(cafile=str(cluster.ca_file))

    async def kubectl(self, *args: str) -> str:
        """kubectl's output, run with the test's kubeconfig and a cache of its own."""
        cache = tempfile.mkdtemp(dir=self.workdir)
        proc = await asyncio.create_subprocess_exec(
            kubectl_path(), "--kubeconfig", str(self.workdir / "kubeconfig"), "--cache-dir",
            cache, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        return out.decode()

    async def call(self, method: str, path: str, *, auth: bool = True,
                   headers: dict[str, str] | None = None,
                   ) -> tuple[int, Any, bytes]:
        """(status, headers, body); redirects are not followed."""
        hdrs = dict(headers or {})
        if auth:
            hdrs["Authorization"] = f"Bearer {self.cluster.token}"
        async with self.session.request(method, self.cluster.url + path, headers=hdrs,
                                        ssl=self.ssl, allow_redirects=False) as resp:
            return resp.status, resp.headers, await resp.read()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    workdir = tmp_path_factory.mktemp("discovery-http")
    async with serve(kubeconfig=workdir / "kubeconfig") as cluster, \
            aiohttp.ClientSession() as session:
        yield Client(cluster, session, workdir)


async def _apps_v1_url(client: Client) -> str:
    status, _, body = await client.call("GET", "/openapi/v3")
    assert status == 200
    url: str = orjson.loads(body)["paths"]["apis/apps/v1"]["serverRelativeURL"]
    return url


# -- WithCacheControl --------------------------------------------------------------------

@pytest.mark.parametrize(("path", "auth"), [("/version", False), ("/apis", False),
                                            ("/api/v1", True), ("/livez", False),
                                            ("/api/v1/namespaces/default", True)])
async def test_every_answer_is_no_cache_private(client: Client, path: str,
                                                auth: bool) -> None:
    """k8s.io/apiserver pkg/endpoints/filters/cachecontrol.go ``WithCacheControl`` sits
    outside authentication in pkg/server/config.go ``DefaultBuildHandlerChain``: every
    answer, a 401 included, is ``Cache-Control: no-cache, private``."""
    status, headers, _ = await client.call("GET", path, auth=auth)
    assert status in (200, 401)
    assert headers.getall("Cache-Control") == ["no-cache, private"]


# -- /openapi/v3/<gv>: kube-openapi pkg/handler3/handler.go HandleGroupVersion -------------

async def test_openapi_v3_current_hash_is_cached_for_good(client: Client) -> None:
    """With the document's own ``?hash=``: ``public, immutable``, a year's ``Expires``,
    ``Vary: Accept``, the quoted ETag; served by ``http.ServeContent`` (Last-Modified,
    Accept-Ranges; If-None-Match is a 304 that keeps the caching headers)."""
    url = await _apps_v1_url(client)
    digest = url.split("hash=", 1)[1]
    status, headers, body = await client.call("GET", url)
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers.getall("Cache-Control") == ["public, immutable"]
    assert headers["Vary"] == "Accept"
    assert headers["Etag"] == f'"{digest}"'
    assert headers["Expires"].endswith(" UTC") and "Last-Modified" in headers
    assert headers["Accept-Ranges"] == "bytes"
    assert orjson.loads(body)["openapi"] == "3.0.0"
    status, headers, body = await client.call("GET", url,
                                              headers={"If-None-Match": f'"{digest}"'})
    assert (status, body) == (304, b"")
    assert headers.getall("Cache-Control") == ["public, immutable"]
    assert headers["Etag"] == f'"{digest}"'


async def test_openapi_v3_other_hash_redirects_to_the_current_one(client: Client) -> None:
    """A ``?hash=`` that is not the document's is ``http.Redirect(w, r, u, 301)`` to
    ``constructServerRelativeURL``; Content-Type was set before, so no HTML body."""
    url = await _apps_v1_url(client)
    status, headers, body = await client.call("GET", "/openapi/v3/apis/apps/v1?hash=ABC")
    assert (status, body) == (301, b"")
    assert headers["Location"] == url
    assert headers.getall("Cache-Control") == ["no-cache, private"]
    assert headers["Etag"] == '"' + url.split("hash=", 1)[1] + '"'


async def test_openapi_v3_without_hash_is_not_cached(client: Client) -> None:
    status, headers, _ = await client.call("GET", "/openapi/v3/apis/apps/v1")
    assert status == 200
    assert headers.getall("Cache-Control") == ["no-cache, private"]
    assert "Expires" not in headers and headers["Vary"] == "Accept"


async def test_openapi_v3_unacceptable_media_type_is_406(client: Client) -> None:
    """No Accept clause matches application/json (or the protobuf forms): 406, empty."""
    status, headers, body = await client.call("GET", "/openapi/v3/apis/apps/v1",
                                              headers={"Accept": "text/html"})
    assert (status, body) == (406, b"")
    assert headers["Vary"] == "Accept"


@pytest.mark.parametrize("path", ["/openapi/v3/", "/openapi/v3/apis/apps/v1/",
                                  "/openapi/v3/apis/no.such.group/v1"])
async def test_openapi_v3_paths_not_in_the_index_are_empty_404s(client: Client,
                                                                path: str) -> None:
    """kube-aggregator pkg/controllers/openapiv3/aggregator ``handleGroupVersion`` takes the
    path after ``/openapi/v3/`` as it is (``strings.SplitAfterN(path, "/", 4)[3]``); one
    the index does not list is ``w.WriteHeader(404)``, with no body."""
    status, _, body = await client.call("GET", path)
    assert (status, body) == (404, b"")


async def test_openapi_v3_index_is_served_content(client: Client) -> None:
    """kube-aggregator pkg/controllers/openapiv3/aggregator ``handleDiscovery``:
    ``http.ServeContent(w, r, "/openapi/v3", time.Now(), ...)``, sniffed as text/plain."""
    status, headers, _ = await client.call("GET", "/openapi/v3")
    assert status == 200
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["Accept-Ranges"] == "bytes" and "Last-Modified" in headers


# -- go-restful routes take GET only -----------------------------------------------------

@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "HEAD"])
@pytest.mark.parametrize("path", ["/version", "/api", "/api/v1", "/apis/apps/v1"])
async def test_restful_discovery_routes_refuse_other_methods(client: Client, method: str,
                                                             path: str) -> None:
    """routes/version.go and discovery's ``GenerateWebService`` and APIResourceList routes
    are ``ws.GET`` routes: go-restful's router answers another method 405, written by the
    apiserver's ``serviceErrorHandler`` (pkg/server/handler.go) as a Status."""
    status, _, body = await client.call(method, path)
    assert status == 405
    if method != "HEAD":
        assert orjson.loads(body) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server does not allow this method on the requested resource",
            "reason": "MethodNotAllowed", "details": {}, "code": 405}


@pytest.mark.parametrize("path", ["/apis", "/apis/apps"])
async def test_aggregator_discovery_handlers_take_any_method(client: Client,
                                                             path: str) -> None:
    """kube-aggregator's ``apisHandler`` and ``apiGroupHandler`` are plain handlers on the
    NonGoRestfulMux that never look at the method."""
    status, _, body = await client.call("POST", path)
    assert status == 200
    assert orjson.loads(body)["kind"] in ("APIGroupList", "APIGroup")


# -- service account issuer discovery: kubernetes pkg/routes/openidmetadata.go -----------

async def _service_account_token(client: Client, name: str) -> str:
    url = client.cluster.url + "/api/v1/namespaces/default/serviceaccounts"
    auth = {"Authorization": f"Bearer {client.cluster.token}"}
    async with client.session.post(url, json={"metadata": {"name": name}}, headers=auth,
                                   ssl=client.ssl) as resp:
        assert resp.status == 201, await resp.text()
    async with client.session.post(f"{url}/{name}/token", headers=auth, ssl=client.ssl,
                                   json={"apiVersion": "authentication.k8s.io/v1",
                                         "kind": "TokenRequest", "spec": {}}) as resp:
        assert resp.status == 201, await resp.text()
        token: str = (await resp.json())["status"]["token"]
    return token


def _b64decode(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


async def test_issuer_discovery_documents_verify_the_tokens_the_server_issues(
        client: Client) -> None:
    """pkg/serviceaccount/openidmetadata.go: the discovery document (issuer, ``jwks_uri``
    from the external address, the fixed response and subject types, the keys'
    algorithms) and the JWKS whose key, named by ``keyIDFromPublicKey`` (jwt.go) as the
    token's ``kid`` header, verifies a token from ``serviceaccounts/<name>/token``; a
    service account reads both (bootstrap policy's ``system:service-account-issuer-discovery``
    is bound to ``system:serviceaccounts``); both are ``public, max-age=3600``."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    token = await _service_account_token(client, "issuer-reader")
    sa_auth = {"Authorization": f"Bearer {token}"}
    status, headers, body = await client.call("GET", "/.well-known/openid-configuration",
                                              auth=False, headers=sa_auth)
    assert status == 200, body
    assert headers["Content-Type"] == "application/json"
    assert headers.getall("Cache-Control") == ["public, max-age=3600"]
    assert list(orjson.loads(body).items()) == [
        ("issuer", "https://kubernetes.default.svc.cluster.local"),
        ("jwks_uri", client.cluster.url + "/openid/v1/jwks"),
        ("response_types_supported", ["id_token"]),
        ("subject_types_supported", ["public"]),
        ("id_token_signing_alg_values_supported", ["ES256"])]

    status, headers, body = await client.call("GET", "/openid/v1/jwks", auth=False,
                                              headers=sa_auth)
    assert status == 200, body
    assert headers["Content-Type"] == "application/jwk-set+json"
    assert headers.getall("Cache-Control") == ["public, max-age=3600"]
    (key,) = orjson.loads(body)["keys"]
    assert list(key) == ["use", "kty", "kid", "crv", "alg", "x", "y"]
    assert (key["use"], key["kty"], key["crv"], key["alg"]) == ("sig", "EC", "P-256", "ES256")

    head, payload, signature = token.split(".")
    assert orjson.loads(_b64decode(head)) == {"alg": "ES256", "kid": key["kid"]}
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(_b64decode(key["x"]), "big"), int.from_bytes(_b64decode(key["y"]), "big"),
        ec.SECP256R1()).public_key()
    raw = _b64decode(signature)
    public.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"),
                                       int.from_bytes(raw[32:], "big")),
                  f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))


async def test_issuer_discovery_routes_are_get_only_and_take_a_trailing_slash(
        client: Client) -> None:
    status, _, body = await client.call("POST", "/openid/v1/jwks")
    assert status == 405 and orjson.loads(body)["reason"] == "MethodNotAllowed"
    status, headers, _ = await client.call("GET", "/.well-known/openid-configuration/")
    assert status == 200 and headers["Content-Type"] == "application/json"


async def test_api_versions_name_the_server_address(client: Client) -> None:
    """discovery's ``serverAddressByClientCIDRs``: the generic server's ExternalAddress
    (advertise address and secure port) for every client CIDR."""
    status, _, body = await client.call("GET", "/api")
    assert status == 200
    assert orjson.loads(body)["serverAddressByClientCIDRs"] == [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": client.cluster.url.split("//", 1)[1]}]


# -- discovery negotiation and aggregated caching -----------------------------------------

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList"


@pytest.mark.parametrize("path", ["/api", "/apis"])
async def test_aggregated_discovery_is_public_with_one_etag_for_both_versions(
        client: Client, path: str) -> None:
    """k8s.io/apiserver pkg/endpoints/discovery/aggregated/etag.go ``ServeHTTPWithETag``:
    ETag, ``Vary: Accept`` and ``Cache-Control: public`` on the answer and its 304;
    handler.go ``calculateResponse`` hashes the v2 list once, the v2beta1 conversion is
    served under the same ETag."""
    status, headers, _ = await client.call("GET", path,
                                           headers={"Accept": AGGREGATED.format("v2")})
    assert status == 200
    assert headers.getall("Cache-Control") == ["public"] and headers["Vary"] == "Accept"
    etag = headers["Etag"]
    status, headers, _ = await client.call("GET", path,
                                           headers={"Accept": AGGREGATED.format("v2beta1")})
    assert status == 200 and headers["Etag"] == etag
    status, headers, body = await client.call(
        "GET", path, headers={"Accept": AGGREGATED.format("v2"), "If-None-Match": etag})
    assert (status, body) == (304, b"")
    assert headers.getall("Cache-Control") == ["public"] and headers["Vary"] == "Accept"
    assert headers["Etag"] == etag


@pytest.mark.parametrize(("path", "accept"), [
    ("/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroup"),
    ("/api", "application/json;as=Table;g=meta.k8s.io;v=v1"),
    ("/apis", "text/html"),
    ("/api/v1", AGGREGATED.format("v2")),
    ("/apis/apps", "application/json;as=Table;g=meta.k8s.io;v=v1"),
    ("/apis/apps/v1", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
])
async def test_discovery_refuses_conversions_it_does_not_offer(client: Client, path: str,
                                                              accept: str) -> None:
    """aggregated/negotiation.go ``DiscoveryEndpointRestrictions`` on the roots (only an
    apidiscovery ``APIGroupDiscoveryList``), ``DefaultEndpointRestrictions`` on the legacy
    documents (no ``as=``): with no clause left, ``WriteObjectNegotiated`` answers 406."""
    status, _, body = await client.call("GET", path, headers={"Accept": accept})
    assert status == 406
    assert orjson.loads(body)["message"] == (
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf")


@pytest.mark.parametrize("path", ["/apis", "/apis/apps", "/apis/apps/v1", "/api/v1"])
async def test_legacy_discovery_documents_are_served_in_yaml(client: Client,
                                                             path: str) -> None:
    """The legacy documents are written by ``WriteObjectNegotiated``: YAML when asked."""
    import yaml

    status, headers, body = await client.call("GET", path,
                                              headers={"Accept": "application/yaml"})
    assert status == 200
    assert headers["Content-Type"] == "application/yaml"
    assert yaml.safe_load(body)["kind"] in ("APIGroupList", "APIGroup", "APIResourceList")


async def test_root_lists_every_path_the_server_routes(client: Client) -> None:
    """routes/index.go ``IndexLister`` over ``ListedPathProviders``: the union of the
    chain's listed paths, sorted; each listed path is one the server answers."""
    status, _, body = await client.call("GET", "/")
    assert status == 200
    paths = orjson.loads(body)["paths"]
    assert paths == sorted(set(paths))
    for expected in ("/.well-known/openid-configuration", "/apis/", "/apis/apps/v1",
                     "/healthz/ping", "/livez/poststarthook/rbac/bootstrap-roles",
                     "/openapi/v2", "/openapi/v3/", "/openid/v1/jwks", "/readyz/shutdown"):
        assert expected in paths
    for path in paths:
        if path.endswith("/") and path != "/apis/":
            continue  # a prefix (/openapi/v3/) names no document of its own
        status, _, _ = await client.call("GET", path)
        assert status == 200, path


# -- kubectl 1.32 over discovery ---------------------------------------------------------

API_VERSIONS_1_32 = """admissionregistration.k8s.io/v1
apiextensions.k8s.io/v1
apiregistration.k8s.io/v1
apps/v1
authentication.k8s.io/v1
authorization.k8s.io/v1
autoscaling/v1
autoscaling/v2
batch/v1
certificates.k8s.io/v1
coordination.k8s.io/v1
discovery.k8s.io/v1
events.k8s.io/v1
flowcontrol.apiserver.k8s.io/v1
networking.k8s.io/v1
node.k8s.io/v1
policy/v1
rbac.authorization.k8s.io/v1
scheduling.k8s.io/v1
storage.k8s.io/v1
v1
"""


async def test_kubectl_reads_discovery_and_issuer_metadata(client: Client) -> None:
    """``kubectl api-versions`` lists the group-versions a default 1.32 kube-apiserver
    serves (pkg/controlplane/apiserver/options and pkg/controlplane's default resource
    config: no beta or alpha API on by default, flowcontrol v1beta3 gone in 1.32), and
    ``kubectl get --raw`` reads the issuer's discovery document."""
    assert await client.kubectl("api-versions") == API_VERSIONS_1_32
    raw = await client.kubectl("get", "--raw", "/.well-known/openid-configuration")
    assert orjson.loads(raw)["jwks_uri"] == client.cluster.url + "/openid/v1/jwks"


# -- /metrics ----------------------------------------------------------------------------

async def test_metrics_count_requests_by_reported_verb_and_need_a_grant(
        client: Client) -> None:
    """k8s.io/apiserver pkg/endpoints/metrics/metrics.go: ``apiserver_request_total`` by
    ``cleanVerb`` (LIST for a collection GET), scope and code; ``apiserver_storage_objects``
    per ``resource.group``; ``/metrics`` is a non-resource URL: 401 without credentials,
    403 for a service account, which RBAC's ``system:monitoring`` does not cover."""
    from prometheus_client.parser import text_string_to_metric_families

    status, _, _ = await client.call("GET", "/api/v1/namespaces/default/configmaps")
    assert status == 200
    status, headers, body = await client.call("GET", "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    lists = [s for s in families["apiserver_request"].samples
             if s.name == "apiserver_request_total" and s.labels["resource"] == "configmaps"
             and s.labels["verb"] == "LIST"]
    assert [(s.labels["scope"], s.labels["code"], s.labels["version"]) for s in lists] == [
        ("namespace", "200", "v1")]
    objects = {s.labels["resource"]: s.value
               for s in families["apiserver_storage_objects"].samples}
    assert objects["namespaces"] >= 4 and "clusterroles.rbac.authorization.k8s.io" in objects

    status, _, _ = await client.call("GET", "/metrics", auth=False)
    assert status == 401
    token = await _service_account_token(client, "metrics-reader")
    status, _, body = await client.call("GET", "/metrics", auth=False,
                                        headers={"Authorization": f"Bearer {token}"})
    assert status == 403
    assert orjson.loads(body)["message"] == (
        'forbidden: User "system:serviceaccount:default:metrics-reader" cannot get path '
        '"/metrics"')
