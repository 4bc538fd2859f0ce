"""The validators of single pod volume sources (``pkg/apis/core/validation/validation.go``:
validateHostPathVolumeSource, validateSecretVolumeSource, validateConfigMapVolumeSource,
validateKeyToPath, validateDownwardAPIVolumeSource and validateDownwardAPIVolumeFile,
validateProjectedVolumeSource and validateProjectionSources, validateCSIVolumeSource,
validateEphemeralVolumeSource, validateISCSIVolumeSource, validateNFSVolumeSource and the
in-tree cloud and network sources), with the path helpers they share
(validateLocalDescendingPath, validatePathNoBacksteps, ValidateLocalNonReservedPath).

Go's paths are kept where they are odd: a GCE disk's errors are under ``persistentDisk``, a
CephFS volume's under ``cephfs``, a downward API file's directly under the source (no item
index), a projected duplicate path under ``projected`` itself, a CSI node-publish secret's
bad name under ``csi.name``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from setpoint.cluster.registry.validation_claims import validate_claim_spec
from setpoint.cluster.registry.validation_legacysources import validate_azure_disk, validate_quobyte
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.quantity import Quantity, try_from_json

HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                   "FileOrCreate", "Socket")
FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
# validVolumeDownwardAPIFieldPathExpressions, as sets.List sorts it
VOLUME_FIELD_PATHS = ("metadata.annotations", "metadata.labels", "metadata.name",
                      "metadata.namespace", "metadata.uid")
# ConvertDownwardAPIFieldLabel's pod field labels (pkg/apis/core/pods/helpers.go)
_POD_FIELD_LABELS = frozenset((
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
    "metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName",
    "spec.schedulerName", "status.phase", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs"))
# validContainerResourceFieldPathExpressions (sorted) and the hugepages prefixes
CONTAINER_RESOURCE_PATHS = ("limits.cpu", "limits.ephemeral-storage", "limits.memory",
                            "requests.cpu", "requests.ephemeral-storage", "requests.memory")
_HUGEPAGES_PREFIXES = ("limits.hugepages-", "requests.hugepages-")
MAX_TOKEN_SECONDS = 1 << 32
MIN_TOKEN_SECONDS = 10 * 60
CSI_DRIVER_MAX = 63
_ISCSI_IQN = re.compile(r"iqn\.\d{4}-\d{2}\.([A-Za-z0-9\-.]+)(:[^,;*&$|\s]+)$")
_ISCSI_EUI = re.compile(r"^eui.[A-Za-z0-9]{16}$")
_ISCSI_NAA = re.compile(r"^naa.[A-Za-z0-9]{32}$")
ISCSI_NAME_TOO_LONG = ("Total length of <volume name>:<iscsi.targetPortal> must be under 64 "
                       "characters if iscsi.initiatorName is specified.")
# ObjectMeta's fields in declaration order (validateFieldAllowList walks the struct so);
# a claim template may set only labels and annotations
_OBJECT_META_FIELDS = ("name", "generateName", "namespace", "selfLink", "uid",
                       "resourceVersion", "generation", "creationTimestamp",
                       "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                       "annotations", "ownerReferences", "finalizers", "managedFields")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def mode_errors(value: Any, path: str) -> list[Cause]:
    if isinstance(value, int) and not 0 <= value <= 0o777:
        return [fe.invalid(path, value, FILE_MODE_ERROR)]
    return []


def no_backsteps(target: str, path: str) -> list[Cause]:
    """``validatePathNoBacksteps``: one error however many ``..`` elements."""
    if ".." in target.replace("\\", "/").split("/"):
        return [fe.invalid(path, target, "must not contain '..'")]
    return []


def local_descending_path(target: str, path: str) -> list[Cause]:
    """``validateLocalDescendingPath``: relative, no ``..`` element."""
    causes: list[Cause] = []
    if posixpath.isabs(target):
        causes.append(fe.invalid(path, target, "must be a relative path"))
    return causes + no_backsteps(target, path)


def local_non_reserved_path(target: str, path: str) -> list[Cause]:
    """``ValidateLocalNonReservedPath``: a descending path not starting with ``..`` (not
    reported again when the ``..`` element check already caught ``../``)."""
    causes = local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        causes.append(fe.invalid(path, target, "must not start with '..'"))
    return causes


def key_to_path(item: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateKeyToPath``."""
    causes: list[Cause] = []
    if not item.get("key"):
        causes.append(fe.required(f"{path}.key"))
    target = _str(item.get("path"))
    if not target:
        causes.append(fe.required(f"{path}.path"))
    causes.extend(local_non_reserved_path(target, f"{path}.path"))
    return causes + mode_errors(item.get("mode"), f"{path}.mode")


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i if isinstance(i, dict) else {} for i in items] if isinstance(items, list) else []


