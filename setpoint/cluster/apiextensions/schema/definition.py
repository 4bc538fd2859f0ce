"""CustomResourceDefinition defaulting and validation (``apis/apiextensions/validation``).

The real apiserver validates the *internal* form of a v1 CRD, in which schemas,
subresources and printer columns that are identical in every version are lifted to the
spec (``spec.validation``, ``spec.subresources``, ``spec.additionalPrinterColumns``) and
``spec.version`` is the first version's name. Error paths follow that form, so a single
version's schema errors read ``spec.validation.openAPIV3Schema...``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from setpoint.machinery.errors import Cause
from setpoint.machinery.fielderrors import go_string_slice

from . import fielderrors as fe
from .apiapproval import API_APPROVAL_ANNOTATION, approval_state, is_protected_community_group
from .defaulting import has_defaults
from .names import is_dns1035_label, is_dns1123_subdomain, name_is_dns_subdomain
from .schemacheck import validate_schema
from .structural import NodeContext
from .webhookconfig import (
    validate_ca_bundle,
    validate_webhook_service,
    validate_webhook_url,
)

PRINTER_COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
PRINTER_COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64",
                          "password"]
_EXTENSION_KEYS = ("x-kubernetes-embedded-resource", "x-kubernetes-preserve-unknown-fields",
                   "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys",
                   "x-kubernetes-list-type", "x-kubernetes-validations")


def default_crd(crd: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``crd`` with the v1 defaults (singular, listKind, conversion strategy)."""
    out = copy.deepcopy(dict(crd))
    spec = out.setdefault("spec", {})
    names = spec.setdefault("names", {})
    kind = names.get("kind") or ""
    if not names.get("singular") and kind:
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    conversion = spec.setdefault("conversion", {})
    if not conversion.get("strategy"):
        conversion["strategy"] = "None"
    if conversion.get("strategy") == "Webhook":
        webhook = conversion.get("webhook") or {}
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443
    return out


def storage_version(crd: Mapping[str, Any]) -> str | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return str(v.get("name"))
    return None


def _identical(versions: list[Mapping[str, Any]], key: str) -> bool:
    """Whether every version sets ``key`` to the same value (then it is lifted to the spec)."""
    if not versions:
        return False
    first = versions[0].get(key)
    for v in versions:
        value = v.get(key)
        if value is None or (key == "additionalPrinterColumns" and not value) or value != first:
            return False
    return True


def validate_crd(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[Cause]:
    """Every cause the apiserver gives for creating (or updating from ``old``) this CRD."""
    new = default_crd(crd)
    old_d = default_crd(old) if old is not None else None
    spec = new.get("spec") or {}
    errs = _validate_meta(new)
    errs += _validate_spec(spec, old_d)
    status = new.get("status") or {}
    errs += validate_names(status.get("acceptedNames") or {}, "status.acceptedNames")
    if old_d is not None:
        errs += _validate_update(spec, old_d)
        errs += _validate_stored_versions(status.get("storedVersions"),
                                          spec.get("versions") or [])
    errs += _validate_api_approval(new, old_d)
    old_preserve = bool(((old_d or {}).get("spec") or {}).get("preserveUnknownFields"))
    if spec.get("preserveUnknownFields") and not old_preserve:
        errs.append(fe.invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                               "x-kubernetes-preserve-unknown-fields to true in "
                               "spec.versions[*].schema instead"))
    return errs


def _validate_meta(crd: Mapping[str, Any]) -> list[Cause]:
    meta = crd.get("metadata") or {}
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = meta.get("name") or ""
    generate = meta.get("generateName") or ""
    required = f"{names.get('plural', '')}.{spec.get('group', '')}"
    errs: list[Cause] = []
    if not name and not generate:
        errs.append(fe.required("metadata.name", "name or generateName is required"))
    if name:
        for msg in name_is_dns_subdomain(name, False):
            errs.append(fe.invalid("metadata.name", name, msg))
        if name != required:
            errs.append(fe.invalid("metadata.name", name,
                                   'must be spec.names.plural+"."+spec.group'))
    if generate:
        for msg in name_is_dns_subdomain(generate, True):
            errs.append(fe.invalid("metadata.generateName", generate, msg))
        if generate != required:
            errs.append(fe.invalid("metadata.generateName", generate,
                                   'must be spec.names.plural+"."+spec.group'))
    return errs


