"""Managed fields: who owns which field, tracked on every write as the kube-apiserver does.

This is the apiserver's field manager (k8s.io/apimachinery/pkg/util/managedfields) for the
non-apply writes (create, update, patch: operation ``Update``), over structured-merge-diff's
``Updater.Update``: the manager gains the fields its write added or changed, every other
manager loses the fields that were changed or removed, empty entries disappear, the entries
of one manager, operation, apiVersion and subresource merge, the oldest update entries are
folded into ``ancient-changes`` buckets past ten. The codec of ``metadata.managedFields`` and
the scale subresource's translation of entries live here too; apply builds on all of it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from setpoint.machinery import fielderrors
from setpoint.machinery import fieldpath as fp
from setpoint.machinery.createdfields import remembered_created_fields_v1
from setpoint.machinery.errors import Cause
from setpoint.machinery.fieldcompare import compare
from setpoint.machinery.fieldpath import FieldSet, Path
from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.typedvalue import SchemaError, TypeRef

APPLY, UPDATE = "Apply", "Update"
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"

# (manager, operation, apiVersion, subresource); appliers are keyed without their apiVersion,
# so that applying through another version still finds the same entry
ManagerKey = tuple[str, str, str, str]

# the type and metadata fields no entry ever owns (the apiserver's stripMetaManager)
STRIPPED_FIELDS = FieldSet.of(("f:apiVersion",), ("f:kind",), ("f:metadata",), *(
    ("f:metadata", "f:" + name) for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion")))


@dataclass
class VersionedSet:
    """The fields of one manager, at the API version it last wrote them."""

    fields: FieldSet
    api_version: str
    applied: bool
    # ``fields`` as the entry it was decoded from spelled it, when that is exactly what
    # ``encode`` writes: an entry nobody's write touched is written back as it was read
    fields_v1: dict[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass
class Managed:
    """Decoded ``managedFields``: the sets and the times, by manager key."""

    sets: dict[ManagerKey, VersionedSet] = field(default_factory=dict)
    times: dict[ManagerKey, str | None] = field(default_factory=dict)


def manager_key(manager: str, operation: str, api_version: str,
                subresource: str = "") -> ManagerKey:
    return (manager, operation, "" if operation == APPLY else api_version, subresource)


def describe_manager(key: ManagerKey) -> str:
    """A manager as conflict messages name it: ``"carol" using v1`` (conflict.go
    printManager: the manager and subresource quoted by ``%q``)."""
    manager, operation, api_version, subresource = key
    text = go_quote(manager)
    if subresource:
        text += f" with subresource {go_quote(subresource)}"
    if operation == UPDATE:
        text += f" using {api_version}"
    return text


# -- the metadata.managedFields codec ----------------------------------------------------


def decode(entries: Any) -> Managed:
    """Parse ``metadata.managedFields``; raises ``ValueError`` as the apiserver's decoder does."""
    managed = Managed()
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"managed fields entry {i} must be an object")
        operation = entry.get("operation") or ""
        if operation not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion") or ""
        if not api_version:
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType") or ""
        if fields_type != "FieldsV1":
            raise ValueError(f"missing fieldsType in managed fields entry {i}" if not fields_type
                             else f"invalid fieldsType {fields_type!r} in managed fields entry {i}")
        key = manager_key(str(entry.get("manager") or ""), operation, api_version,
                          str(entry.get("subresource") or ""))
        fields_v1 = entry.get("fieldsV1")
        fields, canonical = _decode_fields_v1(fields_v1)
        managed.sets[key] = VersionedSet(fields, api_version, operation == APPLY,
                                         fields_v1 if canonical else None)
        managed.times[key] = entry.get("time")
    return managed


