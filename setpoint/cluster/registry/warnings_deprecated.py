"""Deprecation warnings some strategies give about an object's own fields (kubernetes v1.32):

- an Ingress created with the ``kubernetes.io/ingress.class`` annotation and no
  ``spec.ingressClassName`` (pkg/registry/networking/ingress/strategy.go WarningsOnCreate;
  no warning on update);
- a ServiceAccount newly carrying ``kubernetes.io/enforce-mountable-secrets``
  (pkg/registry/core/serviceaccount/strategy.go warnIfHasEnforceMountableSecretsAnnotation:
  an update that keeps it says nothing);
- a Node with ``spec.configSource`` or ``spec.externalID`` (pkg/registry/core/node/strategy.go
  fieldIsDeprecatedWarnings, on create and update).
"""

from __future__ import annotations

from setpoint.machinery.objects import Obj

INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"


def _annotations(obj: Obj | None) -> dict[str, object]:
    annotations = ((obj or {}).get("metadata") or {}).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def ingress_warnings_on_create(ingress: Obj) -> list[str]:
    if INGRESS_CLASS_ANNOTATION in _annotations(ingress) and (
            (ingress.get("spec") or {}).get("ingressClassName") is None):
        return [f'annotation "{INGRESS_CLASS_ANNOTATION}" is deprecated, please use '
                "'spec.ingressClassName' instead"]
    return []


def service_account_warnings(new: Obj, old: Obj | None) -> list[str]:
    if old is not None and ENFORCE_MOUNTABLE_SECRETS in _annotations(old):
        return []
    if ENFORCE_MOUNTABLE_SECRETS in _annotations(new):
        return [f"metadata.annotations[{ENFORCE_MOUNTABLE_SECRETS}]: deprecated in v1.32+; "
                "prefer separate namespaces to isolate access to mounted secrets"]
    return []


def node_warnings(node: Obj) -> list[str]:
    spec = node.get("spec") or {}
    warnings = []
    if spec.get("configSource") is not None:
        warnings.append("spec.configSource: the feature is removed")
    if spec.get("externalID"):
        warnings.append("spec.externalID: this field is deprecated, and is unused by Kubernetes")
    return warnings
