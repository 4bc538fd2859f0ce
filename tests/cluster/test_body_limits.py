"""Request bodies that decode into far more than they are: aliases, depth, JSON patch copies.

kube-apiserver bounds each: go-yaml v2's ``allowedAliasRatio`` (sigs.k8s.io/yaml/goyaml.v2
decode.go), Go's JSON scanner depth (encoding/json scanner.go ``maxNestingDepth``), and
evanphx/json-patch's ``AccumulatedCopySizeLimit``, which k8s.io/apiserver/pkg/server/config.go
sets from ``JSONPatchMaxCopyBytes`` (3 MiB).
"""

from __future__ import annotations

from typing import Any

import orjson

from setpoint.cluster.serializer.decodelimits import MAX_DEPTH
from setpoint.machinery.patch._status import GENERIC_422_MESSAGE
from tests.cluster.conftest import API
from tests.cluster.test_rbac import robot
from tests.conftest import CallsTo

SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _laughs(levels: int = 9) -> bytes:
    """The classic "billion laughs": each level aliases the previous one ten times."""
    lines = ['apiVersion: authorization.k8s.io/v1', 'kind: SelfSubjectAccessReview',
             'a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append(f"spec: {{resourceAttributes: {{verb: get, resource: pods, x: *a{levels}}}}}")
    return "\n".join(lines).encode()


async def test_a_billion_laughs_is_refused_before_it_expands(api: API) -> None:
    """A service account with no permissions may post a SelfSubjectAccessReview: its YAML
    must not expand (go-yaml v2 decode.go: "document contains excessive aliasing")."""
    nobody = await robot(api)
    body = _laughs()
    assert len(body) < 1024
    async with nobody.api.session.post(
            api.cluster.url + SSAR, data=body, ssl=api.ssl,
            headers={**nobody.headers, "Content-Type": "application/yaml"}) as resp:
        status, answer = resp.status, await resp.json()
    assert status == 400, answer
    assert answer["reason"] == "BadRequest"
    # the YAML serializer's yaml.YAMLToJSON error as is, the body summarized after it
    # (k8s.io/apiserver handlers/rest.go transformDecodeError, summarizeData)
    assert answer["message"] == (
        "the object provided is unrecognized (must be of type SelfSubjectAccessReview): "
        f"yaml: document contains excessive aliasing ({body[:30].hex()} ...)")


async def test_a_few_aliases_still_load(api: API) -> None:
    """Aliases within go-yaml's ratio are ordinary YAML and still expand."""
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: aliased, labels: &l {a: b}, "
            b"annotations: *l}\ndata: {k: v}\n")
    status, answer = await api.post(CONFIGMAPS, None, raw=body,
                                    content_type="application/yaml")
    assert status == 201, answer
    assert answer["metadata"]["annotations"] == {"a": "b"}


def _nested_json(depth: int) -> bytes:
    # a ConfigMap whose annotations hold a deep value: rejected by decoding, whatever the type
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":'
            + inner + "}").encode()


async def test_json_nested_beyond_the_limit_is_400_not_a_recursion_error(api: API) -> None:
    """Go's scanner: 'invalid character '[' exceeded max depth' (encoding/json scanner.go)."""
    for depth in (MAX_DEPTH + 1, 600, 5000, 100_000):
        for query in ("", "?fieldValidation=Ignore"):
            status, answer = await api.post(CONFIGMAPS + query, None, raw=_nested_json(depth))
            assert status == 400, (depth, answer)
            assert "json parse error: invalid character '[' exceeded max depth" in (
                answer["message"]), answer["message"]
    # a string full of brackets is no nesting at all
    flat = {"metadata": {"name": "flat"}, "data": {"k": "[" * 5000}}
    assert (await api.post(CONFIGMAPS, flat))[0] == 201


async def test_yaml_nested_beyond_the_limit_is_400(api: API) -> None:
    for depth in (MAX_DEPTH + 1, 483, 5000):
        flow = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\nx: " + (
            b"[" * depth + b"]" * depth) + b"\n"
        block = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\nx:\n" + b"".join(
            b"  " * i + b"- \n" for i in range(1, depth + 1))
        for body in (flow, block) if depth < 1000 else (flow,):
            status, answer = await api.post(CONFIGMAPS, None, raw=body,
                                            content_type="application/yaml")
            assert status == 400, (depth, answer)
            assert f"exceeded max depth of {MAX_DEPTH}" in answer["message"], answer


async def test_an_apply_nested_too_deep_is_400(api: API) -> None:
    body = _nested_json(1000)
    status, answer = await api.patch(
        CONFIGMAPS + "/deep?fieldManager=m", None, raw=body,
        content_type="application/apply-patch+yaml")
    assert status == 400, answer
    assert "exceeded max depth" in answer["message"]


