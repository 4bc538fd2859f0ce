"""The newline after a compact JSON answer, as kube-apiserver 1.32 writes it.

k8s.io/apimachinery pkg/runtime/serializer/json/json.go ``doEncode``: the compact serializer
writes ``json.NewEncoder(w).Encode(obj)``, and ``Encoder.Encode`` ends the value with "\\n";
the pretty one writes ``json.MarshalIndent`` (no newline). Every answer of
``responsewriters.WriteObjectNegotiated`` (handlers/responsewriters/writers.go
``SerializeObject``) is written so: an object, a write's answer, a list (1.32 has no
streaming collection encoder: apiserver pkg/features/kube_features.go has no such gate), a
Table, a Status error (``ErrorNegotiated``), discovery (aggregated/etag.go
``ServeHTTPWithETag``, its ETag still the hash of ``json.Marshal``), each watch event
(handlers/watch.go: the JSON framer writes the encoder's lines as they are).
``WriteRawJSON`` (``/version``) writes ``MarshalIndent``'s bytes, no newline.
Content-Length counts the newline: it is part of the body.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from setpoint.cluster.endpoints.listencoding import LIST_CHUNK_ITEMS
from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def _raw(api: API, path: str, headers: dict[str, str] | None = None,
               method: str = "GET", body: Any = None,
               session: aiohttp.ClientSession | None = None) -> tuple[int, bytes]:
    """(status, body bytes) of a request, its Content-Length (when given) checked."""
    data = None if body is None else json.dumps(body).encode()
    async with (session or api.session).request(
            method, api.cluster.url + path, data=data, ssl=api.ssl,
            headers={"Content-Type": "application/json", **(headers or {})}) as resp:
        raw = await resp.read()
        length = resp.headers.get("Content-Length")
        assert length is None or int(length) == len(raw)
        return resp.status, raw


def _encoded(body: bytes) -> bool:
    """Whether ``body`` is what Encoder.Encode writes: one compact value, then "\\n"."""
    return body.endswith(b"}\n") and b"\n" not in body[:-1] and json.loads(body) is not None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def config_map(module_api: API) -> str:
    status, _ = await _raw(module_api, NS, method="POST",
                           body={"metadata": {"name": "newline", "labels": {"nl": "y"}}})
    assert status == 201
    return f"{NS}/newline"


async def test_an_object_get_ends_with_the_newline_on_every_path(module_api: API,
                                                                 config_map: str) -> None:
    """The first GET of a connection goes through the chain (the stored bytes, server.py);
    the next ones of the same shape are answered from what the connection remembered
    (storedgets.py) and by the HTTP layer at once (atonce.py): each answer the same bytes."""
    async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1),
            headers={"Authorization": f"Bearer {module_api.cluster.token}"}) as one:
        answers = [await _raw(module_api, config_map, session=one) for _ in range(4)]
    assert {status for status, _ in answers} == {200}
    assert len({body for _, body in answers}) == 1
    assert _encoded(answers[0][1])


async def test_a_presented_object_ends_with_the_newline(module_api: API) -> None:
    """An object the server presents (decoded and encoded again) rather than serving its
    stored bytes: a Namespace (never from the stored-bytes memo) and a Table of one row."""
    status, body = await _raw(module_api, "/api/v1/namespaces/default")
    assert status == 200 and _encoded(body)
    status, body = await _raw(module_api, "/api/v1/namespaces/default", {"Accept": TABLE})
    assert status == 200 and _encoded(body) and json.loads(body)["kind"] == "Table"


async def test_writes_end_with_the_newline(module_api: API) -> None:
    status, body = await _raw(module_api, NS, method="POST",
                              body={"metadata": {"name": "newline-write"}})
    assert status == 201 and _encoded(body)
    written = json.loads(body)
    status, body = await _raw(module_api, f"{NS}/newline-write", method="PUT",
                              body={**written, "data": {"k": "v"}})
    assert status == 200 and _encoded(body)
    status, body = await _raw(module_api, f"{NS}/newline-write", method="PATCH",
                              body={"data": {"k": "w"}},
                              headers={"Content-Type": "application/merge-patch+json"})
    assert status == 200 and _encoded(body)
    status, body = await _raw(module_api, f"{NS}/newline-write", method="DELETE")
    assert status == 200 and _encoded(body)


async def test_lists_and_tables_end_with_the_newline(module_api: API, config_map: str) -> None:
    for path in (f"{NS}?labelSelector=nl%3Dy", f"{NS}?labelSelector=nl%3Dnone",
                 "/api/v1/namespaces/default/pods?limit=1"):
        status, body = await _raw(module_api, path)
        assert status == 200 and _encoded(body), path
        status, body = await _raw(module_api, path, {"Accept": TABLE})
        assert status == 200 and _encoded(body), path
        assert json.loads(body)["kind"] == "Table"
    status, body = await _raw(module_api, f"{NS}?labelSelector=nl%3Dy",
                              {"Accept": "application/json;as=PartialObjectMetadataList;"
                                         "v=v1;g=meta.k8s.io"})
    assert status == 200 and _encoded(body)


async def test_status_errors_end_with_the_newline(module_api: API, config_map: str) -> None:
    """ErrorNegotiated: a 404, a 409, a 422 and an authentication's 401 alike."""
    answers = [
        await _raw(module_api, f"{NS}/missing"),
        await _raw(module_api, NS, method="POST", body={"metadata": {"name": "newline"}}),
        await _raw(module_api, NS, method="POST", body={"metadata": {"name": "Bad_Name"}}),
        await _raw(module_api, f"{NS}/newline", {"Authorization": "Bearer wrong"}),
    ]
    assert [status for status, _ in answers] == [404, 409, 422, 401]
    for _, body in answers:
        assert _encoded(body) and json.loads(body)["kind"] == "Status"


