"""YAML answers as kube-apiserver writes them.

k8s.io/apimachinery pkg/runtime/serializer/json/json.go ``Encode`` with the ``Yaml`` option:
the object's JSON through sigs.k8s.io/yaml ``JSONToYAML`` (goyaml.v2 decode, then marshal:
keys sorted by sorter.go ``keyList.Less``, a string that would read back as another type
double-quoted by encode.go ``stringv``). And every error past the routing is
responsewriters.ErrorNegotiated: its Status in the representation the Accept header asks for
(DefaultEndpointRestrictions), so YAML for ``Accept: application/yaml``.
"""

from __future__ import annotations

from setpoint.cluster.serializer.yamlencode import dumps, resolves_to_other_than_string
from tests.cluster.conftest import API

NS = "default"


async def _raw(api: API, method: str, path: str, accept: str) -> tuple[int, str, bytes]:
    async with api.session.request(method, api.cluster.url + path, ssl=api.ssl,
                                   headers={"Accept": accept}) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


async def test_not_found_is_a_yaml_status_when_yaml_is_asked_for(api: API) -> None:
    status, ctype, body = await _raw(api, "GET", f"/api/v1/namespaces/{NS}/configmaps/nothere",
                                     "application/yaml")
    assert (status, ctype) == (404, "application/yaml")
    assert body == (b'apiVersion: v1\ncode: 404\ndetails:\n  kind: configmaps\n  name: nothere\n'
                    b'kind: Status\nmessage: configmaps "nothere" not found\nmetadata: {}\n'
                    b'reason: NotFound\nstatus: Failure\n')


async def test_error_falls_back_to_json_for_a_table_only_accept(api: API) -> None:
    """An ``as=`` clause is not acceptable for a Status: nothing left, WriteRawJSON."""
    status, ctype, body = await _raw(api, "GET", f"/api/v1/namespaces/{NS}/configmaps/nothere",
                                     "application/yaml;as=Table;v=v1;g=meta.k8s.io")
    assert (status, ctype) == (404, "application/json")
    assert body.startswith(b"{")


async def test_yaml_watch_is_refused_in_yaml(api: API) -> None:
    """serveWatch finds no stream serializer for YAML; the 406 is itself negotiated."""
    status, ctype, body = await _raw(
        api, "GET", f"/api/v1/namespaces/{NS}/configmaps?watch=true&timeoutSeconds=1",
        "application/yaml")
    assert (status, ctype) == (406, "application/yaml")
    assert b"reason: NotAcceptable\n" in body


async def test_object_keys_sorted_and_scalars_quoted(api: API) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "yaml-sorted", "labels": {"b": "yes", "a10": "1", "a9": "x"}},
          "data": {"z": "2024-01-02", "y": "a: b", "x": "0x1F", "w": "line\nnext"}}
    status, _ = await api.post(f"/api/v1/namespaces/{NS}/configmaps", cm)
    assert status == 201
    status, _, body = await _raw(api, "GET", f"/api/v1/namespaces/{NS}/configmaps/yaml-sorted",
                                 "application/yaml")
    assert status == 200
    text = body.decode()
    assert text.startswith("apiVersion: v1\ndata:\n  w: |-\n    line\n    next\n"
                           "  x: \"0x1F\"\n  \"y\": 'a: b'\n  z: \"2024-01-02\"\nkind: ConfigMap\n")
    assert "  labels:\n    a9: x\n    a10: \"1\"\n    b: \"yes\"\n" in text


def test_goyaml_v2_key_order() -> None:
    """A non-letter before a letter, digit runs by value."""
    doc = dumps({"f:b": 1, ".": 2, "k:{x}": 3, "a2": 4, "a10": 5, "A": 6, "a02": 7})
    assert doc == b".: 2\nA: 6\na2: 4\na02: 7\na10: 5\nf:b: 1\nk:{x}: 3\n"


def test_goyaml_v2_resolver() -> None:
    for text in ("123", "-1.5", "1e3", "0o17", "0b101", "true", "On", "n", "~", "", ".inf",
                 "2026-11-27T12:45:57Z", "1:20", "<<"):
        assert resolves_to_other_than_string(text), text
    for text in ("abc", "1.2.3", "v1", "10.96.0.1", "-", "2026-13-40", "1Gi", "+"):
        assert not resolves_to_other_than_string(text), text


def test_floats_as_go_formats_them() -> None:
    assert dumps({"a": 0.5, "b": 1234567.5, "c": 1e-05, "d": 2.0}) == \
        b"a: 0.5\nb: 1.2345675e+06\nc: 1e-05\nd: 2\n"
