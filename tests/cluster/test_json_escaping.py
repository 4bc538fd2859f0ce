"""Answers are the bytes Go's encoding/json writes: HTML characters and line separators
escaped inside strings.

kube-apiserver encodes JSON with encoding/json (apimachinery
runtime/serializer/json/json.go: ``json.NewEncoder(w).Encode``; custom resources reach etcd
and come back through the same encoder). encoding/json/encode.go ``appendString`` (what
``encodeState.string`` writes, ``escapeHTML`` on, as ``HTMLEscape`` does) writes ``<``,
``>``, ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026``, U+2028 and U+2029 as ``\\u2028`` and
``\\u2029``, ``\\b \\f \\n \\r \\t`` short, other control characters as ``\\u00XX`` in
lowercase hex, everything else (DEL included) as it is. ``go_marshal`` below is that
function, written from encode.go, and each answer must be exactly what it makes of the
answer's own value (its keys in the answer's order): every string in it escaped as Go does.
"""

from __future__ import annotations

from typing import Any

import orjson

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.waiting import wait_for

TRICKY = "if a<b && c>d\u2028then\u2029\x01\x7f\t\"\\ \u00e9 \u2014"
"""HTML characters, both line separators, a control character, DEL, a tab, quote and
backslash, and text outside ASCII Go writes raw (an em dash shares U+2028's first bytes)."""

_SHORT = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
          "\t": "\\t"}


def go_string(text: str) -> str:
    """encode.go ``appendString`` with ``escapeHTML``: the quoted JSON string Go writes."""
    out = ['"']
    for ch in text:
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif ch < " " or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_marshal(value: Any) -> bytes:
    """``value`` as json.Marshal writes it, keys in the given order."""
    def text(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ",".join(f"{go_string(k)}:{text(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ",".join(text(x) for x in v) + "]"
        if isinstance(v, str):
            return go_string(v)
        return orjson.dumps(v).decode()  # numbers, true, false, null
    return text(value).encode()


def go_encoded(value: Any) -> bytes:
    """``value`` as an answer's ``json.NewEncoder(w).Encode`` writes it: json.Marshal's
    bytes and a newline (apimachinery runtime/serializer/json/json.go doEncode)."""
    return go_marshal(value) + b"\n"


def _escaped_tricky() -> bytes:
    return go_string(TRICKY).encode()


async def _raw(api: API, path: str, status: int = 200, accept: str = "application/json",
               ) -> bytes:
    async with api.session.get(api.cluster.url + path, ssl=api.ssl,
                               headers={"Accept": accept}) as resp:
        assert resp.status == status, await resp.text()
        return await resp.read()


async def test_configmap_get_create_and_list_bytes_are_gos(api: API) -> None:
    """An object's answers (the create, a GET served from its stored bytes, a LIST and a
    Table) hold ``<>&``, U+2028 and U+2029 escaped as encode.go writes them."""
    path = "/api/v1/namespaces/default/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "html"},
          "data": {"k": TRICKY}}
    async with api.session.post(api.cluster.url + path, data=orjson.dumps(cm), ssl=api.ssl,
                                headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 201
        created = await resp.read()
    got = await _raw(api, path + "/html")
    listed = await _raw(api, path)
    table = await _raw(api, path, accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    for body in (created, got, listed):
        assert b'"k":' + _escaped_tricky() in body
        assert body == go_encoded(orjson.loads(body))
    assert table == go_encoded(orjson.loads(table))
    assert orjson.loads(got)["data"]["k"] == TRICKY


async def test_watch_event_bytes_are_gos(api: API) -> None:
    """A watch event line (``{"type":...,"object":...}`` then a newline, as the streaming
    encoder writes it) is escaped as encode.go does, for an object the watch started after
    and for one it lists first."""
    path = "/api/v1/namespaces/default/configmaps"
    status, first = await api.post(path, {"metadata": {"name": "before"},
                                          "data": {"k": TRICKY}})
    assert status == 201
    url = (api.cluster.url + path + "?watch=1&resourceVersion="
           + first["metadata"]["resourceVersion"])
    initial = api.cluster.url + path + "?watch=1&resourceVersion=0"
    async with api.session.get(initial, ssl=api.ssl) as resp:
        line = await resp.content.readline()
    assert b'"k":' + _escaped_tricky() in line
    assert line == go_marshal(orjson.loads(line)) + b"\n"
    async with api.session.get(url, ssl=api.ssl) as resp:
        status, _ = await api.post(path, {"metadata": {"name": "after",
                                                       "annotations": {"a": "x&y"}},
                                          "data": {"k": TRICKY}})
        assert status == 201
        line = await resp.content.readline()
    event = orjson.loads(line)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")
    assert b'"a":"x\\u0026y"' in line
    assert line == go_marshal(event) + b"\n"


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "notes.escape.example.com"},
    "spec": {"group": "escape.example.com", "scope": "Namespaced",
             "names": {"plural": "notes", "kind": "Note"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                     "type": "object", "description": "a <note> & more",
                     "properties": {"text": {"type": "string"}}}}}}}]},
}


async def test_custom_resource_bytes_are_gos(cluster: RunningCluster, api: API) -> None:
    """A custom resource, served from the JSON it is stored as (etcd holds what
    encoding/json wrote), is escaped in its GET and LIST answers, and a Status quoting the
    client's text is too (responsewriters.ErrorNegotiated, the same encoder)."""
    status, _ = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    assert status == 201
    path = "/apis/escape.example.com/v1/namespaces/default/notes"

    async def served() -> bool:
        return (await api.get(path))[0] == 200

    await wait_for(served)
    status, _ = await api.post(path, {"apiVersion": "escape.example.com/v1", "kind": "Note",
                                      "metadata": {"name": "n"}, "spec": {"text": TRICKY}})
    assert status == 201
    for body in (await _raw(api, path + "/n"), await _raw(api, path)):
        assert b'"text":' + _escaped_tricky() in body
        assert body == go_encoded(orjson.loads(body))
    stored = cluster.api.store.get_raw("escape.example.com/notes", "default", "n")
    assert stored is not None and stored.count(b"\\u0026") == 2
    body = await _raw(api, path + "?labelSelector=a%3C%3Eb", status=400)
    assert b"found '\\u003e'" in body and body == go_encoded(orjson.loads(body))


async def test_openapi_v3_is_escaped_and_v2_is_not(api: API) -> None:
    """OpenAPI v3 documents are ``json.Marshal`` of the spec (kube-openapi
    pkg/handler3/handler.go ``newOpenAPIV3Group``): encoding/json compacts the output of
    the spec's ``MarshalJSON`` with ``escapeHTML`` (encode.go ``marshalerEncoder``), so a
    description's HTML characters come escaped. OpenAPI v2 is the spec's own ``MarshalJSON``
    (pkg/handler/handler.go ``NewOpenAPIServiceLazy``), kube-openapi's go-json-experiment
    encoder with no ``EscapeRune`` (pkg/internal ``DeterministicMarshal``): written raw."""
    status, _ = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    assert status == 201

    async def published() -> bool:
        return b"a <note> & more" in await _raw(api, "/openapi/v2")

    await wait_for(published)
    v3 = await _raw(api, "/openapi/v3/apis/escape.example.com/v1")
    assert b"a \\u003cnote\\u003e \\u0026 more" in v3 and b"<note>" not in v3
