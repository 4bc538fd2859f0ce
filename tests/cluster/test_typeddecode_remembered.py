"""A top-level member (a spec, a status) decoded before is read back from what it decoded to
(``typeddecode._decode_member``): the answer must be exactly the walk's, value, type and key
order, unknown fields and errors alike, and every answer a fresh object.

The walk is the apiserver's typed JSON decoding (k8s.io/apimachinery pkg/runtime/serializer/
json, encoding/json into the kind's Go struct); these bodies hit each thing it does beyond
copying: a null dropped, an ``omitempty`` empty list dropped, a float in an int field, a
number in a quantity, a time normalized, an unknown field, a value of the wrong type.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest

from setpoint.cluster.serializer import typeddecode
from setpoint.machinery import errors
from setpoint.machinery.schema import definitions


def _replica_set(**spec: Any) -> dict[str, Any]:
    labels = {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "labels": labels,
                         "managedFields": []},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels, "creationTimestamp": None},
                                  "spec": {"containers": [
                                      {"name": "app", "image": "pause", "ports": [],
                                       "resources": {"requests": {"cpu": 1, "memory": 1.5}}}],
                                           "securityContext": {"supplementalGroups": []}}},
                     **spec},
            "status": {"replicas": 3, "readyReplicas": 2.0, "conditions": [
                {"type": "ReplicaFailure", "status": "False",
                 "lastTransitionTime": "2024-01-01T01:00:00+01:00"}]}}


BODIES = {
    "defaults and conversions": _replica_set(),
    "float replicas": _replica_set(replicas=3.0, minReadySeconds=None),
    "unknown field in spec": _replica_set(bogus={"a": 1}),
    "wrong type in spec": _replica_set(replicas="three"),
    "int out of range": _replica_set(replicas=2**40),
    "integer past 64 bits": _replica_set(minReadySeconds=2**70),
}


def _decode(body: dict[str, Any], literals: bool) -> tuple[str, Any]:
    schema = definitions().for_kind("apps", "v1", "ReplicaSet")
    assert schema is not None
    try:
        out, unknown = typeddecode.decode_builtin(
            copy.deepcopy(body), schema, "ReplicaSet",
            literals=json.dumps(body).encode()
            if literals else None)
    except errors.StatusError as exc:
        return "error", str(exc)
    # orjson's text tells 1 from 1.0 and True, and keeps the key order
    return orjson.dumps(out).decode(), unknown


@pytest.mark.parametrize("literals", [False, True], ids=["converted", "from-json-text"])
@pytest.mark.parametrize("name", list(BODIES))
def test_a_remembered_member_decodes_as_the_walk_does(name: str, literals: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With and without the body's JSON text (a float literal in an int field is an error
    only with it: the two must not share what they remember)."""
    body = BODIES[name]
    typeddecode._DECODED.clear()
    _decode(body, not literals)  # remembered the other way first
    first = _decode(body, literals)   # walked, remembered where it decoded cleanly
    second = _decode(body, literals)  # read back
    with monkeypatch.context() as m:
        m.setattr(typeddecode, "_decode_member", typeddecode._decode)
        walked = _decode(body, literals)
    assert first == walked
    assert second == walked


def test_a_remembered_member_is_a_fresh_object_each_time() -> None:
    schema = definitions().for_kind("apps", "v1", "ReplicaSet")
    assert schema is not None
    typeddecode._DECODED.clear()
    body = _replica_set()
    a, _ = typeddecode.decode_builtin(copy.deepcopy(body), schema, "ReplicaSet")
    b, _ = typeddecode.decode_builtin(copy.deepcopy(body), schema, "ReplicaSet")
    assert a == b
    assert typeddecode._DECODED  # the spec and status remembered
    b["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    c, _ = typeddecode.decode_builtin(copy.deepcopy(body), schema, "ReplicaSet")
    assert c == a
    assert c["spec"]["template"]["metadata"] == {"labels": {"app": "web"}}


@pytest.mark.parametrize("stamp", ["2024-01-01T00:00:00Z", "2024-13-01T00:00:00Z",
                                   "2024-02-30T00:00:00Z", "2024-01-01T01:00:00+01:00",
                                   "2024-01-01T00:00:00.5Z"])
def test_a_time_parsed_before_decodes_as_the_first_time(stamp: str) -> None:
    """metav1.Time is parsed by Go's time.Parse(RFC3339) at every decode (apimachinery
    pkg/apis/meta/v1/time.go UnmarshalJSON); a canonical text remembered as parsed must
    answer what parsing answers, and a text that only looks canonical (month 13, February
    30) must still be refused."""
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "creationTimestamp": stamp}}
    schema = definitions().for_kind("", "v1", "ConfigMap")
    assert schema is not None

    def decode() -> tuple[str, Any]:
        try:
            out, unknown = typeddecode.decode_builtin(copy.deepcopy(body), schema, "ConfigMap")
        except errors.StatusError as exc:
            return "error", str(exc)
        return orjson.dumps(out).decode(), unknown

    typeddecode._CANONICAL_TIMES.clear()
    first = decode()
    assert decode() == first
    remembered = (stamp, False) in typeddecode._CANONICAL_TIMES
    assert remembered == (first[0] != "error" and "+" not in stamp and "." not in stamp)


@pytest.mark.parametrize("stamp", ["2024-01-01T00:00:00.000001Z", "2024-01-01T00:00:00Z",
                                   "2024-13-01T00:00:00.000001Z",
                                   "2024-01-01T01:00:00.000001+01:00"])
def test_a_micro_time_parsed_before_decodes_as_the_first_time(stamp: str) -> None:
    """metav1.MicroTime (an Event's eventTime; pkg/apis/meta/v1/micro_time.go
    UnmarshalJSON, RFC3339Micro) remembered apart from metav1.Time: the same text may be
    one's canonical form and the other's error."""
    body: dict[str, Any] = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "creationTimestamp": stamp}, "eventTime": stamp}
    schema = definitions().for_kind("events.k8s.io", "v1", "Event")
    assert schema is not None

    def decode() -> tuple[str, Any]:
        try:
            out, unknown = typeddecode.decode_builtin(copy.deepcopy(body), schema, "Event")
        except errors.StatusError as exc:
            return "error", str(exc)
        return orjson.dumps(out).decode(), unknown

    typeddecode._CANONICAL_TIMES.clear()
    first = decode()
    assert decode() == first
    body["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    typeddecode._CANONICAL_TIMES.clear()
    again = decode()
    assert decode() == again
