"""Answers gzipped as kube-apiserver 1.32 gzips them (APIResponseCompression, beta, on).

Raw HTTP on loopback with aiohttp's decompression off, so that the bytes on the wire and
their headers are seen; every gzipped body is decompressed and compared with the same
answer asked for without ``Accept-Encoding``. Then real kubectl (whose Go transport always
asks for gzip) and the SDK's client read a large list.

Sources: k8s.io/apiserver pkg/endpoints/handlers/responsewriters/writers.go
(``SerializeObject``, ``deferredResponseWriter.Write``, ``negotiateContentEncoding``,
``defaultGzipThresholdBytes``), pkg/endpoints/handlers/watch.go (``WatchServer.HandleHTTP``
writes its frames itself), k8s.io/kube-openapi pkg/handler/handler.go
(``RegisterOpenAPIVersionedService`` wraps ``/openapi/v2`` in NYTimes/gziphandler
``GzipHandler``; pkg/handler3 does not wrap ``/openapi/v3``), prometheus/client_golang
v1.19.1 prometheus/promhttp/http.go (``HandlerForTransactional``, ``gzipAccepted``).
"""

from __future__ import annotations

import asyncio
import gzip
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio

from setpoint.client import Client, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from tests.conftest import kubectl_path

pytestmark = pytest.mark.asyncio(loop_scope="module")

THRESHOLD = 128 * 1024  # responsewriters defaultGzipThresholdBytes
NS = "many"
COUNT = 600  # more than a streamed LIST's first chunk (listencoding.LIST_CHUNK_ITEMS)


