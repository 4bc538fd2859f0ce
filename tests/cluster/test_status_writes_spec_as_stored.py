"""A ``/status`` write's spec sent as it is stored is not decoded again.

kube-apiserver decodes the whole body of a ``/status`` PUT, and the whole patched object of a
``/status`` PATCH, into the kind's Go struct (k8s.io/apiserver pkg/endpoints/handlers/
update.go and patch.go), and then the status strategy puts the stored spec back
(pkg/registry/apps/replicaset/strategy.go ``replicaSetStatusStrategy.PrepareForUpdate``:
``newRS.Spec = oldRS.Spec``). A spec that is the stored one as it is (a controller PUTs back
the object it read; a status patch leaves the spec alone) decodes to the stored value, so
Setpoint takes a copy of the stored value instead (``decoder._reset_members_as_stored``). A
spec that differs in anything, ``1.0`` for ``1`` included, is still decoded as sent: its
errors and unknown fields are the write's, as in Go.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest

from setpoint.cluster.registry import decoder
from setpoint.cluster.serializer.typeddecode import decode_builtin
from tests.cluster.conftest import API
from tests.cluster.golden import GOLDEN

NS = "default"
BASE = f"/apis/apps/v1/namespaces/{NS}/replicasets"


def _replica_set(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


async def _write(api: API, method: str, path: str, body: Any,
                 content_type: str = "application/json") -> tuple[int, Any, list[str]]:
    async with api.session.request(method, api.cluster.url + path, data=orjson.dumps(body),
                                   headers={"Content-Type": content_type},
                                   ssl=api.ssl) as resp:
        return resp.status, orjson.loads(await resp.read()), resp.headers.getall("Warning", [])


async def test_a_status_writes_spec_sent_as_stored_is_not_decoded_again(
        api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    """A status PUT of the object as read and a status patch: the typed decoding sees the
    status but not the spec, and the object stored and answered is what a GET reads."""
    decoded: list[list[str]] = []

    def observed(obj: Any, *args: Any, **kwargs: Any) -> Any:
        decoded.append(list(obj))
        return decode_builtin(obj, *args, **kwargs)

    monkeypatch.setattr(decoder, "decode_builtin", observed)
    status, created = await api.post(BASE, _replica_set("as-stored"))
    assert status == 201, created
    assert "spec" in decoded[-1]  # (a create decodes its spec)
    path = f"{BASE}/as-stored/status"
    status, got = await api.get(f"{BASE}/as-stored")
    assert status == 200, got
    status, answer, warnings = await _write(
        api, "PUT", path, {**got, "status": {"replicas": 1, "observedGeneration": 1}})
    assert (status, warnings) == (200, []), answer
    assert "status" in decoded[-1] and "spec" not in decoded[-1]
    status, answer, warnings = await _write(api, "PATCH", path,
                                            {"status": {"readyReplicas": 1}},
                                            "application/strategic-merge-patch+json")
    assert (status, warnings) == (200, []), answer
    assert "status" in decoded[-1] and "spec" not in decoded[-1]
    status, read = await api.get(f"{BASE}/as-stored")
    assert read == answer
    assert read["spec"] == got["spec"]
    assert read["status"] == {"replicas": 1, "readyReplicas": 1, "observedGeneration": 1}


async def test_a_status_writes_spec_that_differs_is_decoded_as_sent(api: API) -> None:
    """An unknown field in the spec of a status PUT is warned of (fieldValidation's default,
    Warn), a float literal in an int32 field and a value of the wrong type are the
    decoder's 400, as for any PUT; the spec itself stays the stored one."""
    status, created = await api.post(BASE, _replica_set("differs"))
    assert status == 201, created
    path = f"{BASE}/differs/status"
    body = {**created, "spec": {**created["spec"], "bogus": True},
            "status": {"replicas": 1}}
    status, answer, warnings = await _write(api, "PUT", path, body)
    assert (status, warnings) == (200, ['299 - "unknown field \\"spec.bogus\\""']), answer
    assert answer["spec"] == created["spec"]
    assert answer["status"] == {"replicas": 1}
    for replicas, detail in (
            (1.0, "json: cannot unmarshal number 1.0 into Go struct field "
                  "ReplicaSetSpec.spec.replicas of type int32"),
            ("one", "json: cannot unmarshal string into Go struct field "
                    "ReplicaSetSpec.spec.replicas of type int32")):
        body = {**answer, "spec": {**answer["spec"], "replicas": replicas}}
        status, refused, _ = await _write(api, "PUT", path, body)
        assert status == 400, refused
        assert refused["message"] == ('ReplicaSet in version "v1" cannot be handled as a '
                                      f"ReplicaSet: {detail}")
    status, read = await api.get(f"{BASE}/differs")
    assert read["spec"] == created["spec"]


def _recorded_objects() -> list[dict[str, Any]]:
    """Every object with a spec in the recorded answers of kube-apiserver 1.32 (single
    objects and list items), of a built-in kind."""
    if not GOLDEN.exists():
        pytest.skip(f"conformance corpus not found at {GOLDEN}")
    found: list[dict[str, Any]] = []
    for path in sorted(GOLDEN.glob("*.json")):
        for step in json.loads(path.read_text())["steps"]:
            body = (step.get("response") or {}).get("body")
            items = body.get("items") if isinstance(body, dict) else None
            for obj in [body, *(items if isinstance(items, list) else [])]:
                if isinstance(obj, dict) and isinstance(obj.get("spec"), dict) \
                        and obj["spec"] and obj.get("kind") \
                        and "<pem>" not in json.dumps(obj):
                    found.append(_unmasked(obj))
    return found


def _unmasked(value: Any) -> Any:
    """The recorder's masked times as a time (``<time>``: a timestamp it hid)."""
    if value == "<time>":
        return "2024-01-01T00:00:00Z"
    if isinstance(value, dict):
        return {k: _unmasked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmasked(v) for v in value]
    return value


def test_a_recorded_spec_decodes_to_itself_once_defaulted() -> None:
    """What the shortcut rests on, over every recorded spec of a kind served as stored (as
    kube-apiserver 1.32 answered it, i.e. as it stored it): decoding it and defaulting
    gives what defaulting the spec as it is gives: the same values of the same JSON types
    (the order of a map's keys aside: a decoding appends the members Go writes that JSON
    left out, where the stored text has them in the struct's order)."""
    from setpoint.cluster.apiserver import APIServer
    from setpoint.cluster.registry.options import WriteOptions
    from setpoint.cluster.serializer.decode import Decoded

    api = APIServer(None, ca_pem=b"CA")
    registry, rest = api.registry, api.rest
    checked = 0
    for obj in _recorded_objects():
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        rt = registry.by_kind(group, version, obj["kind"])
        if rt is None or rt.is_custom or not rest.codec.serves_stored(rt):
            continue
        body = {**copy.deepcopy(obj), "status": {}}
        walked, _ = rest.decoder.decode(rt, Decoded(copy.deepcopy(body)), WriteOptions())
        kept, _ = rest.decoder.decode(rt, Decoded(copy.deepcopy(body)), WriteOptions(),
                                      status_of=obj)
        rest.decoder.default(rt, walked)
        rest.decoder.default(rt, kept)
        assert orjson.dumps(kept, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            walked, option=orjson.OPT_SORT_KEYS), obj["kind"]
        checked += 1
    assert checked >= 10
