"""The manifests that run an operator in a cluster (``setpoint generate manifests``).

A Namespace (optional, and never one the cluster owns, such as ``default``), the
ServiceAccount, the RBAC from :func:`generate_rbac`, and a one-replica Deployment running
``setpoint run module:attribute`` with liveness and readiness probes on ``/healthz`` and
``/readyz``, a metrics port, and the restricted pod security settings (non-root, no
privilege escalation, no capabilities, read-only root).

An operator with webhooks also gets their port, the Secret of its serving certificate
mounted where the webhook server reads it, the Service the API server calls, and the
webhook configurations; with ``cert_manager`` a cert-manager Issuer and Certificate make
that Secret and the CA is injected into the configurations (and the CRDs that convert), as
kubebuilder's scaffolding does.
"""

from __future__ import annotations

from typing import Any

from setpoint.resources._rbac import Permissions, generate_rbac

__all__ = ["generate_manifests"]

# made and kept by the cluster itself (kube-apiserver's systemnamespaces controller, the
# NamespaceLifecycle plugin's immortal namespaces): never applied, relabelled or deleted
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})

CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # the webhook server's default (tmp)


def generate_manifests(
    name: str,
    image: str,
    namespace: str,
    permissions: Permissions | Any,
    *,
    run: str = "operator:manager",
    create_namespace: bool = True,
    metrics_port: int = 8081,
    health_port: int = 8081,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    webhooks: Any = (),
    cert_manager: bool = False,
    leader_election_namespace: str | None = None,
) -> list[dict[str, Any]]:
    """Everything ``kubectl apply -f`` needs to run the operator ``run`` from ``image``.

    ``permissions`` is what :func:`generate_rbac` takes (Permissions or controllers);
    ``run`` is the ``module:attribute`` of the Manager; ``args`` are appended to the
    command and ``env`` added to the container's environment. A Manager serves
    ``/healthz``, ``/readyz`` and ``/metrics`` on one port, so both ports default to it.
    """
    perms = permissions if isinstance(permissions, Permissions) else None
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "setpoint"}
    out: list[dict[str, Any]] = []
    if create_namespace and namespace not in SYSTEM_NAMESPACES:
        out.append({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace, "labels": dict(labels)}})
    out.append({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}})
    out += generate_rbac(permissions, name=name, namespace=namespace, service_account=name,
                         leader_election_namespace=leader_election_namespace)
    leader_election = perms.leader_election if perms is not None else any(
        r["metadata"]["name"].endswith("-leader-election") for r in out
    )
    deployment = _deployment(name, image, namespace, labels, run, metrics_port, health_port,
                             args, env or {}, leader_election)
    out.append(deployment)
    if webhooks:
        out += _webhook_manifests(name, namespace, labels, deployment, webhooks, cert_manager)
    return out


def _webhook_manifests(name: str, namespace: str, labels: dict[str, str],
                       deployment: dict[str, Any], webhooks: Any,
                       cert_manager: bool) -> list[dict[str, Any]]:
    from setpoint.resources._webhooks import (
        WEBHOOK_PORT,
        ClientConfig,
        generate_webhook_configurations,
        webhook_service,
    )

    service, secret = f"{name}-webhook-service", f"{name}-webhook-server-cert"
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    container["command"] += ["--webhook-address", f"0.0.0.0:{WEBHOOK_PORT}",
                             "--webhook-cert-dir", CERT_DIR]
    container["ports"].append({"name": "webhook-server", "containerPort": WEBHOOK_PORT,
                               "protocol": "TCP"})
    container["volumeMounts"] = [{"name": "webhook-cert", "mountPath": CERT_DIR,
                                  "readOnly": True}]
    pod["volumes"] = [{"name": "webhook-cert", "secret": {"secretName": secret}}]
    out = [webhook_service(service, namespace, {"app.kubernetes.io/name": name})]
    configurations = generate_webhook_configurations(
        webhooks, name=name, client=ClientConfig(namespace=namespace, service=service),
        labels=labels)
    if cert_manager:
        certificate = f"{name}-serving-cert"
        for configuration in configurations:
            configuration["metadata"]["annotations"] = {
                "cert-manager.io/inject-ca-from": f"{namespace}/{certificate}"}
        issuer = f"{name}-selfsigned-issuer"
        out += [
            {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
             "metadata": {"name": issuer, "namespace": namespace, "labels": dict(labels)},
             "spec": {"selfSigned": {}}},
            {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
             "metadata": {"name": certificate, "namespace": namespace,
                          "labels": dict(labels)},
             "spec": {"dnsNames": [f"{service}.{namespace}.svc",
                                   f"{service}.{namespace}.svc.cluster.local"],
                      "issuerRef": {"kind": "Issuer", "name": issuer},
                      "secretName": secret}},
        ]
    return out + configurations


def _deployment(name: str, image: str, namespace: str, labels: dict[str, str], run: str,
                metrics_port: int, health_port: int, args: tuple[str, ...],
                env: dict[str, str], leader_election: bool) -> dict[str, Any]:
    ports = [{"name": "metrics", "containerPort": metrics_port, "protocol": "TCP"}]
    if health_port != metrics_port:
        ports.append({"name": "health", "containerPort": health_port, "protocol": "TCP"})
    probe_port = "health" if health_port != metrics_port else "metrics"
    container_env: list[dict[str, Any]] = [
        {"name": "POD_NAMESPACE",
         "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        *({"name": k, "value": v} for k, v in env.items()),
    ]
    container: dict[str, Any] = {
        "name": "operator",
        "image": image,
        "command": ["setpoint", "run", run, "--http-address", f"0.0.0.0:{metrics_port}",
                    *args],
        "env": container_env,
        "ports": ports,
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": probe_port},
                          "initialDelaySeconds": 15, "periodSeconds": 20},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": probe_port},
                           "initialDelaySeconds": 5, "periodSeconds": 10},
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"},
                      "limits": {"cpu": "500m", "memory": "256Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]},
                            "readOnlyRootFilesystem": True},
    }
    selector = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            # without leader election two pods must never overlap
            "strategy": {"type": "RollingUpdate" if leader_election else "Recreate"},
            "template": {
                "metadata": {"labels": dict(labels),
                             "annotations": {"kubectl.kubernetes.io/default-container":
                                             "operator"}},
                "spec": {
                    "serviceAccountName": name,
                    "securityContext": {"runAsNonRoot": True,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "terminationGracePeriodSeconds": 30,
                    "containers": [container],
                },
            },
        },
    }
