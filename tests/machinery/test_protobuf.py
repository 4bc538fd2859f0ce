"""Kubernetes protobuf bodies decode to the JSON the same object has, and encode back."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from setpoint.machinery import protobuf as pb
from setpoint.machinery.errors import StatusError
from setpoint.machinery.protobuf import wire
from setpoint.machinery.schema import definitions
from tests.conftest import SHARED, kubectl_path

GOLDEN = SHARED / "conformance" / "golden"
META = "k8s.io.apimachinery.pkg.apis.meta.v1."

# -- what kubectl really sends -----------------------------------------------------------------

# name -> (kubectl arguments, arguments after "--"); each also runs with --dry-run=client -o json
KUBECTL_COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "namespace": (["create", "namespace", "foo"], []),
    "configmap": (["create", "configmap", "cm1", "-n", "default", "--from-literal=a=b",
                   "--from-literal=empty="], []),
    "secret": (["create", "secret", "generic", "s1", "-n", "default",
                "--from-literal=user=admin", "--from-literal=empty="], []),
    "deployment": (["create", "deployment", "web", "-n", "default", "--image=nginx:1.25",
                    "--replicas=3", "--port=80"], []),
    "service": (["create", "service", "nodeport", "np1", "-n", "default", "--tcp=80:8080",
                 "--node-port=30080"], []),
    "job": (["create", "job", "j1", "-n", "default", "--image=busybox"], ["echo", "hi"]),
    "cronjob": (["create", "cronjob", "cj1", "-n", "default", "--image=busybox",
                 "--schedule=*/5 * * * *"], []),
    "quota": (["create", "quota", "q1", "-n", "default", "--hard=cpu=1,memory=1Gi,pods=10"], []),
    "priorityclass": (["create", "priorityclass", "pc1", "--value=1000",
                       "--description=test"], []),
    "pdb": (["create", "poddisruptionbudget", "pdb1", "-n", "default", "--selector=app=web",
             "--min-available=50%"], []),
    "ingress": (["create", "ingress", "ing1", "-n", "default",
                 "--rule=foo.com/bar=svc1:http,tls=my-cert"], []),
    "rolebinding": (["create", "rolebinding", "rb1", "-n", "default", "--role=r1",
                     "--user=alice"], []),
    "token": (["create", "token", "sa1", "-n", "default"], []),
}


async def _run(*args: str) -> bytes:
    proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.DEVNULL)
    out, _ = await proc.communicate()
    return out


async def _capture(kubectl: str, tmp: Path) -> dict[str, tuple[bytes, Any]]:
    """Each command's request body, sent to a recording server, and its dry-run JSON."""
    bodies: dict[str, bytes] = {}

    async def record(request: web.Request) -> web.Response:
        if request.method == "POST":
            assert request.content_type == pb.CONTENT_TYPE
            bodies[request.path] = await request.read()
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                  "message": "recorded", "reason": "Conflict", "code": 409}
        return web.json_response(status, status=409)

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))
    base = [kubectl, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp / "cache")]
    try:
        # --validate=false spares kubectl the OpenAPI look-up field validation would make
        sends = [_run(*base, *args, *(["--validate=false"] if args[1] != "token" else []),
                      *(["--", *tail] if tail else []))
                 for args, tail in KUBECTL_COMMANDS.values()]
        dry_runs = [_run(*base, *args, "--dry-run=client", "-o", "json",
                         *(["--", *tail] if tail else []))
                    for args, tail in KUBECTL_COMMANDS.values()]
        results = await asyncio.gather(*sends, *dry_runs)
    finally:
        await runner.cleanup()
    expected = dict(zip(KUBECTL_COMMANDS, results[len(KUBECTL_COMMANDS):], strict=True))
    by_path = dict(zip(KUBECTL_COMMANDS, (
        "/api/v1/namespaces", "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/secrets", "/apis/apps/v1/namespaces/default/deployments",
        "/api/v1/namespaces/default/services", "/apis/batch/v1/namespaces/default/jobs",
        "/apis/batch/v1/namespaces/default/cronjobs",
        "/api/v1/namespaces/default/resourcequotas",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        "/api/v1/namespaces/default/serviceaccounts/sa1/token",
    ), strict=True))
    return {name: (bodies[path], json.loads(expected[name]) if expected[name] else None)
            for name, path in by_path.items()}