def validate_names(names: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateCustomResourceDefinitionNames``."""
    errs: list[Cause] = []
    for key in ("plural", "singular"):
        value = names.get(key) or ""
        if value and (msgs := is_dns1035_label(value)):
            errs.append(fe.invalid(fe.child(path, key), value, ",".join(msgs)))
    for key in ("kind", "listKind"):
        value = names.get(key) or ""
        if value and (msgs := is_dns1035_label(value.lower())):
            errs.append(fe.invalid(fe.child(path, key), value,
                                   "may have mixed case, but should otherwise match: "
                                   + ",".join(msgs)))
    for i, short in enumerate(names.get("shortNames") or []):
        if msgs := is_dns1035_label(short):
            errs.append(fe.invalid(fe.index(fe.child(path, "shortNames"), i), short,
                                   ",".join(msgs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(fe.invalid(fe.child(path, "listKind"), names.get("listKind"),
                               "kind and listKind may not be the same"))
    for i, category in enumerate(names.get("categories") or []):
        if msgs := is_dns1035_label(category):
            errs.append(fe.invalid(fe.index(fe.child(path, "categories"), i), category,
                                   ",".join(msgs)))
    return errs


def _schema_of(version: Mapping[str, Any]) -> Any:
    return (version.get("schema") or {}).get("openAPIV3Schema")


def _expressions_of(schemas: list[Any]) -> frozenset[str]:
    """Every rule and messageExpression of x-kubernetes-validations in ``schemas`` (validation.go
    findPreexistingExpressions)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key == "x-kubernetes-validations" and isinstance(value, list):
                    for rule in value:
                        if isinstance(rule, Mapping):
                            found.update(str(rule.get(k) or "")
                                         for k in ("rule", "messageExpression"))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schemas)
    found.discard("")
    return frozenset(found)