def _decode_fields_v1(fields_v1: Any) -> tuple[FieldSet, bool]:
    """``fp.decode``, and whether ``fp.encode`` gives the same JSON back; raises as it does.

    The same entries come back at every write of an object (a pod's status, a lease), so
    they are parsed once per distinct JSON text, which orjson writes at C speed: a fieldsV1
    holds only string keys and objects, so equal texts are equal values. The sets are
    shared: set operations never change their operands.
    """
    if not isinstance(fields_v1, dict):
        return fp.decode(fields_v1), False  # (None: empty; anything else: ValueError)
    try:
        text = orjson.dumps(fields_v1)
    except TypeError:  # (orjson.JSONEncodeError: not JSON; decode says what is wrong)
        return fp.decode(fields_v1), False
    return _decoded_text(text)


@functools.lru_cache(maxsize=4096)
def _decoded_text(text: bytes) -> tuple[FieldSet, bool]:
    fields = fp.decode(orjson.loads(text))
    return fields, orjson.dumps(fp.encode(fields)) == text


def decode_or_empty(entries: Any) -> Managed:
    try:
        return decode(entries)
    except ValueError:
        return Managed()


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The ``managedFields`` list, in the apiserver's order (Apply first, then by time)."""
    out = []
    for key, vs in managed.sets.items():
        manager, operation, _, subresource = key
        entry: dict[str, Any] = {
            "manager": manager,
            "operation": APPLY if vs.applied else operation,
            "apiVersion": vs.api_version,
        }
        time = managed.times.get(key)
        if time is not None:
            entry["time"] = time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = vs.fields_v1 if vs.fields_v1 is not None else fp.encode(vs.fields)
        if subresource:
            entry["subresource"] = subresource
        out.append(entry)
    out.sort(key=lambda e: (e["operation"], _seconds(e.get("time")), e["manager"],
                            e["apiVersion"], e.get("subresource", "")))
    return out


@functools.lru_cache(maxsize=1024)
def _seconds(time: str | None) -> int:
    if not time:
        return 0
    try:
        return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def _is_reset(sent: Any) -> bool:
    """A client resets managedFields by sending ``[]`` or ``[{}]``."""
    if not isinstance(sent, list):
        return False
    if not sent:
        return True
    return len(sent) == 1 and isinstance(sent[0], dict) and all(
        v is None or v == "" for v in sent[0].values())


FIELD_MANAGER_MAX_LENGTH = 128
MAX_SUBRESOURCE_NAME_LENGTH = 256


def validate_field_manager(name: str, path: str = "fieldManager") -> list[Cause]:
    """The apiserver's check of a manager name: at most 128 bytes, printable characters."""
    causes = []
    if len(name.encode()) > FIELD_MANAGER_MAX_LENGTH:
        causes.append(fielderrors.too_long(path, FIELD_MANAGER_MAX_LENGTH))
    if name.isprintable():
        return causes  # (most names: one check of the whole string)
    for i, ch in enumerate(name):
        if not ch.isprintable() and ch != " ":
            at = len(name[:i].encode())
            causes.append(fielderrors.invalid(
                path, name, f"invalid character U+{ord(ch):04X} (at position {at})"))
    return causes


def validate_managed_fields(entries: Any, path: str = "metadata.managedFields") -> list[Cause]:
    """ObjectMeta validation of the stored entries (what a 422 says about them)."""
    causes: list[Cause] = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        at = f"{path}[{i}]"
        entry = entry if isinstance(entry, dict) else {}
        operation = entry.get("operation") or ""
        if operation not in (APPLY, UPDATE):
            causes.append(fielderrors.invalid(f"{at}.operation", operation,
                                              "must be `Apply` or `Update`"))
        fields_type = entry.get("fieldsType") or ""
        if fields_type and fields_type != "FieldsV1":
            causes.append(fielderrors.invalid(f"{at}.fieldsType", fields_type,
                                              "must be `FieldsV1`"))
        causes.extend(validate_field_manager(str(entry.get("manager") or ""), f"{at}.manager"))
        if len(str(entry.get("subresource") or "")) > MAX_SUBRESOURCE_NAME_LENGTH:
            causes.append(fielderrors.too_long(f"{at}.subresource",
                                               MAX_SUBRESOURCE_NAME_LENGTH))
    return causes


