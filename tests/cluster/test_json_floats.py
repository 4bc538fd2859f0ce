"""Numbers in answers are the bytes Go's encoding/json writes for them.

kube-apiserver decodes a custom resource's JSON into unstructured content with int64 for an
integer literal and float64 for any other number (sigs.k8s.io/json
``UnmarshalCaseSensitivePreserveInts``, through k8s.io/apimachinery pkg/util/json), and
writes it back (to etcd, and to every answer) with encoding/json: encode.go
``floatEncoder.encode`` writes a float64 with strconv's shortest digits in ``'f'`` format
when 1e-6 <= |f| < 1e21, otherwise in ``'e'`` format with ``e-09`` cleaned to ``e-9``. So the
client's ``1.0`` reads back as ``1``, ``1.5e3`` as ``1500``, ``1e20`` as
``100000000000000000000`` and ``1e-06`` as ``0.000001``.
"""

from __future__ import annotations

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.waiting import wait_for

# (the client's literal, what encode.go writes for the float64 or int64 it decodes to)
NUMBERS = [
    (b"1.0", b"1"), (b"1.5e3", b"1500"), (b"1e20", b"100000000000000000000"),
    (b"1E16", b"10000000000000000"), (b"0.0000015", b"0.0000015"), (b"1e-06", b"0.000001"),
    (b"1e-7", b"1e-7"), (b"1.5e-07", b"1.5e-7"), (b"1e21", b"1e+21"),
    (b"2.5", b"2.5"), (b"0.1", b"0.1"), (b"7", b"7"), (b"12345678901234567", b"12345678901234567"),
]
KEYS = [f"n{i:02d}" for i in range(len(NUMBERS))]  # sorted, as Go writes a map's keys


def _spec(pairs: list[tuple[bytes, bytes]], side: int) -> bytes:
    return b"{" + b",".join(b'"%s":%s' % (k.encode(), p[side])
                            for k, p in zip(KEYS, pairs, strict=True)) + b"}"


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gauges.floats.example.com"},
    "spec": {"group": "floats.example.com", "scope": "Namespaced",
             "names": {"plural": "gauges", "kind": "Gauge"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "additionalPrinterColumns": [
                               {"name": "Big", "type": "number", "jsonPath": ".spec.n02"}],
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "properties": {"spec": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}


async def _request(api: API, method: str, path: str, body: bytes | None = None,
                   content_type: str = "application/json", accept: str = "application/json",
                   ) -> tuple[int, bytes]:
    async with api.session.request(method, api.cluster.url + path, data=body, ssl=api.ssl,
                                   headers={"Content-Type": content_type,
                                            "Accept": accept}) as resp:
        return resp.status, await resp.read()


async def test_custom_resource_floats_are_written_as_go_writes_a_float64(
        cluster: RunningCluster, api: API) -> None:
    """The create answer, the stored bytes, GET, LIST, a watch event, a merge patch's answer
    and a Table's number cell hold each number as encode.go ``floatEncoder.encode`` (or, for
    an integer literal, the int64 encoder) writes it."""
    status, _ = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    assert status == 201
    path = "/apis/floats.example.com/v1/namespaces/default/gauges"

    async def served() -> bool:
        return (await api.get(path))[0] == 200

    await wait_for(served)
    body = (b'{"apiVersion":"floats.example.com/v1","kind":"Gauge","metadata":{"name":"g"},'
            b'"spec":' + _spec(NUMBERS, 0) + b"}")
    want = b'"spec":' + _spec(NUMBERS, 1)
    status, created = await _request(api, "POST", path, body)
    assert status == 201, created
    assert want in created
    stored = cluster.api.store.get_raw("floats.example.com/gauges", "default", "g")
    assert stored is not None and want in bytes(stored)
    for answer in [(await _request(api, "GET", path + "/g"))[1],
                   (await _request(api, "GET", path))[1],
                   (await _request(api, "GET", path + "?watch=1&resourceVersion=0"
                                   "&timeoutSeconds=1"))[1]]:
        assert want in answer
    status, patched = await _request(api, "PATCH", path + "/g", b'{"spec":{"n12":3.0}}',
                                     content_type="application/merge-patch+json")
    assert status == 200, patched
    assert want.replace(b'"n12":12345678901234567', b'"n12":3') in patched
    status, table = await _request(api, "GET", path + "/g",
                                   accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert status == 200 and b'"cells":["g",100000000000000000000]' in table, table


async def test_invalid_utf8_in_the_path_is_written_as_an_escaped_replacement_character(
        api: API) -> None:
    """net/http keeps the path's bytes as they are (``url.PathUnescape``), the NotFound
    Status quotes the name, and encoding/json (encode.go ``appendString``) writes each byte
    that is not UTF-8 as the six characters ``\\ufffd``, while a real U+FFFD stays as it is."""
    path = "/api/v1/namespaces/default/configmaps/"
    status, body = await _request(api, "GET", path + "a%FFb")
    assert status == 404, body
    assert b'"message":"configmaps \\"a\\ufffdb\\" not found"' in body, body
    assert b'"name":"a\\ufffdb"' in body
    status, body = await _request(api, "GET", path + "a%EF%BF%BDb")
    assert status == 404, body
    assert '"message":"configmaps \\"a\ufffdb\\" not found"'.encode() in body, body
