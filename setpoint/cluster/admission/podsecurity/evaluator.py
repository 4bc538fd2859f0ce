"""Which checks a level and version run, in which order (k8s.io/pod-security-admission
policy/registry.go ``checkRegistry``): at a version, each check's rule with the highest
minimum version not newer than it (none before its first); restricted runs its own checks
and the baseline ones its rules do not override; baseline checks first, then restricted,
each sorted by ID. A version newer than the newest rule, or latest, is the newest rule's."""

from __future__ import annotations

from functools import cache

from setpoint.cluster.admission.podsecurity import (
    checks_capabilities,
    checks_host,
    checks_privilege,
    checks_profiles,
    checks_seccomp,
    checks_volumes,
)
from setpoint.cluster.admission.podsecurity.levels import (
    BASELINE,
    PRIVILEGED,
    LevelVersion,
    Version,
)
from setpoint.cluster.admission.podsecurity.policy import (
    Check,
    CheckPod,
    CheckResult,
    Obj,
    VersionedCheck,
)

DEFAULT_CHECKS: tuple[Check, ...] = (
    checks_host.CHECKS + checks_volumes.CHECKS + checks_privilege.CHECKS
    + checks_capabilities.CHECKS + checks_seccomp.CHECKS + checks_profiles.CHECKS)

MAX_VERSION = max((check.versions[-1].minimum_version for check in DEFAULT_CHECKS),
                  key=lambda version: (version.major, version.minor))


def _rule_at(check: Check, version: Version) -> VersionedCheck | None:
    rule = None
    for candidate in check.versions:
        if not version.older(candidate.minimum_version):
            rule = candidate
    return rule


@cache
def checks_for(level: str, version: Version) -> tuple[CheckPod, ...]:
    baseline = sorted((c for c in DEFAULT_CHECKS if c.level == BASELINE), key=lambda c: c.id)
    restricted = sorted((c for c in DEFAULT_CHECKS if c.level != BASELINE), key=lambda c: c.id)
    rules = [(c.id, rule) for c in baseline if (rule := _rule_at(c, version)) is not None]
    if level == BASELINE:
        return tuple(rule.check_pod for _, rule in rules)
    own = [rule for c in restricted if (rule := _rule_at(c, version)) is not None]
    overridden = {check_id for rule in own for check_id in rule.override_check_ids}
    return tuple([rule.check_pod for check_id, rule in rules if check_id not in overridden]
                 + [rule.check_pod for rule in own])


def evaluate_pod(lv: LevelVersion, meta: Obj, spec: Obj) -> list[CheckResult]:
    """``EvaluatePod``: every check's result for the pod's metadata and spec."""
    if lv.level == PRIVILEGED:
        return []
    version = MAX_VERSION if MAX_VERSION.older(lv.version) else lv.version
    return [check(meta, spec) for check in checks_for(lv.level, version)]
