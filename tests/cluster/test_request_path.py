"""The request path's shortcuts answer exactly what the long way answers.

A GET of a built-in kind served as stored is answered with the stored JSON itself
(``REST.get_served_json``), not decoded and encoded again; kube-apiserver answers a GET with
the object its storage decodes (k8s.io/apiserver/pkg/endpoints/handlers/get.go,
``transformResponseObject``), so the bytes must be those the object encodes to. Kinds whose
served shape differs from the stored one (events.k8s.io Events kept as core Events), YAML and
Table answers still take the long way.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import orjson
import pytest

from setpoint.cluster.endpoints.requestinfo import ResourcePath, path_segments, resource_path_of
from setpoint.cluster.registry.genericstore import new_uid
from setpoint.machinery import gojson
from tests.cluster.conftest import API

NS = "default"


async def _raw_get(api: API, path: str, accept: str = "application/json") -> tuple[int, str,
                                                                                    bytes]:
    async with api.session.get(api.cluster.url + path, ssl=api.ssl,
                               headers={"Accept": accept}) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


async def test_get_of_a_stored_object_is_its_json(api: API) -> None:
    """Non-ASCII text, escapes, numbers and nesting come back as the create answered them,
    encoded as the server encodes any object."""
    cm: dict[str, Any] = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "stored-json", "labels": {"a": "b"},
                     "annotations": {"note": "caf\u00e9 \u2603 \"quoted\" \\ </tag>\n\t\u0001"}},
        "data": {"k": "\U0001f600", "empty": ""}}
    status, created = await api.post(f"/api/v1/namespaces/{NS}/configmaps", cm)
    assert status == 201, created
    status, content_type, body = await _raw_get(api, f"/api/v1/namespaces/{NS}/configmaps/"
                                                     "stored-json")
    assert (status, content_type) == (200, "application/json")
    assert orjson.loads(body) == created
    # as the encoder writes it: Go's bytes, and Encoder.Encode's newline (json.go doEncode)
    assert body == gojson.dumps(orjson.loads(body)) + b"\n"


async def test_create_answers_the_json_a_get_answers(api: API) -> None:
    """A create of a kind served as stored answers with the stored JSON
    (``WriteResult.served_json``): byte for byte what a GET of the object answers right after
    (handlers/create.go answers the object storage returned, which a GET decodes again);
    asked for YAML, it still takes the long way."""
    cm: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "create-answer", "labels": {"a": "b"}},
                          "data": {"k": "caf\u00e9 \U0001f600"}}
    async with api.session.post(api.cluster.url + f"/api/v1/namespaces/{NS}/configmaps",
                                ssl=api.ssl, data=orjson.dumps(cm),
                                headers={"Content-Type": "application/json"}) as resp:
        assert (resp.status, resp.headers.get("Content-Type")) == (201, "application/json")
        created = await resp.read()
    _, _, got = await _raw_get(api, f"/api/v1/namespaces/{NS}/configmaps/create-answer")
    assert created == got
    cm["metadata"]["name"] = "create-answer-yaml"
    async with api.session.post(api.cluster.url + f"/api/v1/namespaces/{NS}/configmaps",
                                ssl=api.ssl, data=orjson.dumps(cm),
                                headers={"Content-Type": "application/json",
                                         "Accept": "application/yaml"}) as resp:
        assert (resp.status, resp.headers.get("Content-Type")) == (201, "application/yaml")
        # goyaml.v2's sorted keys; a character past the BMP is no printable to its emitter
        # (yamlprivateh.go is_printable), so the string is double-quoted with a \U escape
        assert (await resp.read()).startswith(
            b'apiVersion: v1\ndata:\n  k: "caf\xc3\xa9 \\U0001F600"\nkind: ConfigMap\n')


async def _raw_write(api: API, method: str, path: str, body: Any,
                     content_type: str = "application/json") -> tuple[int, bytes]:
    async with api.session.request(method, api.cluster.url + path, ssl=api.ssl,
                                   data=orjson.dumps(body),
                                   headers={"Content-Type": content_type}) as resp:
        assert resp.headers.get("Content-Type") == "application/json"
        return resp.status, await resp.read()


async def test_updates_and_patches_answer_the_json_a_get_answers(
        api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    """An update, a status update, a strategic merge patch of the status and an update that
    changes nothing, of a kind served as stored, answer with the stored JSON
    (``WriteResult.served_json``) as a create does: byte for byte what a GET answers right
    after (handlers/update.go and patch.go answer the object storage returned, which a GET
    decodes again), without encoding the object a second time."""
    from setpoint.cluster.endpoints import responses

    rendered: list[str] = []
    render_object = responses.render_object

    def observed(rt: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:
        rendered.append(obj.get("kind", ""))
        return render_object(rt, obj, *args, **kwargs)

    monkeypatch.setattr(responses, "render_object", observed)
    rs: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "write-answer", "labels": {"app": "w"},
                     "annotations": {"note": "caf\u00e9 \U0001f600"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
                 "template": {"metadata": {"labels": {"app": "w"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    path = f"/apis/apps/v1/namespaces/{NS}/replicasets/write-answer"
    status, created = await api.post(f"/apis/apps/v1/namespaces/{NS}/replicasets", rs)
    assert status == 201, created
    created["spec"]["replicas"] = 2
    status, answer = await _raw_write(api, "PUT", path, created)
    assert status == 200, answer
    assert answer == (await _raw_get(api, path))[2]
    updated = orjson.loads(answer)
    updated["status"] = {"replicas": 2, "observedGeneration": 2}
    status, answer = await _raw_write(api, "PUT", path + "/status", updated)
    assert status == 200, answer
    assert answer == (await _raw_get(api, path))[2]
    assert orjson.loads(answer)["status"] == {"replicas": 2, "observedGeneration": 2}
    status, answer = await _raw_write(api, "PATCH", path + "/status",
                                      {"status": {"readyReplicas": 1}},
                                      "application/strategic-merge-patch+json")
    assert status == 200, answer
    assert answer == (await _raw_get(api, path))[2]
    same = orjson.loads(answer)
    status, answer = await _raw_write(api, "PUT", path, same)  # nothing changes
    assert status == 200, answer
    assert answer == (await _raw_get(api, path))[2]
    assert orjson.loads(answer)["metadata"]["resourceVersion"] == \
        same["metadata"]["resourceVersion"]
    assert rendered == []


async def test_a_scale_update_answers_the_scale(api: API) -> None:
    """The ``scale`` subresource's update answers the Scale, not its parent's stored JSON."""
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "scale-answer"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "s"}},
                   "template": {"metadata": {"labels": {"app": "s"}},
                                "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    status, _ = await api.post(f"/apis/apps/v1/namespaces/{NS}/replicasets", rs)
    assert status == 201
    path = f"/apis/apps/v1/namespaces/{NS}/replicasets/scale-answer/scale"
    status, scale = await api.get(path)
    assert status == 200
    scale["spec"]["replicas"] = 3
    status, answer = await _raw_write(api, "PUT", path, scale)
    assert status == 200
    got = orjson.loads(answer)
    assert (got["kind"], got["spec"]) == ("Scale", {"replicas": 3})
    status, answer = await _raw_write(api, "PATCH", path, {"spec": {"replicas": 4}},
                                      "application/merge-patch+json")
    assert status == 200
    got = orjson.loads(answer)
    assert (got["kind"], got["spec"]) == ("Scale", {"replicas": 4})


async def test_get_of_a_missing_object_is_the_same_404(api: API) -> None:
    status, answer = await api.get(f"/api/v1/namespaces/{NS}/configmaps/absent")
    assert status == 404
    assert answer["reason"] == "NotFound"
    assert answer["message"] == 'configmaps "absent" not found'
    assert answer["details"] == {"name": "absent", "kind": "configmaps"}


async def test_get_of_a_converted_kind_still_converts(api: API) -> None:
    """events.k8s.io/v1 Events are stored as core Events: a GET converts them back."""
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
             "metadata": {"name": "converted"}, "eventTime": "2024-01-01T00:00:00.000000Z",
             "reportingController": "example.com/ctl", "reportingInstance": "i",
             "action": "Act", "reason": "Why", "type": "Normal", "note": "n",
             "regarding": {"kind": "Pod", "name": "p", "namespace": NS}}
    status, created = await api.post(f"/apis/events.k8s.io/v1/namespaces/{NS}/events", event)
    assert status == 201, created
    status, got = await api.get(f"/apis/events.k8s.io/v1/namespaces/{NS}/events/converted")
    assert status == 200
    assert got == created
    assert got["apiVersion"] == "events.k8s.io/v1" and got["note"] == "n"


async def test_get_as_yaml_or_table_is_not_the_stored_json(api: API) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-forms"}}
    status, _ = await api.post(f"/api/v1/namespaces/{NS}/configmaps", cm)
    assert status == 201
    path = f"/api/v1/namespaces/{NS}/configmaps/other-forms"
    status, content_type, body = await _raw_get(api, path, "application/yaml")
    assert (status, content_type) == (200, "application/yaml")
    # sigs.k8s.io/yaml JSONToYAML: goyaml.v2 sorts the keys and double-quotes a timestamp
    assert body.startswith(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  creationTimestamp: \"")
    status, _, body = await _raw_get(
        api, path, "application/json;as=Table;v=v1;g=meta.k8s.io")
    assert status == 200 and orjson.loads(body)["kind"] == "Table"


def test_new_uids_are_version_4_uuids() -> None:
    """``new_uid`` writes what ``str(uuid.uuid4())`` writes, without a ``uuid.UUID``."""
    seen = set()
    for _ in range(200):
        text = new_uid()
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        seen.add(text)
    assert len(seen) == 200


def test_a_forked_process_does_not_repeat_the_parents_uids() -> None:
    """uids come from a pool of random bytes drawn a few KiB at a time; a forked child (the
    process runtime's workloads, a test's worker) must not hand out the parent's next uids."""
    new_uid()  # the pool is filled
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next uid, to the parent
        os.write(write, new_uid().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    assert child and child != new_uid()


def _request_info(segments: list[str]) -> ResourcePath | None:
    """requestinfo.go NewRequestInfo as the slices it reads (k8s.io/apiserver
    pkg/endpoints/request/requestinfo.go): the prefix (``api`` or ``apis/<group>``), the
    version, an optional ``watch`` verb prefix, ``namespaces/<ns>`` unless what follows is
    the namespace's own subresource, then resource, name, subresource."""
    if len(segments) > 2 and segments[0] == "api":
        group, parts = "", segments[1:]
    elif len(segments) > 3 and segments[0] == "apis":
        group, parts = segments[1], segments[2:]
    else:
        return None
    version, rest = parts[0], parts[1:]
    watch = bool(rest) and rest[0] == "watch"
    if watch:
        rest = rest[1:]
    if not rest:
        return None
    ns = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        ns, rest = rest[1], rest[2:]
    return ResourcePath(group, version, rest[0], ns, rest[1] if len(rest) > 1 else None,
                        rest[2] if len(rest) > 2 else "", watch, len(rest) > 3)


def test_a_path_is_read_as_request_info_reads_it() -> None:
    """The path is parsed once per request, in place (``resource_path_of``), for the deadline
    filter and the routes: it names what NewRequestInfo's slices name, for every shape."""
    tails = [[], ["configmaps"], ["configmaps", "a"], ["configmaps", "a", "status"],
             ["configmaps", "a", "status", "x"], ["namespaces"], ["namespaces", "n"],
             ["namespaces", "n", "status"], ["namespaces", "n", "finalize"],
             ["namespaces", "n", "pods"], ["namespaces", "n", "pods", "p"],
             ["namespaces", "n", "pods", "p", "log"], ["namespaces", "n", "pods", "p", "a", "b"],
             ["namespaces", "watch"], ["watch"], ["watch", "pods"],
             ["watch", "namespaces", "n", "pods", "p"], ["watch", "watch"], [""], ["", ""]]
    prefixes = [["api"], ["api", "v1"], ["api", "v2"], ["apis"], ["apis", "apps"],
                ["apis", "apps", "v1"], ["apis", "", "v1"], ["healthz"], []]
    for prefix in prefixes:
        for tail in tails:
            segments = prefix + tail
            assert resource_path_of(segments) == _request_info(segments), segments
    assert resource_path_of(path_segments("/api/v1/namespaces/n/pods/p/log")) == ResourcePath(
        "", "v1", "pods", "n", "p", "log")
    assert resource_path_of(path_segments("/apis/apps/v1/watch/deployments")) == ResourcePath(
        "apps", "v1", "deployments", legacy_watch=True)
    assert path_segments("/") == [] and path_segments("//a//") == ["a"]
