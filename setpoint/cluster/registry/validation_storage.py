"""Validation of storage.k8s.io kinds (``pkg/apis/storage/validation/validation.go``) as
their 1.32 strategies call it (``pkg/registry/storage/<kind>/strategy.go``)."""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_workloads import go_label_selector
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import try_from_json

NON_NEGATIVE = "must be greater than or equal to 0"
# the csinode strategy validates with AllowLongNodeID: true
CSI_NODE_ID_MAX_LENGTH = 256
CSI_DRIVER_NAME_MAX_LENGTH = 63


def _bytes(value: str) -> int:
    """Go's ``len`` of a string: its UTF-8 bytes."""
    return len(value.encode("utf-8", "surrogatepass"))


def validate_csi_driver_name(name: str, path: str) -> list[Cause]:
    """``ValidateCSIDriverName`` of ``pkg/apis/core/validation`` (not the storage package's
    variable of the same name, which is NameIsDNSSubdomain for CSIDriver objects)."""
    causes: list[Cause] = []
    if not name:
        causes.append(fe.required(path))
    if _bytes(name) > CSI_DRIVER_NAME_MAX_LENGTH:
        causes.append(fe.too_long(path, CSI_DRIVER_NAME_MAX_LENGTH))
    causes.extend(fe.invalid(path, name, m) for m in names.is_dns1123_subdomain(name.lower()))
    return causes


def _csi_node_driver(driver: Obj, seen: set[str], path: str) -> list[Cause]:
    """``validateCSINodeDriver``: name, node id, allocatable count, then the duplicate name
    and the topology keys, whose errors are all reported on the driver itself."""
    name = driver.get("name") or ""
    causes = validate_csi_driver_name(name, f"{path}.name")
    node_id = driver.get("nodeID") or ""
    if not node_id:
        causes.append(fe.required(f"{path}.nodeID"))
    if _bytes(node_id) > CSI_NODE_ID_MAX_LENGTH:
        causes.append(fe.invalid(f"{path}.nodeID", node_id,
                                 f"must be {CSI_NODE_ID_MAX_LENGTH} characters or less"))
    count = (driver.get("allocatable") or {}).get("count")
    if isinstance(count, int) and count < 0:
        causes.append(fe.invalid(f"{path}.allocatable.count", count, NON_NEGATIVE))
    if name in seen:
        causes.append(fe.duplicate(f"{path}.name", name))
    seen.add(name)
    keys: set[str] = set()
    for key in driver.get("topologyKeys") or []:
        if not key:
            causes.append(fe.required(path))
        if key in keys:
            causes.append(fe.duplicate(path, key))
        keys.add(key)
        causes.extend(fe.invalid(path, key, m) for m in names.is_qualified_name(key))
    return causes


def validate_csi_node(obj: Obj) -> list[Cause]:
    """``ValidateCSINode`` beyond metadata (node names are DNS subdomains, the default)."""
    seen: set[str] = set()
    causes: list[Cause] = []
    for i, driver in enumerate((obj.get("spec") or {}).get("drivers") or []):
        causes.extend(_csi_node_driver(driver or {}, seen, f"spec.drivers[{i}]"))
    return causes


def _semantic_driver(driver: Obj) -> tuple[Any, ...]:
    """A CSINodeDriver as ``apiequality.Semantic.DeepEqual`` compares it: an empty list or
    a missing one are the same."""
    allocatable = driver.get("allocatable")
    return (driver.get("name") or "", driver.get("nodeID") or "",
            tuple(driver.get("topologyKeys") or ()),
            None if allocatable is None else (allocatable.get("count"),))