def _host_path(source: Mapping[str, Any], path: str) -> list[Cause]:
    target = _str(source.get("path"))
    if not target:
        return [fe.required(f"{path}.path")]
    causes = no_backsteps(target, f"{path}.path")
    kind = source.get("type")
    if kind is not None and kind not in HOST_PATH_TYPES:
        causes.append(fe.not_supported(f"{path}.type", kind, HOST_PATH_TYPES))
    return causes


def _named_items(source: Mapping[str, Any], path: str, key: str) -> list[Cause]:
    """``validateSecretVolumeSource`` / ``validateConfigMapVolumeSource``."""
    causes = [] if source.get(key) else [fe.required(f"{path}.{key}")]
    causes.extend(mode_errors(source.get("defaultMode"), f"{path}.defaultMode"))
    for i, item in enumerate(_dicts(source.get("items"))):
        causes.extend(key_to_path(item, f"{path}.items[{i}]"))
    return causes


def _split_subscript(field_path: str) -> tuple[str, str, bool]:
    """``fieldpath.SplitMaybeSubscriptedPath``: ``metadata.labels['x']`` → (path, x)."""
    if not field_path.endswith("']"):
        return field_path, "", False
    head, sep, subscript = field_path[:-2].partition("['")
    if not sep or not head:
        return field_path, "", False
    return head, subscript, True


def _convert_field_label(api_version: str, label: str) -> tuple[str, str | None]:
    """``ConvertDownwardAPIFieldLabel``: the internal field path, or the error."""
    if api_version != "v1":
        return "", f"unsupported pod version: {api_version}"
    head, _, subscripted = _split_subscript(label)
    if subscripted:
        if head in ("metadata.annotations", "metadata.labels"):
            return label, None
        return "", f"field label does not support subscript: {label}"
    if label in _POD_FIELD_LABELS:
        return label, None
    if label == "spec.host":
        return "spec.nodeName", None
    return "", f"field label not supported: {label}"


def object_field_selector(ref: Mapping[str, Any], allowed: tuple[str, ...], path: str
                          ) -> list[Cause]:
    """``validateObjectFieldSelector``."""
    api_version, field_path = _str(ref.get("apiVersion")), _str(ref.get("fieldPath"))
    if not api_version:
        return [fe.required(f"{path}.apiVersion")]
    if not field_path:
        return [fe.required(f"{path}.fieldPath")]
    internal, err = _convert_field_label(api_version, field_path)
    if err is not None:
        return [fe.invalid(f"{path}.fieldPath", field_path, f"error converting fieldPath: {err}")]
    head, subscript, subscripted = _split_subscript(internal)
    if subscripted:
        if head == "metadata.annotations":
            return [fe.invalid(path, subscript.lower(), m)
                    for m in names.is_qualified_name(subscript.lower())]
        if head == "metadata.labels":
            return [fe.invalid(path, subscript, m) for m in names.is_qualified_name(subscript)]
        return [fe.invalid(path, head, "does not support subscript")]
    if head not in allowed:
        return [fe.not_supported(f"{path}.fieldPath", head, allowed)]
    return []


