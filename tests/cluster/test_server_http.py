"""The HTTP front: TLS, authentication, health, limits, paths and error shapes."""

from __future__ import annotations

import ssl

import aiohttp
import pytest

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API

CM = "/api/v1/namespaces/default/configmaps"


async def test_requests_without_the_token_are_unauthorized(cluster: RunningCluster) -> None:
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    async with aiohttp.ClientSession() as s, s.get(cluster.url + CM, ssl=ctx) as resp:
        assert resp.status == 401
        body = await resp.json()
        assert body["kind"] == "Status" and body["reason"] == "Unauthorized"


async def test_wrong_token_is_unauthorized(cluster: RunningCluster) -> None:
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    headers = {"Authorization": "Bearer not-the-token"}
    async with aiohttp.ClientSession(headers=headers) as s, s.get(cluster.url + CM,
                                                                  ssl=ctx) as resp:
        assert resp.status == 401


async def test_readyz_answers_without_credentials_over_tls(cluster: RunningCluster) -> None:
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    async with aiohttp.ClientSession() as s, s.get(cluster.url + "/readyz", ssl=ctx) as resp:
        assert resp.status == 200
        assert await resp.text() == "ok"


async def test_server_listens_on_loopback_only(cluster: RunningCluster) -> None:
    assert cluster.url.startswith("https://127.0.0.1:")


async def test_plain_http_is_refused(cluster: RunningCluster) -> None:
    url = cluster.url.replace("https://", "http://")
    async with aiohttp.ClientSession() as s:
        with pytest.raises(aiohttp.ClientError):
            async with s.get(url + "/readyz") as resp:
                assert resp.status != 200


async def test_unknown_paths_get_the_apiserver_answers(api: API) -> None:
    status, body = await api.get("/no-such-path")
    assert (status, body) == (404, "404 page not found\n")
    status, body = await api.get("/apis/no.such.group/v1")
    assert status == 404
    status, body = await api.get("/api/v1/namespaces/default/nosuchresources")
    assert status == 404 and body["reason"] == "NotFound"


async def test_body_over_3_mib_is_413_and_stores_nothing(api: API) -> None:
    big = {"metadata": {"name": "big"}, "data": {"k": "x" * (3 * 1024 * 1024 + 10)}}
    status, body = await api.post(CM, big)
    assert status == 413 and body["reason"] == "RequestEntityTooLarge"
    # handlers/rest.go limitedReadBody through errors.NewRequestEntityTooLargeError
    assert body["message"] == "Request entity too large: limit is 3145728"
    status, _ = await api.get(CM + "/big")
    assert status == 404


async def test_malformed_json_is_400(api: API) -> None:
    status, body = await api.request("POST", CM, raw=b'{"metadata": {"name": "x"')
    assert status == 400 and body["reason"] == "BadRequest"


async def test_yaml_bodies_and_yaml_answers(api: API) -> None:
    raw = b"metadata:\n  name: fromyaml\ndata:\n  a: '1'\n"
    status, _ = await api.request("POST", CM, raw=raw, content_type="application/yaml")
    assert status == 201
    status, text = await api.get(CM + "/fromyaml", headers={"Accept": "application/yaml"})
    assert status == 200 and "name: fromyaml" in text


async def test_protobuf_only_accept_is_answered_in_protobuf(api: API) -> None:
    """A built-in kind's list is encoded by the legacy codecs' protobuf serializer."""
    from setpoint.machinery.protobuf import decode

    async with api.session.get(api.cluster.url + CM, ssl=api.ssl,
                               headers={"Accept": "application/vnd.kubernetes.protobuf"}) as r:
        assert (r.status, r.headers["Content-Type"]) == (
            200, "application/vnd.kubernetes.protobuf")
        listed = decode(await r.read())
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"


async def test_create_in_missing_namespace_is_404_namespace(api: API) -> None:
    status, body = await api.post("/api/v1/namespaces/nope/configmaps",
                                  {"metadata": {"name": "a"}})
    assert status == 404
    assert body["details"] == {"name": "nope", "kind": "namespaces"}


def test_a_repeated_header_reads_as_its_first_value() -> None:
    """Go's ``Header.Get`` answers the first value of a name sent more than once
    (net/http/header.go, textproto.MIMEHeader.Get), and ``Values`` all of them in order;
    the names keep the order they first came in."""
    from setpoint.cluster.endpoints.http import Request

    async def receive() -> dict[str, object]:
        return {"type": "http.disconnect"}

    scope = {"type": "http", "method": "GET", "path": "/api", "query_string": b"",
             "headers": [(b"accept", b"application/yaml"), (b"user-agent", b"u"),
                         (b"accept", b"application/json"), (b"x-b", b"1")]}
    request = Request(scope, receive)
    assert request.headers == {"accept": "application/yaml", "user-agent": "u", "x-b": "1"}
    assert list(request.headers) == ["accept", "user-agent", "x-b"]
    assert request.header_values("accept") == ["application/yaml", "application/json"]
    single = Request({**scope, "headers": scope["headers"][1:]}, receive)
    assert single.headers == {"user-agent": "u", "accept": "application/json", "x-b": "1"}