# -- tracking an update ---------------------------------------------------------------------


def reset_set(paths: Iterable[str | Sequence[str]]) -> FieldSet:
    """Reset fields (``"status"``, ``"metadata.labels"``) as a set of field paths."""
    out = FieldSet()
    for p in paths:
        names = p.split(".") if isinstance(p, str) else list(p)
        out.insert(tuple(fp.field(n) for n in names))
    return out


_NOTHING = FieldSet()  # read only, as _reset_set's sets are


@functools.lru_cache(maxsize=256)
def _reset_set(paths: tuple[str | tuple[str, ...], ...]) -> FieldSet:
    return reset_set(paths)  # read only: set operations build new sets


def update_managed_fields(schema: TypeRef, old: dict[str, Any] | None, new: dict[str, Any], *,
                          manager: str, api_version: str, now: str, subresource: str = "",
                          reset_fields: Iterable[str | Sequence[str]] = (),
                          zero: dict[str, Any] | None = None) -> None:
    """Set ``new["metadata"]["managedFields"]`` for a create (``old`` None), update or patch.

    ``new`` is the object about to be stored, ``old`` the stored one. ``reset_fields`` are
    the paths the strategy resets on this endpoint (``["status"]`` on the main resource of a
    kind with a status subresource, ``["spec"]``... on ``/status``): nobody gains or loses
    them here. ``zero`` overrides the empty object a create is compared with (by default the
    Go zero value of a built-in kind, or just apiVersion/kind for custom resources).
    Managed fields the client sent replace the stored ones (``[]`` or ``[{}]`` clear them)
    unless they cannot be decoded, and writes to a subresource never replace them.
    """
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        return
    sent = meta.pop("managedFields", None)
    old_meta = (old or {}).get("metadata") or {}
    live_entries = old_meta.get("managedFields")
    if sent is None and live_entries is None:
        managed = Managed()  # (most creates: nothing to decode)
    elif subresource:
        managed = decode_or_empty(live_entries)
    elif _is_reset(sent):
        managed = Managed()
    else:
        managed = decode_or_empty(sent)
        if not managed.sets:
            managed = decode_or_empty(live_entries)
    if not managed.sets and old is not None:
        # an object nobody tracks stays untracked until someone applies to it
        return
    ignored = (_reset_set(tuple(p if isinstance(p, str) else tuple(p) for p in reset_fields))
               if reset_fields else _NOTHING)
    if old is None:
        base = zero if zero is not None else _zero_for_compare(schema, new)
        if not managed.sets:
            _track_create(schema, base, new, meta, ignored, manager=manager,
                          api_version=api_version, now=now, subresource=subresource)
            return
    else:
        base = {**old, "metadata": {k: v for k, v in old_meta.items() if k != "managedFields"}}
    try:
        c = compare(schema, base, new)
    except SchemaError:
        return  # the apiserver drops managedFields when it cannot type the object
    sets = {}
    lost = _NOTHING
    if managed.sets:  # (a create from nothing has no other manager to lose anything)
        changed_by_others = c.exclude(ignored) if not ignored.empty() else c
        lost = changed_by_others.modified.union(changed_by_others.added).union(
            changed_by_others.removed)
        for key, vs in managed.sets.items():
            rest = vs.fields.difference(lost)
            if rest.empty():
                continue
            # an entry that lost nothing is written back as it was read
            sets[key] = (vs if rest.root is vs.fields.root
                         else VersionedSet(rest, vs.api_version, vs.applied))
    mine = c.modified.union(c.added).difference(c.removed).recursive_difference(ignored)
    mine = mine.difference(STRIPPED_FIELDS)
    if not mine.empty():
        key = manager_key(manager or "unknown", UPDATE, api_version, subresource)
        previous = sets.get(key)
        read = managed.sets.get(key)
        if read is not None and read.fields_v1 is not None and _owns_again(
                read.fields, lost, mine):
            # a manager writing only fields it owns, as a kubelet its pod's status: its
            # entry is written back as read, with the new time
            sets[key] = read
        elif previous is not None:
            sets[key] = VersionedSet(mine.union(previous.fields), api_version, False)
        else:
            sets[key] = VersionedSet(mine, api_version, False)
        managed.times[key] = now
    managed.sets = sets
    cap_update_managers(managed)
    entries = encode(managed)
    if entries:
        meta["managedFields"] = entries


