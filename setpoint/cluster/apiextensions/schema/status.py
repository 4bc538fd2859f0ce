"""The status the apiserver writes on a CRD: acceptedNames, conditions, storedVersions."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from .definition import storage_version

_NAME_KEYS = ("plural", "singular", "shortNames", "kind", "listKind", "categories")


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


def _accepted(names: Mapping[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(names[k]) for k in _NAME_KEYS if names.get(k)}


def _condition(ctype: str, status: str, reason: str, message: str, now: str,
               previous: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    transition = now
    for c in previous:
        if c.get("type") == ctype and c.get("status") == status and c.get("lastTransitionTime"):
            transition = c["lastTransitionTime"]
    return {"type": ctype, "status": status, "lastTransitionTime": transition, "reason": reason,
            "message": message}


def _conflict(names: Mapping[str, Any], others: Iterable[Mapping[str, Any]]
              ) -> tuple[str, str] | None:
    taken: dict[str, set[str]] = {"plural": set(), "singular": set(), "kind": set(),
                                  "listKind": set(), "short": set()}
    for other in others:
        accepted = (other.get("status") or {}).get("acceptedNames") or {}
        for k in ("plural", "singular", "kind", "listKind"):
            if accepted.get(k):
                taken[k].add(accepted[k])
        resource_names = {accepted.get("plural"), accepted.get("singular"),
                          *(accepted.get("shortNames") or [])}
        taken["short"] |= {n for n in resource_names if n}
    plural, singular = names.get("plural"), names.get("singular")
    if plural in taken["plural"] or plural in taken["short"]:
        return "PluralConflict", f'"{plural}" is already in use'
    if singular and (singular in taken["singular"] or singular in taken["short"]):
        return "SingularConflict", f'"{singular}" is already in use'
    for short in names.get("shortNames") or []:
        if short in taken["short"]:
            return "ShortNamesConflict", f'"{short}" is already in use'
    if names.get("kind") in taken["kind"]:
        return "KindConflict", f'"{names.get("kind")}" is already in use'
    if names.get("listKind") and names.get("listKind") in taken["listKind"]:
        return "ListKindConflict", f'"{names.get("listKind")}" is already in use'
    return None


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
    same_group = [o for o in others
                  if (o.get("spec") or {}).get("group") == group
                  and (o.get("metadata") or {}).get("name") != own_name]
    conflict = _conflict(names, same_group)
    if conflict is None:
        accepted = _accepted(names)
        conditions = [
            _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now, previous),
            _condition("Established", "True", "InitialNamesAccepted",
                       "the initial names have been accepted", now, previous),
        ]
    else:
        accepted = dict(old_status.get("acceptedNames") or {"plural": "", "kind": ""})
        reason, message = conflict
        established = [c for c in previous if c.get("type") == "Established"
                       and c.get("status") == "True"]
        conditions = [_condition("NamesAccepted", "False", reason, message, now, previous)]
        conditions.append(established[0] if established else _condition(
            "Established", "False", "NotAccepted", "not all names are accepted", now, previous))
    stored = list(old_status.get("storedVersions") or [])
    current = storage_version(crd)
    if current and current not in stored:
        stored.append(current)
    return {"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored}
