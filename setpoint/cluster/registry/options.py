"""Query parameters of writes and reads, validated as the apiserver validates them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from setpoint.machinery import errors, fielderrors
from setpoint.machinery.errors import Cause
from setpoint.machinery.fielderrors import go_quote
from setpoint.machinery.objects import Obj

_VALIDATION_VALUES = ("", "Ignore", "Strict", "Warn")
FIELD_MANAGER_MAX_LENGTH = 128  # metav1validation.FieldManagerMaxLength


def _parse_int64(value: str) -> int:
    """``strconv.ParseInt(value, 10, 64)`` as the query parameter conversion calls it
    (runtime.Convert_Slice_string_To_Pointer_int64); its error is the 400's message."""
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(value)}: invalid syntax")
    number = int(value)
    if not -(1 << 63) <= number < (1 << 63):
        raise errors.bad_request(
            f"strconv.ParseInt: parsing {go_quote(value)}: value out of range")
    return number


def query_flag(query: Mapping[str, str], name: str) -> bool:
    """A bool query parameter as the parameter codec converts it
    (apimachinery pkg/runtime/conversion.go ``Convert_Slice_string_To_bool`` and
    ``_To_Pointer_bool``): absent, ``0`` or ``false`` in any case is false; anything else,
    the empty value and ``yes`` included, is true."""
    value = query.get(name)
    return value is not None and value != "0" and value.lower() != "false"


