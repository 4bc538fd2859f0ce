"""Pretty-printed JSON, as kube-apiserver 1.32 writes it.

k8s.io/apiserver pkg/endpoints/handlers/negotiation/negotiate.go: ``NegotiateOutputMediaType``
takes the serializer's ``PrettySerializer`` when the chosen Accept clause has ``pretty=1``
(``acceptMediaTypeOptions``: the value "1" alone) or ``isPrettyPrint`` holds: the ``pretty``
query parameter, when it has a value, by ``strconv.ParseBool`` (a value it refuses is false);
without one, a User-Agent starting "curl", "Wget" or "Mozilla/5.0". Only JSON has a pretty
serializer (apimachinery runtime/serializer/codec_factory.go; the CRD handler's,
customresource_handler.go), and it writes ``json.MarshalIndent(obj, "", "  ")``
(runtime/serializer/json/json.go ``doEncode``): two spaces, ``": "``, empty ``{}``/``[]``
kept, and no newline at the end.
Every answer of ``responsewriters.WriteObjectNegotiated`` (writers.go) takes it, errors
(``ErrorNegotiated``) included; a watch never does (handlers/watch.go: the stream and the
embedded objects use ``NegotiateOutputMediaTypeStream``'s serializer). ``WriteRawJSON``
(``/version``, the root's paths, a Status no Accept clause can take) is always indented.
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


async def _raw(api: API, path: str, headers: dict[str, str] | None = None,
               method: str = "GET", body: Any = None) -> tuple[int, str, bytes]:
    """(status, media type, body bytes) of a request with ``headers`` added."""
    data = None if body is None else json.dumps(body).encode()
    async with api.session.request(method, api.cluster.url + path, data=data,
                                   headers={"Content-Type": "application/json",
                                            **(headers or {})},
                                   ssl=api.ssl) as resp:
        return resp.status, resp.content_type, await resp.read()


def _marshal_indent(compact: bytes) -> bytes:
    """What json.MarshalIndent(v, "", "  ") writes for the value of ``compact`` (Python's
    indent=2 has the same layout: one element a line, ``": "``, ``{}``/``[]`` kept empty)."""
    return json.dumps(json.loads(compact), indent=2, ensure_ascii=False).encode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def config_map(module_api: API) -> str:
    body = {"metadata": {"name": "pretty", "labels": {"a": "b"}},
            "data": {"k": "v", "empty": ""}, "binaryData": {}}
    status, _, _ = await _raw(module_api, NS, method="POST", body=body)
    assert status == 201
    return f"{NS}/pretty"


def _one_line(body: bytes) -> bool:
    return body.startswith(b"{") and b"\n" not in body.rstrip(b"\n")


async def test_compact_json_is_one_line(module_api: API, config_map: str) -> None:
    """The default serializer is ``json.NewEncoder(w).Encode``: the object on one line."""
    _, media, body = await _raw(module_api, config_map)
    assert media == "application/json"
    assert _one_line(body)


@pytest.mark.parametrize("value", ["true", "1", "t", "T", "TRUE", "True"])
async def test_a_true_pretty_parameter_indents(module_api: API, config_map: str,
                                               value: str) -> None:
    """ParseBool's true words: the object indented by two spaces, no trailing newline."""
    _, _, compact = await _raw(module_api, config_map)
    _, media, pretty = await _raw(module_api, f"{config_map}?pretty={value}")
    assert media == "application/json"
    assert pretty == _marshal_indent(compact)
    assert pretty.startswith(b'{\n  "kind": "ConfigMap",\n') and pretty.endswith(b"\n}")


@pytest.mark.parametrize("value", ["false", "0", "F", "yes", "on", "tRUE", "2"])
async def test_any_other_value_is_compact_even_for_curl(module_api: API, config_map: str,
                                                        value: str) -> None:
    """A false word, or one ParseBool refuses (its error drops to false): isPrettyPrint
    answers it without looking at the User-Agent."""
    _, _, body = await _raw(module_api, f"{config_map}?pretty={value}",
                            {"User-Agent": "curl/8.5.0"})
    assert _one_line(body)


@pytest.mark.parametrize(("agent", "pretty"), [
    ("curl/8.5.0", True), ("Wget/1.21.3", True), ("Mozilla/5.0 (X11; Linux x86_64)", True),
    ("curlish", True),  # a prefix is enough
    ("wget/1.21.3", False), ("Curl/8.5.0", False), ("Mozilla/4.0", False),
    ("kubectl/v1.32.0", False),
])
async def test_the_user_agent_decides_without_a_parameter(module_api: API, config_map: str,
                                                          agent: str, pretty: bool) -> None:
    """No ``pretty`` value (absent, or ``pretty=`` empty): browsers, curl and Wget, by a
    case-sensitive prefix, get indented JSON."""
    for path in (config_map, f"{config_map}?pretty=", f"{config_map}?labelSelector=pretty"):
        _, _, compact = await _raw(module_api, path, {"User-Agent": "kubectl/v1.32.0"})
        _, _, body = await _raw(module_api, path, {"User-Agent": agent})
        assert body == (_marshal_indent(compact) if pretty else compact), path


async def test_a_connection_of_curl_gets_every_get_indented(module_api: API,
                                                            config_map: str) -> None:
    """The same named GET twice on one connection (where the server remembers what it
    decided for the first): both indented."""
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector, headers={
            "Authorization": f"Bearer {module_api.cluster.token}",
            "User-Agent": "curl/8.5.0"}) as curl:
        for _ in range(3):
            async with curl.get(module_api.cluster.url + config_map,
                                ssl=module_api.ssl) as resp:
                assert (await resp.read()).startswith(b'{\n  "kind": "ConfigMap"')


