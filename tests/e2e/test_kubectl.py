"""The real kubectl 1.32 against ``setpoint cluster up``: what users type, answered as a
real kube-apiserver answers it."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator

import pytest
import yaml

from tests.e2e.conftest import Kubectl, unique, wait_until


def _pump(stdout: Iterator[str], lines: queue.Queue[str]) -> None:
    """Hand a watching kubectl's output lines to the test as they come."""
    for line in stdout:
        lines.put(line)

GIZMO_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [{short}]}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {{}}
      scale: {{specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}
    additionalPrinterColumns:
    - {{name: Replicas, type: integer, jsonPath: .spec.replicas}}
    - {{name: Color, type: string, jsonPath: .spec.color}}
    - {{name: Note, type: string, jsonPath: .spec.note, priority: 1}}
    schema:
      openAPIV3Schema:
        type: object
        description: A Gizmo is a small test device.
        properties:
          spec:
            type: object
            description: What the gizmo should be.
            properties:
              replicas: {{type: integer, description: How many copies to run.}}
              color: {{type: string, description: The colour of the gizmo.}}
              note: {{type: string}}
          status:
            type: object
            properties:
              replicas: {{type: integer}}
              conditions:
                type: array
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {{type: string}}
                    status: {{type: string}}
                    reason: {{type: string}}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
      - {name: sidecar, image: "busybox:1.36", command: [sleep, "3600"]}
"""


@pytest.fixture
def gizmos(kubectl: Kubectl, namespace: str) -> Iterator[str]:
    """A Gizmo CRD in a group of its own, Established; yields the resource name."""
    group = f"{namespace}.example.com"
    kubectl.run("apply", "-f", "-", stdin=GIZMO_CRD.format(group=group, short=short_name(group)))
    kubectl.run("wait", "--for=condition=Established", f"crd/gizmos.{group}", "--timeout=30s")
    yield f"gizmos.{group}"
    kubectl.run("delete", "crd", f"gizmos.{group}", "--wait=false", ok=None)


def short_name(group: str) -> str:
    """A short name of the test's own: every test's CRD lives in the one shared server."""
    return "gz" + group.split(".", 1)[0].rsplit("-", 1)[-1]


def apply_gizmo(kubectl: Kubectl, ns: str, resource: str, name: str = "g1",
                replicas: int = 1) -> None:
    group = resource.split(".", 1)[1]
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": name},
        "spec": {"replicas": replicas, "color": "blue", "note": "hello"}}))


def configmap(kubectl: Kubectl, ns: str, name: str, **data: str) -> None:
    """Create a ConfigMap with ``apply`` (JSON), so only the tests of ``create`` depend on it."""
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}))


def squash(text: str) -> str:
    """Collapse runs of spaces: column alignment is kubectl's business, not the server's."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines())


def table_rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


# -- create and get ------------------------------------------------------------------------

def test_create_configmap_subcommand(kubectl: Kubectl, namespace: str) -> None:
    # kubectl's typed client sends this body as protobuf
    out = kubectl.run("create", "configmap", "made", "--from-literal=color=blue",
                      "--from-literal=size=2", "-n", namespace)
    assert out.stdout.strip() == "configmap/made created"
    got = kubectl.json("get", "configmap", "made", "-n", namespace)
    assert got["data"] == {"color": "blue", "size": "2"}
    managers = [m["manager"] for m in kubectl.json(
        "get", "configmap", "made", "-n", namespace, "--show-managed-fields")[
        "metadata"]["managedFields"]]
    assert managers == ["kubectl-create"]


def test_get_in_every_output_format(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "cm1", color="blue")

    assert kubectl.run("get", "configmap", "cm1", "-n", namespace,
                       "-o", "name").stdout.strip() == "configmap/cm1"
    as_json = kubectl.json("get", "configmap", "cm1", "-n", namespace)
    assert as_json["data"] == {"color": "blue"}
    assert as_json["metadata"]["namespace"] == namespace
    assert as_json["metadata"]["uid"] and as_json["metadata"]["resourceVersion"]
    as_yaml = kubectl.yaml("get", "configmap", "cm1", "-n", namespace)
    assert as_yaml["kind"] == "ConfigMap" and as_yaml["apiVersion"] == "v1"
    assert as_yaml["metadata"]["uid"] == as_json["metadata"]["uid"]

    wide = table_rows(kubectl.run("get", "configmap", "cm1", "-n", namespace,
                                  "-o", "wide").stdout)
    assert wide[0] == ["NAME", "DATA", "AGE"]
    assert wide[1][:2] == ["cm1", "1"]

    columns = table_rows(kubectl.run(
        "get", "configmaps", "-n", namespace,
        "-o", "custom-columns=NAME:.metadata.name,COLOR:.data.color,NS:.metadata.namespace",
    ).stdout)
    assert columns[0] == ["NAME", "COLOR", "NS"]
    assert ["cm1", "blue", namespace] in columns[1:]


def test_get_lists_the_namespace_defaults(kubectl: Kubectl, namespace: str) -> None:
    wait_until(lambda: set(kubectl.run(
        "get", "serviceaccounts,configmaps", "-n", namespace, "-o", "name").stdout.split())
        >= {"serviceaccount/default", "configmap/kube-root-ca.crt"})


def test_create_deployment_subcommand(kubectl: Kubectl, namespace: str) -> None:
    out = kubectl.run("create", "deployment", "made", "--image=nginx:1.27", "--replicas=2",
                      "-n", namespace)
    assert out.stdout.strip() == "deployment.apps/made created"
    got = kubectl.json("get", "deployment", "made", "-n", namespace)
    assert got["spec"]["replicas"] == 2
    assert got["spec"]["selector"] == {"matchLabels": {"app": "made"}}


def test_get_deployment_wide_shows_containers_images_and_selector(kubectl: Kubectl,
                                                                  namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    rows = table_rows(kubectl.run("get", "deployment", "web", "-n", namespace,
                                  "-o", "wide").stdout)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS",
                       "IMAGES", "SELECTOR"]
    assert rows[1][0] == "web"
    assert rows[1][-3:] == ["web,sidecar", "nginx:1.27,busybox:1.36", "app=web"]


def test_get_unknown_object_is_not_found(kubectl: Kubectl, namespace: str) -> None:
    out = kubectl.run("get", "configmap", "missing", "-n", namespace, ok=False)
    assert 'Error from server (NotFound): configmaps "missing" not found' in out.stderr


def test_get_custom_resource_wide_shows_printer_columns(kubectl: Kubectl, namespace: str,
                                                        gizmos: str) -> None:
    apply_gizmo(kubectl, namespace, gizmos)
    rows = table_rows(kubectl.run("get", gizmos, "-n", namespace).stdout)
    # printer columns replace the default AGE column (golden kubectl-crd-cr-workflow get-wide)
    assert rows == [["NAME", "REPLICAS", "COLOR"], ["g1", "1", "blue"]]
    wide = table_rows(kubectl.run("get", gizmos, "-n", namespace, "-o", "wide").stdout)
    assert wide == [["NAME", "REPLICAS", "COLOR", "NOTE"], ["g1", "1", "blue", "hello"]]
    short = kubectl.run("get", short_name(gizmos.split(".", 1)[1]), "-n", namespace,
                        "-o", "name").stdout.split()
    assert short == [f"gizmo.{gizmos.split('.', 1)[1]}/g1"]


def test_get_watch_prints_changes_as_they_happen(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "before")
    proc = kubectl.popen("get", "configmaps", "-n", namespace, "-w", "--output-watch-events",
                         "-o", "custom-columns=EVENT:.type,NAME:.object.metadata.name")
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=_pump, args=(stdout, lines), daemon=True).start()
    seen: list[str] = []

    def saw(text: str) -> bool:
        while True:
            try:
                seen.append(lines.get_nowait().strip())
            except queue.Empty:
                return any(text in line for line in seen)

    try:
        wait_until(lambda: saw("before"), timeout=20)
        configmap(kubectl, namespace, "during")
        wait_until(lambda: saw("during"), timeout=20)
        kubectl.run("delete", "configmap", "during", "-n", namespace)
        wait_until(lambda: saw("DELETED"), timeout=20)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert ["ADDED", "before"] in [line.split() for line in seen]
    assert ["ADDED", "during"] in [line.split() for line in seen]
    assert ["DELETED", "during"] in [line.split() for line in seen]


