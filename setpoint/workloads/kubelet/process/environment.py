"""A container's environment and its ``$(VAR)`` expansion, as the kubelet builds them.

``makeEnvironmentVariables`` (pkg/kubelet/kubelet_pods.go, v1.32): ``envFrom`` sources in
order (keys prefixed, a key that is not a valid variable name skipped), then ``env`` in
order, each value expanded against what is defined so far; ``valueFrom`` reads the pod's
fields (the downward API), its resources, ConfigMap and Secret keys (a missing optional one
is skipped). ``command``, ``args`` are then expanded against the whole environment
(``expansion.Expand`` of third_party/forked/golang/expansion: ``$(VAR)`` is replaced when
VAR is defined and kept as written otherwise, ``$$`` is an escaped ``$``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from setpoint.machinery.quantity import QuantityError, parse_quantity

Obj = dict[str, Any]
Fetch = Callable[[str, str, str], Awaitable[Obj | None]]
"""``fetch(kind, namespace, name)``: a ConfigMap or Secret, or None when it is absent."""

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class EnvError(Exception):
    """A required source is missing: the container cannot be created
    (``CreateContainerConfigError``, with the kubelet's message)."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion of ``text``."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "$" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                close = text.find(")", i + 2)
                if close != -1:
                    name = text[i + 2:close]
                    out.append(env[name] if name in env else text[i:close + 1])
                    i = close + 1
                    continue
        out.append(ch)
        i += 1
    return "".join(out)


def _field(pod: Mapping[str, Any], path: str) -> str:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    simple = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"), "status.podIP": status.get("podIP"),
        "status.hostIPs": ",".join(i.get("ip", "") for i in status.get("hostIPs") or ()),
        "status.podIPs": ",".join(i.get("ip", "") for i in status.get("podIPs") or ()),
    }
    return str(simple.get(path) or "")


def resource_field(container: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    """``resourceFieldRef``: a limit or request in units of ``divisor``, rounded up (as
    the downward API's ``ExtractContainerResourceValue``)."""
    section, _, name = str(ref.get("resource", "")).partition(".")
    value = ((container.get("resources") or {}).get(section) or {}).get(name)
    if value is None:
        return "0"
    try:
        amount = parse_quantity(str(value))
        divisor = parse_quantity(str(ref.get("divisor") or "1"))
    except QuantityError:
        return "0"
    nanos, per = amount.nanos, max(divisor.nanos, 1)
    return str(-(-nanos // per))


def _decode(obj: Obj, key: str) -> str | None:
    if obj.get("kind") == "Secret" or "type" in obj:
        raw = (obj.get("data") or {}).get(key)
        return base64.b64decode(raw).decode(errors="replace") if raw is not None else None
    data = obj.get("data") or {}
    if key in data:
        return str(data[key])
    binary = (obj.get("binaryData") or {}).get(key)
    return base64.b64decode(binary).decode(errors="replace") if binary is not None else None


def _items(obj: Obj) -> dict[str, str]:
    keys = [*(obj.get("data") or {}), *(obj.get("binaryData") or {})]
    return {k: v for k in keys if (v := _decode(obj, k)) is not None}


async def environment(pod: Mapping[str, Any], container: Mapping[str, Any],
                      fetch: Fetch) -> list[tuple[str, str]]:
    """The container's environment, in the kubelet's order."""
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    env: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        prefix = str(source.get("prefix") or "")
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(key)
            if not ref:
                continue
            obj = await fetch(kind, ns, str(ref.get("name", "")))
            if obj is None:
                if ref.get("optional"):
                    continue
                raise EnvError(f'{kind.lower()} "{ref.get("name")}" not found')
            for k, v in _items(obj).items():
                if _ENV_NAME.match(prefix + k):
                    env[prefix + k] = v
    for var in container.get("env") or ():
        name = str(var.get("name", ""))
        if "value" in var or "valueFrom" not in var:
            env[name] = expand(str(var.get("value", "")), env)
            continue
        value = await _value_from(pod, container, ns, name, var["valueFrom"] or {}, fetch)
        if value is not None:
            env[name] = value
    return list(env.items())


async def _value_from(pod: Mapping[str, Any], container: Mapping[str, Any], ns: str,
                      name: str, source: Mapping[str, Any], fetch: Fetch) -> str | None:
    if "fieldRef" in source:
        return _field(pod, str(source["fieldRef"].get("fieldPath", "")))
    if "resourceFieldRef" in source:
        return resource_field(container, source["resourceFieldRef"])
    for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
        ref = source.get(key)
        if not ref:
            continue
        obj = await fetch(kind, ns, str(ref.get("name", "")))
        value = _decode(obj, str(ref.get("key", ""))) if obj is not None else None
        if value is None:
            if ref.get("optional"):
                return None
            what = "configmap" if kind == "ConfigMap" else "secret"
            if obj is None:
                raise EnvError(f'{what} "{ref.get("name")}" not found')
            raise EnvError(f"couldn't find key {ref.get('key')} in {kind} "
                           f"{ns}/{ref.get('name')}")
        return value
    return None
