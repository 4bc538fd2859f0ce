"""The status the apiserver writes on a CRD: acceptedNames, conditions, storedVersions."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from .apiapproval import APPROVAL_CONDITION, approval_condition
from .definition import storage_version
from .webhookconfig import validate_ca_bundle


def initial_status(crd: Mapping[str, Any]) -> dict[str, Any]:
    """The status a CRD create stores (``PrepareForCreate``): no conditions yet."""
    stored = storage_version(crd)
    return {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": [stored] if stored else []}


def prepare_update_status(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """The status kept on a spec update: the old one, plus a new storage version if any."""
    status = copy.deepcopy(dict(old.get("status") or {}))
    stored = list(status.get("storedVersions") or [])
    current = storage_version(new)
    if current and current not in stored:
        stored.append(current)
    status["storedVersions"] = stored
    return status


def _condition(ctype: str, status: str, reason: str, message: str, now: str,
               previous: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    transition = now
    for c in previous:
        if c.get("type") == ctype and c.get("status") == status and c.get("lastTransitionTime"):
            transition = c["lastTransitionTime"]
    return {"type": ctype, "status": status, "lastTransitionTime": transition, "reason": reason,
            "message": message}


def _without_empty(names: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in names.items() if v}


def _set_condition(conditions: list[dict[str, Any]], new: dict[str, Any]) -> None:
    for i, c in enumerate(conditions):
        if c.get("type") == new["type"]:
            conditions[i] = new
            return
    conditions.append(new)


def _names_in_use(others: Iterable[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    """naming_controller.go getAcceptedNamesForGroup: the resource names (plural, singular,
    short names) and the kinds (kind, list kind) the group's other CRDs have been granted."""
    resources: set[str] = set()
    kinds: set[str] = set()
    for other in others:
        accepted = (other.get("status") or {}).get("acceptedNames") or {}
        resources |= {accepted.get("plural") or "", accepted.get("singular") or "",
                      *(accepted.get("shortNames") or [])}
        kinds |= {accepted.get("kind") or "", accepted.get("listKind") or ""}
    return resources, kinds


def _accept_names(names: Mapping[str, Any], accepted: Mapping[str, Any],
                  others: Iterable[Mapping[str, Any]]
                  ) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """naming_controller.go calculateNamesAndConditions: each requested name is granted
    unless it is new and in use; a refused one keeps its old grant, and the last conflict
    found names the NamesAccepted condition."""
    resources, kinds = _names_in_use(others)
    new = {k: copy.deepcopy(v) for k, v in accepted.items()}
    conflict: tuple[str, str] | None = None
    for key, reason, used in (("plural", "PluralConflict", resources),
                              ("singular", "SingularConflict", resources),
                              ("shortNames", "ShortNamesConflict", resources),
                              ("kind", "KindConflict", kinds),
                              ("listKind", "ListKindConflict", kinds)):
        requested, granted = names.get(key) or "", accepted.get(key) or ""
        if key == "shortNames":
            requested, granted = list(requested), list(granted)
            taken = [f'"{n}" is already in use' for n in requested
                     if n not in granted and n in used] if requested != granted else []
            # utilerrors.NewAggregate: one message alone, several in brackets, repeats once
            taken = list(dict.fromkeys(taken))
            message = taken[0] if len(taken) == 1 else "[" + ", ".join(taken) + "]"
            refused = bool(taken)
        else:
            refused = requested != granted and requested in used
            message = f'"{requested}" is already in use'
        if refused:
            conflict = (reason, message)
        else:
            new[key] = copy.deepcopy(requested)
    new["categories"] = copy.deepcopy(names.get("categories"))
    # plural and kind are always written; the others are omitempty
    return {k: v for k, v in new.items() if v or k in ("plural", "kind")}, conflict


def _is_true(conditions: Iterable[Mapping[str, Any]], ctype: str) -> bool:
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conditions)


def _establish(conditions: list[dict[str, Any]], spec: Mapping[str, Any], now: str,
               previous: Iterable[Mapping[str, Any]]) -> None:
    """establish/establishing_controller.go sync, queued by every change of a CRD whose names
    are accepted and which is not Established (customresource_handler.go
    updateCustomResourceDefinition): Established, unless the conversion webhook's caBundle
    is invalid (webhook.ValidateCABundle; an empty one is no CA data, valid)."""
    if not _is_true(conditions, "NamesAccepted") or _is_true(conditions, "Established"):
        return
    webhook = (spec.get("conversion") or {}).get("webhook") or {}
    config = webhook.get("clientConfig")
    bundle = str((config or {}).get("caBundle") or "") if isinstance(config, Mapping) else ""
    if bundle and validate_ca_bundle("caBundle", bundle):
        _set_condition(conditions, _condition("Established", "False", "InvalidCABundle",
                                              "The conversion webhook CABundle is invalid",
                                              now, previous))
    else:
        _set_condition(conditions, _condition("Established", "True", "InitialNamesAccepted",
                                              "the initial names have been accepted", now,
                                              previous))


def crd_status(crd: Mapping[str, Any], now: str,
               others: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The status once the naming and establishing controllers have run.

    ``others`` are the other CRDs of the same group (their accepted names may conflict);
    ``now`` is the RFC 3339 time for conditions that change state.
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    old_status = crd.get("status") or {}
    previous = old_status.get("conditions") or []
    group = spec.get("group")
    own_name = (crd.get("metadata") or {}).get("name")
    # getAcceptedNamesForGroup lists every CRD of the group, this one included: a name it
    # holds under another role (a short name it wants as singular) is in use too
    same_group = [o for o in others
                  if (o.get("spec") or {}).get("group") == group
                  and (o.get("metadata") or {}).get("name") != own_name] + [crd]
    old_accepted = old_status.get("acceptedNames") or {"plural": "", "kind": ""}
    accepted, conflict = _accept_names(names, old_accepted, same_group)
    # naming_controller.go sync skips a CRD whose accepted names are its names: the
    # conditions are left as they are, even ones a client rewrote through /status
    names_settled = _without_empty(names) == _without_empty(old_accepted)
    if names_settled:
        named: list[dict[str, Any]] = []
        accepted = copy.deepcopy(dict(old_accepted))
    elif conflict is None:
        # a CRD not yet Established is "Installing" until the establishing controller runs
        established = [c for c in previous if c.get("type") == "Established"
                       and c.get("status") == "True"]
        named = [
            _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now, previous),
            established[0] if established else _condition(
                "Established", "False", "Installing", "the initial names have been accepted",
                now, previous),
        ]
    else:
        reason, message = conflict
        established = [c for c in previous if c.get("type") == "Established"
                       and c.get("status") == "True"]
        named = [_condition("NamesAccepted", "False", reason, message, now, previous)]
        named.append(established[0] if established else _condition(
            "Established", "False", "NotAccepted", "not all names are accepted", now, previous))
    # Each controller sets its own conditions (SetCRDCondition): in place when present,
    # appended otherwise, the others' kept. The naming and apiapproval controllers race on a
    # new CRD; the approval condition usually lands after the naming one (as most recorded
    # CRD statuses in the wild show it).
    conditions = [copy.deepcopy(dict(c)) for c in previous]
    for cond in named:
        _set_condition(conditions, cond)
    _establish(conditions, spec, now, previous)
    approval = approval_condition(crd)
    if approval is not None:
        _set_condition(conditions, _condition(APPROVAL_CONDITION, *approval, now, previous))
    stored = list(old_status.get("storedVersions") or [])
    current = storage_version(crd)
    if current and current not in stored:
        stored.append(current)
    return {"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored}
