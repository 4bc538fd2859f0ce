"""What a check answers and how answers are worded (k8s.io/pod-security-admission
policy/checks.go, helpers.go, visitor.go)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from setpoint.cluster.admission.podsecurity.levels import Version

Obj = dict[str, Any]
CheckPod = Callable[[Obj, Obj], "CheckResult"]
"""A check of a pod's metadata and spec."""


@dataclass(frozen=True)
class CheckResult:
    allowed: bool
    forbidden_reason: str = ""
    forbidden_detail: str = ""


ALLOWED = CheckResult(True)
UNKNOWN_FORBIDDEN_REASON = "unknown forbidden reason"


@dataclass(frozen=True)
class VersionedCheck:
    """A check's rule from ``minimum_version`` on; a restricted rule replaces the baseline
    checks it overrides."""

    minimum_version: Version
    check_pod: CheckPod
    override_check_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    versions: tuple[VersionedCheck, ...]


@dataclass
class AggregateCheckResult:
    """``AggregateCheckResults``: the refusals of a pod's checks, in the checks' order."""

    reasons: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.reasons

    def forbidden_reason(self) -> str:
        return ", ".join(self.reasons)

    def forbidden_detail(self) -> str:
        return ", ".join(f"{reason} ({detail})" if detail else reason
                         for reason, detail in zip(self.reasons, self.details, strict=True))


def aggregate(results: list[CheckResult]) -> AggregateCheckResult:
    out = AggregateCheckResult()
    for result in results:
        if not result.allowed:
            out.reasons.append(result.forbidden_reason or UNKNOWN_FORBIDDEN_REASON)
            out.details.append(result.forbidden_detail)
    return out


def join_quote(items: list[str]) -> str:
    """``joinQuote``: each item in double quotes, comma separated."""
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def containers_named(items: list[str]) -> str:
    """``container "a"`` or ``containers "a", "b"``, as every check names them."""
    return f"{pluralize('container', 'containers', len(items))} {join_quote(items)}"


def visit_containers(spec: Obj) -> Iterator[Obj]:
    """``visitContainers``: init, regular, then ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            if isinstance(container, dict):
                yield container


def security_context(obj: Obj) -> Obj | None:
    """A container's or the pod spec's securityContext (None when unset, as Go's nil)."""
    context = obj.get("securityContext")
    return context if isinstance(context, dict) else None


def name_of(container: Obj) -> str:
    return str(container.get("name") or "")


def is_windows(spec: Obj) -> bool:
    """The 1.25 rules pass a pod whose ``spec.os.name`` is windows."""
    return ((spec.get("os") or {}).get("name")) == "windows"


def v(minor: int) -> Version:
    return Version(1, minor)