@pytest.fixture(scope="module")
def kubectl_bodies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, Any]]:
    return asyncio.run(_capture(kubectl_path(), tmp_path_factory.mktemp("kubectl")))


TOKEN_REQUEST = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                 "metadata": {"creationTimestamp": None}, "spec": {"audiences": None},
                 "status": {"token": "", "expirationTimestamp": None}}


@pytest.mark.parametrize("name", list(KUBECTL_COMMANDS))
def test_kubectl_protobuf_body_decodes_to_the_json_kubectl_would_send(
        kubectl_bodies: dict[str, tuple[bytes, Any]], name: str) -> None:
    body, dry_run = kubectl_bodies[name]
    expected = TOKEN_REQUEST if name == "token" else dry_run
    assert pb.decode(body) == expected


@pytest.mark.parametrize("name", list(KUBECTL_COMMANDS))
def test_reencoding_a_kubectl_body_gives_kubectls_exact_bytes(
        kubectl_bodies: dict[str, tuple[bytes, Any]], name: str) -> None:
    body, _ = kubectl_bodies[name]
    assert pb.encode(pb.decode(body)) == body


def test_kubectl_secret_keeps_bytes_as_base64_and_empty_values(
        kubectl_bodies: dict[str, tuple[bytes, Any]]) -> None:
    secret = pb.decode(kubectl_bodies["secret"][0])
    assert secret["data"] == {"user": base64.b64encode(b"admin").decode(), "empty": ""}
    assert "type" not in secret  # the empty string gogo writes is omitempty in JSON


# -- the real apiserver's answers round-trip ---------------------------------------------------

_MICRO_TIMES = {"eventTime", "renewTime", "acquireTime"}


def _times(value: Any, key: str | None = None) -> Any:
    """The recordings' ``<time>`` placeholders as times of the field's own format."""
    if isinstance(value, dict):
        return {k: _times(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_times(v, key) for v in value]
    if value == "<time>":
        return "2024-01-01T00:00:00.000000Z" if key in _MICRO_TIMES else "2024-01-01T00:00:00Z"
    return value


def _golden_bodies() -> list[Any]:
    out = []
    for path in sorted(GOLDEN.glob("*.json")):
        for step in json.loads(path.read_text())["steps"]:
            body = (step.get("response") or {}).get("body")
            if not (isinstance(body, dict) and isinstance(body.get("apiVersion"), str)
                    and isinstance(body.get("kind"), str)
                    and pb.supports(body["apiVersion"], body["kind"])):
                continue
            if not all(isinstance(i, dict) for i in body.get("items", ())):
                continue  # a list the recorder summarised as names
            if body["kind"] == "APIGroupList" and "groups" not in body:
                continue  # the recorder dropped the server's groups
            out.append(pytest.param(_times(body), id=f"{path.stem}:{step['name']}"))
    return out


@pytest.mark.parametrize("body", _golden_bodies())
def test_apiserver_answers_round_trip_through_protobuf(body: dict[str, Any]) -> None:
    expected = body
    if body.get("items") == []:
        expected = {**body, "items": None}  # Go reads an empty repeated field back as nil
    if body["kind"] == "PartialObjectMetadataList":
        # protobuf has no TypeMeta for list items; the apiserver fills it in JSON only
        expected = {**body, "items": [{k: v for k, v in i.items()
                                       if k not in ("kind", "apiVersion")}
                                      for i in body["items"]]}
    assert pb.decode(pb.encode(body)) == expected


def test_golden_corpus_covers_the_common_kinds() -> None:
    kinds = {p.values[0]["kind"] for p in _golden_bodies()}
    assert {"Namespace", "ConfigMap", "Secret", "Deployment", "Pod", "Lease", "Event",
            "Status", "Scale"} <= kinds


# -- every built-in kind, every field -----------------------------------------------------------

_SAMPLES = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "2024-01-02T03:04:05Z",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "2024-01-02T03:04:05.123456Z",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "1500m",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "50%",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {"kind": "X", "n": [1, 2]},
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"f:a": {}},
}


