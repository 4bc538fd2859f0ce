"""The warnings a pod spec and its metadata draw, for a pod or a pod template.

kubernetes v1.32 pkg/api/pod/warnings.go ``warningsForPodSpecAndMeta`` (called by
``GetWarningsForPod`` with no path and by ``GetWarningsForPodTemplate`` with the template's),
with the helpers it calls: pkg/api/node/util.go (``deprecatedNodeLabels``,
``GetWarningsForNodeSelectorTerm``), pkg/api/persistentvolumeclaim/util.go
(``GetWarningsForPersistentVolumeClaimSpec``) and pkg/apis/core/pods ``VisitContainersWithPath``.
Each warning is the ``fmt.Sprintf`` text of Go, field path and all, in Go's order; where Go
ranges over a map (node selector, annotations) the object's key order stands in for Go's
random one.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.pod_apparmor import ANNOTATION_PREFIX as APPARMOR_ANNOTATION_PREFIX
from setpoint.cluster.registry.podcontainers import visit_containers_with_path
from setpoint.cluster.registry.warnings_volumepaths import overlapping_virtual_path_warnings
from setpoint.machinery.fielderrors import go_quote
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity, QuantityError

# pkg/api/node/util.go deprecatedNodeLabels
DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region":
        'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
    "failure-domain.beta.kubernetes.io/zone":
        'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
    "beta.kubernetes.io/instance-type":
        'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
    "app.kubernetes.io/created-by": "deprecated since v1.9",
    "scheduler.alpha.kubernetes.io/preferAvoidPods":
        "deprecated since v1.22; use Taints and Tolerations instead",
    "node-role.kubernetes.io/master": 'use "node-role.kubernetes.io/control-plane" instead',
}

# warnings.go deprecatedAnnotations: (key, message), in its order
DEPRECATED_ANNOTATIONS = (
    ("scheduler.alpha.kubernetes.io/critical-pod",
     'non-functional in v1.16+; use the "priorityClassName" field instead'),
    ("security.alpha.kubernetes.io/sysctls",
     'non-functional in v1.11+; use the "sysctls" field instead'),
    ("security.alpha.kubernetes.io/unsafe-sysctls",
     'non-functional in v1.11+; use the "sysctls" field instead'),
)

# warnings.go "deprecated and removed volume plugins": (volume source field, message)
DEPRECATED_VOLUME_PLUGINS = (
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("gitRepo", "deprecated in v1.11"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageos", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("ephemeral", None),  # its claim template's PVC spec warnings, in this place
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
)
# The Go field names the paths print (the JSON name differs for storageOS only).
_GO_PATH_NAME = {"storageos": "storageOS"}

SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_MESSAGE = 'non-functional in v1.27+; use the "seccompProfile" field instead'
APPARMOR_MESSAGE = 'deprecated since v1.30; use the "appArmorProfile" field instead'
NULL_LABEL_SELECTOR = "a null labelSelector results in matching no pod"
FRACTIONAL_BYTES = "fractional byte value {} is invalid, must be an integer"


def child(path: str, *names: str) -> str:
    """``field.Path.Child``: the root (``""``) prints no leading dot."""
    return ".".join(([path] if path else []) + list(names))


def warnings_for_pod_spec_and_meta(path: str, spec: Obj, meta: Obj, template: bool) -> list[str]:
    """``warningsForPodSpecAndMeta``: ``path`` is ``""`` for a pod, the template's for a
    pod template (``template`` then also draws the AppArmor annotation warning, which a
    pod's strategy gives elsewhere)."""
    warnings: list[str] = []
    spec_path = child(path, "spec")
    annotations = meta.get("annotations") or {}
    for key in spec.get("nodeSelector") or {}:
        if key in DEPRECATED_NODE_LABELS:
            warnings.append(f"{spec_path}.nodeSelector[{key}]: {DEPRECATED_NODE_LABELS[key]}")
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity is not None:
        aff_path = f"{spec_path}.affinity.nodeAffinity"
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            for i, term in enumerate(required.get("nodeSelectorTerms") or []):
                warnings += node_selector_term_warnings(
                    term or {},
                    f"{aff_path}.requiredDuringSchedulingIgnoredDuringExecution"
                    f".nodeSelectorTerms[{i}]")
        preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(preferred or []):
            warnings += node_selector_term_warnings(
                (term or {}).get("preference") or {},
                f"{aff_path}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference")
    for i, constraint in enumerate(spec.get("topologySpreadConstraints") or []):
        constraint = constraint or {}
        key = constraint.get("topologyKey") or ""
        tsc_path = f"{spec_path}.topologySpreadConstraints[{i}]"
        if key in DEPRECATED_NODE_LABELS:
            warnings.append(f"{tsc_path}.topologyKey: {key} is {DEPRECATED_NODE_LABELS[key]}")
        if constraint.get("labelSelector") is None:
            warnings.append(f"{tsc_path}.labelSelector: {NULL_LABEL_SELECTOR}")
    annotations_path = child(path, "metadata", "annotations")
    for key, message in DEPRECATED_ANNOTATIONS:
        if key in annotations:
            warnings.append(f"{annotations_path}[{key}]: {message}")
    warnings += _volume_warnings(spec_path, spec.get("volumes") or [])
    warnings += _duplicate_warnings(spec_path, spec)
    overhead = spec.get("overhead") or {}
    for resource in ("memory", "ephemeral-storage"):
        warnings += _fractional_bytes(f"{spec_path}.overhead[{resource}]", overhead, resource)
    security = spec.get("securityContext") or {}
    if security.get("seccompProfile") is None and SECCOMP_POD_ANNOTATION in annotations:
        warnings.append(f"{annotations_path}[{SECCOMP_POD_ANNOTATION}]: {SECCOMP_MESSAGE}")
    pod_apparmor = security.get("appArmorProfile") is not None
    for container, c_path in visit_containers_with_path(spec, spec_path):
        warnings += _container_warnings(container, c_path, annotations, annotations_path,
                                        template and not pod_apparmor)
    warnings += _port_warnings(spec, spec_path)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        warnings.append(f"{spec_path}.terminationGracePeriodSeconds: must be >= 0; negative "
                        "values are invalid and will be treated as 1")
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind)
        if terms is None:
            continue
        terms_path = f"{spec_path}.affinity.{kind}"
        required_path = f"{terms_path}.requiredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(terms.get("requiredDuringSchedulingIgnoredDuringExecution")
                                 or []):
            if (term or {}).get("labelSelector") is None:
                warnings.append(f"{required_path}[{i}].labelSelector: {NULL_LABEL_SELECTOR}")
        preferred_path = f"{terms_path}.preferredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(terms.get("preferredDuringSchedulingIgnoredDuringExecution")
                                 or []):
            if ((term or {}).get("podAffinityTerm") or {}).get("labelSelector") is None:
                warnings.append(f"{preferred_path}[{i}].podAffinityTerm.labelSelector: "
                                f"{NULL_LABEL_SELECTOR}")
    return warnings


