"""Volume sources of in-tree plugins whose drivers left Kubernetes but whose API fields stay
validated in 1.32 (``pkg/apis/core/validation/validation.go``: validateAzureDisk,
validateQuobyteVolumeSource).

An azureDisk's ``kind`` is defaulted to Shared before validation
(SetDefaults_AzureDiskVolumeSource), so a disk URI must be a blob URL unless the kind is
Managed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause

# sets.List of validateAzureDisk's sets: sorted
AZURE_CACHING_MODES = ("None", "ReadOnly", "ReadWrite")
AZURE_DISK_KINDS = ("Dedicated", "Managed", "Shared")
AZURE_MANAGED_URI = ("/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/"
                     "microsoft.compute/disks/{disk-id}",)
AZURE_BLOB_URI = ("https://{account-name}.blob.core.windows.net/{container-name}/"
                  "{disk-name}.vhd",)
QUOBYTE_REGISTRY = "must be a host:port pair or multiple pairs separated by commas"
QUOBYTE_TENANT = "must be a UUID and may not exceed a length of 64 characters"


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def validate_azure_disk(source: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateAzureDisk``."""
    causes = [fe.required(f"{path}.{key}") for key in ("diskName", "diskURI")
              if not source.get(key)]
    caching, kind = source.get("cachingMode"), source.get("kind")
    uri = _str(source.get("diskURI"))
    if caching is not None and caching not in AZURE_CACHING_MODES:
        causes.append(fe.not_supported(f"{path}.cachingMode", caching, AZURE_CACHING_MODES))
    if kind is not None and kind not in AZURE_DISK_KINDS:
        causes.append(fe.not_supported(f"{path}.kind", kind, AZURE_DISK_KINDS))
    if kind == "Managed" and not uri.startswith("/subscriptions/"):
        causes.append(fe.not_supported(f"{path}.diskURI", uri, AZURE_MANAGED_URI))
    if kind is not None and kind != "Managed" and not uri.startswith("https://"):
        causes.append(fe.not_supported(f"{path}.diskURI", uri, AZURE_BLOB_URI))
    return causes


def _splits_host_port(pair: str) -> bool:
    """Whether Go's ``net.SplitHostPort`` accepts ``pair`` (its error cases, in order)."""
    i = pair.rfind(":")
    if i < 0:
        return False  # missing port
    j = k = 0
    if pair[0] == "[":
        end = pair.find("]")
        if end < 0 or end + 1 != i:
            return False  # missing ']', missing port, too many colons
        j, k = 1, end + 1
    elif ":" in pair[:i]:
        return False  # too many colons
    return "[" not in pair[j:] and "]" not in pair[k:]


def validate_quobyte(source: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateQuobyteVolumeSource``: one Invalid per bad pair, each naming the whole
    registry."""
    causes: list[Cause] = []
    registry = _str(source.get("registry"))
    if not registry:
        causes.append(fe.required(f"{path}.registry", QUOBYTE_REGISTRY))
    elif len(_str(source.get("tenant"))) >= 65:
        causes.append(fe.required(f"{path}.tenant", QUOBYTE_TENANT))
    else:
        causes.extend(fe.invalid(f"{path}.registry", registry, QUOBYTE_REGISTRY)
                      for pair in registry.split(",") if not _splits_host_port(pair))
    if not source.get("volume"):
        causes.append(fe.required(f"{path}.volume"))
    return causes