def _sample(node: dict[str, Any]) -> Any:
    """A value for every property of an OpenAPI node, none of them zero."""
    defs = definitions().raw
    ref = node.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[1]
        if name in _SAMPLES:
            return _SAMPLES[name]
        node = defs[name]
    kind = node.get("type")
    kind = next(t for t in kind if t != "null") if isinstance(kind, list) else kind
    assert isinstance(kind, str), node
    if "properties" in node:
        typed = "x-kubernetes-group-version-kind" in node
        return {k: _sample(v) for k, v in node["properties"].items()
                if not (typed and k in ("apiVersion", "kind"))}  # a kind's TypeMeta is no field
    if kind == "array":
        return [_sample(node["items"])]
    if kind == "object":
        extra = node.get("additionalProperties")
        return {"k": _sample(extra)} if isinstance(extra, dict) else {}
    return {"string": "eA==" if node.get("format") == "byte" else "s", "integer": 7,
            "number": 1.5, "boolean": True}[kind]


def _kinds() -> list[Any]:
    out = []
    for key in pb.table().kinds:
        group, version, kind = key.split("/")
        name = definitions().name_for_kind(group, version, kind)
        if name is not None:
            out.append(pytest.param(f"{group}/{version}" if group else version, kind, name,
                                    id=key))
    return out


@pytest.mark.parametrize(("api_version", "kind", "definition"), _kinds())
def test_every_field_of_every_builtin_kind_round_trips(api_version: str, kind: str,
                                                        definition: str) -> None:
    obj = {"kind": kind, "apiVersion": api_version,
           **_sample({"$ref": f"#/$defs/{definition}"})}
    assert pb.decode(pb.encode(obj)) == obj


def test_table_covers_every_served_builtin_kind() -> None:
    assert len(_kinds()) >= 150
    assert pb.table().source["kubectl"].startswith("v1.32.")


# -- the JSON mapping, field by field -----------------------------------------------------------


def _message(name: str, obj: Any) -> Any:
    return pb.decode_message(name, pb.encode_message(name, obj))


def test_zero_scalars_follow_the_json_tags() -> None:
    # ObjectMeta.name is omitempty; Event.reportingComponent is not; replicas is a pointer
    raw = (wire.length_delimited(1, b"") + wire.length_delimited(3, b"")
           + wire.tag(7, wire.VARINT) + wire.varint(0))
    assert pb.decode_message(META + "ObjectMeta", raw) == {}
    event = pb.decode_message("k8s.io.api.core.v1.Event",
                              wire.length_delimited(14, b"") + wire.length_delimited(15, b""))
    assert event == {"reportingComponent": "", "reportingInstance": ""}
    spec = pb.decode_message("k8s.io.api.apps.v1.DeploymentSpec",
                             wire.tag(1, wire.VARINT) + wire.varint(0))
    assert spec == {"replicas": 0}


def test_times_have_the_apiserver_formats() -> None:
    meta = _message(META + "ObjectMeta", {"creationTimestamp": "2024-05-06T07:08:09Z"})
    assert meta == {"creationTimestamp": "2024-05-06T07:08:09Z"}
    spec = _message("k8s.io.api.coordination.v1.LeaseSpec",
                    {"renewTime": "2024-05-06T07:08:09.000010Z"})
    assert spec == {"renewTime": "2024-05-06T07:08:09.000010Z"}
    # a zero Time is an empty message and JSON null; Time keeps whole seconds only
    assert pb.decode_message(META + "Time", b"") is None
    nanos = wire.tag(1, wire.VARINT) + wire.varint(1) + wire.tag(2, wire.VARINT) + wire.varint(5)
    assert pb.decode_message(META + "Time", nanos) == "1970-01-01T00:00:01Z"
    assert pb.decode_message(META + "MicroTime", nanos) == "1970-01-01T00:00:01.000000Z"