class Raw:
    def __init__(self, cluster: RunningCluster, session: aiohttp.ClientSession,
                 workdir: Path) -> None:
        self.cluster = cluster
        self.session = session
        self.workdir = workdir
        self.ssl = ssl.create_default_context(cafile=str(cluster.ca_file))

    async def call(self, method: str, path: str, *, body: Any = None,
                   headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
        """(status, headers, the body's bytes as sent). Without an Accept-Encoding in
        ``headers`` none is sent (aiohttp would add its own)."""
        hdrs = {"Authorization": f"Bearer {self.cluster.token}",
                "Accept-Encoding": "", **(headers or {})}
        if not hdrs["Accept-Encoding"]:
            del hdrs["Accept-Encoding"]
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        data = None if body is None else orjson.dumps(body)
        async with self.session.request(method, self.cluster.url + path, data=data,
                                        headers=hdrs, ssl=self.ssl) as resp:
            return resp.status, resp.headers, await resp.read()

    async def kubectl(self, *args: str) -> str:
        cache = tempfile.mkdtemp(dir=self.workdir)
        proc = await asyncio.create_subprocess_exec(
            kubectl_path(), "--kubeconfig", str(self.workdir / "kubeconfig"), "--cache-dir",
            cache, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        return out.decode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def raw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Raw]:
    workdir = tmp_path_factory.mktemp("gzip")
    async with serve(kubeconfig=workdir / "kubeconfig") as cluster, \
            aiohttp.ClientSession(auto_decompress=False,
                                  skip_auto_headers=("Accept-Encoding",)) as session:
        client = Raw(cluster, session, workdir)
        status, _, _ = await client.call("POST", "/api/v1/namespaces", body={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        assert status == 201
        for start in range(0, COUNT, 50):
            created = await asyncio.gather(*(client.call(
                "POST", f"/api/v1/namespaces/{NS}/configmaps",
                body={"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"cm-{i:04d}", "labels": {"size": "small"}},
                      "data": {"v": f"{i}" * 300}})
                for i in range(start, min(start + 50, COUNT))))
            assert {status for status, _, _ in created} == {201}
        await _sized_configmap(client, "negotiated", THRESHOLD + 1)
        yield client


async def _pinned_list_path(raw: Raw) -> str:
    """The namespace's LIST at one resourceVersion, so that two reads are the same bytes."""
    _, _, body = await raw.call("GET", f"/api/v1/namespaces/{NS}/configmaps?limit=1")
    rv = orjson.loads(body)["metadata"]["resourceVersion"]
    return f"/api/v1/namespaces/{NS}/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact"


async def test_a_large_streamed_list_is_gzipped_and_decodes_to_the_plain_answer(
        raw: Raw) -> None:
    """``deferredResponseWriter.Write``: ``Content-Encoding: gzip`` and ``Vary:
    Accept-Encoding`` when Accept-Encoding names gzip and the encoded list is over 128 KiB;
    the bytes decode to exactly the answer sent to a client that asks for no encoding
    (which gets neither header). This list is the server's streamed one (more objects than
    a chunk), compressed as it is written."""
    path = await _pinned_list_path(raw)
    status, plain_headers, plain = await raw.call("GET", path)
    assert status == 200 and len(plain) > THRESHOLD
    assert "Content-Encoding" not in plain_headers and "Vary" not in plain_headers
    assert len(orjson.loads(plain)["items"]) > COUNT  # (kube-root-ca.crt and others)
    status, headers, body = await raw.call("GET", path, headers={"Accept-Encoding": "gzip"})
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert headers.getall("Vary") == ["Accept-Encoding"]
    assert headers["Content-Type"] == "application/json"
    assert len(body) < len(plain)
    assert gzip.decompress(body) == plain


async def test_a_list_page_under_the_threshold_is_not_gzipped(raw: Raw) -> None:
    """``len(p) > defaultGzipThresholdBytes`` decides: a small page is sent as it is, even
    to a client asking for gzip, with no Vary. (Only the small ConfigMaps: the other tests
    add some of 128 KiB, which sort first.)"""
    status, headers, body = await raw.call(
        "GET", f"/api/v1/namespaces/{NS}/configmaps?limit=20&labelSelector=size%3Dsmall",
        headers={"Accept-Encoding": "gzip"})
    assert status == 200 and len(body) < THRESHOLD
    assert "Content-Encoding" not in headers and "Vary" not in headers
    assert len(orjson.loads(body)["items"]) == 20


async def _sized_configmap(raw: Raw, name: str, size: int) -> bytes:
    """A ConfigMap whose GET answer is exactly ``size`` bytes (its data grown or shrunk
    until it is)."""
    path = f"/api/v1/namespaces/{NS}/configmaps/{name}"
    status, _, body = await raw.call("POST", f"/api/v1/namespaces/{NS}/configmaps", body={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"v": "a" * (size - 400)}})
    assert status == 201
    for _ in range(5):
        _, _, body = await raw.call("GET", path)
        if len(body) == size:
            return body
        obj = orjson.loads(body)
        obj["data"]["v"] = "a" * (len(obj["data"]["v"]) + size - len(body))
        status, _, _ = await raw.call("PUT", path, body=obj)
        assert status == 200
    raise AssertionError(f"could not size {name} to {size} bytes")


async def test_the_threshold_is_strictly_more_than_128_kib(raw: Raw) -> None:
    """``case w.contentEncoding == "gzip" && len(p) > defaultGzipThresholdBytes``: an
    object of exactly 131072 bytes is sent plain, one of 131073 gzipped (a single object's
    GET, the stored bytes' path included)."""
    at = await _sized_configmap(raw, "at-threshold", THRESHOLD)
    over = await _sized_configmap(raw, "over-threshold", THRESHOLD + 1)
    for name, plain, gzipped in (("at-threshold", at, False), ("over-threshold", over, True)):
        for _ in range(2):  # the second GET is answered from the remembered decisions
            status, headers, body = await raw.call(
                "GET", f"/api/v1/namespaces/{NS}/configmaps/{name}",
                headers={"Accept-Encoding": "gzip"})
            assert status == 200
            assert ("Content-Encoding" in headers) is gzipped, name
            assert (gzip.decompress(body) if gzipped else body) == plain


@pytest.mark.parametrize(("accept_encoding", "gzipped"), [
    ("gzip", True), ("gzip, deflate", True), ("deflate,gzip", True), ("br , gzip ,x", True),
    ("gzip;q=1.0", False), ("GZIP", False), ("x-gzip", False), ("*", False),
    ("deflate", False), ("gzip;q=0", False)])
async def test_accept_encoding_is_read_as_negotiate_content_encoding_reads_it(
        raw: Raw, accept_encoding: str, gzipped: bool) -> None:
    """``negotiateContentEncoding``: the header split at commas, each token trimmed and
    compared with ``"gzip"`` exactly; no quality values, no case folding, no ``*``."""
    status, headers, body = await raw.call(
        "GET", f"/api/v1/namespaces/{NS}/configmaps/negotiated",
        headers={"Accept-Encoding": accept_encoding})
    assert status == 200
    assert (headers.get("Content-Encoding") == "gzip") is gzipped
    assert orjson.loads(gzip.decompress(body) if gzipped else body)["metadata"]["name"] == \
        "negotiated"


async def test_a_table_list_is_gzipped(raw: Raw) -> None:
    """A Table is written by ``transformResponseObject`` through ``WriteObjectNegotiated``:
    gzipped when large, as any other object."""
    status, headers, body = await raw.call(
        "GET", f"/api/v1/namespaces/{NS}/configmaps",
        headers={"Accept-Encoding": "gzip",
                 "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    table = orjson.loads(gzip.decompress(body))
    assert table["kind"] == "Table" and len(table["rows"]) >= COUNT


async def test_a_watch_is_never_gzipped(raw: Raw) -> None:
    """``WatchServer.HandleHTTP`` writes each frame to the ResponseWriter itself, outside
    ``SerializeObject``: an initial event larger than 128 KiB is sent plain to a client
    asking for gzip."""
    await _sized_configmap(raw, "watched", THRESHOLD + 1000)
    hdrs = {"Authorization": f"Bearer {raw.cluster.token}", "Accept-Encoding": "gzip"}
    url = (raw.cluster.url + f"/api/v1/namespaces/{NS}/configmaps?watch=1"
           "&fieldSelector=metadata.name%3Dwatched&resourceVersion=0")
    async with raw.session.get(url, headers=hdrs, ssl=raw.ssl) as resp:
        assert resp.status == 200
        assert "Content-Encoding" not in resp.headers
        line = await asyncio.wait_for(resp.content.readline(), 30)
    event = orjson.loads(line)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "watched"


async def test_a_status_error_is_written_by_the_same_writer(raw: Raw) -> None:
    """An error goes through ``ErrorNegotiated`` → ``SerializeObject`` too: a Status is far
    under the threshold, so it is sent plain whatever the client accepts."""
    status, headers, body = await raw.call(
        "GET", f"/api/v1/namespaces/{NS}/configmaps/missing",
        headers={"Accept-Encoding": "gzip"})
    assert status == 404
    assert "Content-Encoding" not in headers
    assert orjson.loads(body)["reason"] == "NotFound"


async def test_openapi_v2_is_gzipped_by_gziphandler_and_v3_is_not(raw: Raw) -> None:
    """kube-openapi wraps ``/openapi/v2`` in gziphandler v1.1.1: ``Vary: Accept-Encoding``
    on every answer (added before the handler's ``Vary: Accept``), gzip when the quality
    ``parseEncodings`` gives ``gzip`` (case-folded) is above 0. ``/openapi/v3`` documents
    (pkg/handler3) are never gzipped."""
    status, headers, plain = await raw.call("GET", "/openapi/v2")
    assert status == 200 and "Content-Encoding" not in headers
    assert headers.getall("Vary") == ["Accept-Encoding", "Accept"]
    for accept_encoding in ("gzip", "GZip;q=0.5", "deflate, gzip;q=1"):
        status, headers, body = await raw.call(
            "GET", "/openapi/v2", headers={"Accept-Encoding": accept_encoding})
        assert status == 200
        assert headers["Content-Encoding"] == "gzip", accept_encoding
        assert gzip.decompress(body) == plain
    status, headers, body = await raw.call("GET", "/openapi/v2",
                                           headers={"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in headers and body == plain
    _, _, index = await raw.call("GET", "/openapi/v3")
    url = orjson.loads(index)["paths"]["api/v1"]["serverRelativeURL"]
    status, headers, body = await raw.call("GET", url, headers={"Accept-Encoding": "gzip"})
    assert status == 200 and len(body) > THRESHOLD
    assert "Content-Encoding" not in headers
    assert orjson.loads(body)["openapi"].startswith("3.")


@pytest.mark.parametrize(("accept_encoding", "gzipped"), [
    ("gzip", True), ("deflate, gzip", True), ("gzip;q=0", True), (" gzip;q=0.5 ,br", True),
    ("GZIP", False), ("x-gzip", False), ("*", False), ("deflate", False), ("", False)])
async def test_metrics_are_gzipped_by_promhttp_whatever_their_size(
        raw: Raw, accept_encoding: str, gzipped: bool) -> None:
    """``/metrics`` is component-base legacyregistry ``HandlerWithReset`` over
    prometheus/client_golang v1.19.1 promhttp ``HandlerForTransactional`` with
    ``DisableCompression`` false: gzipped whenever ``gzipAccepted`` finds a trimmed token
    ``gzip`` or ``gzip;...`` (a quality of 0 included), with no size threshold, under
    ``Content-Encoding: gzip`` and the text format's Content-Type, and no ``Vary``."""
    status, headers, body = await raw.call("GET", "/metrics",
                                           headers={"Accept-Encoding": accept_encoding})
    assert status == 200
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "Vary" not in headers
    assert (headers.get("Content-Encoding") == "gzip") is gzipped
    text = (gzip.decompress(body) if gzipped else body).decode()
    assert len(text) < THRESHOLD  # gzipped although far under SerializeObject's threshold
    assert "# TYPE apiserver_request_total counter" in text
    assert "kubernetes_build_info{" in text


async def test_kubectl_reads_a_gzipped_list_whole(raw: Raw) -> None:
    """kubectl's Go transport asks for gzip: ``get -o json`` of the large list holds every
    object as the plain answer does, and the Table ``get`` prints a row for each."""
    _, _, plain = await raw.call("GET", f"/api/v1/namespaces/{NS}/configmaps")
    expected = {item["metadata"]["name"]: item["data"] for item in orjson.loads(plain)["items"]}
    listed = orjson.loads(await raw.kubectl("get", "configmaps", "-n", NS, "-o", "json"))
    assert {item["metadata"]["name"]: item["data"] for item in listed["items"]} == expected
    names = [line.split()[0] for line in
             (await raw.kubectl("get", "configmaps", "-n", NS)).splitlines()[1:]]
    assert sorted(names) == sorted(expected)


async def test_the_sdk_client_asks_for_and_decodes_gzip(raw: Raw) -> None:
    """The SDK's transport asks for gzip as client-go's does; its answer is the list a
    client asking for no encoding reads."""
    path = await _pinned_list_path(raw)
    _, _, plain = await raw.call("GET", path)
    async with Client(load_kubeconfig(raw.workdir / "kubeconfig")) as client:
        target, _, query = path.partition("?")
        params = dict(pair.split("=") for pair in query.split("&"))
        assert await client.request("GET", target, params=params) == orjson.loads(plain)