async def test_discovery_ends_with_the_newline(module_api: API) -> None:
    """The legacy documents and the aggregated ones (its ETag unchanged by the newline:
    etag.go hashes json.Marshal's bytes, so a 304 still answers it)."""
    for path in ("/api", "/apis", "/api/v1", "/apis/apps/v1"):
        status, body = await _raw(module_api, path)
        assert status == 200 and _encoded(body), path
    aggregated = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}
    async with module_api.session.get(module_api.cluster.url + "/apis", headers=aggregated,
                                      ssl=module_api.ssl) as resp:
        body, etag = await resp.read(), resp.headers["ETag"]
    assert _encoded(body)
    status, _ = await _raw(module_api, "/apis", {**aggregated, "If-None-Match": etag})
    assert status == 304


async def test_version_and_pretty_answers_have_no_newline(module_api: API,
                                                          config_map: str) -> None:
    """WriteRawJSON and the pretty serializer write json.MarshalIndent's bytes."""
    for path in ("/version", f"{config_map}?pretty=true", f"{NS}/missing?pretty=true"):
        _, body = await _raw(module_api, path)
        assert body.endswith(b"\n}"), path


async def test_yaml_ends_with_one_newline(module_api: API, config_map: str) -> None:
    """yaml.JSONToYAML's document ends its last line; no second newline follows."""
    _, body = await _raw(module_api, config_map, {"Accept": "application/yaml"})
    assert body.endswith(b"\n") and not body.endswith(b"\n\n")


async def test_each_watch_event_is_a_line(module_api: API, config_map: str) -> None:
    async with module_api.session.get(
            f"{module_api.cluster.url}{NS}?watch=true&fieldSelector=metadata.name%3Dnewline",
            ssl=module_api.ssl) as resp:
        line = await resp.content.readline()
    assert _encoded(line) and json.loads(line)["type"] == "ADDED"


async def test_a_list_written_in_pieces_ends_with_the_newline(module_api: API) -> None:
    """A LIST of more items than a piece holds (listencoding.LIST_CHUNK_ITEMS) is streamed
    without a Content-Length; its last piece ends the document and the newline."""
    count = LIST_CHUNK_ITEMS + 1

    async def create(i: int) -> None:
        status, _ = await _raw(module_api, "/api/v1/namespaces/kube-public/configmaps",
                               method="POST", body={"metadata": {
                                   "name": f"piece-{i}", "labels": {"piece": "y"}}})
        assert status == 201

    for start in range(0, count, 50):
        await asyncio.gather(*(create(i) for i in range(start, min(start + 50, count))))
    status, body = await _raw(module_api,
                              "/api/v1/namespaces/kube-public/configmaps?labelSelector=piece")
    assert status == 200 and _encoded(body)
    assert len(json.loads(body)["items"]) == count
