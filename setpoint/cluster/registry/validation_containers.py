"""Container validation (``pkg/apis/core/validation``: validateContainerCommon and the
functions it calls: validateContainerPorts, ValidateEnv, ValidateEnvFrom,
ValidateVolumeMounts, ValidateVolumeDevices, validatePullPolicy,
ValidateContainerResourceRequirements, ValidateSecurityContext; and validateProbe,
validateHandler, validateLifecycle for regular and restartable init containers).

Kubernetes 1.32 defaults: RelaxedEnvironmentVariableValidation is beta and on, so an
environment variable name is any printable ASCII but ``=``; a zero-second sleep action
(PodLifecycleSleepActionAllowZero) is alpha and off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.cluster.registry.validation_nodes import (
    is_extended_resource_name,
    validate_resource_quantity_value,
)
from setpoint.cluster.registry.validation_podannotations import validate_apparmor_profile_field
from setpoint.cluster.registry.validation_resourcequota import validate_resource_name
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.quantity import try_from_json

PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PROTOCOLS = ("SCTP", "TCP", "UDP")
HTTP_SCHEMES = ("HTTP", "HTTPS")
PROC_MOUNTS = ("Default", "Unmasked")
NOT_NEGATIVE = "must be greater than or equal to 0"
_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_OVERCOMMIT_FORBIDDEN_PREFIX = "hugepages-"
ENV_NAME_ERROR = ("a valid environment variable name must consist only of printable ASCII "
                  "characters other than '='")
_USER_ID_MAX = 2**31 - 1


def port_name_errors(name: str) -> list[str]:
    """``validation.IsValidPortName`` (an IANA service name)."""
    errs = []
    if len(name) > 15:
        errs.append(names.max_len_error(15))
    if not all(c.isascii() and (c.islower() or c.isdigit() or c == "-") for c in name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def port_num_or_name(port: Any, path: str) -> list[Cause]:
    """``ValidatePortNumOrName``: an int is a port number, a string an IANA name."""
    if isinstance(port, str):
        return [fe.invalid(path, port, m) for m in port_name_errors(port)]
    if isinstance(port, int) and not 1 <= port <= 65535:
        return [fe.invalid(path, port, names.inclusive_range_error(1, 65535))]
    return []


def required_enum(path: str, value: Any, allowed: tuple[str, ...]) -> list[Cause]:
    """A required field that takes one of ``allowed`` (Required, else NotSupported)."""
    if not value:
        return [fe.required(path)]
    if value not in allowed:
        return [fe.not_supported(path, value, allowed)]
    return []


def _ports(ports: list[Any], path: str) -> list[Cause]:
    """``validateContainerPorts``."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if not isinstance(port, dict):
            continue
        name = port.get("name") or ""
        if name:
            errs = port_name_errors(name)
            if errs:
                causes.extend(fe.invalid(f"{p}.name", name, m) for m in errs)
            elif name in seen:
                causes.append(fe.duplicate(f"{p}.name", name))
            seen.add(name)
        container_port = port.get("containerPort")
        if not container_port:
            causes.append(fe.required(f"{p}.containerPort"))
        elif not 1 <= int(container_port) <= 65535:
            causes.append(fe.invalid(f"{p}.containerPort", container_port,
                                     names.inclusive_range_error(1, 65535)))
        host_port = port.get("hostPort")
        if host_port and not 1 <= int(host_port) <= 65535:
            causes.append(fe.invalid(f"{p}.hostPort", host_port,
                                     names.inclusive_range_error(1, 65535)))
        causes.extend(required_enum(f"{p}.protocol", port.get("protocol"), PROTOCOLS))
    return causes