async def test_json_patch_copies_are_capped_by_accumulated_size(api: API) -> None:
    """evanphx/json-patch v4 ``copy``: once the copies add more than AccumulatedCopySizeLimit
    (3 MiB, k8s.io/apiserver/pkg/server/config.go JSONPatchMaxCopyBytes) the patch fails,
    answered as every failed operation is (422, endpoints/handlers/patch.go)."""
    status, _ = await api.post(CONFIGMAPS, {"metadata": {"name": "doubling"},
                                            "data": {"k": "x" * 1000}})
    assert status == 201
    ops: list[Any] = [{"op": "add", "path": "/metadata/annotations",
                       "value": {"a": ["x" * 1000]}}]
    ops += [{"op": "copy", "from": "/metadata/annotations/a",
             "path": "/metadata/annotations/a/-"} for _ in range(14)]
    body = orjson.dumps(ops)
    assert len(body) < 2400
    status, answer = await api.patch(CONFIGMAPS + "/doubling", None, raw=body,
                                     content_type="application/json-patch+json")
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert answer["message"] == GENERIC_422_MESSAGE
    # copies within the limit apply
    copies = [{"op": "copy", "from": "/data/k", "path": f"/data/k{i}"} for i in range(3)]
    status, answer = await api.patch(CONFIGMAPS + "/doubling", None, raw=orjson.dumps(copies),
                                     content_type="application/json-patch+json")
    assert status == 200, answer
    assert len(answer["data"]) == 4


async def test_patches_cannot_nest_an_object_beyond_the_limit(api: API) -> None:
    """Each body is shallow, but moving a deep value under itself deepens the object: the
    patched object is checked as Go's decoder checks the patched JSON it decodes."""
    half = MAX_DEPTH // 2
    deep: Any = []
    for _ in range(half):
        deep = [deep]
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deepening"}}
    assert (await api.post(CONFIGMAPS, obj))[0] == 201
    path = CONFIGMAPS + "/deepening"
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
           {"op": "add", "path": "/x", "value": deep},
           {"op": "copy", "from": "/x", "path": "/x" + "/0" * (half - 1) + "/-"},
           {"op": "copy", "from": "/x", "path": "/x" + "/0" * (half - 1) + "/-"}]
    status, answer = await api.patch(path, ops, "application/json-patch+json")
    assert status == 422, answer
    assert answer["message"] == GENERIC_422_MESSAGE
    status, answer = await api.get(path)
    assert "x" not in answer and "annotations" not in answer["metadata"]


async def test_an_alias_inside_its_own_anchor_is_refused(api: API) -> None:
    """An alias inside the node its anchor names would make a value that contains itself:
    go-yaml v2 (sigs.k8s.io/yaml/goyaml.v2 decode.go, ``decoder.alias``) refuses it, for a
    create as for a server-side apply (found by the request fuzzer)."""
    message = ("the object provided is unrecognized (must be of type ConfigMap): "
               "yaml: anchor 'a' value contains itself ({})")
    for body in (b"&a [*a]", b"apiVersion: v1\nkind: ConfigMap\nmetadata: &a {name: x, y: *a}\n"):
        status, answer = await api.post(CONFIGMAPS, None, raw=body,
                                        content_type="application/yaml")
        summary = body[:30].hex() + (" ..." if len(body) > 30 else "")
        assert (status, answer["reason"], answer["message"]) == (
            400, "BadRequest", message.format(summary))
    status, answer = await api.patch(f"{CONFIGMAPS}/x?fieldManager=m", None, raw=b"&a [*a]",
                                     content_type="application/apply-patch+yaml")
    assert (status, answer["reason"]) == (400, "BadRequest"), answer
    assert answer["message"].endswith("yaml: anchor 'a' value contains itself"), answer


def _nested(levels: int, leaf: Any = "x") -> Any:
    value: Any = leaf
    for i in range(levels):
        value = {"k": value, "s": "]]}{["} if i % 2 else [value, '\\"{[']
    return value


def _walked_depth(value: Any) -> int:
    """The containers' nesting of a value, by walking it (the reference)."""
    if isinstance(value, dict):
        return 1 + max((_walked_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_walked_depth(v) for v in value), default=0)
    return 0


def test_a_patched_objects_depth_is_read_from_its_json_not_walked(
        calls_to: CallsTo) -> None:
    """A patched object deeper than Go's decoder takes (encoding/json scanner.go
    ``maxNestingDepth``) is refused; its depth is found from its JSON text in C-speed
    passes (strings with brackets and escaped quotes left out), not by visiting every
    node of it at each patch, with the same answer at the limit; what orjson will not
    encode (past its own 254 levels, an integer beyond 64 bits) is still walked."""
    from setpoint.cluster.serializer import decodelimits

    walked = calls_to(decodelimits, "_walked_too_deep")
    cases = [_nested(n) for n in (0, 1, 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1)]
    cases += [_nested(MAX_DEPTH - 1, {}), _nested(MAX_DEPTH, []), _nested(MAX_DEPTH, {"a": []}),
              {"many": [{"f:x": {}} for _ in range(500)]}, 7, "text"]
    for value in cases:
        assert decodelimits.nested_too_deep(value) == (_walked_depth(value) > MAX_DEPTH)
    assert walked == []
    beyond = [_nested(300), {"big": 2**70, "deep": _nested(MAX_DEPTH + 1)}, {"big": 2**70}]
    for value in beyond:
        assert decodelimits.nested_too_deep(value) == (_walked_depth(value) > MAX_DEPTH)
    assert len(walked) == len(beyond)
