"""Defaults of a PodSpec and everything inside it (``pkg/apis/core/v1/defaults.go``).

Shared by Pods and by every kind that embeds a pod template (Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job, CronJob, ReplicationController, PodTemplate). Only Pods get
``SetDefaults_Pod`` on top (requests from limits, enableServiceLinks, host ports).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from setpoint.cluster.registry.gozero import default_unset as _set
from setpoint.cluster.registry.gozero import struct_field as _dict
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity

_DEFAULT_MODE = 0o644  # 420: secret, configMap, downwardAPI and projected volumes


def canonical_resource_list(resources: Obj) -> Obj:
    """``SetDefaults_ResourceList``: every quantity rounded up to milli-units and written
    in canonical form. Raises ``QuantityError`` for a value that is not a quantity."""
    out: Obj = {}
    for name, value in resources.items():
        out[name] = _canonical_quantity(value) if isinstance(value, str | int | float) \
            else str(Quantity.from_json(value).round_up(-3))
    return out


@functools.lru_cache(maxsize=1024, typed=True)
def _canonical_quantity(value: Any) -> str:
    """A quantity rounded up to milli-units, in canonical form. Kept by value (typed: 1,
    1.0 and a string are parsed each on their own): a cluster has a few distinct
    quantities, and every update of a pod or a pod template defaults them all again.
    A value that is not a quantity raises each time (lru_cache keeps no exceptions)."""
    return str(Quantity.from_json(value).round_up(-3))


# -- images --------------------------------------------------------------------------------

_REPO_RE = re.compile(
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*")
_TAG_RE = re.compile(r"[\w][\w.-]{0,127}")


def image_tag(image: str) -> str:
    """The tag ``parsers.ParseImageName`` finds: ``latest`` when neither tag nor digest is
    given, the empty string when the reference does not parse."""
    name, digest = image, ""
    if "@" in image:
        name, _, digest = image.partition("@")
    tag = ""
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
        if not _TAG_RE.fullmatch(tag):
            return ""
    if not _REPO_RE.fullmatch(name):
        return ""
    if not tag and not digest:
        return "latest"
    return tag


# -- containers ----------------------------------------------------------------------------

def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    _handler(probe)


def _handler(handler: Obj) -> None:
    http_get = handler.get("httpGet")
    if isinstance(http_get, dict):
        _set(http_get, "path", "/")
        _set(http_get, "scheme", "HTTP")


def _field_ref(holder: Any) -> None:
    if isinstance(holder, dict) and isinstance(holder.get("fieldRef"), dict):
        _set(holder["fieldRef"], "apiVersion", "v1")


def _container(c: Obj) -> None:
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = "Always" if image_tag(c.get("image") or "") == "latest" \
            else "IfNotPresent"
    _set(c, "terminationMessagePath", "/dev/termination-log")
    _set(c, "terminationMessagePolicy", "File")
    resources = _dict(c, "resources")
    for key in ("limits", "requests"):
        if isinstance(resources.get(key), dict):
            resources[key] = canonical_resource_list(resources[key])
    for port in c.get("ports") or []:
        _set(port, "protocol", "TCP")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(c.get(key))
    lifecycle = c.get("lifecycle")
    if isinstance(lifecycle, dict):
        for key in ("postStart", "preStop"):
            if isinstance(lifecycle.get(key), dict):
                _handler(lifecycle[key])
    for env in c.get("env") or []:
        _field_ref(env.get("valueFrom"))


# -- volumes -------------------------------------------------------------------------------

_SOURCE_DEFAULTS: dict[str, tuple[tuple[str, Any], ...]] = {
    "secret": (("defaultMode", _DEFAULT_MODE),),
    "configMap": (("defaultMode", _DEFAULT_MODE),),
    "downwardAPI": (("defaultMode", _DEFAULT_MODE),),
    "projected": (("defaultMode", _DEFAULT_MODE),),
    "hostPath": (("type", ""),),
    "iscsi": (("iscsiInterface", "default"),),
    "rbd": (("pool", "rbd"), ("user", "admin"), ("keyring", "/etc/ceph/keyring")),
    "azureDisk": (("cachingMode", "ReadWrite"), ("fsType", "ext4"), ("readOnly", False),
                  ("kind", "Shared")),
    "scaleIO": (("storageMode", "ThinProvisioned"), ("fsType", "xfs")),
}


def _volume(v: Obj) -> None:
    sources = [k for k in v if k != "name"]
    if not sources:
        v["emptyDir"] = {}
    for kind, defaults in _SOURCE_DEFAULTS.items():
        source = v.get(kind)
        if isinstance(source, dict):
            for key, value in defaults:
                if source.get(key) is None:
                    source[key] = value
    empty_dir = v.get("emptyDir")
    if isinstance(empty_dir, dict) and empty_dir.get("sizeLimit") is not None:
        empty_dir["sizeLimit"] = str(Quantity.from_json(empty_dir["sizeLimit"]))
    for item in (v.get("downwardAPI") or {}).get("items") or []:
        _field_ref(item)
    for source in (v.get("projected") or {}).get("sources") or []:
        token = source.get("serviceAccountToken")
        if isinstance(token, dict):
            _set(token, "expirationSeconds", 3600)
        for item in (source.get("downwardAPI") or {}).get("items") or []:
            _field_ref(item)
    claim = ((v.get("ephemeral") or {}).get("volumeClaimTemplate") or {}).get("spec")
    if isinstance(claim, dict):
        _set(claim, "volumeMode", "Filesystem")


# -- pod spec, template, pod ---------------------------------------------------------------

def default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and the defaults of everything a PodSpec holds."""
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "schedulerName", "default-scheduler")
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container(c)
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            _volume(v)
    if isinstance(spec.get("overhead"), dict):
        spec["overhead"] = canonical_resource_list(spec["overhead"])