def _field_manager_causes(manager: str) -> list[Cause]:
    """``ValidateFieldManager``: at most 128 bytes, every character printable
    (``unicode.IsPrint``; the position is the character's byte offset, as Go's range)."""
    causes = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        causes.append(fielderrors.too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    if not manager.isprintable():
        offset = 0
        for char in manager:
            if not char.isprintable():
                causes.append(fielderrors.invalid(
                    "fieldManager", manager,
                    f"invalid character U+{ord(char):04X} (at position {offset})"))
            offset += len(char.encode())
    return causes


def _options_invalid(kind: str, causes: list[Cause]) -> errors.StatusError:
    return errors.invalid(kind, "", causes, group="meta.k8s.io")


def manager_from_user_agent(user_agent: str) -> str:
    """The default field manager: the User-Agent up to its first slash, its unprintable
    characters left out, cut once 128 bytes are written (rest.go prefixFromUserAgent)."""
    if not user_agent:
        return "unknown"
    prefix = user_agent.split("/", 1)[0]
    if len(prefix) <= 128 and prefix.isascii() and prefix.isprintable():
        return prefix  # (most agents: nothing to leave out or cut)
    out: list[str] = []
    written = 0
    for ch in prefix:
        if not ch.isprintable():  # (Go's unicode.IsPrint: the same classes, ASCII space in)
            continue
        if written >= 128:
            break
        out.append(ch)
        written += len(ch.encode())
    return "".join(out)


def dry_run_values(query: Mapping[str, str]) -> list[str]:
    """Every ``dryRun`` of the query, in order: the options' DryRun is a []string that
    takes each repetition of the parameter (``?dryRun=All&dryRun=x`` is two values), and
    an empty one is a value too."""
    getall = getattr(query, "getall", None)
    if getall is not None:  # a multidict: the request's own query
        return [str(v) for v in getall("dryRun", [])]
    return [query["dryRun"]] if "dryRun" in query else []


def _dry_run_unsupported(values: list[str]) -> Cause:
    """ValidateDryRun (apimachinery pkg/apis/meta/v1/validation/validation.go): NotSupported
    with the whole list once any value is not ``All``."""
    listed = ", ".join(go_quote(v) for v in values)
    return Cause("FieldValueNotSupported",
                 f'Unsupported value: []string{{{listed}}}: supported values: "All"', "dryRun")


@dataclass(slots=True)
class WriteOptions:
    """CreateOptions / UpdateOptions / PatchOptions."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"
    force: bool = False
    # who sent the request, for the admission attributes (None: the server's own write)
    user: Obj | None = None
    # fieldManager and fieldValidation as the query gave them: the options object admission
    # sees is the decoded query, never defaulted (handlers/create.go managerOrUserAgent
    # computes the manager for managedFields only)
    given_field_manager: str = ""
    given_field_validation: str = ""

    @classmethod
    def parse(cls, query: Mapping[str, str], kind: str, user_agent: str,
              *, apply: bool = False, user: Obj | None = None) -> WriteOptions:
        if not query and not apply:  # (most writes: every option at its default)
            return cls(False, manager_from_user_agent(user_agent), "Warn", False, user)
        # ValidateCreateOptions / UpdateOptions / PatchOptions (apimachinery v0.32
        # pkg/apis/meta/v1/validation/validation.go), in their order
        causes: list[Cause] = []
        manager = query.get("fieldManager", "")
        if kind == "PatchOptions":
            if apply:
                if not manager:
                    causes.append(fielderrors.required("fieldManager",
                                                       "is required for apply patch"))
            elif "force" in query:
                # PatchOptions.Force is a *bool: any value, "false" too, sets it
                causes.append(fielderrors.forbidden("force",
                                                    "may not be specified for non-apply patch"))
        causes += _field_manager_causes(manager)
        dry = dry_run_values(query)
        if any(v != "All" for v in dry):
            causes.append(_dry_run_unsupported(dry))
        dry_run = bool(dry)
        fv = query.get("fieldValidation", "")
        if fv not in _VALIDATION_VALUES:
            causes.append(Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{fv}": supported values: "", "Ignore", "Strict", "Warn"',
                "fieldValidation"))
        force = apply and query_flag(query, "force")
        if causes:
            raise _options_invalid(kind, causes)
        return cls(
            dry_run=dry_run,
            field_manager=manager or manager_from_user_agent(user_agent),
            field_validation=fv or "Warn",
            force=force,
            user=user,
            given_field_manager=manager,
            given_field_validation=fv,
        )

    def options_object(self, kind: str) -> dict[str, object]:
        """These options as the meta.k8s.io/v1 object admission webhooks are sent."""
        out: dict[str, object] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if self.dry_run:
            out["dryRun"] = ["All"]
        if self.given_field_manager:
            out["fieldManager"] = self.given_field_manager
        if self.given_field_validation:
            out["fieldValidation"] = self.given_field_validation
        return out


@dataclass(slots=True)
class ListOptions:
    """A LIST's or WATCH's query options (metav1.ListOptions)."""

    label_selector: str = ""
    field_selector: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    watch: bool = False
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: int | None = None

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> ListOptions:
        # the parameter codec converts the fields in ListOptions' order (timeoutSeconds
        # before limit), each int64 by strconv.ParseInt, whose error is the 400's message
        # (zz_generated.conversion.go autoConvert_url_Values_To_v1_ListOptions)
        timeout_raw = query.get("timeoutSeconds")
        timeout = None if timeout_raw is None else _parse_int64(timeout_raw)
        limit_raw = query.get("limit")
        limit = 0 if limit_raw is None else _parse_int64(limit_raw)
        sie = query.get("sendInitialEvents")
        return cls(
            label_selector=query.get("labelSelector", ""),
            field_selector=query.get("fieldSelector", ""),
            resource_version=query.get("resourceVersion", ""),
            resource_version_match=query.get("resourceVersionMatch", ""),
            limit=max(limit, 0),
            continue_token=query.get("continue", ""),
            watch=query_flag(query, "watch"),
            allow_bookmarks=query_flag(query, "allowWatchBookmarks"),
            send_initial_events=None if sie is None else query_flag(query, "sendInitialEvents"),
            timeout_seconds=timeout,
        )


EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"


def set_list_options_defaults(opts: ListOptions) -> None:
    """``SetListOptionsDefaults`` with the WatchList gate on (1.32's default), applied before
    validation: a watch from "" or "0" that names neither sendInitialEvents nor
    resourceVersionMatch sends its initial events, NotOlderThan (so a continue token beside
    it is then refused). Source: k8s.io/apimachinery v0.32.0
    pkg/apis/meta/internalversion/defaults.go, k8s.io/apiserver handlers/get.go."""
    if opts.send_initial_events is not None or opts.resource_version_match:
        return
    if opts.watch and opts.resource_version in ("", "0"):
        opts.send_initial_events = True
        opts.resource_version_match = NOT_OLDER_THAN


def validate_list_options(opts: ListOptions) -> None:
    """The checks of ``ValidateListOptions`` (apimachinery's
    pkg/apis/meta/internalversion/validation/validation.go) for a LIST, WATCH or
    DELETECOLLECTION: a 422 on ListOptions.meta.k8s.io with every cause in its order. The
    WatchList feature gate is on in 1.32 (beta), so ``sendInitialEvents`` is allowed on
    watches."""
    causes: list[Cause] = []
    match = opts.resource_version_match
    if opts.watch:
        if opts.send_initial_events is not None and match != NOT_OLDER_THAN:
            causes.append(fielderrors.forbidden(
                "resourceVersionMatch",
                f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}"))
        if match:
            if opts.send_initial_events is None:
                causes.append(fielderrors.forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden for watch "
                    "unless sendInitialEvents is provided"))
            if match != NOT_OLDER_THAN:
                causes.append(fielderrors.not_supported("resourceVersionMatch", match,
                                                        [NOT_OLDER_THAN]))
            if opts.continue_token:
                causes.append(fielderrors.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided"))
    else:
        if match:
            if not opts.resource_version:
                causes.append(fielderrors.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided"))
            if opts.continue_token:
                causes.append(fielderrors.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided"))
            if match not in (EXACT, NOT_OLDER_THAN):
                causes.append(fielderrors.not_supported("resourceVersionMatch", match,
                                                        [EXACT, NOT_OLDER_THAN, ""]))
            if match == EXACT and opts.resource_version == "0":
                causes.append(fielderrors.forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
        if opts.send_initial_events is not None:
            causes.append(fielderrors.forbidden("sendInitialEvents",
                                                "sendInitialEvents is forbidden for list"))
    if causes:
        raise _options_invalid("ListOptions", causes)


@dataclass(slots=True)
class DeleteOptions:
    """A DELETE's options (metav1.DeleteOptions)."""

    dry_run: bool = False
    propagation_policy: str | None = None
    # the deprecated orphanDependents as sent: false asks for foreground deletion and, while
    # the object stays, a 202 (handlers/delete.go)
    orphan_dependents: bool | None = None
    grace_period_seconds: int | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None

    @classmethod
    def parse(cls, query: Mapping[str, str], body: dict[str, object] | None) -> DeleteOptions:
        body = body or {}
        causes: list[Cause] = []
        # (Convert_url_Values_To_v1_DeleteOptions keeps every value, an empty one too, for
        # ValidateDryRun to refuse as the create and update options do)
        dry_values = body.get("dryRun") or dry_run_values(query)
        dry_run = bool(dry_values)
        policy = body.get("propagationPolicy") or query.get("propagationPolicy")
        orphan = body.get("orphanDependents")
        if orphan is None and "orphanDependents" in query:
            # runtime.Convert_Slice_string_To_Pointer_bool: only "0" and "false" are false
            orphan = not (query["orphanDependents"] == "0"
                          or query["orphanDependents"].lower() == "false")
        # metav1 validation.ValidateDeleteOptions, its errors in its order
        if orphan is not None and policy is not None:
            causes.append(Cause("FieldValueInvalid",
                                f'Invalid value: "{policy}": orphanDependents and '
                                "deletionPropagation cannot be both set", "propagationPolicy"))
        if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
            causes.append(Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Foreground", "Background", '
                '"Orphan", "nil"', "propagationPolicy"))
        if isinstance(dry_values, list) and any(v != "All" for v in dry_values):
            causes.append(_dry_run_unsupported([str(v) for v in dry_values]))
        grace = body.get("gracePeriodSeconds")
        if grace is None and "gracePeriodSeconds" in query:
            grace = _parse_int64(query["gracePeriodSeconds"])
        pre = body.get("preconditions") or {}
        if causes:
            raise _options_invalid("DeleteOptions", causes)
        return cls(
            dry_run=dry_run,
            propagation_policy=str(policy) if policy else None,
            orphan_dependents=bool(orphan) if orphan is not None else None,
            # a JSON number from the body (the decoder checked it is an int64) or the query's
            grace_period_seconds=int(cast("int | float", grace)) if grace is not None else None,
            precondition_uid=pre.get("uid") if isinstance(pre, dict) else None,
            precondition_rv=pre.get("resourceVersion") if isinstance(pre, dict) else None,
        )

    def options_object(self) -> dict[str, object]:
        """These options as the meta.k8s.io/v1 DeleteOptions admission webhooks are sent."""
        out: dict[str, object] = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
        if self.grace_period_seconds is not None:
            out["gracePeriodSeconds"] = self.grace_period_seconds
        preconditions = {k: v for k, v in (("uid", self.precondition_uid),
                                           ("resourceVersion", self.precondition_rv)) if v}
        if preconditions:
            out["preconditions"] = preconditions
        if self.orphan_dependents is not None:
            out["orphanDependents"] = self.orphan_dependents
        elif self.propagation_policy:
            out["propagationPolicy"] = self.propagation_policy
        if self.dry_run:
            out["dryRun"] = ["All"]
        return out