def node_selector_term_warnings(term: Obj, path: str) -> list[str]:
    """pkg/api/node/util.go ``GetWarningsForNodeSelectorTerm`` (v1.32: keys only)."""
    warnings = []
    for i, expression in enumerate(term.get("matchExpressions") or []):
        key = (expression or {}).get("key") or ""
        if key in DEPRECATED_NODE_LABELS:
            warnings.append(f"{path}.matchExpressions[{i}].key: {key} is "
                            f"{DEPRECATED_NODE_LABELS[key]}")
    return warnings


def pvc_spec_warnings(path: str, spec: Obj) -> list[str]:
    """pkg/api/persistentvolumeclaim/util.go ``GetWarningsForPersistentVolumeClaimSpec``."""
    resources = spec.get("resources") or {}
    return (_fractional_bytes(f"{path}.resources.requests[storage]",
                              resources.get("requests") or {}, "storage")
            + _fractional_bytes(f"{path}.resources.limits[storage]",
                                resources.get("limits") or {}, "storage"))


def _volume_warnings(spec_path: str, volumes: list[Any]) -> list[str]:
    warnings: list[str] = []
    for i, volume in enumerate(volumes):
        volume = volume or {}
        for plugin, message in DEPRECATED_VOLUME_PLUGINS:
            if volume.get(plugin) is None:
                continue
            v_path = f"{spec_path}.volumes[{i}].{_GO_PATH_NAME.get(plugin, plugin)}"
            if message is not None:
                warnings.append(f"{v_path}: {message}")
                continue
            claim = (volume.get(plugin) or {}).get("volumeClaimTemplate")
            if claim is not None:
                warnings += pvc_spec_warnings(f"{v_path}.volumeClaimTemplate.spec",
                                              claim.get("spec") or {})
    return warnings + overlapping_virtual_path_warnings(volumes)