def default_pod_template(template: Obj) -> None:
    """A pod template: Go writes its zero creationTimestamp as null."""
    _dict(template, "metadata").setdefault("creationTimestamp", None)
    default_pod_spec(_dict(template, "spec"))


def default_pod(pod: Obj) -> None:
    """``SetDefaults_Pod`` on top of the PodSpec defaults. (``priority`` and
    ``preemptionPolicy`` are the Priority admission plugin's, not defaults: what admission
    sets stays out of the creating manager's managedFields.)"""
    spec = _dict(pod, "spec")
    default_pod_spec(spec)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            resources = c.get("resources") or {}
            limits = resources.get("limits")
            if isinstance(limits, dict):
                requests = _dict(resources, "requests")
                for name, value in limits.items():
                    requests.setdefault(name, value)
    _set(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork"):
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or []:
                for port in c.get("ports") or []:
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")


# -- QoS -----------------------------------------------------------------------------------

_QOS_RESOURCES = ("cpu", "memory")


def pod_qos_class(spec: Obj) -> str:
    """``qos.GetPodQOS``: Guaranteed, Burstable or BestEffort from cpu/memory requests and
    limits of the regular and init containers."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    for c in containers:
        resources = c.get("resources") or {}
        for source, total in ((resources.get("requests") or {}, requests),
                              (resources.get("limits") or {}, limits)):
            for name, value in source.items():
                if name not in _QOS_RESOURCES:
                    continue
                try:
                    q = Quantity.from_json(value)
                except ValueError:
                    continue
                if q.is_zero():
                    continue
                total[name] = total[name] + q if name in total else q
        found = {n for n, v in (resources.get("limits") or {}).items()
                 if n in _QOS_RESOURCES and _nonzero(v)}
        if not set(_QOS_RESOURCES) <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, q in requests.items():
            if limits.get(name) != q:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _nonzero(value: Any) -> bool:
    try:
        return not Quantity.from_json(value).is_zero()
    except ValueError:
        return False
