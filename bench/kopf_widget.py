"""The Widget operator written the way kopf's documentation teaches it (kopf's defaults).

    kopf run bench/kopf_widget.py --all-namespaces

Handlers are plain functions (kopf runs them in its thread pool) that create or patch the
child ConfigMap with the official ``kubernetes`` client, ``kopf.adopt`` making the Widget
its owner, and write the status through kopf's ``patch``. Everything else is kopf's
default: its progress annotations, the events it posts for each handler, its watches.
"""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes


@kopf.on.startup()
def configure(**_: Any) -> None:
    kubernetes.config.load_kube_config()


def _config_map(name: str, spec: kopf.Spec) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-cfg"},
            "data": {"message": spec.get("message", ""), "size": str(spec.get("size", 1))}}


@kopf.on.create("bench.setpoint.dev", "v1", "widgets")
def create_fn(spec: kopf.Spec, name: str, namespace: str | None, meta: kopf.Meta,
              patch: kopf.Patch, **_: Any) -> None:
    if namespace is None:
        raise kopf.PermanentError("a Widget is namespaced")
    body = _config_map(name, spec)
    kopf.adopt(body)
    # what the client's call validation would make of the dict anyway
    kubernetes.client.CoreV1Api().create_namespaced_config_map(
        namespace, kubernetes.client.V1ConfigMap.model_validate(body))
    patch.status["ready"] = True
    patch.status["observedGeneration"] = meta.get("generation")


@kopf.on.update("bench.setpoint.dev", "v1", "widgets", field="spec.message")
def update_fn(spec: kopf.Spec, name: str, namespace: str | None, meta: kopf.Meta,
              patch: kopf.Patch, **_: Any) -> None:
    if namespace is None:
        raise kopf.PermanentError("a Widget is namespaced")
    kubernetes.client.CoreV1Api().patch_namespaced_config_map(
        f"{name}-cfg", namespace, {"data": {"message": spec.get("message", "")}})
    patch.status["ready"] = True
    patch.status["observedGeneration"] = meta.get("generation")