# -- apply ---------------------------------------------------------------------------------

def test_apply_creates_configures_and_leaves_unchanged(kubectl: Kubectl, namespace: str) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: '1'}\n"
    out = kubectl.run("apply", "-n", namespace, "-f", "-", stdin=manifest)
    assert out.stdout.strip() == "configmap/settings created"
    first = kubectl.json("get", "configmap", "settings", "-n", namespace)
    annotations = first["metadata"]["annotations"]
    assert json.loads(annotations["kubectl.kubernetes.io/last-applied-configuration"])[
        "data"] == {"a": "1"}

    out = kubectl.run("apply", "-n", namespace, "-f", "-", stdin=manifest)
    assert out.stdout.strip() == "configmap/settings unchanged"
    assert kubectl.json("get", "configmap", "settings", "-n", namespace)["metadata"][
        "resourceVersion"] == first["metadata"]["resourceVersion"]

    out = kubectl.run("apply", "-n", namespace, "-f", "-",
                      stdin=manifest.replace("{a: '1'}", "{b: '2'}"))
    assert out.stdout.strip() == "configmap/settings configured"
    # client-side apply deletes what the previous apply set and this one does not
    assert kubectl.json("get", "configmap", "settings", "-n", namespace)["data"] == {"b": "2"}


def test_apply_deployment_twice_is_unchanged(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    out = kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    assert out.stdout.strip() == "deployment.apps/web unchanged"
    deployment = kubectl.json("get", "deployment", "web", "-n", namespace)
    assert deployment["metadata"]["generation"] == 1
    # the defaults clients rely on
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert deployment["spec"]["template"]["spec"]["containers"][0][
        "terminationMessagePath"] == "/dev/termination-log"


def test_apply_server_side_conflict_and_force(kubectl: Kubectl, namespace: str) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {key: one}\n"
    out = kubectl.run("apply", "--server-side", "--field-manager=alice", "-n", namespace,
                      "-f", "-", stdin=manifest)
    assert out.stdout.strip() == "configmap/shared serverside-applied"

    changed = manifest.replace("key: one", "key: two")
    out = kubectl.run("apply", "--server-side", "--field-manager=bob", "-n", namespace,
                      "-f", "-", stdin=changed, ok=False)
    assert "Apply failed with 1 conflict" in out.stderr
    assert 'conflict with "alice": .data.key' in out.stderr
    assert kubectl.json("get", "configmap", "shared", "-n", namespace)["data"] == {"key": "one"}

    kubectl.run("apply", "--server-side", "--field-manager=bob", "--force-conflicts",
                "-n", namespace, "-f", "-", stdin=changed)
    after = kubectl.json("get", "configmap", "shared", "-n", namespace, "--show-managed-fields")
    assert after["data"] == {"key": "two"}
    managers = {(m["manager"], m["operation"]): m for m in after["metadata"]["managedFields"]}
    # alice lost the only field it owned, and a manager that owns nothing is dropped
    assert set(managers) == {("bob", "Apply")}
    assert managers[("bob", "Apply")]["fieldsV1"] == {"f:data": {"f:key": {}}}


def test_apply_server_side_same_manager_takes_over_without_conflict(
        kubectl: Kubectl, namespace: str) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\ndata: {k: v1}\n"
    kubectl.run("apply", "--server-side", "-n", namespace, "-f", "-", stdin=manifest)
    kubectl.run("apply", "--server-side", "-n", namespace, "-f", "-",
                stdin=manifest.replace("k: v1", "k: v2"))
    got = kubectl.json("get", "configmap", "mine", "-n", namespace, "--show-managed-fields")
    assert got["data"] == {"k": "v2"}
    assert [(m["manager"], m["operation"]) for m in got["metadata"]["managedFields"]] == [
        ("kubectl", "Apply")]


def test_apply_server_side_custom_resource(kubectl: Kubectl, namespace: str,
                                           gizmos: str) -> None:
    group = gizmos.split(".", 1)[1]
    manifest = yaml.safe_dump({"apiVersion": f"{group}/v1", "kind": "Gizmo",
                               "metadata": {"name": "ssa"},
                               "spec": {"replicas": 2, "color": "green"}})
    out = kubectl.run("apply", "--server-side", "-n", namespace, "-f", "-", stdin=manifest)
    assert out.stdout.strip() == f"gizmo.{group}/ssa serverside-applied"
    assert kubectl.json("get", gizmos, "ssa", "-n", namespace)["spec"] == {
        "replicas": 2, "color": "green"}


# -- patch ---------------------------------------------------------------------------------

def test_patch_strategic_merges_containers_by_name(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    out = kubectl.run("patch", "deployment", "web", "-n", namespace, "--type", "strategic", "-p",
                      '{"spec":{"template":{"spec":{"containers":'
                      '[{"name":"web","image":"nginx:1.28"}]}}}}')
    assert out.stdout.strip() == "deployment.apps/web patched"
    got = kubectl.json("get", "deployment", "web", "-n", namespace)
    images = {c["name"]: c["image"] for c in got["spec"]["template"]["spec"]["containers"]}
    assert images == {"web": "nginx:1.28", "sidecar": "busybox:1.36"}
    assert got["metadata"]["generation"] == 2


def test_patch_strategic_delete_directive_removes_list_element(kubectl: Kubectl,
                                                               namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    kubectl.run("patch", "deployment", "web", "-n", namespace, "-p",
                '{"spec":{"template":{"spec":{"containers":'
                '[{"name":"sidecar","$patch":"delete"}]}}}}')
    got = kubectl.json("get", "deployment", "web", "-n", namespace)
    assert [c["name"] for c in got["spec"]["template"]["spec"]["containers"]] == ["web"]


def test_patch_merge_replaces_lists(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    kubectl.run("patch", "deployment", "web", "-n", namespace, "--type", "merge", "-p",
                '{"metadata":{"labels":{"tier":"front"}},"spec":{"template":{"spec":'
                '{"containers":[{"name":"only","image":"nginx:1.29"}]}}}}')
    got = kubectl.json("get", "deployment", "web", "-n", namespace)
    assert got["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert [c["name"] for c in got["spec"]["template"]["spec"]["containers"]] == ["only"]


def test_patch_json_adds_replaces_and_tests(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "jp", a="1")
    kubectl.run("patch", "configmap", "jp", "-n", namespace, "--type", "json", "-p",
                '[{"op":"test","path":"/data/a","value":"1"},'
                '{"op":"replace","path":"/data/a","value":"2"},'
                '{"op":"add","path":"/data/b","value":"3"}]')
    assert kubectl.json("get", "configmap", "jp", "-n", namespace)["data"] == {"a": "2", "b": "3"}

    failed = kubectl.run("patch", "configmap", "jp", "-n", namespace, "--type", "json", "-p",
                         '[{"op":"test","path":"/data/a","value":"nope"}]', ok=False)
    # a 422 Invalid without details (golden patch-json test-failure)
    assert "The request is invalid: the server rejected our request due to an error in our " \
           "request" in failed.stderr
    failed = kubectl.run("patch", "configmap", "jp", "-n", namespace, "--type", "json", "-p",
                         '[{"op":"remove","path":"/data/missing"}]', ok=False)
    assert "The request is invalid" in failed.stderr


def test_patch_custom_resource_merge_works_and_strategic_is_415(kubectl: Kubectl,
                                                                namespace: str,
                                                                gizmos: str) -> None:
    apply_gizmo(kubectl, namespace, gizmos)
    kubectl.run("patch", gizmos, "g1", "-n", namespace, "--type", "merge",
                "-p", '{"spec":{"color":"red"}}')
    assert kubectl.json("get", gizmos, "g1", "-n", namespace)["spec"]["color"] == "red"
    kubectl.run("patch", gizmos, "g1", "-n", namespace, "--type", "json",
                "-p", '[{"op":"replace","path":"/spec/color","value":"teal"}]')
    assert kubectl.json("get", gizmos, "g1", "-n", namespace)["spec"]["color"] == "teal"

    out = kubectl.run("patch", gizmos, "g1", "-n", namespace, "--type", "strategic",
                      "-p", '{"spec":{"color":"green"}}', ok=False)
    # golden kubectl-crd-cr-workflow patch-strategic-fails
    assert "error: application/strategic-merge-patch+json is not supported by " \
           f"{gizmos.split('.', 1)[1]}/v1, Kind=Gizmo: the body of the request was in an " \
           "unknown format - accepted media types include: application/json-patch+json, " \
           "application/merge-patch+json, application/apply-patch+yaml" in out.stderr


def test_patch_status_subresource_of_custom_resource(kubectl: Kubectl, namespace: str,
                                                     gizmos: str) -> None:
    apply_gizmo(kubectl, namespace, gizmos)
    kubectl.run("patch", gizmos, "g1", "-n", namespace, "--subresource=status", "--type=merge",
                "-p", '{"status":{"replicas":7},"spec":{"color":"ignored"}}')
    got = kubectl.json("get", gizmos, "g1", "-n", namespace)
    assert got["status"] == {"replicas": 7}
    assert got["spec"]["color"] == "blue"
    assert got["metadata"]["generation"] == 1


# -- scale ---------------------------------------------------------------------------------

def test_scale_deployment(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    out = kubectl.run("scale", "deployment/web", "--replicas=4", "-n", namespace)
    assert out.stdout.strip() == "deployment.apps/web scaled"
    got = kubectl.json("get", "deployment", "web", "-n", namespace)
    assert got["spec"]["replicas"] == 4
    assert got["metadata"]["generation"] == 2
    # the precondition form: the current size must match
    out = kubectl.run("scale", "deployment/web", "--current-replicas=3", "--replicas=1",
                      "-n", namespace, ok=False)
    assert "Expected replicas to be 3, was 4" in out.stderr


def test_scale_custom_resource_through_its_scale_subresource(kubectl: Kubectl, namespace: str,
                                                             gizmos: str) -> None:
    apply_gizmo(kubectl, namespace, gizmos)
    group = gizmos.split(".", 1)[1]
    out = kubectl.run("scale", f"{gizmos}/g1", "--replicas=3", "-n", namespace)
    assert out.stdout.strip() == f"gizmo.{group}/g1 scaled"
    kubectl.run("wait", "--for=jsonpath={.spec.replicas}=3", f"{gizmos}/g1", "-n", namespace,
                "--timeout=20s")


def test_wrong_type_is_worded_with_json_type_names(kubectl: Kubectl, namespace: str,
                                                   gizmos: str) -> None:
    """A string where the schema and the scale subresource want an integer: the OpenAPI
    error (apiextensions-apiserver's schema validation: ``must be of type integer``) and the
    scale accessor's (validator.go ValidateScaleSpec through unstructured.NestedInt64:
    ``%v accessor error: %v is of the type %T, expected int64``, Go's type names)."""
    group = gizmos.split(".", 1)[1]
    out = kubectl.run("apply", "-n", namespace, "-f", "-", ok=False, stdin=yaml.safe_dump({
        "apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": "typed"},
        "spec": {"replicas": "two"}}))
    assert 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type ' \
           'integer: "string"' in out.stderr
    assert ".spec.replicas accessor error: two is of the type string, expected int64" \
        in out.stderr
    assert "str," not in out.stderr and "'two'" not in out.stderr


# -- wait ----------------------------------------------------------------------------------

def test_wait_for_condition_set_later_through_status(kubectl: Kubectl, namespace: str,
                                                     gizmos: str) -> None:
    apply_gizmo(kubectl, namespace, gizmos)
    waiter = subprocess.Popen(
        [*kubectl.base_args(), "wait", "--for=condition=Ready", f"{gizmos}/g1", "-n", namespace,
         "--timeout=30s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=kubectl.env())
    kubectl.run("patch", gizmos, "g1", "-n", namespace, "--subresource=status", "--type=merge",
                "-p", '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}')
    stdout, stderr = waiter.communicate(timeout=40)
    assert waiter.returncode == 0, stderr
    assert stdout.strip() == f"gizmo.{gizmos.split('.', 1)[1]}/g1 condition met"


def test_wait_for_jsonpath_and_timeout(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "w", state="ready")
    out = kubectl.run("wait", "--for=jsonpath={.data.state}=ready", "configmap/w",
                      "-n", namespace, "--timeout=10s")
    assert out.stdout.strip() == "configmap/w condition met"
    out = kubectl.run("wait", "--for=jsonpath={.data.state}=never", "configmap/w",
                      "-n", namespace, "--timeout=1s", ok=False)
    assert "timed out waiting for the condition" in out.stderr


def test_wait_for_delete(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "doomed")
    kubectl.run("patch", "configmap", "doomed", "-n", namespace, "--type=merge",
                "-p", '{"metadata":{"finalizers":["example.com/hold"]}}')
    kubectl.run("delete", "configmap", "doomed", "-n", namespace, "--wait=false")
    held = kubectl.json("get", "configmap", "doomed", "-n", namespace)
    assert held["metadata"]["deletionTimestamp"]
    waiter = subprocess.Popen(
        [*kubectl.base_args(), "wait", "--for=delete", "configmap/doomed", "-n", namespace,
         "--timeout=30s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=kubectl.env())
    kubectl.run("patch", "configmap", "doomed", "-n", namespace, "--type=json",
                "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    _, stderr = waiter.communicate(timeout=40)
    assert waiter.returncode == 0, stderr
    kubectl.run("get", "configmap", "doomed", "-n", namespace, ok=False)


# -- delete --------------------------------------------------------------------------------

def test_delete_waits_until_gone(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    out = kubectl.run("delete", "deployment", "web", "-n", namespace, "--wait=true",
                      "--timeout=30s")
    assert out.stdout.strip() == 'deployment.apps "web" deleted'
    out = kubectl.run("get", "deployment", "web", "-n", namespace, ok=False)
    assert 'deployments.apps "web" not found' in out.stderr


def test_delete_custom_resource_and_by_label(kubectl: Kubectl, namespace: str,
                                             gizmos: str) -> None:
    apply_gizmo(kubectl, namespace, gizmos, "g1")
    apply_gizmo(kubectl, namespace, gizmos, "g2")
    kubectl.run("label", gizmos, "g2", "-n", namespace, "doomed=yes")
    kubectl.run("delete", gizmos, "-l", "doomed=yes", "-n", namespace, "--wait=true")
    assert kubectl.run("get", gizmos, "-n", namespace, "-o", "name").stdout.split() == [
        f"gizmo.{gizmos.split('.', 1)[1]}/g1"]
    kubectl.run("delete", gizmos, "g1", "-n", namespace, "--wait=true", "--timeout=30s")
    out = kubectl.run("get", gizmos, "-n", namespace)
    assert out.stdout == ""
    assert f"No resources found in {namespace} namespace." in out.stderr


# -- explain, api-resources, describe ------------------------------------------------------

def test_explain_custom_resource(kubectl: Kubectl, gizmos: str) -> None:
    group = gizmos.split(".", 1)[1]

    def explained() -> str:
        out = kubectl.run("explain", gizmos, ok=None)
        return out.stdout if out.returncode == 0 else ""

    # the CRD's schema reaches /openapi/v3 shortly after it is established
    out = wait_until(explained, timeout=10)
    assert "KIND:       Gizmo" in out
    assert f"GROUP:      {group}" in out
    assert "A Gizmo is a small test device." in out
    spec = kubectl.run("explain", f"{gizmos}.spec").stdout
    assert "What the gizmo should be." in spec
    assert "replicas\t<integer>" in spec
    assert "How many copies to run." in spec


def test_explain_deployment_spec(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "deployment.spec").stdout
    assert "KIND:       Deployment" in out
    assert "GROUP:      apps" in out
    assert "FIELD: spec <DeploymentSpec>" in out
    assert "replicas\t<integer>" in out
    assert "selector\t<LabelSelector> -required-" in out
    recursive = kubectl.run("explain", "deployment.spec.strategy", "--recursive").stdout
    assert "rollingUpdate\t<RollingUpdateDeployment>" in recursive
    assert "maxSurge\t<IntOrString>" in recursive


def test_api_resources_lists_builtins_and_custom_resources(kubectl: Kubectl,
                                                           gizmos: str) -> None:
    group = gizmos.split(".", 1)[1]
    rows = table_rows(kubectl.run("api-resources").stdout)
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert ["deployments", "deploy", "apps/v1", "true", "Deployment"] in rows
    assert ["namespaces", "ns", "v1", "false", "Namespace"] in rows
    assert ["customresourcedefinitions", "crd,crds", "apiextensions.k8s.io/v1", "false",
            "CustomResourceDefinition"] in rows
    # the CRD shows up as soon as discovery serves it
    wait_until(lambda: ["gizmos", short_name(group), f"{group}/v1", "true", "Gizmo"] in table_rows(
        kubectl.run("api-resources", f"--api-group={group}").stdout))
    names = kubectl.run("api-resources", "--api-group=apps", "-o", "name").stdout.split()
    assert {"deployments.apps", "replicasets.apps", "statefulsets.apps",
            "daemonsets.apps"} <= set(names)
    cluster_scoped = kubectl.run("api-resources", "--namespaced=false", "-o", "name").stdout
    assert "nodes" in cluster_scoped.split() and "configmaps" not in cluster_scoped.split()
    verbs = table_rows(kubectl.run("api-resources", "--api-group=apps", "-o", "wide").stdout)
    deploy = next(r for r in verbs if r[0] == "deployments")
    assert deploy[5].strip("[]").replace(" ", ",").split(",") == [
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    assert deploy[6] == "all"


def test_describe_pod_shows_admission_defaults(kubectl: Kubectl, namespace: str) -> None:
    wait_until(lambda: kubectl.run("get", "serviceaccount", "default", "-n", namespace,
                                   ok=None).returncode == 0)
    kubectl.run("run", "p1", "--image=nginx:1.27", "--restart=Never", "-n", namespace)
    out = kubectl.run("describe", "pod", "p1", "-n", namespace).stdout
    out = squash(out)
    assert "Name: p1" in out
    assert f"Namespace: {namespace}" in out
    assert "Service Account: default" in out
    assert "Image: nginx:1.27" in out
    assert "kube-api-access-" in out
    assert "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in out
    assert "node.kubernetes.io/unreachable:NoExecute op=Exists for 300s" in out
    assert "QoS Class: BestEffort" in out


def test_describe_deployment(kubectl: Kubectl, namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    out = kubectl.run("describe", "deployment", "web", "-n", namespace).stdout
    out = squash(out)
    assert "Name: web" in out
    assert "Selector: app=web" in out
    assert "StrategyType: RollingUpdate" in out
    assert "RollingUpdateStrategy: 25% max unavailable, 25% max surge" in out
    assert "nginx:1.27" in out and "busybox:1.36" in out


def test_describe_custom_resource(kubectl: Kubectl, namespace: str, gizmos: str) -> None:
    apply_gizmo(kubectl, namespace, gizmos)
    out = kubectl.run("describe", gizmos, "g1", "-n", namespace).stdout
    out = squash(out)
    assert "Name: g1" in out
    assert f"Namespace: {namespace}" in out
    assert "Kind: Gizmo" in out
    assert "Spec:" in out and "Color: blue" in out and "Replicas: 1" in out


# -- label, annotate, dry-run --------------------------------------------------------------

def test_label_and_annotate(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "lab")
    assert kubectl.run("label", "configmap", "lab", "tier=web", "-n", namespace
                       ).stdout.strip() == "configmap/lab labeled"
    out = kubectl.run("label", "configmap", "lab", "tier=db", "-n", namespace, ok=False)
    assert "'tier' already has a value (web), and --overwrite is false" in out.stderr
    kubectl.run("label", "configmap", "lab", "tier=db", "--overwrite", "-n", namespace)
    assert kubectl.run("get", "configmaps", "-l", "tier in (db,cache)", "-n", namespace,
                       "-o", "name").stdout.split() == ["configmap/lab"]
    assert kubectl.run("get", "configmaps", "-l", "tier!=db", "-n", namespace,
                       "-o", "name").stdout.split() == ["configmap/kube-root-ca.crt"]
    kubectl.run("label", "configmap", "lab", "tier-", "-n", namespace)

    assert kubectl.run("annotate", "configmap", "lab", "owner=team-a", "-n", namespace
                       ).stdout.strip() == "configmap/lab annotated"
    got = kubectl.json("get", "configmap", "lab", "-n", namespace)
    assert got["metadata"].get("labels", {}) == {}
    assert got["metadata"]["annotations"]["owner"] == "team-a"
    kubectl.run("annotate", "configmap", "lab", "owner-", "-n", namespace)
    assert "owner" not in kubectl.json("get", "configmap", "lab", "-n", namespace)[
        "metadata"]["annotations"]


def test_dry_run_server_writes_nothing(kubectl: Kubectl, namespace: str) -> None:
    created = yaml.safe_load(kubectl.run(
        "apply", "-n", namespace, "--dry-run=server", "-o", "yaml", "-f", "-",
        stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry}\ndata: {a: b}\n").stdout)
    assert created["metadata"]["name"] == "dry"
    assert created["metadata"]["uid"]
    kubectl.run("get", "configmap", "dry", "-n", namespace, ok=False)

    configmap(kubectl, namespace, "real", a="b")
    before = kubectl.json("get", "configmap", "real", "-n", namespace)
    out = kubectl.run("apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", "-",
                      stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: real}\n"
                            "data: {a: changed}\n")
    assert out.stdout.strip() == "configmap/real serverside-applied (server dry run)"
    out = kubectl.run("delete", "configmap", "real", "-n", namespace, "--dry-run=server")
    assert out.stdout.strip() == 'configmap "real" deleted (server dry run)'
    after = kubectl.json("get", "configmap", "real", "-n", namespace)
    assert after["data"] == {"a": "b"}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    # a dry run still validates
    out = kubectl.run("apply", "-n", namespace, "--dry-run=server", "-f", "-", ok=False,
                      stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n")
    assert 'ConfigMap "Bad_Name" is invalid' in out.stderr


def test_create_namespace_subcommand(kubectl: Kubectl) -> None:
    name = unique("ns")
    assert kubectl.run("create", "namespace", name).stdout.strip() == f"namespace/{name} created"
    assert kubectl.json("get", "namespace", name)["status"]["phase"] == "Active"
    kubectl.run("delete", "namespace", name, "--wait=false")


def test_delete_namespace_waits_for_its_contents(kubectl: Kubectl) -> None:
    name = unique("ns")
    kubectl.run("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\n"
                                          f"metadata: {{name: {name}}}\n")
    configmap(kubectl, name, "inside")
    kubectl.run("apply", "-n", name, "-f", "-", stdin=DEPLOYMENT)
    out = kubectl.run("delete", "namespace", name, "--timeout=60s")
    assert out.stdout.strip() == f'namespace "{name}" deleted'
    out = kubectl.run("get", "namespace", name, ok=False)
    assert f'namespaces "{name}" not found' in out.stderr
    out = kubectl.run("apply", "-n", name, "-f", "-", ok=False,
                      stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\n")
    assert f'namespaces "{name}" not found' in out.stderr


def test_create_in_terminating_namespace_is_forbidden(kubectl: Kubectl) -> None:
    name = unique("term")
    kubectl.run("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\n"
                                          f"metadata: {{name: {name}}}\n")
    configmap(kubectl, name, "held")
    kubectl.run("patch", "configmap", "held", "-n", name, "--type=merge",
                "-p", '{"metadata":{"finalizers":["example.com/hold"]}}')
    kubectl.run("delete", "namespace", name, "--wait=false")
    assert kubectl.json("get", "namespace", name)["status"]["phase"] == "Terminating"
    out = kubectl.run("apply", "-n", name, "-f", "-", ok=False,
                      stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\n")
    assert "Error from server (Forbidden)" in out.stderr
    assert "because it is being terminated" in out.stderr
    kubectl.run("patch", "configmap", "held", "-n", name, "--type=json",
                "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    kubectl.run("wait", "--for=delete", f"namespace/{name}", "--timeout=60s")


# -- other kubectl versions ----------------------------------------------------------------

@pytest.fixture(params=["1.27", "1.33"])
def other_kubectl(request: pytest.FixtureRequest, kubectl: Kubectl,
                  tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """kubectl 1.27 or 1.33 (from beside kubectl's real file) against the same server."""
    from tests.conftest import kubectl_path

    version: str = request.param
    return Kubectl(kubectl_path(version), kubectl.kubeconfig,
                   tmp_path_factory.mktemp(f"kubectl-{version}"))


SMOKE = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: smoke}\ndata: {a: '1'}\n"


def test_smoke_get(other_kubectl: Kubectl, namespace: str) -> None:
    rows = table_rows(other_kubectl.run("get", "namespaces").stdout)
    assert rows[0] == ["NAME", "STATUS", "AGE"]
    assert rows[[r[0] for r in rows].index("default")][:2] == ["default", "Active"]
    assert other_kubectl.json("get", "namespace", namespace)["metadata"]["name"] == namespace


def test_smoke_apply(other_kubectl: Kubectl, namespace: str) -> None:
    out = other_kubectl.run("apply", "-n", namespace, "-f", "-", stdin=SMOKE)
    assert out.stdout.strip() == "configmap/smoke created"
    out = other_kubectl.run("apply", "-n", namespace, "-f", "-", stdin=SMOKE.replace("'1'", "'2'"))
    assert out.stdout.strip() == "configmap/smoke configured"
    assert other_kubectl.json("get", "configmap", "smoke", "-n", namespace)["data"] == {"a": "2"}


def test_smoke_apply_server_side(other_kubectl: Kubectl, namespace: str) -> None:
    out = other_kubectl.run("apply", "--server-side", "-n", namespace, "-f", "-", stdin=SMOKE)
    assert out.stdout.strip() == "configmap/smoke serverside-applied"
    out = other_kubectl.run("apply", "--server-side", "--field-manager=other", "-n", namespace,
                            "-f", "-", stdin=SMOKE.replace("'1'", "'2'"), ok=False)
    assert 'conflict with "kubectl": .data.a' in out.stderr
    other_kubectl.run("apply", "--server-side", "--field-manager=other", "--force-conflicts",
                      "-n", namespace, "-f", "-", stdin=SMOKE.replace("'1'", "'2'"))
    assert other_kubectl.json("get", "configmap", "smoke", "-n", namespace)["data"] == {"a": "2"}


def test_smoke_delete(other_kubectl: Kubectl, kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "smoke", a="1")
    out = other_kubectl.run("delete", "configmap", "smoke", "-n", namespace)
    assert out.stdout.strip() == 'configmap "smoke" deleted'
    out = other_kubectl.run("get", "configmap", "smoke", "-n", namespace, ok=False)
    assert 'configmaps "smoke" not found' in out.stderr


# -- more of what users type ---------------------------------------------------------------

def test_get_in_chunks_follows_continue_tokens(kubectl: Kubectl, namespace: str) -> None:
    for i in range(5):
        configmap(kubectl, namespace, f"chunk-{i}")
    names = kubectl.run("get", "configmaps", "-n", namespace, "--chunk-size=2",
                        "-o", "name").stdout.split()
    assert names == ["configmap/chunk-0", "configmap/chunk-1", "configmap/chunk-2",
                     "configmap/chunk-3", "configmap/chunk-4", "configmap/kube-root-ca.crt"]
    rows = table_rows(kubectl.run("get", "configmaps", "-n", namespace,
                                  "--chunk-size=2").stdout)
    assert rows[0] == ["NAME", "DATA", "AGE"]
    assert [r[0] for r in rows[1:]] == [n.split("/")[1] for n in names]


def test_get_across_all_namespaces(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "everywhere")
    rows = table_rows(kubectl.run("get", "configmaps", "-A").stdout)
    assert rows[0] == ["NAMESPACE", "NAME", "DATA", "AGE"]
    assert [namespace, "everywhere", "0"] in [r[:3] for r in rows]
    assert ["kube-system", "kube-root-ca.crt", "1"] in [r[:3] for r in rows]


def test_create_from_file_and_replace(kubectl: Kubectl, namespace: str) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: rep}\ndata: {a: '1'}\n"
    out = kubectl.run("create", "-n", namespace, "-f", "-", stdin=manifest)
    assert out.stdout.strip() == "configmap/rep created"
    out = kubectl.run("create", "-n", namespace, "-f", "-", stdin=manifest, ok=False)
    assert 'Error from server (AlreadyExists): error when creating "STDIN": configmaps "rep" ' \
           "already exists" in out.stderr
    out = kubectl.run("replace", "-n", namespace, "-f", "-", stdin=manifest.replace("'1'", "'2'"))
    assert out.stdout.strip() == "configmap/rep replaced"
    assert kubectl.json("get", "configmap", "rep", "-n", namespace)["data"] == {"a": "2"}


def test_set_image_and_rollout_restart_patch_the_template(kubectl: Kubectl,
                                                          namespace: str) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)
    out = kubectl.run("set", "image", "deployment/web", "web=nginx:1.29", "-n", namespace)
    assert out.stdout.strip() == "deployment.apps/web image updated"
    kubectl.run("rollout", "restart", "deployment/web", "-n", namespace)
    got = kubectl.json("get", "deployment", "web", "-n", namespace)
    template = got["spec"]["template"]
    assert [c["image"] for c in template["spec"]["containers"]] == ["nginx:1.29", "busybox:1.36"]
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]
    assert got["metadata"]["generation"] == 3


def test_diff_shows_changes_through_a_server_dry_run(kubectl: Kubectl, namespace: str) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: diffed}\ndata: {a: '1'}\n"
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=manifest)
    same = kubectl.run("diff", "-n", namespace, "-f", "-", stdin=manifest)
    assert same.stdout == ""
    changed = kubectl.run("diff", "-n", namespace, "-f", "-", ok=None,
                          stdin=manifest.replace("'1'", "'2'"))
    assert changed.returncode == 1, changed.stderr
    assert '-  a: "1"' in changed.stdout and '+  a: "2"' in changed.stdout
    assert kubectl.json("get", "configmap", "diffed", "-n", namespace)["data"] == {"a": "1"}


def test_delete_all_in_namespace(kubectl: Kubectl, namespace: str) -> None:
    for name in ("x1", "x2"):
        configmap(kubectl, namespace, name)
    out = kubectl.run("delete", "configmaps", "--all", "-n", namespace)
    assert sorted(out.stdout.strip().splitlines()) == [
        'configmap "kube-root-ca.crt" deleted', 'configmap "x1" deleted',
        'configmap "x2" deleted']


def test_version_and_cluster_info(kubectl: Kubectl) -> None:
    version = json.loads(kubectl.run("version", "-o", "json").stdout)
    assert version["serverVersion"]["major"] == "1"
    assert version["serverVersion"]["minor"].startswith("32")
    info = kubectl.run("cluster-info").stdout
    assert "Kubernetes control plane is running at https://127.0.0.1:" in info


def test_auth_whoami(kubectl: Kubectl) -> None:
    who = kubectl.run("auth", "whoami", "-o", "json")
    assert json.loads(who.stdout)["kind"] == "SelfSubjectReview"


def test_auth_can_i(kubectl: Kubectl) -> None:
    # kubectl sends this SelfSubjectAccessReview as protobuf
    assert kubectl.run("auth", "can-i", "create", "deployments").stdout.strip() == "yes"


def test_events_of_an_object(kubectl: Kubectl, namespace: str) -> None:
    configmap(kubectl, namespace, "target")
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "target.1"},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "target",
                           "namespace": namespace},
        "reason": "Tested", "message": "hello from the test", "type": "Normal",
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z",
        "count": 1, "source": {"component": "e2e"}}))
    rows = table_rows(kubectl.run("events", "-n", namespace, "--for", "configmap/target").stdout)
    assert rows[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert " ".join(rows[1]).endswith("Normal Tested ConfigMap/target hello from the test")


def test_get_watch_in_table_form(kubectl: Kubectl, namespace: str) -> None:
    """Plain ``get -w`` asks for Table watch events (as=Table)."""
    configmap(kubectl, namespace, "first", a="1")
    proc = kubectl.popen("get", "configmap", "first", "-n", namespace, "-w")
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=_pump, args=(stdout, lines), daemon=True).start()
    rows: list[list[str]] = []

    def saw(name: str) -> bool:
        while not lines.empty():
            rows.append(lines.get_nowait().split())
        return any(r and r[0] == name for r in rows)

    try:
        wait_until(lambda: saw("first"), timeout=20)
        configmap(kubectl, namespace, "first", a="1", b="2")
        wait_until(lambda: saw("first") and ["first", "2"] in [r[:2] for r in rows], timeout=20)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert rows[0] == ["NAME", "DATA", "AGE"]
    assert rows[1][:2] == ["first", "1"]


def test_get_sorted_and_jsonpath(kubectl: Kubectl, namespace: str) -> None:
    # (keys such as "y" would be booleans to kubectl's YAML 1.1 parser)
    configmap(kubectl, namespace, "b-second", one="1", two="2")
    configmap(kubectl, namespace, "a-first", one="1")
    out = kubectl.run("get", "configmaps", "-n", namespace, "-l", "!missing",
                      "--sort-by=.metadata.name", "-o",
                      'jsonpath={range .items[*]}{.metadata.name}{" "}{end}').stdout
    assert out.split() == ["a-first", "b-second", "kube-root-ca.crt"]
    out = kubectl.run("get", "configmap", "b-second", "-n", namespace,
                      "-o", "jsonpath={.data.two}").stdout
    assert out == "2"
