"""A successful answer that is no JSON object (a proxy's HTML page, a foreign server, a JSON
array) fails as a :class:`MalformedAnswerError` that quotes it, in discovery and in a read,
never as orjson's or Python's own exception. client-go fails such an answer in its decoder
("couldn't get version/kind; json parse error", k8s.io/apimachinery
pkg/runtime/serializer/json/json.go ``Decode``)."""

from __future__ import annotations

import orjson
import pytest

from setpoint.client import Client, ClientError, Kind, MalformedAnswerError
from setpoint.client.config import ClusterConfig
from tests.client.stubserver import stub_server

RESOURCES = orjson.dumps({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": "configmaps", "namespaced": True, "kind": "ConfigMap", "verbs": ["get"]}]})


def _answer(body: bytes, content_type: bytes = b"application/json") -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


async def _get_through(answers: dict[bytes, bytes]) -> None:
    """A ConfigMap read from a server answering each path with ``answers[path]``."""
    async def respond(head: bytes) -> bytes:
        return answers[head.split(b" ", 2)[1].split(b"?")[0]]

    async with stub_server(respond) as url, Client(ClusterConfig(server=url)) as client:
        await client.get(Kind("v1", "ConfigMap"), "c", namespace="default")


@pytest.mark.parametrize(("body", "content_type", "quoted"), [
    (b"<html>portal</html>", b"text/html", "b'<html>portal</html>'"),
    (b"[]", b"application/json", "no JSON object: b'[]'"),
    (b'{"kind": "APIRes', b"application/json", "b'{\"kind\": \"APIRes'"),
])
async def test_a_discovery_answer_that_is_no_json_object_is_a_malformed_answer(
        body: bytes, content_type: bytes, quoted: str) -> None:
    with pytest.raises(MalformedAnswerError) as caught:
        await _get_through({b"/api/v1": _answer(body, content_type)})
    assert quoted in str(caught.value)
    assert isinstance(caught.value, ClientError)


@pytest.mark.parametrize("body", [b"hello", b"[1, 2]", b'"text"'])
async def test_an_object_answer_that_is_no_json_object_is_a_malformed_answer(
        body: bytes) -> None:
    with pytest.raises(MalformedAnswerError) as caught:
        await _get_through({b"/api/v1": _answer(RESOURCES),
                            b"/api/v1/namespaces/default/configmaps/c": _answer(body)})
    assert repr(body) in str(caught.value)