def _go_driver(driver: Obj) -> fe.GoValue:
    """``%#v`` of an internal ``storage.CSINodeDriver``."""
    keys = fe.go_string_slice(driver.get("topologyKeys")).text
    allocatable = fe.go_pointer("storage.VolumeNodeResources",
                                driver.get("allocatable") is not None)
    return fe.GoValue(
        f"storage.CSINodeDriver{{Name:{fe.go_quote(driver.get('name') or '')}, "
        f"NodeID:{fe.go_quote(driver.get('nodeID') or '')}, TopologyKeys:{keys}, "
        f"Allocatable:{allocatable}}}")


def validate_csi_node_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateCSINodeUpdate`` after the strategy's own ``ValidateCSINode``: the new node
    validated a second time, then every driver kept by name must be unchanged."""
    causes = validate_csi_node(new)
    new_drivers = [d or {} for d in (new.get("spec") or {}).get("drivers") or []]
    for old_driver in (old.get("spec") or {}).get("drivers") or []:
        old_driver = old_driver or {}
        for new_driver in new_drivers:
            if (old_driver.get("name") or "") == (new_driver.get("name") or "") and \
                    _semantic_driver(old_driver) != _semantic_driver(new_driver):
                causes.append(fe.invalid("spec.drivers", _go_driver(new_driver),
                                         "field is immutable"))
    return causes


# the storage validation package's limits on a StorageClass's parameters
MAX_PROVISIONER_PARAMETER_SIZE = 256 * (1 << 10)
MAX_PROVISIONER_PARAMETER_LEN = 512
RECLAIM_POLICIES = ("Delete", "Retain")
VOLUME_BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


def validate_storage_class(obj: Obj) -> list[Cause]:
    """``ValidateStorageClass`` past its metadata: ``validateProvisioner`` (a qualified
    name, judged lower-cased) and ``validateParameters`` (at most 512, 256 KiB in all)."""
    causes: list[Cause] = []
    provisioner = obj.get("provisioner")
    provisioner = provisioner if isinstance(provisioner, str) else ""
    if not provisioner:
        causes.append(fe.required("provisioner"))
    else:
        causes.extend(fe.invalid("provisioner", provisioner, m)
                      for m in names.is_qualified_name(provisioner.lower()))
    causes.extend(_parameters(obj.get("parameters")))
    # validateReclaimPolicy, validateVolumeBindingMode (both defaulted before)
    policy = obj.get("reclaimPolicy")
    if isinstance(policy, str) and policy and policy not in RECLAIM_POLICIES:
        causes.append(fe.not_supported("reclaimPolicy", policy, RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if not isinstance(mode, str):
        causes.append(fe.required("volumeBindingMode"))
    elif mode not in VOLUME_BINDING_MODES:
        causes.append(fe.not_supported("volumeBindingMode", mode, VOLUME_BINDING_MODES))
    causes.extend(_allowed_topologies(obj.get("allowedTopologies"), "allowedTopologies"))
    return causes


def _parameters(params: Any) -> list[Cause]:
    """``validateParameters``: at most 512 of them (the rest is then not looked at), no
    empty key, 256 KiB in all."""
    params = params if isinstance(params, dict) else {}
    if len(params) > MAX_PROVISIONER_PARAMETER_LEN:
        return [fe.too_long("parameters", MAX_PROVISIONER_PARAMETER_LEN)]
    causes: list[Cause] = []
    total = 0
    for key, value in params.items():
        if not key:
            causes.append(fe.invalid("parameters", key, "field can not be empty."))
        total += _bytes(key) + _bytes(value if isinstance(value, str) else "")
    if total > MAX_PROVISIONER_PARAMETER_SIZE:
        causes.append(fe.too_long("parameters", MAX_PROVISIONER_PARAMETER_SIZE))
    return causes


def _topology_selector_term(term: Obj, path: str) -> tuple[dict[str, frozenset[str]],
                                                            list[Cause]]:
    """core validation's ``ValidateTopologySelectorTerm``: each requirement's values
    (required, unique), its key (a label name), then the duplicate key."""
    causes: list[Cause] = []
    expressions: dict[str, frozenset[str]] = {}
    for i, requirement in enumerate(term.get("matchLabelExpressions") or []):
        p = fe.index(f"{path}.matchLabelExpressions", i)
        requirement = requirement if isinstance(requirement, dict) else {}
        values = [str(v) for v in requirement.get("values") or []]
        if not values:
            causes.append(fe.required(f"{p}.values"))
        seen: set[str] = set()
        for j, value in enumerate(values):
            if value in seen:
                causes.append(fe.duplicate(fe.index(f"{p}.values", j), value))
            seen.add(value)
        key = str(requirement.get("key") or "")
        causes.extend(fe.invalid(f"{p}.key", key, m) for m in names.is_qualified_name(key))
        if key in expressions:
            causes.append(fe.duplicate(f"{p}.key", key))
        expressions[key] = frozenset(seen)
    return expressions, causes


def _allowed_topologies(terms: Any, path: str) -> list[Cause]:
    """``validateAllowedTopologies``: each term, and a term that repeats an earlier one
    (the same keys with the same value sets) is a duplicate."""
    causes: list[Cause] = []
    earlier: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(terms or []):
        p = fe.index(path, i)
        expressions, term_causes = _topology_selector_term(
            term if isinstance(term, dict) else {}, p)
        causes.extend(term_causes)
        causes.extend(fe.duplicate(f"{p}.matchLabelExpressions", "")
                      for other in earlier if other == expressions)
        earlier.append(expressions)
    return causes


def validate_storage_class_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateStorageClassUpdate`` past its metadata: parameters, provisioner, reclaim
    policy and binding mode are fixed at creation. (``reflect.DeepEqual`` tells an empty
    map from a missing one, but the stored object never keeps an empty map, so the two are
    compared as equal here.)"""
    causes: list[Cause] = []
    if (new.get("parameters") or None) != (old.get("parameters") or None):
        causes.append(fe.forbidden("parameters", "updates to parameters are forbidden."))
    if (new.get("provisioner") or "") != (old.get("provisioner") or ""):
        causes.append(fe.forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        causes.append(fe.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        causes.append(fe.invalid("volumeBindingMode", new.get("volumeBindingMode"),
                                 "field is immutable"))
    return causes


# -- VolumeAttachment ---------------------------------------------------------------------------

MAX_ATTACHED_VOLUME_METADATA_SIZE = 256 * (1 << 10)
MAX_VOLUME_ERROR_MESSAGE_SIZE = 1024
_ONE_SOURCE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _volume_error(error: Any, path: str) -> list[Cause]:
    """``validateVolumeError``."""
    if not isinstance(error, dict):
        return []
    causes: list[Cause] = []
    message = error.get("message")
    if isinstance(message, str) and _bytes(message) > MAX_VOLUME_ERROR_MESSAGE_SIZE:
        # (Go reports the metadata limit here, not the message one)
        causes.append(fe.too_long(f"{path}.message", MAX_ATTACHED_VOLUME_METADATA_SIZE))
    code = error.get("errorCode")
    if isinstance(code, int) and code < 0:
        causes.append(fe.invalid(f"{path}.errorCode", code,
                                 names.inclusive_range_error(0, 2**31 - 1)))
    return causes


def _volume_attachment(obj: Obj) -> list[Cause]:
    """``ValidateVolumeAttachment`` past its metadata: spec, then status."""
    spec = _obj(obj.get("spec"))
    causes: list[Cause] = []
    attacher = _str(spec.get("attacher"))
    if not attacher:
        causes.append(fe.required("spec.attacher"))
    source = _obj(spec.get("source"))
    pv_name, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    if pv_name is None and inline is None:
        causes.append(fe.required("spec.source", _ONE_SOURCE))
    elif pv_name is not None and inline is not None:
        causes.append(fe.forbidden("spec.source", _ONE_SOURCE))
    elif pv_name is not None and not pv_name:
        causes.append(fe.required("spec.source.persistentVolumeName",
                                  "must specify non empty persistentVolumeName"))
    node = _str(spec.get("nodeName"))
    causes.extend(fe.invalid("spec.nodeName", node, m)
                  for m in names.name_is_dns_subdomain(node, False))
    status = _obj(obj.get("status"))
    metadata = status.get("attachmentMetadata")
    size = sum(_bytes(str(k)) + _bytes(str(v)) for k, v in
               (metadata.items() if isinstance(metadata, dict) else ()))
    if size > MAX_ATTACHED_VOLUME_METADATA_SIZE:
        causes.append(fe.too_long("status.attachmentMetadata", MAX_ATTACHED_VOLUME_METADATA_SIZE))
    causes.extend(_volume_error(status.get("attachError"), "status.attachError"))
    causes.extend(_volume_error(status.get("detachError"), "status.detachError"))
    return causes


def validate_volume_attachment(obj: Obj) -> list[Cause]:
    """The strategy's ``Validate``: ``ValidateVolumeAttachment``, then for storage.k8s.io/v1
    ``ValidateVolumeAttachmentV1`` (the attacher a CSI driver name, the volume a PV name)."""
    causes = _volume_attachment(obj)
    spec = _obj(obj.get("spec"))
    attacher = _str(spec.get("attacher"))
    causes.extend(validate_csi_driver_name(attacher, "spec.attacher"))
    pv_name = _obj(spec.get("source")).get("persistentVolumeName")
    if isinstance(pv_name, str):
        causes.extend(fe.invalid("spec.source.persistentVolumeName", pv_name, m)
                      for m in names.name_is_dns_subdomain(pv_name, False))
    return causes


def validate_volume_attachment_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateVolumeAttachmentUpdate`` past its metadata: the spec is read-only. (Go
    prints the internal spec with ``%#v``, pointer addresses included; the Python
    rendering of the value is JSON.)"""
    causes = _volume_attachment(new)
    if (new.get("spec") or None) != (old.get("spec") or None):
        causes.append(fe.invalid("spec", fe.json_value(new.get("spec")), "field is immutable"))
    return causes


# -- CSIDriver ----------------------------------------------------------------------------------

FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
VOLUME_LIFECYCLE_MODES = ("Persistent", "Ephemeral")
MIN_TOKEN_EXPIRATION_SECONDS = 10 * 60
MAX_TOKEN_EXPIRATION_SECONDS = 1 << 32


def _token_requests(requests: Any, path: str) -> list[Cause]:
    """``validateTokenRequests``: audiences unique (a repeat is not looked at further),
    expirations between 10 minutes and 2^32 seconds."""
    causes: list[Cause] = []
    audiences: set[str] = set()
    for i, request in enumerate(requests or []):
        p = fe.index(path, i)
        request = request if isinstance(request, dict) else {}
        audience = str(request.get("audience") or "")
        if audience in audiences:
            causes.append(fe.duplicate(f"{p}.audience", audience))
            continue
        audiences.add(audience)
        seconds = request.get("expirationSeconds")
        if not isinstance(seconds, int):
            continue
        if seconds < MIN_TOKEN_EXPIRATION_SECONDS:
            causes.append(fe.invalid(f"{p}.expirationSeconds", seconds,
                                     "may not specify a duration less than 10 minutes"))
        if seconds > MAX_TOKEN_EXPIRATION_SECONDS:
            causes.append(fe.invalid(f"{p}.expirationSeconds", seconds,
                                     "may not specify a duration larger than 2^32 seconds"))
    return causes


def _csi_driver_spec(spec: Obj) -> list[Cause]:
    """``validateCSIDriverSpec`` (Go names the attachRequired path "attachedRequired")."""
    causes: list[Cause] = []
    for key, path in (("attachRequired", "spec.attachedRequired"),
                      ("podInfoOnMount", "spec.podInfoOnMount"),
                      ("storageCapacity", "spec.storageCapacity")):
        if spec.get(key) is None:
            causes.append(fe.required(path))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        causes.append(fe.not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES))
    causes.extend(_token_requests(spec.get("tokenRequests"), "spec.tokenRequests"))
    causes.extend(fe.not_supported("spec.volumeLifecycleModes", mode, VOLUME_LIFECYCLE_MODES)
                  for mode in spec.get("volumeLifecycleModes") or []
                  if mode not in VOLUME_LIFECYCLE_MODES)
    # the SELinuxMountReadWriteOncePod gate is on by default in 1.32
    if spec.get("seLinuxMount") is None:
        causes.append(fe.required("spec.seLinuxMount"))
    return causes


def validate_csi_driver(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    return _csi_driver_spec(spec if isinstance(spec, dict) else {})


def _go_lifecycle_modes(modes: Any) -> fe.GoValue:
    if modes is None:
        return fe.GoValue("[]storage.VolumeLifecycleMode(nil)")
    shown = ", ".join(fe.go_quote(str(m)) for m in modes)
    return fe.GoValue(f"[]storage.VolumeLifecycleMode{{{shown}}}")


def validate_csi_driver_update(new: Obj, old: Obj) -> list[Cause]:
    """The csidriver strategy's ValidateUpdate: ``ValidateCSIDriver``, then
    ``ValidateCSIDriverUpdate``, which validates the spec again and keeps attachRequired
    and volumeLifecycleModes fixed."""
    new_spec: Obj = new["spec"] if isinstance(new.get("spec"), dict) else {}
    old_spec: Obj = old["spec"] if isinstance(old.get("spec"), dict) else {}
    causes = _csi_driver_spec(new_spec) + _csi_driver_spec(new_spec)
    if new_spec.get("attachRequired") != old_spec.get("attachRequired"):
        causes.append(fe.invalid("spec.attachedRequired", new_spec.get("attachRequired"),
                                 "field is immutable"))
    new_modes = new_spec.get("volumeLifecycleModes") or None
    if new_modes != (old_spec.get("volumeLifecycleModes") or None):
        causes.append(fe.invalid("spec.volumeLifecycleModes", _go_lifecycle_modes(new_modes),
                                 "field is immutable"))
    return causes


# -- CSIStorageCapacity -------------------------------------------------------------------------

def validate_csi_storage_capacity(obj: Obj) -> list[Cause]:
    """``ValidateCSIStorageCapacity`` past its metadata: the node topology selector, the
    storage class name (a DNS subdomain, empty included) and a non-negative capacity."""
    causes = labels.validate_label_selector(obj.get("nodeTopology"), "nodeTopology")
    class_name = str(obj.get("storageClassName") or "")
    causes.extend(fe.invalid("storageClassName", class_name, m)
                  for m in names.name_is_dns_subdomain(class_name, False))
    capacity = try_from_json(obj.get("capacity")) if obj.get("capacity") is not None else None
    if capacity is not None and capacity.sign() < 0:
        causes.append(fe.invalid("capacity", str(capacity), NON_NEGATIVE))
    return causes


def validate_csi_storage_capacity_update(new: Obj, old: Obj) -> list[Cause]:
    """The strategy's ValidateUpdate: ``ValidateCSIStorageCapacity``, then
    ``ValidateCSIStorageCapacityUpdate`` (the inputs of CSI GetCapacity are fixed)."""
    causes = validate_csi_storage_capacity(new)
    if (new.get("nodeTopology") or None) != (old.get("nodeTopology") or None):
        causes.append(fe.invalid("nodeTopology", go_label_selector(new.get("nodeTopology")),
                                 "field is immutable"))
    if (new.get("storageClassName") or "") != (old.get("storageClassName") or ""):
        causes.append(fe.invalid("storageClassName", new.get("storageClassName") or "",
                                 "field is immutable"))
    return causes