def _key_selector(ref: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateConfigMapKeySelector`` / ``validateSecretKeySelector``."""
    name = ref.get("name") or ""
    causes = [fe.invalid(f"{path}.name", name, m)
              for m in names.name_is_dns_subdomain(name, False)]
    key = ref.get("key") or ""
    if not key:
        causes.append(fe.required(f"{path}.key"))
    else:
        causes.extend(fe.invalid(f"{path}.key", key, m) for m in names.is_config_map_key(key))
    return causes


def _env_name(name: str, path: str) -> list[Cause]:
    if any(ord(c) > 126 or ord(c) < 32 or c == "=" for c in name):
        return [fe.invalid(path, name, ENV_NAME_ERROR)]
    return []


def _env(env: list[Any], path: str) -> list[Cause]:
    """``ValidateEnv`` with ``validateEnvVarValueFrom``'s one-source rule."""
    causes: list[Cause] = []
    for i, var in enumerate(env):
        p = f"{path}[{i}]"
        if not isinstance(var, dict):
            continue
        name = var.get("name") or ""
        if not name:
            causes.append(fe.required(f"{p}.name"))
        else:
            causes.extend(_env_name(name, f"{p}.name"))
        source = var.get("valueFrom")
        if not isinstance(source, dict):
            continue
        vp = f"{p}.valueFrom"
        count = 0
        for key in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef"):
            if isinstance(source.get(key), dict):
                count += 1
                if key in ("configMapKeyRef", "secretKeyRef"):
                    causes.extend(_key_selector(source[key], f"{vp}.{key}"))
                elif key == "fieldRef":
                    ref = source[key]
                    if not ref.get("apiVersion"):
                        causes.append(fe.required(f"{vp}.fieldRef.apiVersion"))
                    elif not ref.get("fieldPath"):
                        causes.append(fe.required(f"{vp}.fieldRef.fieldPath"))
                elif not source[key].get("resource"):
                    causes.append(fe.required(f"{vp}.resourceFieldRef.resource"))
        if count == 0:
            causes.append(fe.invalid(vp, "", "must specify one of: `fieldRef`, "
                                             "`resourceFieldRef`, `configMapKeyRef` or "
                                             "`secretKeyRef`"))
        elif var.get("value"):
            causes.append(fe.invalid(vp, "", "may not be specified when `value` is not empty"))
        elif count > 1:
            causes.append(fe.invalid(vp, "", "may not have more than one field specified at a "
                                             "time"))
    return causes


def _env_from(sources: list[Any], path: str) -> list[Cause]:
    """``ValidateEnvFrom``."""
    causes: list[Cause] = []
    for i, source in enumerate(sources):
        p = f"{path}[{i}]"
        if not isinstance(source, dict):
            continue
        prefix = source.get("prefix") or ""
        if prefix:
            causes.extend(_env_name(prefix, f"{p}.prefix"))
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key)
            if isinstance(ref, dict):
                count += 1
                name = ref.get("name") or ""
                if not name:
                    causes.append(fe.required(f"{p}.{key}.name"))
                else:
                    causes.extend(fe.invalid(f"{p}.{key}.name", name, m)
                                  for m in names.name_is_dns_subdomain(name, True))
        if count == 0:
            causes.append(fe.invalid(path, "", "must specify one of: `configMapRef` or "
                                               "`secretRef`"))
        elif count > 1:
            causes.append(fe.invalid(path, "", "may not have more than one field specified at "
                                               "a time"))
    return causes


