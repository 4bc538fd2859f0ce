"""Object names and the string formats Kubernetes validates, with Kubernetes' own messages.

Ports ``k8s.io/apimachinery/pkg/util/validation`` (DNS-1123 subdomains and labels, RFC 1035
labels, qualified names, label values, config keys), ``api/validation/path`` (names used as
path segments), the apiserver's ``generateName`` and ``ValidateObjectMeta`` /
``ValidateObjectMetaUpdate``. Every message is the one the real apiserver writes, because
clients and tests match on them.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.metatime import parse_time

# A name validator gets the name and whether it is a generateName prefix, and answers the
# list of what is wrong with it (Kubernetes' ValidateNameFunc).
NameValidator = Callable[[str, bool], list[str]]


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``: the message, examples, and the regex used."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    # Go's loop writes "'a', " then " or 'b', ": hence the doubled spaces clients see.
    parts = [f"'{e}', " for e in examples]
    return msg + " (e.g. " + " or ".join(parts) + f"regex used for validation is '{fmt}')"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


# -- DNS names -----------------------------------------------------------------------------

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_ERR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                     "characters or '-', and must start and end with an alphanumeric character")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                         "characters, '-' or '.', and must start and end with an alphanumeric "
                         "character")
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_ERR = ("a DNS-1035 label must consist of lower case alphanumeric characters or "
                     "'-', start with an alphabetic character, and end with an alphanumeric "
                     "character")
DNS1035_LABEL_MAX = 63

_dns1123_label = re.compile(DNS1123_LABEL_FMT)
_dns1123_subdomain = re.compile(DNS1123_SUBDOMAIN_FMT)
_dns1035_label = re.compile(DNS1035_LABEL_FMT)


_VALID_MEMO_LIMIT = 4096


def _remember_valid(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``check``, answering at once for strings it already found valid (label keys and
    values, namespaces: the same few on every request). Bounded: forgotten all at once when
    full. Each call gets its own list, as callers may extend it."""
    valid: set[str] = set()

    @functools.wraps(check)
    def remembered(value: str) -> list[str]:
        if type(value) is not str:
            return check(value)
        if value in valid:
            return []
        errs = check(value)
        if not errs:
            if len(valid) >= _VALID_MEMO_LIMIT:
                valid.clear()
            valid.add(value)
        return errs

    return remembered


@_remember_valid
def is_dns1123_label(value: str) -> list[str]:
    """What is wrong with ``value`` as an RFC 1123 label (empty when valid)."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _dns1123_label.fullmatch(value):
        if _dns1123_subdomain.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


@_remember_valid
def is_dns1123_subdomain(value: str) -> list[str]:
    """What is wrong with ``value`` as an RFC 1123 subdomain (empty when valid)."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _dns1123_subdomain.fullmatch(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


@_remember_valid
def is_dns1035_label(value: str) -> list[str]:
    """What is wrong with ``value`` as an RFC 1035 label (empty when valid)."""
    errs = []
    if len(value) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _dns1035_label.fullmatch(value):
        errs.append(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


# -- qualified names, label values, config keys --------------------------------------------

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must start "
                      "and end with an alphanumeric character")
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric characters, "
                   "'-', '_' or '.', and must start and end with an alphanumeric character")
LABEL_VALUE_MAX = 63
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
CONFIG_KEY_ERR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"

_qualified_name = re.compile(QUALIFIED_NAME_FMT)
_label_value = re.compile(LABEL_VALUE_FMT)
_config_key = re.compile(CONFIG_KEY_FMT)


