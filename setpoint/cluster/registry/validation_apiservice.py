"""Validation of APIServices (k8s.io/kube-aggregator pkg/apis/apiregistration/validation,
1.32 ``ValidateAPIService``): the name is ``<version>.<group>``, the group a DNS subdomain
(empty only for the legacy ``v1``), the version a DNS label, both priorities in range, and a
remote APIService names its Service (namespace, name, a valid port) and trusts its backend
either by ``caBundle`` or by ``insecureSkipTLSVerify``, never both; a local one has neither.
"""

from __future__ import annotations

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj


def validate_apiservice(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    causes: list[Cause] = []
    name = str((obj.get("metadata") or {}).get("name") or "")
    required = f"{version}.{group}"
    if name and not names.validate_path_segment_name(name, False) and name != required:
        causes.append(fe.invalid("metadata.name", name,
                                 f'must be `spec.version+"."+spec.group`: "{required}"'))
    if not group and version != "v1":
        causes.append(fe.required("spec.group", "only v1 may have an empty group and it "
                                                "better be legacy kube"))
    if group:
        causes.extend(fe.invalid("spec.group", group, e)
                      for e in names.is_dns1123_subdomain(group))
    causes.extend(fe.invalid("spec.version", version, e)
                  for e in names.is_dns1035_label(version))
    group_priority = int(spec.get("groupPriorityMinimum") or 0)
    if not 0 < group_priority <= 20000:
        causes.append(fe.invalid("spec.groupPriorityMinimum", group_priority,
                                 "must be positive and less than 20000"))
    version_priority = int(spec.get("versionPriority") or 0)
    if not 0 < version_priority <= 1000:
        causes.append(fe.invalid("spec.versionPriority", version_priority,
                                 "must be positive and less than 1000"))
    bundle, insecure = spec.get("caBundle") or "", bool(spec.get("insecureSkipTLSVerify"))
    service = spec.get("service")
    if service is None:
        if bundle:
            causes.append(fe.invalid("spec.caBundle", f"{_decoded_len(bundle)} bytes",
                                     "local APIServices may not have a caBundle"))
        if insecure:
            causes.append(fe.invalid("spec.insecureSkipTLSVerify", insecure,
                                     "local APIServices may not have insecureSkipTLSVerify"))
        return causes
    if not service.get("namespace"):
        causes.append(fe.required("spec.service.namespace"))
    if not service.get("name"):
        causes.append(fe.required("spec.service.name"))
    port = int(service.get("port") if service.get("port") is not None else 443)
    if not 1 <= port <= 65535:
        causes.append(fe.invalid("spec.service.port", port, "port is not valid: " +
                                 names.inclusive_range_error(1, 65535)))
    if insecure and bundle:
        causes.append(fe.invalid("spec.insecureSkipTLSVerify", insecure,
                                 "may not be true if caBundle is present"))
    return causes


def _decoded_len(bundle: str) -> int:
    import base64
    import binascii

    try:
        return len(base64.b64decode(bundle))
    except (binascii.Error, ValueError):
        return len(bundle)