def _owns_again(owned: FieldSet, lost: FieldSet, mine: FieldSet) -> bool:
    """Whether ``(owned - lost) | mine`` is ``owned``: all the write owns is owned already,
    and all ``owned`` loses the write takes back (told by the set operations sharing
    their operand where they leave it as it is)."""
    return (owned.union(mine).root is owned.root
            and owned.difference(lost.difference(mine)).root is owned.root)


def _track_create(schema: TypeRef, base: dict[str, Any], new: dict[str, Any],
                  meta: dict[str, Any], ignored: FieldSet, *, manager: str, api_version: str,
                  now: str, subresource: str) -> None:
    """A create with no managers to take fields from (most creates): the one entry of its
    manager, its ``fieldsV1`` written in one walk; what the general path gives, key for key."""
    try:
        fields_v1 = remembered_created_fields_v1(schema, base, new, ignored, STRIPPED_FIELDS)
    except SchemaError:
        return  # the apiserver drops managedFields when it cannot type the object
    if not fields_v1:
        return
    entry: dict[str, Any] = {"manager": manager or "unknown", "operation": UPDATE,
                             "apiVersion": api_version}
    if now is not None:  # (typed str; encode() omits a missing time, so this does too)
        entry["time"] = now
    entry["fieldsType"] = "FieldsV1"
    entry["fieldsV1"] = fields_v1
    if subresource:
        entry["subresource"] = subresource
    meta["managedFields"] = [entry]


def cap_update_managers(managed: Managed, limit: int = MAX_UPDATE_MANAGERS) -> None:
    """Fold the oldest update entries into per-version ``ancient-changes`` buckets."""
    updaters = [k for k, vs in managed.sets.items() if not vs.applied]
    if len(updaters) <= limit:
        return
    updaters.sort(key=lambda k: (_seconds(managed.times.get(k)), manager_identifier(k)))
    first_of_version: dict[str, ManagerKey] = {}
    length = len(updaters)
    for key in updaters:
        if length <= limit:
            break
        vs = managed.sets[key]
        bucket = manager_key(ANCIENT_CHANGES, UPDATE, vs.api_version)
        first = first_of_version.get(vs.api_version)
        if first is None:
            first_of_version[vs.api_version] = key
            continue
        if bucket not in managed.sets:
            managed.sets[bucket] = managed.sets.pop(first)
        managed.sets[bucket] = VersionedSet(vs.fields.union(managed.sets[bucket].fields),
                                            vs.api_version, vs.applied)
        del managed.sets[key]
        managed.times[bucket] = managed.times.get(key)
        length -= 1


def manager_identifier(key: ManagerKey) -> str:
    """The manager identifier as the apiserver spells it (JSON); it sorts managers by it."""
    manager, operation, api_version, subresource = key
    parts = [f'"manager":{fp.go_json(manager)}', f'"operation":"{operation}"']
    if api_version:
        parts.append(f'"apiVersion":{fp.go_json(api_version)}')
    if subresource:
        parts.append(f'"subresource":{fp.go_json(subresource)}')
    return "{" + ",".join(parts) + "}"


# -- the empty object a create starts from ---------------------------------------------------

