"""The small value types of the client's API: patch types, propagation policies, list pages."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class PatchType(enum.StrEnum):
    """The four patch flavours, by the content type that selects them."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


class PropagationPolicy(enum.StrEnum):
    """What happens to dependents when an owner is deleted."""

    ORPHAN = "Orphan"
    BACKGROUND = "Background"
    FOREGROUND = "Foreground"


@dataclass(slots=True)
class ObjectList(Generic[T]):
    """One list answer: its items and the list's ``resourceVersion`` (to watch from), plus
    the ``continue`` token and ``remainingItemCount`` when the list was paginated."""

    items: list[T]
    resource_version: str
    continue_token: str | None = None
    remaining_item_count: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        more = f", continue_token={self.continue_token!r}" if self.continue_token else ""
        return f"ObjectList({len(self.items)} items, resource_version={self.resource_version!r}" \
            f"{more})"


def delete_options(
    propagation_policy: PropagationPolicy | str | None, grace_period_seconds: int | None,
    dry_run: bool, preconditions: Mapping[str, str],
) -> dict[str, Any]:
    """The ``DeleteOptions`` body of a delete or delete-collection request."""
    body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy is not None:
        body["propagationPolicy"] = str(propagation_policy)
    if grace_period_seconds is not None:
        body["gracePeriodSeconds"] = grace_period_seconds
    if preconditions:
        body["preconditions"] = dict(preconditions)
    if dry_run:
        body["dryRun"] = ["All"]
    return body