@_remember_valid
def is_qualified_name(value: str) -> list[str]:
    """What is wrong with ``value`` as a qualified name (label keys, annotation keys,
    finalizers): an optional DNS subdomain prefix and ``/``, then a name of at most 63."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _qualified_name.fullmatch(name):
        errs.append("name part " + regex_error(
            QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


@_remember_valid
def is_valid_label_value(value: str) -> list[str]:
    """What is wrong with ``value`` as a label value (the empty string is valid)."""
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _label_value.fullmatch(value):
        errs.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


@_remember_valid
def is_config_map_key(value: str) -> list[str]:
    """What is wrong with ``value`` as a ConfigMap or Secret key."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _config_key.fullmatch(value):
        errs.append(regex_error(CONFIG_KEY_ERR, CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def validate_labels(labels: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    causes: list[Cause] = []
    for key, value in (labels or {}).items():
        errs = is_qualified_name(key)
        if errs:
            causes.extend(fe.invalid(path, key, m) for m in errs)
        text = value if isinstance(value, str) else str(value)
        errs = is_valid_label_value(text)
        if errs:
            causes.extend(fe.invalid(path, text, m) for m in errs)
    return causes


# -- name validators (ValidateNameFunc) ----------------------------------------------------

def _mask_trailing_dash(name: str) -> str:
    # Kubernetes drops two characters here, not one; kept so verdicts match exactly.
    if name.endswith("-"):
        return name[:-2] + "a" if len(name) >= 2 else "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """Names of most kinds (ConfigMap, Deployment, custom resources, ...)."""
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    """Names of Namespaces (and other kinds whose name becomes a DNS label)."""
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    """Names of Services."""
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def validate_path_segment_name(name: str, prefix: bool) -> list[str]:
    """Names that only need to be safe as one URL path segment (RBAC kinds, the fallback
    every kind gets after its own checks)."""
    if not prefix:
        for illegal in (".", ".."):
            if name == illegal:
                return [f"may not be '{illegal}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


validate_namespace_name = name_is_dns_label


# -- generateName --------------------------------------------------------------------------

GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_RANDOM_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - _RANDOM_LENGTH


def generate_name(base: str) -> str:
    """``SimpleNameGenerator``: the prefix (cut to 58 characters) and 5 random characters
    from the alphabet Kubernetes uses (no vowels, no look-alike digits)."""
    if len(base) > MAX_GENERATED_NAME_LENGTH:
        base = base[:MAX_GENERATED_NAME_LENGTH]
    # math/rand, as utilrand.String (k8s.io/apimachinery/pkg/util/rand): the random module's
    # generator, reseeded in a forked child; ``secrets.choice`` read getrandom(2) for every
    # character, 2.5 % of a pod create's CPU (its token volume's name)
    return base + "".join(random.choices(GENERATE_NAME_ALPHABET, k=_RANDOM_LENGTH))


# -- ObjectMeta ----------------------------------------------------------------------------

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
FINALIZER_ORPHAN = "orphan"
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"
MAX_SUBRESOURCE_NAME_LENGTH = 256
FIELD_MANAGER_MAX_LENGTH = 128
_BANNED_OWNERS = {("", "v1", "Event")}


def validate_annotations(annotations: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """``ValidateAnnotations``: keys are qualified names in any case; 256 KiB in total."""
    causes: list[Cause] = []
    total = 0
    for key, value in (annotations or {}).items():
        causes.extend(fe.invalid(path, key, m) for m in is_qualified_name(key.lower()))
        total += len(key.encode()) + len(str(value).encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(fe.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def _split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, _, version = api_version.partition("/")
        return group, version
    return "", api_version


def _go_owner_ref(ref: Mapping[str, Any]) -> str:
    return (
        "v1.OwnerReference{"
        f"APIVersion:{fe.go_quote(str(ref.get('apiVersion', '')))}, "
        f"Kind:{fe.go_quote(str(ref.get('kind', '')))}, "
        f"Name:{fe.go_quote(str(ref.get('name', '')))}, "
        f"UID:{fe.go_quote(str(ref.get('uid', '')))}, "
        f"Controller:{fe.go_pointer('bool', ref.get('controller') is not None)}, "
        f"BlockOwnerDeletion:{fe.go_pointer('bool', ref.get('blockOwnerDeletion') is not None)}}}"
    )


def _go_owner_refs(refs: list[Any]) -> fe.GoValue:
    items = [_go_owner_ref(r if isinstance(r, Mapping) else {}) for r in refs]
    return fe.GoValue("[]v1.OwnerReference{" + ", ".join(items) + "}")


def validate_owner_references(refs: list[Any] | None, path: str) -> list[Cause]:
    """``ValidateOwnerReferences``: complete references, at most one controller."""
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs or []:
        if not isinstance(ref, Mapping):
            continue
        api_version = str(ref.get("apiVersion") or "")
        group, version = _split_api_version(api_version)
        kind = str(ref.get("kind") or "")
        if not version:
            causes.append(fe.invalid(f"{path}.apiVersion", api_version,
                                     "version must not be empty"))
        if not kind:
            causes.append(fe.invalid(f"{path}.kind", kind, "must not be empty"))
        if not ref.get("name"):
            causes.append(fe.invalid(f"{path}.name", str(ref.get("name") or ""),
                                     "must not be empty"))
        if not ref.get("uid"):
            causes.append(fe.invalid(f"{path}.uid", str(ref.get("uid") or ""),
                                     "must not be empty"))
        if (group, version, kind) in _BANNED_OWNERS:
            gvk = f"{group}/{version}, Kind={kind}"
            causes.append(fe.invalid(path, fe.GoValue(_go_owner_ref(ref)),
                                     f"{gvk} is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name', '')}"
            if first_controller:
                causes.append(fe.invalid(
                    path, _go_owner_refs(list(refs or [])),
                    "Only one reference can have Controller set to true. Found \"true\" in "
                    f"references for {first_controller} and {current}"))
            else:
                first_controller = current
    return causes


def validate_finalizers(finalizers: list[Any] | None, path: str) -> list[Cause]:
    """``ValidateFinalizers``: qualified names, and never both orphan and foreground."""
    causes: list[Cause] = []
    names = [str(f) for f in finalizers or []]
    for name in names:
        causes.extend(fe.invalid(path, name, m) for m in is_qualified_name(name))
    if FINALIZER_ORPHAN in names and FINALIZER_DELETE_DEPENDENTS in names:
        causes.append(fe.invalid(
            path, fe.go_string_slice(names),
            f"finalizer {FINALIZER_ORPHAN} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"))
    return causes


def validate_managed_fields(entries: list[Any] | None, path: str) -> list[Cause]:
    """``ValidateManagedFields``: operation, fieldsType, manager and subresource shapes."""
    causes: list[Cause] = []
    for i, entry in enumerate(entries or []):
        # (a decoded entry is a dict: the abstract class's check is the slow way to say so)
        if type(entry) is not dict and not isinstance(entry, Mapping):
            continue
        op = entry.get("operation", "")
        if op not in ("Apply", "Update"):
            causes.append(fe.invalid(f"{path}[{i}].operation", op,
                                     "must be `Apply` or `Update`"))
        fields_type = entry.get("fieldsType") or ""
        if fields_type and fields_type != "FieldsV1":
            causes.append(fe.invalid(f"{path}[{i}].fieldsType", fields_type,
                                     "must be `FieldsV1`"))
        manager = entry.get("manager") or ""
        if len(manager) > FIELD_MANAGER_MAX_LENGTH:
            causes.append(fe.too_long(f"{path}[{i}].manager", FIELD_MANAGER_MAX_LENGTH))
        if len(entry.get("subresource") or "") > MAX_SUBRESOURCE_NAME_LENGTH:
            causes.append(fe.too_long(f"{path}[{i}].subresource", MAX_SUBRESOURCE_NAME_LENGTH))
    return causes


def _validate_meta_common(meta: Mapping[str, Any], namespaced: bool, path: str) -> list[Cause]:
    causes: list[Cause] = []
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(fe.required(f"{path}.namespace"))
        else:
            problems = validate_namespace_name(namespace, False)
            if problems:
                causes.extend(fe.invalid(f"{path}.namespace", namespace, m) for m in problems)
    elif namespace:
        causes.append(fe.forbidden(f"{path}.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        causes.append(fe.invalid(f"{path}.generation", generation,
                                 "must be greater than or equal to 0"))
    # (each check passes an absent field: most objects have few of them, so only the ones
    # present are checked, and their paths spelled)
    for key, check in _META_CHECKS:
        value = meta.get(key)
        if value is not None:
            causes.extend(check(value, f"{path}.{key}"))
    return causes


_META_CHECKS: tuple[tuple[str, Callable[[Any, str], list[Cause]]], ...] = (
    ("labels", validate_labels), ("annotations", validate_annotations),
    ("ownerReferences", validate_owner_references), ("finalizers", validate_finalizers),
    ("managedFields", validate_managed_fields))


def validate_object_meta(meta: Mapping[str, Any] | None, namespaced: bool,
                         name_validator: NameValidator = name_is_dns_subdomain,
                         path: str = "metadata") -> list[Cause]:
    """``ValidateObjectMeta`` for a create: name (or generateName), namespace rules, labels,
    annotations, owner references, finalizers. Expects name generation already done."""
    meta = meta or {}
    return (validate_object_meta_name(meta, name_validator, path)
            + _validate_meta_common(meta, namespaced, path))


def validate_object_meta_name(meta: Mapping[str, Any], name_validator: NameValidator,
                              path: str = "metadata") -> list[Cause]:
    """The part of ``validate_object_meta`` that depends on the name rule: generateName and
    name."""
    causes: list[Cause] = []
    generate = meta.get("generateName") or ""
    if generate:
        causes.extend(fe.invalid(f"{path}.generateName", generate, m)
                      for m in name_validator(generate, True))
    name = meta.get("name") or ""
    if not name:
        causes.append(fe.required(f"{path}.name", "name or generateName is required"))
    else:
        problems = name_validator(name, False)
        if problems:
            causes.extend(fe.invalid(f"{path}.name", name, m) for m in problems)
    return causes


def validate_object_meta_update(new: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
                                path: str = "metadata",
                                require_resource_version: bool = False) -> list[Cause]:
    """``ValidateObjectMetaUpdate``: no new finalizers once deleting, identity fields
    immutable, and the new labels, annotations and owners valid.

    What the server fills in or resets silently before validating (an omitted uid or
    generation, creationTimestamp, a stored deletionTimestamp) is not reported; a deletion
    field an update sets where none was stored is; the resourceVersion
    check is left to the storage layer unless asked for."""
    new, old = new or {}, old or {}
    causes: list[Cause] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if added:
            causes.append(fe.forbidden(
                f"{path}.finalizers",
                "no new finalizers can be added if the object is being deleted, found new "
                f"finalizers {fe.go_string_slice(added)}"))
    if require_resource_version and not new.get("resourceVersion"):
        causes.append(fe.invalid(f"{path}.resourceVersion", new.get("resourceVersion") or "",
                                 "must be specified for an update"))
    generation = new.get("generation")
    if isinstance(generation, int) and generation < (old.get("generation") or 0):
        causes.append(fe.invalid(f"{path}.generation", generation, "must not be decremented"))
    for key in ("name", "namespace", "uid"):
        if key == "uid" and not new.get(key):
            continue
        if (new.get(key) or "") != (old.get(key) or ""):
            causes.append(fe.invalid(f"{path}.{key}", new.get(key) or "", "field is immutable"))
    causes.extend(_immutable_deletion_fields(new, old, path))
    causes.extend(validate_labels(new.get("labels"), f"{path}.labels"))
    causes.extend(validate_annotations(new.get("annotations"), f"{path}.annotations"))
    causes.extend(validate_owner_references(new.get("ownerReferences"),
                                            f"{path}.ownerReferences"))
    causes.extend(validate_managed_fields(new.get("managedFields"), f"{path}.managedFields"))
    return causes


def _immutable_deletion_fields(new: Mapping[str, Any], old: Mapping[str, Any],
                               path: str) -> list[Cause]:
    """ValidateImmutableField of deletionTimestamp and deletionGracePeriodSeconds: what an
    update sets where the stored object had none (BeforeUpdate keeps a stored one)."""
    causes: list[Cause] = []
    stamp, old_stamp = new.get("deletionTimestamp"), old.get("deletionTimestamp")
    if stamp is not None and parse_time(stamp) != parse_time(old_stamp):
        causes.append(fe.invalid(f"{path}.deletionTimestamp", _go_time(stamp),
                                 "field is immutable"))
    grace, old_grace = new.get("deletionGracePeriodSeconds"), \
        old.get("deletionGracePeriodSeconds")
    if grace is not None and grace != old_grace:
        causes.append(fe.invalid(f"{path}.deletionGracePeriodSeconds", grace,
                                 "field is immutable"))
    return causes


def _go_time(value: Any) -> Any:
    """A metav1.Time as field.Error prints it (its String: Go's time.Time layout, UTC)."""
    seconds = parse_time(value) if isinstance(value, str) else None
    if seconds is None:
        return value
    return fe.GoValue(datetime.fromtimestamp(seconds, UTC).strftime(
        "%Y-%m-%d %H:%M:%S +0000 UTC"))
