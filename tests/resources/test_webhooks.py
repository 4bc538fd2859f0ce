"""Mutating/ValidatingWebhookConfigurations and CRD conversion settings generated from the
runtime's webhook declarations."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from setpoint.client import Kind
from setpoint.resources import CustomResource, Model
from setpoint.resources._webhooks import (
    AdmissionRegistration,
    ClientConfig,
    ConversionRegistration,
    generate_webhook_configurations,
    set_conversion_webhooks,
    webhook_service,
)
from setpoint.runtime import Conversion, Webhook


class BackupSpec(Model):
    schedule: str = "@daily"


class Backup(CustomResource, group="ops.example.com", version="v1"):
    spec: BackupSpec = BackupSpec()


class BackupV2(CustomResource, group="ops.example.com", version="v2", kind="Backup"):
    spec: BackupSpec = BackupSpec()


def backup_hooks(*, deletes: bool = False) -> Webhook[Backup]:
    hooks = Webhook.for_(Backup).with_options(timeout_seconds=5)
    hooks.default(lambda ctx, b: None)
    ops = ("CREATE", "UPDATE", "DELETE") if deletes else ("CREATE", "UPDATE")
    hooks.validate(operations=ops)(lambda ctx, b, old, op: None)
    return hooks


def pod_validator() -> Webhook[Any]:
    hooks = Webhook.for_(Kind("v1", "Pod"))
    hooks.validate(lambda ctx, p, old, op: None)
    return hooks


def test_configurations_follow_controller_runtime_conventions() -> None:
    mutating, validating = generate_webhook_configurations(
        backup_hooks(deletes=True), name="backup-operator",
        client=ClientConfig(namespace="ops", service="backup-webhooks"))
    assert mutating == {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "backup-operator-mutating",
                     "labels": {"app.kubernetes.io/name": "backup-operator",
                                "app.kubernetes.io/managed-by": "setpoint"}},
        "webhooks": [{
            "name": "mbackup-v1.ops.example.com",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "ops", "name": "backup-webhooks",
                                         "path": "/mutate-ops-example-com-v1-backup",
                                         "port": 443}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "rules": [{"apiGroups": ["ops.example.com"], "apiVersions": ["v1"],
                       "resources": ["backups"], "operations": ["CREATE", "UPDATE"]}],
            "timeoutSeconds": 5,
        }],
    }
    assert validating["kind"] == "ValidatingWebhookConfiguration"
    [hook] = validating["webhooks"]
    assert hook["name"] == "vbackup-v1.ops.example.com"
    assert hook["clientConfig"]["service"]["path"] == "/validate-ops-example-com-v1-backup"
    assert hook["rules"][0]["operations"] == ["CREATE", "UPDATE", "DELETE"]


def test_url_client_config_carries_the_ca_bundle() -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    [validating] = generate_webhook_configurations(
        pod_validator(), client=ClientConfig(url="https://127.0.0.1:9443/", ca_bundle=pem))
    [hook] = validating["webhooks"]
    assert hook["clientConfig"] == {"url": "https://127.0.0.1:9443/validate--v1-pod",
                                    "caBundle": base64.b64encode(pem).decode()}
    assert hook["name"] == "vpod-v1.core.setpoint.dev"
    assert hook["rules"][0]["apiGroups"] == [""]


def test_options_and_names_override_the_defaults() -> None:
    hooks = Webhook.for_(Backup, name="backup.ops.example.com", validate_path="/check")
    hooks.with_options(failure_policy="Ignore", match_policy="Equivalent",
                       namespace_selector={"matchLabels": {"team": "ops"}},
                       object_selector={"matchExpressions": []})
    hooks.validate(lambda ctx, b, old, op: None)
    [validating] = generate_webhook_configurations([hooks])
    [hook] = validating["webhooks"]
    assert hook["name"] == "vbackup.ops.example.com"
    assert hook["clientConfig"]["service"] == {"namespace": "default",
                                               "name": "webhook-service", "path": "/check",
                                               "port": 443}
    assert (hook["failurePolicy"], hook["matchPolicy"]) == ("Ignore", "Equivalent")
    assert hook["namespaceSelector"] == {"matchLabels": {"team": "ops"}}
    assert hook["objectSelector"] == {"matchExpressions": []}


def test_nothing_to_register_gives_no_configuration_and_names_must_be_unique() -> None:
    assert generate_webhook_configurations([]) == []
    reg = AdmissionRegistration("validating", "same.example.com", "/a", "g", "v1", "things")
    with pytest.raises(ValueError, match="webhook names must be unique"):
        generate_webhook_configurations([reg, reg])
    with pytest.raises(TypeError, match="registrations"):
        generate_webhook_configurations(object())


def test_conversion_points_only_the_converted_crds_at_the_webhook() -> None:
    conversion = Conversion()
    conversion.register(Backup, BackupV2)(lambda b: b)
    crds = [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "backups.ops.example.com"},
         "spec": {"group": "ops.example.com", "names": {"kind": "Backup"}}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "restores.ops.example.com"},
         "spec": {"group": "ops.example.com", "names": {"kind": "Restore"}}},
    ]
    backups, restores = set_conversion_webhooks(
        crds, [conversion, backup_hooks()], client=ClientConfig(namespace="ops"))
    assert backups["spec"]["conversion"] == {"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"namespace": "ops", "name": "webhook-service",
                                     "path": "/convert", "port": 443}},
        "conversionReviewVersions": ["v1"]}}
    assert restores == crds[1]
    assert "conversion" not in crds[0]["spec"]  # the input is left as it was
    assert conversion.registrations() == [
        ConversionRegistration("ops.example.com", "Backup", "/convert")]
    # conversion registrations make no admission configuration
    assert generate_webhook_configurations(conversion) == []


def test_service_maps_443_onto_the_webhook_port() -> None:
    service = webhook_service("webhook-service", "ops", {"app.kubernetes.io/name": "op"})
    assert service["spec"]["ports"] == [{"name": "webhook", "port": 443, "protocol": "TCP",
                                         "targetPort": 9443}]
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "op"}
