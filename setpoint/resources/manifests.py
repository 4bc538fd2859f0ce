"""The manifests that run an operator in a cluster (``setpoint generate manifests``).

A Namespace (optional), the ServiceAccount, the RBAC from :func:`generate_rbac`, and a
one-replica Deployment running ``setpoint run module:attribute`` with liveness and
readiness probes on ``/healthz`` and ``/readyz``, a metrics port, and the restricted pod
security settings (non-root, no privilege escalation, no capabilities, read-only root).
"""

from __future__ import annotations

from typing import Any

from setpoint.resources.rbac import Permissions, generate_rbac

__all__ = ["generate_manifests"]


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
    if create_namespace:
        out.append({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace, "labels": dict(labels)}})
    out.append({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}})
    out += generate_rbac(permissions, name=name, namespace=namespace, service_account=name)
    leader_election = perms.leader_election if perms is not None else any(
        r["metadata"]["name"].endswith("-leader-election") for r in out
    )
    out.append(_deployment(name, image, namespace, labels, run, metrics_port, health_port,
                           args, env or {}, leader_election))
    return out


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