def test_int_or_string_quantity_and_raw_extension_keep_their_json_forms() -> None:
    port = "k8s.io.api.core.v1.ServicePort"
    assert _message(port, {"port": 80, "targetPort": 8080})["targetPort"] == 8080
    assert _message(port, {"port": 80, "targetPort": "http"})["targetPort"] == "http"
    limits = _message("k8s.io.api.core.v1.ResourceRequirements", {"limits": {"cpu": "500m"}})
    assert limits == {"limits": {"cpu": "500m"}}
    revision = {"kind": "ControllerRevision", "apiVersion": "apps/v1",
                "metadata": {"name": "r"}, "data": {"spec": {"x": [1, None]}}, "revision": 2}
    assert pb.decode(pb.encode(revision))["data"] == {"spec": {"x": [1, None]}}


def test_inline_structs_merge_into_their_parent() -> None:
    probe = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}
    assert _message("k8s.io.api.core.v1.Probe", probe) == probe
    volume = {"name": "v", "configMap": {"name": "cm", "optional": False}}
    assert _message("k8s.io.api.core.v1.Volume", volume) == volume


def test_fields_whose_protobuf_name_is_the_go_name_use_the_json_name() -> None:
    config = {"kind": "ValidatingWebhookConfiguration",
              "apiVersion": "admissionregistration.k8s.io/v1",
              "metadata": {"name": "w", "creationTimestamp": None},
              "webhooks": [{"name": "a.example.com", "sideEffects": "None",
                            "admissionReviewVersions": ["v1"],
                            "clientConfig": {"url": "https://x"}}]}
    assert pb.decode(pb.encode(config)) == config


def test_slice_wrappers_are_json_arrays() -> None:
    review = {"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
              "metadata": {"creationTimestamp": None},
              "spec": {"user": "u", "extra": {"scopes": ["a", "b"]}}, "status": {"allowed": False}}
    assert pb.decode(pb.encode(review)) == review


def test_packed_repeated_scalars_are_accepted() -> None:
    # gogo writes proto2 repeated scalars unpacked, but a decoder must take both forms
    packed = wire.length_delimited(3, wire.varint(1) + wire.varint(2) + wire.varint(300))
    unpacked = wire.tag(3, wire.VARINT) + wire.varint(4)
    rule = pb.decode_message("k8s.io.api.batch.v1.PodFailurePolicyOnExitCodesRequirement",
                             wire.length_delimited(2, b"In") + packed + unpacked)
    assert rule == {"operator": "In", "values": [1, 2, 300, 4]}


def test_empty_slices_without_omitempty_read_back_as_null() -> None:
    empty = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"},
             "items": []}
    assert pb.decode(pb.encode(empty)) == {**empty, "items": None}
    spec = pb.decode_message("k8s.io.api.authentication.v1.TokenRequestSpec", b"")
    assert spec == {"audiences": None}


# -- the envelope and the apiserver's errors ---------------------------------------------------


def test_missing_magic_is_the_apiservers_bad_request() -> None:
    with pytest.raises(StatusError) as err:
        pb.decode_body(b'{"kind":"Namespace"}', api_version="v1", kind="Namespace")
    assert err.value.code == 400
    assert str(err.value.message).startswith(
        "the object provided is unrecognized (must be of type Namespace): provided data does not "
        "appear to be a protobuf message, expected prefix [107 56 115 0] ({\"kind\"")