def _mounts(mounts: list[Any], devices: list[Any], volumes: Mapping[str, Any],
            path: str) -> list[Cause]:
    """``ValidateVolumeMounts`` (subPath rules aside)."""
    causes: list[Cause] = []
    device_paths = {d.get("name"): d.get("devicePath") for d in devices if isinstance(d, dict)}
    mount_points: set[str] = set()
    for i, mount in enumerate(mounts):
        p = f"{path}[{i}]"
        if not isinstance(mount, dict):
            continue
        name = mount.get("name") or ""
        mount_path = mount.get("mountPath") or ""
        if not name:
            causes.append(fe.required(f"{p}.name"))
        if name not in volumes:
            causes.append(fe.not_found(f"{p}.name", name))
        if not mount_path:
            causes.append(fe.required(f"{p}.mountPath"))
        if mount_path in mount_points:
            causes.append(fe.invalid(f"{p}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
        if name in device_paths:
            causes.append(fe.invalid(f"{p}.name", name, "must not already exist in "
                                                        "volumeDevices"))
        if mount_path in device_paths.values():
            causes.append(fe.invalid(f"{p}.mountPath", mount_path,
                                     "must not already exist as a path in volumeDevices"))
        if mount.get("subPath") and mount.get("subPathExpr"):
            causes.append(fe.invalid(f"{p}.subPathExpr", mount["subPathExpr"],
                                     "subPathExpr and subPath are mutually exclusive"))
    return causes


def resource_name(name: str, path: str) -> list[Cause]:
    """``validateContainerResourceName``: ``validateResourceName``, then the container rule."""
    causes = validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith(
                _OVERCOMMIT_FORBIDDEN_PREFIX):
            causes.append(fe.invalid(path, name, "must be a standard resource for containers"))
    elif "kubernetes.io/" not in name and not is_extended_resource_name(name):
        causes.append(fe.invalid(path, name,
                                 "doesn't follow extended resource name standard"))
    return causes


def overcommit_allowed(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native resources but hugepages."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith(_OVERCOMMIT_FORBIDDEN_PREFIX)


def validate_resource_requirements(resources: Any, path: str) -> list[Cause]:
    """``ValidateContainerResourceRequirements``: names, quantities, requests ≤ limits (and
    equal for resources that cannot be overcommitted)."""
    if not isinstance(resources, dict):
        return []
    causes: list[Cause] = []
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    for name, value in limits.items():
        causes.extend(resource_name(name, f"{path}.limits[{name}]"))
        causes.extend(validate_resource_quantity_value(name, value, f"{path}.limits[{name}]"))
    for name, value in requests.items():
        p = f"{path}.requests[{name}]"
        causes.extend(resource_name(name, p))
        causes.extend(validate_resource_quantity_value(name, value, p))
        request = try_from_json(value)
        if request is None:
            continue
        if name in limits:
            limit = try_from_json(limits[name])
            if limit is None:
                continue
            if request.cmp(limit) != 0 and not overcommit_allowed(name):
                causes.append(fe.invalid(f"{path}.requests", str(request),
                                         f"must be equal to {name} limit of {limit}"))
            elif request.cmp(limit) > 0:
                causes.append(fe.invalid(f"{path}.requests", str(request),
                                         f"must be less than or equal to {name} limit of "
                                         f"{limit}"))
        elif not overcommit_allowed(name):
            causes.append(fe.required(f"{path}.limits",
                                      "Limit must be set for non overcommitable resources"))
    return causes


SECCOMP_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")


def validate_ids(context: Mapping[str, Any], path: str, keys: tuple[str, ...]) -> list[Cause]:
    """``validation.IsValidUserID`` / ``IsValidGroupID`` of each of ``keys``."""
    causes: list[Cause] = []
    for key in keys:
        value = context.get(key)
        if isinstance(value, int) and not 0 <= value <= _USER_ID_MAX:
            causes.append(fe.invalid(f"{path}.{key}", value,
                                     names.inclusive_range_error(0, _USER_ID_MAX)))
    return causes


def validate_seccomp_profile(profile: Any, path: str) -> list[Cause]:
    """``validateSeccompProfileField``."""
    if not isinstance(profile, dict):
        return []
    kind = profile.get("type") or ""
    if not kind:
        causes = [fe.required(f"{path}.type", "type is required when seccompProfile is set")]
    elif kind not in SECCOMP_TYPES:
        causes = [fe.not_supported(f"{path}.type", kind, SECCOMP_TYPES)]
    else:
        causes = []
    if kind == "Localhost" and profile.get("localhostProfile") is None:
        causes.append(fe.required(f"{path}.localhostProfile",
                                  "must be set when seccomp type is Localhost"))
    elif kind != "Localhost" and profile.get("localhostProfile") is not None:
        causes.append(fe.invalid(f"{path}.localhostProfile",
                                 fe.GoValue(f"&core.SeccompProfile{{Type:{fe.go_quote(kind)}}}"),
                                 "can only be set when seccomp type is Localhost"))
    return causes


def validate_security_context(context: Any, path: str, host_users: bool = True
                              ) -> list[Cause]:
    """``ValidateSecurityContext``: ids in range, a known proc mount, a seccomp profile,
    privilege escalation consistent with privileged and CAP_SYS_ADMIN. (Go prints the
    whole context as the bad value of the last two; we print its type.)"""
    if not isinstance(context, dict):
        return []
    causes = validate_ids(context, path, ("runAsUser", "runAsGroup"))
    proc_mount = context.get("procMount")
    if proc_mount is not None:
        if proc_mount not in PROC_MOUNTS:
            causes.append(fe.not_supported(f"{path}.procMount", proc_mount, PROC_MOUNTS))
        if host_users and proc_mount == "Unmasked":
            causes.append(fe.invalid(f"{path}.procMount", proc_mount,
                                     "`hostUsers` must be false to use `Unmasked`"))
    causes.extend(validate_seccomp_profile(context.get("seccompProfile"),
                                           f"{path}.seccompProfile"))
    causes.extend(validate_apparmor_profile_field(context.get("appArmorProfile"),
                                                  f"{path}.appArmorProfile"))
    if context.get("allowPrivilegeEscalation") is False:
        shown = fe.GoValue("&core.SecurityContext{...}")
        if context.get("privileged"):
            causes.append(fe.invalid(path, shown, "cannot set `allowPrivilegeEscalation` to "
                                                  "false and `privileged` to true"))
        for cap in (context.get("capabilities") or {}).get("add") or []:
            if cap == "CAP_SYS_ADMIN":
                causes.append(fe.invalid(path, shown, "cannot set `allowPrivilegeEscalation` "
                                                      "to false and `capabilities.Add` "
                                                      "CAP_SYS_ADMIN"))
    return causes


def _handler(handler: Any, grace: Any, path: str, kinds: tuple[str, ...]) -> list[Cause]:
    """``validateHandler``: exactly one handler type, each well formed."""
    causes: list[Cause] = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if not isinstance(action, dict):
            continue
        if count:
            causes.append(fe.forbidden(f"{path}.{kind}", "may not specify more than 1 handler "
                                                         "type"))
            continue
        count += 1
        p = f"{path}.{kind}"
        if kind == "exec" and not action.get("command"):
            causes.append(fe.required(f"{p}.command"))
        elif kind == "httpGet":
            if not action.get("path"):
                causes.append(fe.required(f"{p}.path"))
            causes.extend(port_num_or_name(action.get("port"), f"{p}.port"))
            scheme = action.get("scheme") or ""
            if scheme not in HTTP_SCHEMES:
                causes.append(fe.not_supported(f"{p}.scheme", scheme, HTTP_SCHEMES))
        elif kind in ("tcpSocket", "grpc"):
            causes.extend(port_num_or_name(action.get("port"), f"{p}.port"))
        elif kind == "sleep" and isinstance(grace, int):
            seconds = action.get("seconds")
            if isinstance(seconds, int) and not 0 < seconds <= grace:
                causes.append(fe.invalid(p, seconds, (
                    f"must be greater than 0 and less than terminationGracePeriodSeconds "
                    f"({grace}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for "
                    "zero sleep.")))
    if count == 0:
        causes.append(fe.required(path, "must specify a handler type"))
    return causes


def _probe(probe: Any, grace: Any, path: str, kind: str) -> list[Cause]:
    """``validateProbe`` with the liveness/readiness/startup rules on top."""
    if not isinstance(probe, dict):
        return []
    causes = _handler(probe, grace, path, ("exec", "httpGet", "tcpSocket", "grpc"))
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                "failureThreshold"):
        value = probe.get(key)
        if isinstance(value, int) and value < 0:
            causes.append(fe.invalid(f"{path}.{key}", value, NOT_NEGATIVE))
    probe_grace = probe.get("terminationGracePeriodSeconds")
    if isinstance(probe_grace, int) and probe_grace <= 0:
        causes.append(fe.invalid(f"{path}.terminationGracePeriodSeconds", probe_grace,
                                 "must be greater than 0"))
    success = probe.get("successThreshold")
    if kind in ("livenessProbe", "startupProbe") and success is not None and success != 1:
        causes.append(fe.invalid(f"{path}.successThreshold", success, "must be 1"))
    if kind == "readinessProbe" and probe_grace is not None:
        causes.append(fe.invalid(f"{path}.terminationGracePeriodSeconds", probe_grace,
                                 "must not be set for readinessProbes"))
    return causes


def validate_probes_and_lifecycle(c: Mapping[str, Any], grace: Any, path: str) -> list[Cause]:
    """The lifecycle hooks and probes of a regular or restartable init container."""
    causes: list[Cause] = []
    lifecycle = c.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                causes.extend(_handler(lifecycle[hook], grace, f"{path}.lifecycle.{hook}",
                                       ("exec", "httpGet", "tcpSocket", "sleep")))
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        causes.extend(_probe(c.get(kind), grace, f"{path}.{kind}", kind))
    return causes


_RESIZE_RESOURCES = ("cpu", "memory")
_RESIZE_POLICIES = ("NotRequired", "RestartContainer")


def validate_resize_policy(policies: Any, path: str, pod_restart: str | None) -> list[Cause]:
    """``validateResizePolicy``: each resource once, cpu or memory, with NotRequired or
    RestartContainer (only NotRequired in a pod that never restarts); the errors name the
    list, not the entry, but for a repeated resource."""
    causes: list[Cause] = []
    seen: set[Any] = set()
    for i, p in enumerate(policies if isinstance(policies, list) else []):
        p = p if isinstance(p, Mapping) else {}
        resource, policy = p.get("resourceName") or "", p.get("restartPolicy") or ""
        if resource in seen:
            causes.append(fe.duplicate(f"{path}[{i}]", resource))
        seen.add(resource)
        if not resource:
            causes.append(fe.required(path))
        elif resource not in _RESIZE_RESOURCES:
            causes.append(fe.not_supported(path, resource, _RESIZE_RESOURCES))
        if not policy:
            causes.append(fe.required(path))
        elif policy not in _RESIZE_POLICIES:
            causes.append(fe.not_supported(path, policy, _RESIZE_POLICIES))
        if pod_restart == "Never" and policy != "NotRequired":
            causes.append(fe.invalid(path, policy,
                                     "must be 'NotRequired' when `restartPolicy` is 'Never'"))
    return causes


def validate_container_common(c: Mapping[str, Any], volumes: Mapping[str, Any],
                              path: str, pod_restart: str | None = None) -> list[Cause]:
    """``validateContainerCommon``, in its order."""
    causes: list[Cause] = []
    name = c.get("name") or ""
    if not name:
        causes.append(fe.required(f"{path}.name"))
    else:
        causes.extend(fe.invalid(f"{path}.name", name, m) for m in names.is_dns1123_label(name))
    if not c.get("image"):
        causes.append(fe.required(f"{path}.image"))
    causes.extend(required_enum(f"{path}.terminationMessagePolicy",
                                c.get("terminationMessagePolicy"), TERMINATION_MESSAGE_POLICIES))
    causes.extend(_ports(c.get("ports") or [], f"{path}.ports"))
    causes.extend(_env(c.get("env") or [], f"{path}.env"))
    causes.extend(_env_from(c.get("envFrom") or [], f"{path}.envFrom"))
    causes.extend(_mounts(c.get("volumeMounts") or [], c.get("volumeDevices") or [], volumes,
                          f"{path}.volumeMounts"))
    causes.extend(required_enum(f"{path}.imagePullPolicy", c.get("imagePullPolicy"), PULL_POLICIES))
    causes.extend(validate_resource_requirements(c.get("resources"), f"{path}.resources"))
    causes.extend(validate_resize_policy(c.get("resizePolicy"), f"{path}.resizePolicy",
                                         pod_restart))
    causes.extend(validate_security_context(c.get("securityContext"),
                                            f"{path}.securityContext"))
    return causes


def host_port_conflicts(containers: list[Any], path: str) -> list[Cause]:
    """``AccumulateUniqueHostPorts``: one protocol/hostIP/hostPort per pod."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for ci, c in enumerate(containers):
        if not isinstance(c, dict):
            continue
        for pi, port in enumerate(c.get("ports") or []):
            if not isinstance(port, dict) or not port.get("hostPort"):
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{port['hostPort']}"
            if key in seen:
                causes.append(fe.duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return causes