@pytest.mark.parametrize(("accept", "pretty"), [
    ("application/json;pretty=1", True),
    ("application/json;pretty=true", False),  # the media type parameter is "1" or nothing
    ("application/yaml;q=0.5, application/json;pretty=1", True),
    ("application/json;pretty=1;q=0.5, application/json", False),  # not the chosen clause
])
async def test_the_accept_clause_may_ask(module_api: API, config_map: str, accept: str,
                                         pretty: bool) -> None:
    _, _, compact = await _raw(module_api, config_map)
    _, media, body = await _raw(module_api, config_map, {"Accept": accept})
    assert media == "application/json"
    assert body == (_marshal_indent(compact) if pretty else compact)


async def test_yaml_and_protobuf_have_no_pretty_form(module_api: API, config_map: str) -> None:
    for accept in ("application/yaml", "application/vnd.kubernetes.protobuf"):
        _, media, plain = await _raw(module_api, config_map, {"Accept": accept})
        _, _, asked = await _raw(module_api, f"{config_map}?pretty=true",
                                 {"Accept": f"{accept};pretty=1"})
        assert media == accept and asked == plain


async def test_a_list_a_table_and_a_write_are_indented(module_api: API,
                                                        config_map: str) -> None:
    _, _, compact = await _raw(module_api, f"{NS}?labelSelector=a%3Db")
    _, _, pretty = await _raw(module_api, f"{NS}?labelSelector=a%3Db&pretty=1")
    assert pretty == _marshal_indent(compact)
    assert b'\n  "items": [\n    {\n      "metadata": {' in pretty
    table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    _, _, pretty_table = await _raw(module_api, f"{config_map}?pretty=true", table)
    assert json.loads(pretty_table)["kind"] == "Table"
    assert pretty_table.startswith(b'{\n  "kind": "Table",\n')
    status, _, written = await _raw(module_api, f"{NS}?pretty=true", method="POST",
                                    body={"metadata": {"name": "pretty-written"}})
    assert status == 201 and written.startswith(b'{\n  "kind": "ConfigMap",\n')
    assert written.endswith(b"\n}")


async def test_a_status_error_is_indented(module_api: API) -> None:
    """ErrorNegotiated writes through the same negotiation."""
    _, _, compact = await _raw(module_api, f"{NS}/missing")
    status, media, pretty = await _raw(module_api, f"{NS}/missing?pretty=true")
    assert status == 404 and media == "application/json"
    assert pretty == _marshal_indent(compact)
    assert pretty.startswith(b'{\n  "kind": "Status",\n  "apiVersion": "v1",\n  "metadata": {},')


async def test_an_unacceptable_accept_gets_its_status_indented_always(module_api: API,
                                                                       config_map: str) -> None:
    """WriteObjectNegotiated's WriteRawJSON: json.MarshalIndent, whatever pretty says."""
    status, media, body = await _raw(module_api, config_map, {"Accept": "text/html"})
    assert status == 406 and media == "application/json"
    assert body.startswith(b'{\n  "kind": "Status",\n') and body.endswith(b"\n}")


async def test_version_and_root_are_raw_json(module_api: API) -> None:
    """routes/version.go and routes/index.go: WriteRawJSON."""
    for path in ("/version", "/"):
        _, media, body = await _raw(module_api, path)
        assert media == "application/json"
        assert body.startswith(b"{\n  ") and body.endswith(b"\n}")
        assert body == _marshal_indent(body)


async def test_discovery_is_indented(module_api: API) -> None:
    _, _, compact = await _raw(module_api, "/api/v1")
    _, _, pretty = await _raw(module_api, "/api/v1?pretty=true")
    assert pretty == _marshal_indent(compact) != compact
    aggregated = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}
    _, media, body = await _raw(module_api, "/apis?pretty=true", aggregated)
    assert media == "application/json" and body.startswith(b'{\n  "kind": "APIGroupDiscoveryList"')


async def test_a_watch_is_never_indented(module_api: API, config_map: str) -> None:
    """The watch's stream serializer is not the pretty one: an event a line."""
    async with module_api.session.get(
            f"{module_api.cluster.url}{NS}?watch=true&pretty=true&fieldSelector="
            "metadata.name%3Dpretty", headers={"User-Agent": "curl/8.5.0"},
            ssl=module_api.ssl) as resp:
        line = await resp.content.readline()
    event = json.loads(line)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "pretty"
    assert line.endswith(b"}\n") and line.count(b"\n") == 1


async def test_a_list_streamed_in_pieces_is_indented_whole(module_api: API) -> None:
    """A LIST of more items than a piece holds (listencoding.LIST_CHUNK_ITEMS) is written
    as it is read; pretty, it is the same indented document."""
    count = LIST_CHUNK_ITEMS + 1

    async def create(i: int) -> None:
        status, _, _ = await _raw(module_api, NS, method="POST", body={
            "metadata": {"name": f"many-{i:04d}", "labels": {"many": "yes"}}})
        assert status == 201

    for start in range(0, count, 50):
        await asyncio.gather(*(create(i) for i in range(start, min(start + 50, count))))
    _, _, compact = await _raw(module_api, f"{NS}?labelSelector=many%3Dyes")
    _, _, pretty = await _raw(module_api, f"{NS}?labelSelector=many%3Dyes&pretty=true")
    assert len(json.loads(compact)["items"]) == count
    assert pretty == _marshal_indent(compact)
