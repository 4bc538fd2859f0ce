"""The operator maturity check's verdicts, the capability level they support, and their
rendering (``setpoint check``).

Each check stands for one guideline of KubePlus's operator maturity model
(github.com/cloud-ark/kubeplus, ``Guidelines.md``: consumability, configurability,
security, robustness, debuggability, portability) or one criterion of operator-sdk's
capability levels (sdk.operatorframework.io/docs/overview/operator-capabilities). A verdict
is ``pass``, ``fail`` or ``skip`` (the evidence needed was not available: a dynamic check
without a running instance, a check that does not apply); each carries its evidence, one
line per fact looked at. ``required`` checks decide the exit code.

The capability levels are cumulative (operator-sdk: "Level 3 capabilities require all
capabilities desired from Level 1 and 2"): the level reported is the highest one whose
checks, and those of every level below it, all passed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

Status = Literal["pass", "fail", "skip"]


@dataclasses.dataclass(frozen=True)
class Check:
    """One guideline: its id (``crd-schema``), title, where it comes from, and whether a
    failure fails the run."""

    id: str
    title: str
    guideline: str
    required: bool


@dataclasses.dataclass
class Verdict:
    check: Check
    status: Status
    evidence: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.check.id, "title": self.check.title,
                "guideline": self.check.guideline, "required": self.check.required,
                "status": self.status, "evidence": list(self.evidence)}


CHECKS: dict[str, Check] = {c.id: c for c in (
    Check("crd-schema", "CRD schema present",
          "KubePlus: Kube OpenAPI compliant types; spec validation rules in the CRD", True),
    Check("relationship-annotations", "Relationship annotations where they apply",
          "KubePlus: document label, annotation and spec-property dependencies; expose "
          "composition", False),
    Check("resources", "Resource requests/limits exposed and passed down to every pod",
          "KubePlus: define resource requests and limits for custom resources", True),
    Check("node-selector", "nodeSelector exposed and passed down to every pod",
          "KubePlus: define custom resource node affinity rules", False),
    Check("tolerations", "Tolerations exposed and passed down to every pod",
          "KubePlus: define custom resource taint toleration rules", False),
    Check("owner-references", "ownerReferences on created objects",
          "KubePlus: set OwnerReferences for underlying resources", True),
    Check("service-account", "Dedicated ServiceAccount",
          "KubePlus: define a service account for the operator pod", True),
    Check("rbac-least-privilege", "Least-privilege RBAC",
          "KubePlus: only the required permissions and nothing more", True),
    Check("status-conditions", "Status conditions",
          "operator-sdk I: conveys readiness of the managed resources", True),
    Check("observed-generation", "status.observedGeneration",
          "operator-sdk II: the status says which spec it reflects", True),
    Check("events", "Events about its instances",
          "operator-sdk IV: the operator reports what it does", False),
    Check("metrics-endpoint", "Metrics endpoint",
          "KubePlus: decide a metrics collection strategy; operator-sdk IV", False),
    Check("pod-restarts", "Reacts to pod restarts",
          "KubePlus: robustness against side-car injection (subscribe to pod restarts)",
          False),
    Check("crd-versioning", "CRD versioning",
          "operator-sdk II: seamless upgrades of the API", False),
    Check("printer-columns", "Printer columns",
          "KubePlus: kubectl as the primary interaction mechanism", False),
    Check("scale-subresource", "Scale subresource",
          "operator-sdk V: horizontal scaling (kubectl scale, autoscalers)", False),
)}

# operator-sdk's five levels and the checks whose evidence each one needs
LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("I Basic Install", ("crd-schema", "status-conditions")),
    ("II Seamless Upgrades", ("crd-versioning", "observed-generation")),
    ("III Full Lifecycle", ("owner-references", "pod-restarts")),
    ("IV Deep Insights", ("metrics-endpoint", "events")),
    ("V Auto Pilot", ("scale-subresource", "resources", "node-selector", "tolerations")),
)


def verdict(check_id: str, status: Status, evidence: Sequence[str]) -> Verdict:
    return Verdict(CHECKS[check_id], status, list(evidence))


@dataclasses.dataclass
class Report:
    """Every check's verdict about one operator, and where the evidence came from."""

    operator: str
    source: str
    verdicts: list[Verdict]

    def by_id(self) -> dict[str, Verdict]:
        return {v.check.id: v for v in self.verdicts}

    @property
    def failed_required(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.check.required and v.status == "fail"]

    def level(self) -> tuple[int, list[str]]:
        """The capability level the evidence supports (0: not even I) and, for the next
        level, the checks that did not pass."""
        found = self.by_id()
        for index, (_, ids) in enumerate(LEVELS):
            missing = [i for i in ids if i not in found or found[i].status != "pass"]
            if missing:
                return index, missing
        return len(LEVELS), []

    def to_json(self) -> dict[str, Any]:
        level, missing = self.level()
        return {
            "operator": self.operator, "source": self.source,
            "capabilityLevel": {"level": level,
                                "name": LEVELS[level - 1][0] if level else None,
                                "next": LEVELS[level][0] if level < len(LEVELS) else None,
                                "missing": missing},
            "passed": not self.failed_required,
            "checks": [v.to_json() for v in self.verdicts],
        }


_MARKS = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}


def pretty(report: Report) -> str:
    lines = [f"Operator {report.operator}  ({report.source})", ""]
    for v in report.verdicts:
        required = "required" if v.check.required else "recommended"
        lines.append(f"{_MARKS[v.status]}  {v.check.id:<25} {v.check.title} ({required})")
        lines += [f"      {e}" for e in v.evidence]
    level, missing = report.level()
    lines.append("")
    name = LEVELS[level - 1][0] if level else "none (not even I Basic Install)"
    lines.append(f"Capability level: {name}")
    if level < len(LEVELS):
        lines.append(f"  {LEVELS[level][0]} needs: {', '.join(missing)}")
    failed = report.failed_required
    lines.append(f"Required checks failed: {', '.join(v.check.id for v in failed)}" if failed
                 else "All required checks passed.")
    return "\n".join(lines) + "\n"