def _validate_spec(spec: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    errs: list[Cause] = []
    group = spec.get("group") or ""
    if not group:
        errs.append(fe.required("spec.group"))
    elif msgs := is_dns1123_subdomain(group):
        errs.append(fe.invalid("spec.group", group, ",".join(msgs)))
    elif len(group.split(".")) < 2:
        errs.append(fe.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope") or ""
    if not scope:
        errs.append(fe.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(fe.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))

    versions: list[Mapping[str, Any]] = list(spec.get("versions") or [])
    old_spec = (old or {}).get("spec") or {}
    old_versions = old_spec.get("versions") or []
    require_schema = old is None or all(_schema_of(v) for v in old_versions)
    for i, v in enumerate(versions):
        if require_schema and not _schema_of(v):
            errs.append(fe.required(f"spec.versions[{i}].schema.openAPIV3Schema",
                                    "schemas are required"))
        elif not require_schema and v.get("served") and not _schema_of(v) \
                and not spec.get("preserveUnknownFields"):
            errs.append(fe.required(f"spec.versions[{i}].schema.openAPIV3Schema",
                                    "because otherwise all fields are pruned"))
    if any(has_defaults(_schema_of(v)) for v in versions) and spec.get("preserveUnknownFields"):
        errs.append(fe.invalid("spec.preserveUnknownFields", True,
                               "must be false in order to use defaults in the schema"))

    hoist_schema = _identical(versions, "schema")
    hoist_sub = _identical(versions, "subresources")
    hoist_cols = _identical(versions, "additionalPrinterColumns")
    any_status = any("status" in (v.get("subresources") or {}) for v in versions)
    ctx = NodeContext(
        require_atomic_set_type=old is None or not _has_non_atomic_set(old_versions),
        require_map_list_keys_validation=True,
        preexisting_expressions=_expressions_of(
            [_schema_of(v) for v in old_versions]
            + [(old_spec.get("validation") or {}).get("openAPIV3Schema")]))
    names_seen: set[str] = set()
    unique = True
    storage_count = 0
    for i, v in enumerate(versions):
        vp = f"spec.versions[{i}]"
        name = str(v.get("name") or "")
        storage_count += bool(v.get("storage"))
        if name in names_seen:
            unique = False
        names_seen.add(name)
        if msgs := is_dns1035_label(name):
            errs.append(fe.invalid(fe.child(vp, "name"), name, ",".join(msgs)))
        warning = v.get("deprecationWarning")
        if warning is not None:
            for msg in _deprecation_warning_errors(bool(v.get("deprecated")), str(warning)):
                errs.append(fe.invalid(fe.child(vp, "deprecationWarning"), warning, msg))
        if not hoist_schema and _schema_of(v):
            status_enabled = "status" in (v.get("subresources") or {})
            errs += validate_schema(_schema_of(v), fe.child(vp, "schema"), status_enabled, ctx)
        if not hoist_sub:
            errs += validate_subresources(v.get("subresources"), fe.child(vp, "subresources"))
        if not hoist_cols:
            for j, col in enumerate(v.get("additionalPrinterColumns") or []):
                errs += validate_column(col, f"{vp}.additionalPrinterColumns[{j}]")
        errs += _validate_selectable_fields(v, vp)
    if not unique:
        errs.append(fe.invalid("spec.versions", _go_versions(spec.get("versions")),
                               "must contain unique version names"))
    if storage_count != 1:
        errs.append(fe.invalid("spec.versions", _go_versions(spec.get("versions")),
                               "must have exactly one version marked as storage version"))
    if versions:
        first = str(versions[0].get("name") or "")
        if msgs := is_dns1035_label(first):
            errs.append(fe.invalid("spec.version", first, ",".join(msgs)))
    names = spec.get("names") or {}
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(fe.required(f"spec.names.{key}"))
    errs += validate_names(names, "spec.names")
    if hoist_schema:
        errs += validate_schema(_schema_of(versions[0]), "spec.validation", any_status, ctx)
    if hoist_sub:
        errs += validate_subresources(versions[0].get("subresources"), "spec.subresources")
    if hoist_cols:
        for j, col in enumerate(versions[0].get("additionalPrinterColumns") or []):
            errs += validate_column(col, f"spec.additionalPrinterColumns[{j}]")
    errs += _validate_conversion(spec, _allow_invalid_ca_bundle(old))
    return errs


def _has_non_atomic_set(versions: list[Mapping[str, Any]]) -> bool:
    def walk(s: Any) -> bool:
        if not isinstance(s, Mapping):
            return False
        items = s.get("items")
        if s.get("x-kubernetes-list-type") == "set" and isinstance(items, Mapping):
            if items.get("type") == "array" and items.get("x-kubernetes-list-type") not in (
                    None, "atomic"):
                return True
            if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
                return True
        subs = [items, s.get("additionalProperties"), *(s.get("properties") or {}).values()]
        return any(walk(x) for x in subs)
    return any(walk(_schema_of(v)) for v in versions)


def _go_versions(versions: list[Mapping[str, Any]] | None) -> fe.Rendered:
    """``%#v`` of the internal ``[]CustomResourceDefinitionVersion`` these v1 versions convert
    to: a field identical in every version has moved to the spec (v1/conversion.go), so it
    prints nil; pointers print as addresses."""
    if versions is None:
        return fe.Rendered("[]apiextensions.CustomResourceDefinitionVersion(nil)")
    hoisted = {k: _identical(versions, k) for k in
               ("schema", "subresources", "additionalPrinterColumns", "selectableFields")}

    def q(v: Any) -> str:
        return fe.go_quote(str(v or ""))

    def columns(v: Mapping[str, Any]) -> str:
        cols = v.get("additionalPrinterColumns")
        if hoisted["additionalPrinterColumns"] or cols is None:
            return "[]apiextensions.CustomResourceColumnDefinition(nil)"
        return "[]apiextensions.CustomResourceColumnDefinition{" + ", ".join(
            f"apiextensions.CustomResourceColumnDefinition{{Name:{q(c.get('name'))}, "
            f"Type:{q(c.get('type'))}, Format:{q(c.get('format'))}, "
            f"Description:{q(c.get('description'))}, Priority:{int(c.get('priority') or 0)}, "
            f"JSONPath:{q(c.get('jsonPath'))}}}" for c in cols) + "}"

    def selectable(v: Mapping[str, Any]) -> str:
        fields = v.get("selectableFields")
        if hoisted["selectableFields"] or fields is None:
            return "[]apiextensions.SelectableField(nil)"
        return "[]apiextensions.SelectableField{" + ", ".join(
            f"apiextensions.SelectableField{{JSONPath:{q(f.get('jsonPath'))}}}"
            for f in fields) + "}"

    def one(v: Mapping[str, Any]) -> str:
        schema = not hoisted["schema"] and v.get("schema") is not None
        sub = not hoisted["subresources"] and v.get("subresources") is not None
        return (f"apiextensions.CustomResourceDefinitionVersion{{Name:{q(v.get('name'))}, "
                f"Served:{str(bool(v.get('served'))).lower()}, "
                f"Storage:{str(bool(v.get('storage'))).lower()}, "
                f"Deprecated:{str(bool(v.get('deprecated'))).lower()}, "
                f"DeprecationWarning:"
                f"{fe.go_pointer('string', v.get('deprecationWarning') is not None)}, "
                f"Schema:{fe.go_pointer('apiextensions.CustomResourceValidation', schema)}, "
                f"Subresources:"
                f"{fe.go_pointer('apiextensions.CustomResourceSubresources', sub)}, "
                f"AdditionalPrinterColumns:{columns(v)}, SelectableFields:{selectable(v)}}}")

    return fe.Rendered("[]apiextensions.CustomResourceDefinitionVersion{"
                       + ", ".join(one(v) for v in versions) + "}")


def _validate_selectable_fields(v: Mapping[str, Any], vp: str) -> list[Cause]:
    """validation.go ValidateCustomResourceSelectableFields (apiextensions-apiserver v0.32)."""
    from .fieldpath import selectable_field_path

    fields = v.get("selectableFields") or []
    if not fields:
        return []
    errs: list[Cause] = []
    schema = _schema_of(v)
    path = fe.child(vp, "selectableFields")
    if not schema:
        return [fe.invalid(path, "", "selectableFields may only be set when "
                                     "version.schema.openAPIV3Schema is not included")]
    seen: set[str] = set()
    for i, f in enumerate(fields):
        jp = fe.child(fe.index(path, i), "jsonPath")
        json_path = f.get("jsonPath") or ""
        if not json_path:
            errs.append(fe.required(jp))
            continue
        normalized, sub, why = selectable_field_path(json_path, schema)
        if why:
            errs.append(fe.invalid(jp, json_path, f"is an invalid path: {why}"))
            continue
        if normalized.split(".")[0].split("[")[0] == "metadata":
            errs.append(fe.invalid(jp, json_path, "must not point to fields in metadata"))
        if (sub or {}).get("type") not in ("string", "boolean", "integer"):
            errs.append(fe.invalid(jp, json_path, "must point to a field of type string, "
                                   "boolean or integer. Enum string fields and strings with "
                                   "formats are allowed."))
        if normalized in seen:
            errs.append(fe.duplicate(jp, json_path))
        seen.add(normalized)
    if len(seen) > 8:
        errs.append(fe.too_many(path, len(seen), 8))
    return errs


def validate_subresources(sub: Any, path: str) -> list[Cause]:
    """``ValidateCustomResourceDefinitionSubresources``: the scale paths."""
    if not isinstance(sub, Mapping) or not isinstance(sub.get("scale"), Mapping):
        return []
    scale = sub["scale"]
    errs: list[Cause] = []
    for key, prefixes, where in (("specReplicasPath", (".spec.",), ".spec"),
                                 ("statusReplicasPath", (".status.",), ".status")):
        p = f"{path}.scale.{key}"
        value = scale.get(key) or ""
        if not value:
            errs.append(fe.required(p))
        elif simple := _simple_json_path(value, p):
            errs += simple
        elif not value.startswith(prefixes):
            errs.append(fe.invalid(p, value, f"should be a json path under {where}"))
    selector = scale.get("labelSelectorPath")
    if selector:
        p = f"{path}.scale.labelSelectorPath"
        if simple := _simple_json_path(selector, p):
            errs += simple
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(fe.invalid(p, selector, "should be a json path under either .spec or "
                                                ".status"))
    return errs


def _simple_json_path(s: str, path: str) -> list[Cause]:
    if not s:
        return [fe.invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [fe.invalid(path, s, "must be a simple json path starting with .")]
    return []


def validate_column(col: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateCustomResourceColumnDefinition`` (the Go field name ``JSONPath`` included)."""
    errs: list[Cause] = []
    if not col.get("name"):
        errs.append(fe.required(fe.child(path, "name")))
    ctype = col.get("type") or ""
    detail = "must be one of " + ",".join(PRINTER_COLUMN_TYPES)
    if not ctype:
        errs.append(fe.required(fe.child(path, "type"), detail))
    elif ctype not in PRINTER_COLUMN_TYPES:
        errs.append(fe.invalid(fe.child(path, "type"), ctype, detail))
    fmt = col.get("format") or ""
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        errs.append(fe.invalid(fe.child(path, "format"), fmt,
                               "must be one of " + ",".join(PRINTER_COLUMN_FORMATS)))
    json_path = col.get("jsonPath") or ""
    if not json_path:
        errs.append(fe.required(fe.child(path, "JSONPath")))
    else:
        errs += _simple_json_path(json_path, fe.child(path, "JSONPath"))
    return errs


def _allow_invalid_ca_bundle(old: Mapping[str, Any] | None) -> bool:
    """validation.go ``allowInvalidCABundle``: any bundle on create, or while the old CRD is
    not Established; on update otherwise only when the old bundle was itself invalid."""
    if old is None or not any(c.get("type") == "Established" and c.get("status") == "True"
                              for c in (old.get("status") or {}).get("conditions") or []):
        return True
    webhook = ((old.get("spec") or {}).get("conversion") or {}).get("webhook") or {}
    bundle = str((webhook.get("clientConfig") or {}).get("caBundle") or "")
    return bool(bundle) and bool(validate_ca_bundle("caBundle", bundle))


def _validate_conversion(spec: Mapping[str, Any], allow_invalid_ca_bundle: bool = True
                         ) -> list[Cause]:
    conversion = spec.get("conversion") or {}
    strategy = conversion.get("strategy") or ""
    path = "spec.conversion"
    errs: list[Cause] = []
    if strategy not in ("None", "Webhook"):
        errs.append(fe.not_supported(f"{path}.strategy", strategy, ["None", "Webhook"]))
    webhook = conversion.get("webhook")
    if strategy == "Webhook":
        config = (webhook or {}).get("clientConfig")
        if config is None:
            errs.append(fe.required(f"{path}.webhookClientConfig",
                                    "required when strategy is set to Webhook"))
        elif (config.get("url") is None) == (config.get("service") is None):
            errs.append(fe.required(f"{path}.webhookClientConfig",
                                    "exactly one of url or service is required"))
        elif config.get("url") is not None:
            errs.extend(validate_webhook_url(f"{path}.webhookClientConfig.url",
                                             str(config["url"])))
        else:
            errs.extend(validate_webhook_service(f"{path}.webhookClientConfig.service",
                                                 config["service"] or {}))
        bundle = str((config or {}).get("caBundle") or "")
        if config is not None and bundle and not allow_invalid_ca_bundle:
            errs.extend(validate_ca_bundle(f"{path}.webhookClientConfig.caBundle", bundle))
        errs.extend(_conversion_review_versions(
            list((webhook or {}).get("conversionReviewVersions") or []),
            f"{path}.conversionReviewVersions"))
    elif webhook:
        # the v1 webhook's two fields are the internal type's two, each forbidden alone
        if webhook.get("clientConfig") is not None:
            errs.append(fe.forbidden(f"{path}.webhookClientConfig",
                                     "should not be set when strategy is not set to Webhook"))
        if webhook.get("conversionReviewVersions"):
            errs.append(fe.forbidden(f"{path}.conversionReviewVersions",
                                     "should not be set when strategy is not set to Webhook"))
    if strategy and strategy != "None" and spec.get("preserveUnknownFields"):
        errs.append(fe.invalid(f"{path}.strategy", strategy,
                               "must be None if spec.preserveUnknownFields is true"))
    return errs


def _conversion_review_versions(versions: list[str], path: str) -> list[Cause]:
    """validation.go validateConversionReviewVersions: no duplicates, DNS-1035 labels, and
    one the server speaks."""
    if not versions:
        return [fe.required(path)]
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            errs.append(fe.invalid(fe.index(path, i), v, "duplicate version"))
            continue
        seen.add(v)
        errs.extend(fe.invalid(fe.index(path, i), v, m) for m in is_dns1035_label(v))
    if not seen & {"v1", "v1beta1"}:
        errs.append(fe.invalid(path, go_string_slice(versions),
                               "must include at least one of v1, v1beta1"))
    return errs


def _validate_update(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    old_spec = old.get("spec") or {}
    errs: list[Cause] = []
    established = any(c.get("type") == "Established" and c.get("status") == "True"
                      for c in ((old.get("status") or {}).get("conditions") or []))
    checks = [("spec.group", spec.get("group"), old_spec.get("group")),
              ("spec.names.plural", (spec.get("names") or {}).get("plural"),
               (old_spec.get("names") or {}).get("plural"))]
    if established:
        checks += [("spec.scope", spec.get("scope"), old_spec.get("scope")),
                   ("spec.names.kind", (spec.get("names") or {}).get("kind"),
                    (old_spec.get("names") or {}).get("kind"))]
    for path, new_value, old_value in checks:
        if new_value != old_value:
            errs.append(fe.invalid(path, new_value, "field is immutable"))
    return errs


def _validate_stored_versions(stored: list[str] | None, versions: list[Mapping[str, Any]]
                              ) -> list[Cause]:
    """``ValidateCustomResourceDefinitionStoredVersions`` of apiextensions v0.32
    (pkg/apis/apiextensions/validation/validation.go): the list is printed as Go's ``%#v`` of
    a ``[]string``; a stored version no longer in spec.versions "must appear" there (the
    longer storage-migration wording came with 1.33)."""
    path = "status.storedVersions"
    as_go = fe.Rendered("[]string(nil)" if stored is None else
                        "[]string{" + ", ".join(fe.go_quote(v) for v in stored) + "}")
    if not stored:
        return [fe.invalid(path, as_go, "must have at least one stored version")]
    errs: list[Cause] = []
    index = {v: i for i, v in enumerate(stored)}
    for v in versions:
        if v.get("storage") and v.get("name") not in index:
            errs.append(fe.invalid(path, as_go, f"must have the storage version {v.get('name')}"))
        index.pop(str(v.get("name")), None)
    for name, i in index.items():
        errs.append(fe.invalid(fe.index(path, i), name, "must appear in spec.versions"))
    return errs


def _deprecation_warning_errors(deprecated: bool, warning: str) -> list[str]:
    """validateDeprecationWarning: every problem of the text, lengths and indexes in UTF-8
    bytes as Go counts them; a character that is not unicode.IsPrint (categories other than
    letters, marks, numbers, punctuation and symbols, the ASCII space aside) is refused."""
    if not deprecated:
        return ["can only be set for deprecated versions"]
    errors: list[str] = []
    size = len(warning.encode("utf-8", "surrogatepass"))
    if size > 256:
        errors.append("must be <= 256 characters long")
    if size == 0:
        errors.append("must not be an empty string")
    offset = 0
    for ch in warning:
        # str.isprintable is Go's unicode.IsPrint; IsControl's runes are never printable,
        # so the non-printable message always comes first
        if not ch.isprintable():
            errors.append("must only contain printable UTF-8 characters; non-printable "
                          f"character found at index {offset}")
            break
        offset += len(ch.encode("utf-8", "surrogatepass"))
    return errors


def _validate_api_approval(crd: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """validateAPIApproval: a protected group needs the approval annotation, checked when
    the CRD is created and whenever the annotation's state changes."""
    group = str((crd.get("spec") or {}).get("group") or "")
    if not is_protected_community_group(group):
        return []
    new_state, reason = approval_state(crd)
    if old is not None and approval_state(old)[0] == new_state:
        return []
    path = f"metadata.annotations[{API_APPROVAL_ANNOTATION}]"
    if new_state == "missing":
        return [fe.required(path, reason)]
    if new_state == "invalid":
        value = crd["metadata"]["annotations"][API_APPROVAL_ANNOTATION]
        return [fe.invalid(path, value, reason)]
    return []