def _resource_field_selector(ref: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateContainerResourceFieldSelector`` for a volume (a container name needed),
    then ``validateContainerResourceDivisor``."""
    resource = _str(ref.get("resource"))
    causes: list[Cause] = []
    if not ref.get("containerName"):
        causes.append(fe.required(f"{path}.containerName"))
    elif not resource:
        causes.append(fe.required(f"{path}.resource"))
    elif resource not in CONTAINER_RESOURCE_PATHS and \
            not resource.startswith(_HUGEPAGES_PREFIXES):
        causes.append(fe.not_supported(f"{path}.resource", resource, CONTAINER_RESOURCE_PATHS))
    return causes + _divisor(resource, ref.get("divisor"), path)


_MEMORY_DIVISORS = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti",
                    "1Pi", "1Ei")
_MEMORY_DIVISOR_ERROR = ("only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, "
                         "1Pi, 1Ei are supported with the {} resource")


def _divisor(resource: str, divisor: Any, path: str) -> list[Cause]:
    """``validateContainerResourceDivisor``: an unset (zero) divisor is fine; otherwise the
    canonical form must be one the resource's unit allows."""
    quantity = try_from_json(divisor) if divisor is not None else Quantity()
    if quantity is None or quantity.is_zero():
        return []
    text = str(quantity)
    allowed, error = {
        "cpu": (("1m", "1"), "only divisor's values 1m and 1 are supported with the cpu "
                             "resource"),
        "memory": (_MEMORY_DIVISORS, _MEMORY_DIVISOR_ERROR.format("memory")),
        "ephemeral-storage": (_MEMORY_DIVISORS,
                              _MEMORY_DIVISOR_ERROR.format("local ephemeral storage")),
    }.get(resource.partition(".")[2] if resource.startswith(("limits.", "requests."))
          else "", ((), ""))
    causes: list[Cause] = []
    if error and text not in allowed:
        causes.append(fe.invalid(f"{path}.divisor", resource, error))
    if resource.startswith(_HUGEPAGES_PREFIXES) and text not in _MEMORY_DIVISORS:
        causes.append(fe.invalid(f"{path}.divisor", resource,
                                 _MEMORY_DIVISOR_ERROR.format("hugepages")))
    return causes


def downward_api_file(item: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateDownwardAPIVolumeFile``: every error under the source's own path."""
    target = _str(item.get("path"))
    causes = [] if target else [fe.required(f"{path}.path")]
    causes.extend(local_non_reserved_path(target, f"{path}.path"))
    field_ref, resource_ref = item.get("fieldRef"), item.get("resourceFieldRef")
    if isinstance(field_ref, dict):
        causes.extend(object_field_selector(field_ref, VOLUME_FIELD_PATHS, f"{path}.fieldRef"))
        if isinstance(resource_ref, dict):
            causes.append(fe.invalid(path, "resource", "fieldRef and resourceFieldRef can not "
                                                       "be specified simultaneously"))
    elif isinstance(resource_ref, dict):
        causes.extend(_resource_field_selector(resource_ref, f"{path}.resourceFieldRef"))
    else:
        causes.append(fe.required(path, "one of fieldRef and resourceFieldRef is required"))
    return causes + mode_errors(item.get("mode"), f"{path}.mode")


def _downward_api(source: Mapping[str, Any], path: str) -> list[Cause]:
    causes = mode_errors(source.get("defaultMode"), f"{path}.defaultMode")
    for item in _dicts(source.get("items")):
        causes.extend(downward_api_file(item, path))
    return causes


def _projected(source: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateProjectedVolumeSource`` and ``validateProjectionSources``: each source of
    one kind, every file path once across them all. (clusterTrustBundle is behind the alpha
    ClusterTrustBundleProjection gate, off in 1.32: the strategy drops it before this.)"""
    causes = mode_errors(source.get("defaultMode"), f"{path}.defaultMode")
    seen: set[str] = set()

    def claim(target: str, value: str) -> None:
        if target in seen:
            causes.append(fe.invalid(path, value, "conflicting duplicate paths"))
        seen.add(target)

    for i, projection in enumerate(_dicts(source.get("sources"))):
        src = f"{path}.sources[{i}]"
        count = 0
        for kind in ("secret", "configMap"):
            ref = projection.get(kind)
            if not isinstance(ref, dict):
                continue
            count += 1
            if not ref.get("name"):
                causes.append(fe.required(f"{src}.{kind}.name"))
            for j, item in enumerate(_dicts(ref.get("items"))):
                causes.extend(key_to_path(item, f"{src}.{kind}.items[{j}]"))
                if _str(item.get("path")):
                    claim(item["path"], _str(ref.get("name")))
        downward = projection.get("downwardAPI")
        if isinstance(downward, dict):
            count += 1
            for item in _dicts(downward.get("items")):
                causes.extend(downward_api_file(item, f"{src}.downwardAPI"))
                if _str(item.get("path")):
                    claim(item["path"], item["path"])
        token = projection.get("serviceAccountToken")
        if isinstance(token, dict):
            count += 1
            seconds = token.get("expirationSeconds")
            seconds = seconds if isinstance(seconds, int) else 0
            if seconds < MIN_TOKEN_SECONDS:
                causes.append(fe.invalid(f"{src}.serviceAccountToken.expirationSeconds",
                                         seconds, "may not specify a duration less than 10 "
                                                  "minutes"))
            if seconds > MAX_TOKEN_SECONDS:
                causes.append(fe.invalid(f"{src}.serviceAccountToken.expirationSeconds",
                                         seconds, "may not specify a duration larger than 2^32 "
                                                  "seconds"))
            target = _str(token.get("path"))
            # (the path errors name the projected volume, not the token: Go's fldPath)
            if not target:
                causes.append(fe.required(f"{path}.path"))
            else:
                causes.extend(local_non_reserved_path(target, f"{path}.path"))
        if count > 1:
            causes.append(fe.forbidden(src, "may not specify more than 1 volume type"))
    return causes


def validate_csi_driver_name(driver: str, path: str) -> list[Cause]:
    """``ValidateCSIDriverName``: every check runs, so an empty name is also invalid."""
    causes = [] if driver else [fe.required(path)]
    if len(driver) > CSI_DRIVER_MAX:
        causes.append(fe.too_long(path, CSI_DRIVER_MAX))
    return causes + [fe.invalid(path, driver, m)
                     for m in names.is_dns1123_subdomain(driver.lower())]


def _csi(source: Mapping[str, Any], path: str) -> list[Cause]:
    causes = validate_csi_driver_name(_str(source.get("driver")), f"{path}.driver")
    secret = source.get("nodePublishSecretRef")
    if isinstance(secret, dict):
        name = _str(secret.get("name"))
        if not name:
            causes.append(fe.required(f"{path}.nodePublishSecretRef.name"))
        else:
            causes.extend(fe.invalid(f"{path}.name", name, m)
                          for m in names.name_is_dns_subdomain(name, False))
    return causes


def _template_meta(meta: Any, path: str) -> list[Cause]:
    """``ValidateTemplateObjectMeta``: labels and annotations only."""
    meta = meta if isinstance(meta, dict) else {}
    causes = names.validate_annotations(meta.get("annotations"), f"{path}.annotations")
    causes.extend(names.validate_labels(meta.get("labels"), f"{path}.labels"))
    causes.extend(fe.forbidden(f"{path}.{key}", "cannot be set")
                  for key in _OBJECT_META_FIELDS
                  if key not in ("labels", "annotations") and meta.get(key))
    return causes


def _ephemeral(source: Mapping[str, Any], path: str) -> list[Cause]:
    template = source.get("volumeClaimTemplate")
    if not isinstance(template, dict):
        return [fe.required(f"{path}.volumeClaimTemplate")]
    tp = f"{path}.volumeClaimTemplate"
    return (_template_meta(template.get("metadata"), f"{tp}.metadata")
            + validate_claim_spec(template.get("spec"), f"{tp}.spec"))


def _iscsi_name(value: str, path: str, prefix_error: str, check_prefix: bool) -> list[Cause]:
    if check_prefix and not value.startswith(("iqn", "eui", "naa")):
        return [fe.invalid(path, value, prefix_error)]
    for prefix, pattern in (("iqn", _ISCSI_IQN), ("eui", _ISCSI_EUI), ("naa", _ISCSI_NAA)):
        if value.startswith(prefix):
            if not pattern.search(value):
                return [fe.invalid(path, value, "must be valid format")]
            break
    return []


def _iscsi(source: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateISCSIVolumeSource`` (the initiator name's prefix error does not stop its
    format check, as Go's separate ``if`` does not)."""
    causes = [] if source.get("targetPortal") else [fe.required(f"{path}.targetPortal")]
    starts = "must be valid format starting with iqn, eui, or naa"
    iqn = _str(source.get("iqn"))
    if not iqn:
        causes.append(fe.required(f"{path}.iqn"))
    else:
        causes.extend(_iscsi_name(iqn, f"{path}.iqn", starts, True))
    lun = source.get("lun")
    if isinstance(lun, int) and not 0 <= lun <= 255:
        causes.append(fe.invalid(f"{path}.lun", lun, names.inclusive_range_error(0, 255)))
    if (source.get("chapAuthDiscovery") or source.get("chapAuthSession")) and \
            source.get("secretRef") is None:
        causes.append(fe.required(f"{path}.secretRef"))
    initiator = source.get("initiatorName")
    if isinstance(initiator, str):
        if not initiator.startswith(("iqn", "eui", "naa")):
            causes.append(fe.invalid(f"{path}.initiatorname", initiator, starts))
        causes.extend(_iscsi_name(initiator, f"{path}.initiatorname", starts, False))
    return causes


def _nfs(source: Mapping[str, Any], path: str) -> list[Cause]:
    target = _str(source.get("path"))
    causes = [] if source.get("server") else [fe.required(f"{path}.server")]
    if not target:
        causes.append(fe.required(f"{path}.path"))
    if not posixpath.isabs(target):
        causes.append(fe.invalid(f"{path}.path", target, "must be an absolute path"))
    return causes


def _required(*keys: str) -> Callable[[Mapping[str, Any], str], list[Cause]]:
    """A source whose only rule is that ``keys`` are set."""
    def check(source: Mapping[str, Any], path: str) -> list[Cause]:
        return [fe.required(f"{path}.{key}") for key in keys if not source.get(key)]
    return check


def _partition(id_key: str, child: str | None = None) -> Callable[[Mapping[str, Any], str],
                                                                    list[Cause]]:
    """GCE and AWS disks: an id, and a partition in [0, 255] (Go words the range 1-255);
    ``child`` renames the source's last path element as Go does for GCE disks."""
    def check(source: Mapping[str, Any], path: str) -> list[Cause]:
        at = f"{path.rsplit('.', 1)[0]}.{child}" if child else path
        causes = [] if source.get(id_key) else [fe.required(f"{at}.{id_key}")]
        partition = source.get("partition")
        if isinstance(partition, int) and not 0 <= partition <= 255:
            causes.append(fe.invalid(f"{at}.partition", partition,
                                     names.inclusive_range_error(1, 255)))
        return causes
    return check


def _git_repo(source: Mapping[str, Any], path: str) -> list[Cause]:
    causes = [] if source.get("repository") else [fe.required(f"{path}.repository")]
    return causes + local_descending_path(_str(source.get("directory")), f"{path}.directory")


def _flocker(source: Mapping[str, Any], path: str) -> list[Cause]:
    name, uid = _str(source.get("datasetName")), _str(source.get("datasetUUID"))
    causes: list[Cause] = []
    if not name and not uid:
        causes.append(fe.required(path, "one of datasetName and datasetUUID is required"))
    if name and uid:
        causes.append(fe.invalid(path, "resource", "datasetName and datasetUUID can not be "
                                                   "specified simultaneously"))
    if "/" in name:
        causes.append(fe.invalid(f"{path}.datasetName", name, "must not contain '/'"))
    return causes


def _secret_ref_name(source: Mapping[str, Any], path: str) -> list[Cause]:
    ref = source.get("secretRef")
    if isinstance(ref, dict) and not ref.get("name"):
        return [fe.required(f"{path}.secretRef.name")]
    return []


def _cinder(source: Mapping[str, Any], path: str) -> list[Cause]:
    causes = [] if source.get("volumeID") else [fe.required(f"{path}.volumeID")]
    return causes + _secret_ref_name(source, path)


def _fc(source: Mapping[str, Any], path: str) -> list[Cause]:
    wwns, wwids = source.get("targetWWNs") or [], source.get("wwids") or []
    causes: list[Cause] = []
    if not wwns and not wwids:
        causes.append(fe.required(f"{path}.targetWWNs", "must specify either targetWWNs or "
                                                        "wwids, but not both"))
    if wwns and wwids:
        causes.append(fe.invalid(f"{path}.targetWWNs", wwns, "targetWWNs and wwids can not be "
                                                             "specified simultaneously"))
    if wwns:
        lun = source.get("lun")
        if lun is None:
            causes.append(fe.required(f"{path}.lun", "lun is required if targetWWNs is "
                                                     "specified"))
        elif isinstance(lun, int) and not 0 <= lun <= 255:
            causes.append(fe.invalid(f"{path}.lun", lun, names.inclusive_range_error(0, 255)))
    return causes


def _flex(source: Mapping[str, Any], path: str) -> list[Cause]:
    causes = [] if source.get("driver") else [fe.required(f"{path}.driver")]
    for key in source.get("options") or {}:
        domain = ("." + key.split("/", 1)[0].lower()) if "/" in key else "." + key.lower()
        if domain.endswith((".kubernetes.io", ".k8s.io")):
            causes.append(fe.invalid(f"{path}.options[{key}]", key,
                                     "kubernetes.io and k8s.io namespaces are reserved"))
    return causes


def _storage_os(source: Mapping[str, Any], path: str) -> list[Cause]:
    name, namespace = _str(source.get("volumeName")), _str(source.get("volumeNamespace"))
    causes = [] if name else [fe.required(f"{path}.volumeName")]
    causes.extend(fe.invalid(f"{path}.volumeName", name, m)
                  for m in (names.is_dns1123_label(name) if name else []))
    causes.extend(fe.invalid(f"{path}.volumeNamespace", namespace, m)
                  for m in (names.is_dns1123_label(namespace) if namespace else []))
    return causes + _secret_ref_name(source, path)


def _empty_dir(source: Mapping[str, Any], path: str) -> list[Cause]:
    limit = source.get("sizeLimit")
    quantity = try_from_json(limit) if limit is not None else None
    if quantity is not None and quantity.sign() < 0:
        return [fe.forbidden(f"{path}.sizeLimit",
                             "SizeLimit field must be a valid resource quantity")]
    return []


SourceValidator = Callable[[Mapping[str, Any], str], list[Cause]]


def _by_name(key: str) -> SourceValidator:
    return lambda source, path: _named_items(source, path, key)


# What each source's validator is; ``path`` is ``<volume>.<source key>``.
SOURCE_VALIDATORS: dict[str, SourceValidator] = {
    "emptyDir": _empty_dir,
    "hostPath": _host_path,
    "gitRepo": _git_repo,
    "gcePersistentDisk": _partition("pdName", "persistentDisk"),
    "awsElasticBlockStore": _partition("volumeID"),
    "secret": _by_name("secretName"),
    "nfs": _nfs,
    "iscsi": _iscsi,
    "glusterfs": _required("endpoints", "path"),
    "flocker": _flocker,
    "persistentVolumeClaim": _required("claimName"),
    "rbd": _required("monitors", "image"),
    "cinder": _cinder,
    "cephfs": _required("monitors"),
    "quobyte": validate_quobyte,
    "downwardAPI": _downward_api,
    "fc": _fc,
    "flexVolume": _flex,
    "configMap": _by_name("name"),
    "azureFile": _required("secretName", "shareName"),
    "vsphereVolume": _required("volumePath"),
    "photonPersistentDisk": _required("pdID"),
    "portworxVolume": _required("volumeID"),
    "azureDisk": validate_azure_disk,
    "storageos": _storage_os,
    "projected": _projected,
    "scaleIO": _required("gateway", "system", "volumeName"),
    "csi": _csi,
    "ephemeral": _ephemeral,
}


def validate_source(kind: str, source: Mapping[str, Any], path: str) -> list[Cause]:
    """The checks of the one source a volume names."""
    check = SOURCE_VALIDATORS.get(kind)
    return check(source, path) if check is not None else []


def iscsi_volume_name(volume: Mapping[str, Any], path: str) -> list[Cause]:
    """validateVolumeSource's rule for an iSCSI volume with an initiator name: the volume's
    name and target portal fit 64 characters (checked even beside another source)."""
    source = volume.get("iscsi")
    if not isinstance(source, dict) or source.get("initiatorName") is None:
        return []
    name = _str(volume.get("name"))
    if len(f"{name}:{_str(source.get('targetPortal'))}") > 64:
        return [fe.invalid(f"{path}.name", name, ISCSI_NAME_TOO_LONG)]
    return []