def test_an_envelope_of_an_unknown_kind_cannot_be_handled() -> None:
    body = pb.write_unknown(pb.Unknown("v1", "Nonsense", b""))
    with pytest.raises(StatusError) as err:
        pb.decode_body(body, api_version="v1", kind="Namespace")
    assert err.value.code == 400
    assert str(err.value.message).startswith(
        'Nonsense in version "v1" cannot be handled as a Namespace: no kind "Nonsense"')


def test_an_envelope_without_a_type_takes_the_requests() -> None:
    raw = pb.encode_message("k8s.io.api.core.v1.ConfigMap", {"metadata": {"name": "x"}})
    body = pb.write_unknown(pb.Unknown("", "", raw))
    got = pb.decode_body(body, api_version="v1", kind="ConfigMap")
    assert got["kind"] == "ConfigMap" and got["metadata"]["name"] == "x"


@pytest.mark.parametrize("data", [
    pb.encode({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "n"}})[:-9],
    b"k8s\x00\x0f",
    b"k8s\x00",
])
def test_truncated_or_malformed_bodies_raise_protobuf_errors(data: bytes) -> None:
    with pytest.raises(pb.ProtobufError):
        pb.decode(data)


def test_wrong_wire_types_are_rejected() -> None:
    with pytest.raises(pb.ProtobufError):
        pb.decode_message(META + "ObjectMeta", wire.tag(1, wire.VARINT) + wire.varint(3))


def test_custom_resources_and_tables_have_no_protobuf_form() -> None:
    assert pb.supports("apps/v1", "Deployment")
    assert pb.supports("v1", "DeleteOptions") and pb.supports("policy/v1", "DeleteOptions")
    assert not pb.supports("example.com/v1", "Widget")
    assert not pb.supports("meta.k8s.io/v1", "Table")
    with pytest.raises(pb.ProtobufError):
        pb.encode({"kind": "Widget", "apiVersion": "example.com/v1"})


def test_encoding_reports_the_path_of_a_badly_typed_value() -> None:
    with pytest.raises(pb.ProtobufError, match=r"spec\.replicas"):
        pb.encode({"kind": "Deployment", "apiVersion": "apps/v1", "spec": {"replicas": "3"}})


def test_subresource_and_delete_bodies_decode() -> None:
    eviction = {"kind": "Eviction", "apiVersion": "policy/v1",
                "metadata": {"name": "p", "namespace": "d", "creationTimestamp": None},
                "deleteOptions": {"gracePeriodSeconds": 0, "propagationPolicy": "Background"}}
    assert pb.decode(pb.encode(eviction)) == eviction
    binding = {"kind": "Binding", "apiVersion": "v1",
               "metadata": {"name": "p", "creationTimestamp": None},
               "target": {"kind": "Node", "name": "n1"}}
    assert pb.decode(pb.encode(binding)) == binding
    delete = {"kind": "DeleteOptions", "apiVersion": "v1",
              "preconditions": {"uid": "u", "resourceVersion": "7"}, "dryRun": ["All"]}
    assert pb.decode(pb.encode(delete)) == delete
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
             "metadata": {"name": "d", "creationTimestamp": None}, "spec": {"replicas": 0},
             "status": {"replicas": 0}}
    # ScaleSpec.replicas is omitempty, ScaleStatus.replicas is not: as the apiserver's JSON
    assert pb.decode(pb.encode(scale)) == {**scale, "spec": {}}


# -- watch streams -------------------------------------------------------------------------------


def test_watch_frames_round_trip_and_wait_for_complete_frames() -> None:
    cm = {"kind": "ConfigMap", "apiVersion": "v1",
          "metadata": {"name": "a", "resourceVersion": "3", "creationTimestamp": None},
          "data": {"k": "v"}}
    stream = pb.encode_watch_event("ADDED", cm) + pb.encode_watch_event("DELETED", cm)
    events, rest = pb.decode_watch_events(stream[:-3])
    assert events == [{"type": "ADDED", "object": cm}] and len(rest) > 0
    events, rest = pb.decode_watch_events(stream)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"] and rest == b""