_STRUCT: Any = object()  # "the zero value of this field's own struct type"
_API, _META = "io.k8s.api.", "io.k8s.apimachinery.pkg.apis.meta.v1."
_APIEXT = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
_TEMPLATE = {"template": _STRUCT}
# Fields present in the JSON of a Go zero value besides required ones: non-pointer structs and
# times, and non-omitempty scalars, of the built-in kinds whose structs a create starts from.
_ZERO_FIELDS: dict[str, dict[str, Any]] = {
    _META + "ObjectMeta": {"creationTimestamp": None},
    _API + "core.v1.PodTemplateSpec": {"metadata": _STRUCT, "spec": _STRUCT},
    _API + "core.v1.PodTemplate": _TEMPLATE,
    _API + "apps.v1.DeploymentSpec": {"template": _STRUCT, "strategy": _STRUCT},
    _API + "apps.v1.StatefulSetSpec": {"template": _STRUCT, "updateStrategy": _STRUCT},
    _API + "apps.v1.DaemonSetSpec": {"template": _STRUCT, "updateStrategy": _STRUCT},
    _API + "apps.v1.ReplicaSetSpec": _TEMPLATE,
    _API + "batch.v1.JobSpec": _TEMPLATE,
    _API + "batch.v1.CronJobSpec": {"jobTemplate": _STRUCT},
    _API + "batch.v1.JobTemplateSpec": {"metadata": _STRUCT, "spec": _STRUCT},
    _API + "core.v1.ServiceStatus": {"loadBalancer": _STRUCT},
    _API + "core.v1.PersistentVolumeClaimSpec": {"resources": _STRUCT},
    _API + "core.v1.NodeStatus": {"daemonEndpoints": _STRUCT, "nodeInfo": _STRUCT},
    _API + "core.v1.NodeDaemonEndpoints": {"kubeletEndpoint": _STRUCT},
    _API + "core.v1.Event": {
        "involvedObject": _STRUCT, "source": _STRUCT, "firstTimestamp": None,
        "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
        "reportingInstance": ""},
    _API + "events.v1.Event": {
        "eventTime": None, "deprecatedSource": _STRUCT, "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None},
    _API + "rbac.v1.RoleBinding": {"roleRef": _STRUCT},
    _API + "rbac.v1.ClusterRoleBinding": {"roleRef": _STRUCT},
    _APIEXT + "CustomResourceDefinition": {"spec": _STRUCT},
    _APIEXT + "CustomResourceDefinitionSpec": {"names": _STRUCT},
    _APIEXT + "CustomResourceDefinitionStatus": {"acceptedNames": _STRUCT},
}


@functools.cache
def _definition_names() -> dict[int, str]:
    from setpoint.machinery.schema import definitions

    return {id(d["properties"]): name for name, d in definitions().raw.items()
            if isinstance(d.get("properties"), dict)}


def _definition_name(schema: Any) -> str | None:
    props = schema.raw.get("properties") if schema is not None else None
    return _definition_names().get(id(props)) if props is not None else None


def zero_object(schema: TypeRef, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object a create is compared with: what ``scheme.New(kind)`` serializes to.

    Built-in kinds are Go structs whose zero value already holds value-typed sub-structs and
    non-omitempty fields (a Deployment has ``spec.template.spec.containers: null``), so those
    never count as added; custom resources start from just their apiVersion and kind.
    """
    name = _definition_name(schema)
    if name is None:
        return {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    out = _zero_struct(schema, name)
    for part in ("metadata", "spec", "status"):
        prop = schema.field(part)
        if prop is not None and part not in out:
            out[part] = _zero_struct(prop, _definition_name(prop))
    return out


_zero_cache: dict[int, tuple[Any, dict[str, Any]]] = {}


def _zero_for_compare(schema: TypeRef, obj: Mapping[str, Any]) -> dict[str, Any]:
    """``zero_object``, built once per built-in kind: only compared with, never changed."""
    raw = getattr(schema, "raw", None)
    if raw is None or _definition_name(schema) is None:
        return zero_object(schema, obj)  # a custom resource's: its apiVersion and kind
    hit = _zero_cache.get(id(raw))
    if hit is None or hit[0] is not raw:
        hit = (raw, zero_object(schema, obj))  # holding raw keeps its id from being reused
        _zero_cache[id(raw)] = hit
    return hit[1]


def _zero_struct(schema: Any, name: str | None) -> dict[str, Any]:
    table = _ZERO_FIELDS.get(name or "", {})
    out: dict[str, Any] = {}
    for prop_name, prop in schema.properties.items():
        if prop_name in table:
            zero = table[prop_name]
            out[prop_name] = (_zero_struct(prop, _definition_name(prop)) if zero is _STRUCT
                              else zero)
        elif prop_name in schema.required:
            out[prop_name] = _zero_scalar(prop)
    return out


def _zero_scalar(schema: Any) -> Any:
    t = schema.type
    if t == "string" and schema.raw.get("format") not in ("date-time", "date"):
        return ""
    if t in ("integer", "number"):
        return 0
    if t == "boolean":
        return False
    return None


# -- the scale subresource --------------------------------------------------------------------

REPLICAS_IN_SCALE: Path = ("f:spec", "f:replicas")


def _replicas_path(mappings: Mapping[str, Sequence[str] | None], api_version: str
                   ) -> tuple[bool, Path | None]:
    if api_version not in mappings:
        return False, None
    names = mappings[api_version]
    return True, (tuple(fp.field(n) for n in names) if names else None)


def scale_to_subresource(parent_entries: Any, *, mappings: Mapping[str, Sequence[str] | None],
                         scale_api_version: str = "autoscaling/v1") -> list[dict[str, Any]]:
    """The managedFields of a Scale: the parent's entries that own its replicas field.

    ``mappings`` gives, per API version of the parent, the replicas field
    (``{"apps/v1": ["spec", "replicas"]}``); entries of other versions are dropped.
    """
    parent = decode_or_empty(parent_entries)
    out = Managed()
    for key, vs in parent.sets.items():
        known, path = _replicas_path(mappings, vs.api_version)
        if known and path is not None and vs.fields.has(path):
            out.sets[key] = VersionedSet(FieldSet.of(REPLICAS_IN_SCALE), scale_api_version,
                                         vs.applied)
            out.times[key] = parent.times.get(key)
    return encode(out)


def scale_to_parent(parent_entries: Any, scale_entries: Any, *,
                    mappings: Mapping[str, Sequence[str] | None],
                    parent_api_version: str) -> list[dict[str, Any]]:
    """The parent's managedFields after a write through /scale changed the Scale's entries.

    Parent entries that owned the replicas field lose it unless their manager still owns it
    in the Scale; the Scale's owners of ``spec.replicas`` become parent entries at
    ``parent_api_version`` (without a time unless the parent had one for that manager).
    """
    parent = decode_or_empty(parent_entries)
    scale = decode_or_empty(scale_entries)
    scale_sets = dict(scale.sets)
    out = Managed()
    for key, vs in parent.sets.items():
        known, path = _replicas_path(mappings, vs.api_version)
        if not known:
            continue
        if path is None or not vs.fields.has(path):
            out.sets[key], out.times[key] = vs, parent.times.get(key)
            continue
        if key not in scale_sets:
            rest = vs.fields.difference(FieldSet.of(path))
            if not rest.empty():
                out.sets[key] = VersionedSet(rest, vs.api_version, vs.applied)
                out.times[key] = parent.times.get(key)
            continue
        out.sets[key], out.times[key] = vs, parent.times.get(key)
        del scale_sets[key]
    _, own_path = _replicas_path(mappings, parent_api_version)
    for key, vs in scale_sets.items():
        if own_path is None or not vs.fields.has(REPLICAS_IN_SCALE):
            continue
        out.sets[key] = VersionedSet(FieldSet.of(own_path), parent_api_version, vs.applied)
        out.times[key] = parent.times.get(key)
    return encode(out)
