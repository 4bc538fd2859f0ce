"""``setpoint generate``: CRDs, RBAC and manifests from an operator's code."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from setpoint.cli.main import cli


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_crds_are_written_for_the_custom_resources_of_a_module() -> None:
    code, out = invoke("generate", "crds", "examples.widget.api")
    assert code == 0, out
    (crd,) = list(yaml.safe_load_all(out))
    assert crd["metadata"]["name"] == "widgets.bench.setpoint.dev"
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["properties"]["size"]["minimum"] == 1
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}


def test_crds_go_one_file_each_into_a_directory(tmp_path: Path) -> None:
    code, out = invoke("generate", "crds", "examples.widget", "-o", f"{tmp_path}/crds/")
    assert code == 0, out
    assert [p.name for p in (tmp_path / "crds").iterdir()] == \
        ["bench.setpoint.dev_widgets.yaml"]


def test_rbac_grants_what_the_controllers_declare_and_nothing_more() -> None:
    code, out = invoke("generate", "rbac", "examples.widget.operator", "-n", "ops")
    assert code == 0, out
    role, binding = yaml.safe_load_all(out)
    rules = {(r["apiGroups"][0], res): r["verbs"] for r in role["rules"]
             for res in r["resources"]}
    assert rules == {
        ("", "configmaps"): ["get", "list", "watch", "create", "update", "patch", "delete"],
        # the primary kind: every call of the Context (kubebuilder's scaffold)
        ("bench.setpoint.dev", "widgets"): [
            "get", "list", "watch", "create", "update", "patch", "delete"],
        ("bench.setpoint.dev", "widgets/status"): ["get", "update", "patch"],
        ("bench.setpoint.dev", "widgets/finalizers"): ["update"],
        ("", "events"): ["create", "patch"],  # the recorder writes core/v1 Events
    }
    assert (role["kind"], role["metadata"]["name"]) == ("ClusterRole", "widget-operator")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "widget-operator",
                                    "namespace": "ops"}]


def test_manifests_run_the_modules_manager_with_the_image() -> None:
    code, out = invoke("generate", "manifests", "examples.widget.operator", "--image",
                       "example/widget:1", "--namespace", "ops")
    assert code == 0, out
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out)}
    deployment = docs[("Deployment", "widget-operator")]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "example/widget:1"
    assert container["command"] == ["setpoint", "run", "examples.widget.operator:manager",
                                    "--http-address", "0.0.0.0:8081"]
    assert ("ServiceAccount", "widget-operator") in docs
    assert ("ClusterRole", "widget-operator") in docs


def test_a_missing_module_is_one_line_naming_the_fix() -> None:
    code, out = invoke("generate", "rbac", "no_such_operator")
    assert code == 2
    assert out.strip().splitlines() == [
        "Error: module 'no_such_operator' not found: run from the directory that contains "
        "it, or install its package (pip install -e .)"]


def test_a_module_without_resources_says_so() -> None:
    code, out = invoke("generate", "crds", "json")
    assert code == 2
    assert "defines no CustomResource classes" in out


def test_webhook_configurations_and_their_service_come_from_the_managers_webhooks(
        tmp_path: Path) -> None:
    from setpoint.cluster.registry.validation_admission import (
        validate_mutating_configuration,
        validate_validating_configuration,
    )

    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    code, out = invoke("generate", "webhooks", "tests.cli.webhook_target:manager",
                       "--name", "cms", "-n", "ops", "--ca-bundle", str(ca))
    assert code == 0, out
    mutating, validating, service = yaml.safe_load_all(out)
    assert (mutating["kind"], mutating["metadata"]["name"]) == \
        ("MutatingWebhookConfiguration", "cms-mutating")
    assert (validating["kind"], validating["metadata"]["name"]) == \
        ("ValidatingWebhookConfiguration", "cms-validating")
    [hook] = mutating["webhooks"]
    assert hook["clientConfig"]["service"] == {"namespace": "ops", "name": "webhook-service",
                                               "path": "/mutate--v1-configmap", "port": 443}
    assert hook["clientConfig"]["caBundle"]
    assert validate_mutating_configuration(mutating) == []
    assert validate_validating_configuration(validating) == []
    assert service["kind"] == "Service" and service["metadata"]["namespace"] == "ops"
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "cms"}


def test_webhooks_called_by_url_need_https_and_no_service() -> None:
    code, out = invoke("generate", "webhooks", "tests.cli.webhook_target",
                       "--url", "https://127.0.0.1:9443")
    assert code == 0, out
    documents = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in documents] == ["MutatingWebhookConfiguration",
                                              "ValidatingWebhookConfiguration"]
    assert documents[0]["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/mutate--v1-configmap"}
    code, out = invoke("generate", "webhooks", "tests.cli.webhook_target",
                       "--url", "http://127.0.0.1:9443")
    assert code == 2 and "https://" in out
    code, out = invoke("generate", "webhooks", "examples.widget.operator")
    assert code == 2 and "holds no webhooks" in out


def test_manifests_of_a_manager_with_webhooks_serve_them_with_a_mounted_certificate() -> None:
    code, out = invoke("generate", "manifests", "tests.cli.webhook_target:manager",
                       "--image", "example/cms:1", "--name", "cms", "-n", "ops",
                       "--cert-manager")
    assert code == 0, out
    documents = list(yaml.safe_load_all(out))
    by_kind = {d["kind"]: d for d in documents}
    container = by_kind["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][-4:] == ["--webhook-address", "0.0.0.0:9443",
                                         "--webhook-cert-dir",
                                         "/tmp/k8s-webhook-server/serving-certs"]
    assert {"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"} in \
        container["ports"]
    volumes = by_kind["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "webhook-cert",
                        "secret": {"secretName": "cms-webhook-server-cert"}}]
    assert by_kind["Certificate"]["spec"]["secretName"] == "cms-webhook-server-cert"
    assert by_kind["Certificate"]["spec"]["dnsNames"][0] == "cms-webhook-service.ops.svc"
    mutating = by_kind["MutatingWebhookConfiguration"]
    assert mutating["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "ops/cms-serving-cert"}
    assert mutating["webhooks"][0]["clientConfig"]["service"]["name"] == "cms-webhook-service"
    assert by_kind["Service"]["spec"]["ports"][0]["targetPort"] == 9443


GADGET_MODULE = '''
from examples.widget.api import Widget  # imported, not defined here: not this module's CRD
from setpoint.resources import CustomResource


class Gadget(CustomResource, group="gadgets.example.com", version="v1", kind="Gadget"):
    size: int = 1
'''


def test_crds_are_written_only_for_the_classes_the_module_defines(tmp_path: Path) -> None:
    """controller-gen's ``crd paths=./api/...`` writes the types of those packages only;
    a class a module merely imports belongs to the module that defines it."""
    (tmp_path / "gadgets.py").write_text(GADGET_MODULE)
    code, out = invoke("generate", "crds", str(tmp_path / "gadgets.py"))
    assert code == 0, out
    assert [crd["metadata"]["name"] for crd in yaml.safe_load_all(out)] == [
        "gadgets.gadgets.example.com"]
    code, out = invoke("generate", "crds", "examples.widget.operator")
    assert code != 0
    assert out.strip() == "Error: 'examples.widget.operator' defines no CustomResource classes"


def test_manifests_never_include_a_namespace_the_cluster_owns() -> None:
    """``default``, ``kube-system``, ``kube-public`` (and ``kube-node-lease``) are made and
    kept by the cluster itself (pkg/controlplane/controller/systemnamespaces and the
    NamespaceLifecycle admission plugin's immortal namespaces): applying the output must
    not relabel them, and deleting it must not try to delete them."""
    for system in ("default", "kube-system", "kube-public", "kube-node-lease"):
        code, out = invoke("generate", "manifests", "examples.widget.operator", "--image",
                           "example/widget:1", "--namespace", system)
        assert code == 0, out
        assert [d for d in yaml.safe_load_all(out) if d["kind"] == "Namespace"] == []
    code, out = invoke("generate", "manifests", "examples.widget.operator", "--image",
                       "example/widget:1", "--namespace", "ops")
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)
            if d["kind"] == "Namespace"] == ["ops"]


def test_rbac_of_a_leader_elected_manager_grants_its_lease_and_events() -> None:
    """Derived from the Manager's leader_election setting; --no-leader-elect drops it."""
    code, out = invoke("generate", "rbac", "tests.cli.leader_target:manager", "-n", "ops")
    assert code == 0, out
    roles = {d["metadata"]["name"]: d for d in yaml.safe_load_all(out) if d["kind"] == "Role"}
    role = roles["leader-target-leader-election"]
    assert role["metadata"]["namespace"] == "ops"
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "verbs": ["get", "create", "update"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]
    code, out = invoke("generate", "rbac", "tests.cli.leader_target:manager", "-n", "ops",
                       "--no-leader-elect")
    assert code == 0, out
    assert not [d for d in yaml.safe_load_all(out) if d["kind"] == "Role"]


def test_manifests_with_leader_elect_run_the_operator_so() -> None:
    code, out = invoke("generate", "manifests", "examples.widget.operator", "--image",
                       "example/widget:1", "-n", "ops", "--leader-elect")
    assert code == 0, out
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out)}
    container = docs[("Deployment", "widget-operator")]["spec"]["template"]["spec"][
        "containers"][0]
    assert container["command"][-1] == "--leader-elect"
    assert ("Role", "widget-operator-leader-election") in docs
    assert ("RoleBinding", "widget-operator-leader-election") in docs


def test_a_resource_class_without_a_group_is_named_with_the_declaration_to_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``class Gadget(CustomResource, version="v1")``: without ``group`` the class is taken
    for an abstract base and skipped, and the error said only that the module "defines no
    CustomResource classes", though it plainly defines one."""
    (tmp_path / "gadget_api.py").write_text(
        "from setpoint.resources import CustomResource, Model\n\n"
        "class GadgetSpec(Model):\n    size: int = 1\n\n"
        "class Gadget(CustomResource, version='v1'):\n    spec: GadgetSpec\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out = invoke("generate", "crds", "gadget_api")
    assert code == 2
    assert out.splitlines()[-1] == (
        "Error: 'gadget_api' defines no CustomResource classes: Gadget has no group (a base "
        "class, then): declare `class Gadget(CustomResource, group=\"example.com\", "
        "version=\"v1\")`")