def _duplicate_warnings(spec_path: str, spec: Obj) -> list[str]:
    """Duplicate hostAliases IPs and imagePullSecrets names, and empty secret names."""
    warnings = []
    aliases = spec.get("hostAliases") or []
    seen: set[str] = set()
    for i, alias in enumerate(aliases if len(aliases) > 1 else []):
        ip = (alias or {}).get("ip") or ""
        if ip in seen:
            warnings.append(f"{spec_path}.hostAliases[{i}].ip: duplicate ip {go_quote(ip)}")
        seen.add(ip)
    secrets = spec.get("imagePullSecrets") or []
    seen = set()
    for i, secret in enumerate(secrets if len(secrets) > 1 else []):
        name = (secret or {}).get("name") or ""
        if name in seen:
            warnings.append(f"{spec_path}.imagePullSecrets[{i}].name: duplicate name "
                            f"{go_quote(name)}")
        seen.add(name)
    for i, secret in enumerate(secrets):
        if not (secret or {}).get("name"):
            warnings.append(f'{spec_path}.imagePullSecrets[{i}].name: invalid empty name ""')
    return warnings


def _container_warnings(container: Obj, c_path: str, annotations: Obj, annotations_path: str,
                        apparmor_annotation_applies: bool) -> list[str]:
    warnings = []
    name = container.get("name") or ""
    security = container.get("securityContext") or {}
    seccomp_key = SECCOMP_CONTAINER_ANNOTATION_PREFIX + name
    if security.get("seccompProfile") is None and seccomp_key in annotations:
        warnings.append(f"{annotations_path}[{seccomp_key}]: {SECCOMP_MESSAGE}")
    apparmor_key = APPARMOR_ANNOTATION_PREFIX + name
    # (AppArmorFields is on in 1.32; a pod's own annotation is handled by its strategy)
    if (apparmor_annotation_applies and security.get("appArmorProfile") is None
            and apparmor_key in annotations):
        warnings.append(f"{annotations_path}[{apparmor_key}]: {APPARMOR_MESSAGE}")
    resources = container.get("resources") or {}
    for resource in ("memory", "ephemeral-storage"):
        for kind in ("limits", "requests"):
            warnings += _fractional_bytes(f"{c_path}.resources.{kind}[{resource}]",
                                          resources.get(kind) or {}, resource)
    env = container.get("env") or []
    seen: set[str] = set()
    for i, var in enumerate(env if len(env) > 1 else []):
        var = var or {}
        var_name = var.get("name") or ""
        if var_name not in seen:
            seen.add(var_name)
            continue
        # a later definition that refers to the earlier one ("$(X)suffix") is fine
        ref = f"$({var_name})"
        value = var.get("value") or ""
        if var.get("valueFrom") is not None or value == ref or ref not in value:
            warnings.append(f"{c_path}.env[{i}]: hides previous definition of "
                            f"{go_quote(var_name)}, which may be dropped when using apply")
    return warnings


def _fractional_bytes(path: str, resources: Obj, resource: str) -> list[str]:
    """A byte quantity with a fraction (``MilliValue() % 1000 != 0``), printed in its
    canonical form (``Quantity.String``)."""
    if resource not in resources:
        return []
    try:
        quantity = Quantity.from_json(resources[resource])
    except QuantityError:  # (validation refuses it first)
        return []
    if quantity.milli_value() % 1000 == 0:
        return []
    return [f"{path}: {FRACTIONAL_BYTES.format(go_quote(str(quantity)))}"]


def _port_warnings(spec: Obj, spec_path: str) -> list[str]:
    """Ports across all containers: hostIP without hostPort, and the same
    containerPort/protocol defined twice (duplicate, overlapping or ambiguous)."""
    warnings = []
    seen: dict[str, list[tuple[str, Obj]]] = {}
    for container, c_path in visit_containers_with_path(spec, spec_path):
        for i, port in enumerate(container.get("ports") or []):
            port = port or {}
            p_path = f"{c_path}.ports[{i}]"
            host_ip = port.get("hostIP") or ""
            host_port = port.get("hostPort") or 0
            protocol = port.get("protocol") or ""
            if host_ip and not host_port:
                # fmt's %+v of the internal api.ContainerPort struct
                warnings.append(
                    f"{p_path}: hostIP set without hostPort: {{Name:{port.get('name') or ''} "
                    f"HostPort:{host_port} ContainerPort:{port.get('containerPort') or 0} "
                    f"Protocol:{protocol} HostIP:{host_ip}}}")
            key = f"{port.get('containerPort') or 0}/{protocol}"
            for other_path, other in seen.get(key, []):
                other_ip = other.get("hostIP") or ""
                other_port = other.get("hostPort") or 0
                if host_ip == other_ip and host_port == other_port:
                    warnings.append(f"{p_path}: duplicate port definition with {other_path}")
                elif not host_port or not other_port:
                    warnings.append(f"{p_path}: overlapping port definition with {other_path}")
                elif host_port == other_port and (not host_ip) != (not other_ip):
                    warnings.append(f"{p_path}: dangerously ambiguous port definition with "
                                    f"{other_path}")
            seen.setdefault(key, []).append((p_path, port))
    return warnings
