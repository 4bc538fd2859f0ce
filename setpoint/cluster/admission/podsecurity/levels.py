"""Levels, versions and the policy a namespace's labels select (k8s.io/pod-security-admission
api/constants.go and api/helpers.go ``PolicyToEvaluate``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from setpoint.machinery.errors import Cause
from setpoint.machinery.fielderrors import invalid

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
VALID_LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)

LABEL_PREFIX = "pod-security.kubernetes.io/"
ENFORCE_LEVEL_LABEL = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce-version"
AUDIT_LEVEL_LABEL = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit-version"
WARN_LEVEL_LABEL = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL = LABEL_PREFIX + "warn-version"

_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True)
class Version:
    """``api.Version``: ``v<major>.<minor>`` or ``latest`` (newer than any other)."""

    major: int = 0
    minor: int = 0
    latest: bool = False

    def __str__(self) -> str:
        return "latest" if self.latest else f"v{self.major}.{self.minor}"

    def older(self, other: Version) -> bool:
        if self.latest:
            return False
        if other.latest:
            return True
        return (self.major, self.minor) < (other.major, other.minor)


LATEST = Version(latest=True)


@dataclass(frozen=True)
class LevelVersion:
    """A Pod Security level at a version (api.LevelVersion)."""

    level: str
    version: Version

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"

    def equivalent(self, other: LevelVersion) -> bool:
        return (self.level == PRIVILEGED and other.level == PRIVILEGED) or self == other


@dataclass(frozen=True)
class Policy:
    """A namespace's enforce, audit and warn levels (api.Policy)."""

    enforce: LevelVersion
    audit: LevelVersion
    warn: LevelVersion

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level

    def equivalent(self, other: Policy) -> bool:
        return (self.enforce.equivalent(other.enforce) and self.audit.equivalent(other.audit)
                and self.warn.equivalent(other.warn))


def parse_level(level: str) -> tuple[str, str]:
    """``ParseLevel``: the level, or restricted with the error (enforcement fails closed)."""
    if level in VALID_LEVELS:
        return level, ""
    return RESTRICTED, "must be one of " + ", ".join(VALID_LEVELS)


def parse_version(version: str) -> tuple[Version, str]:
    """``ParseVersion``: ``latest`` or ``v1.x``; latest with the error otherwise."""
    if version == "latest":
        return LATEST, ""
    match = _VERSION.match(version)
    # ($ of Go's RE2 is the very end; strconv.Atoi refuses what overflows an int)
    if match is None or version.endswith("\n") or int(match.group(1)) >= 1 << 63:
        return LATEST, 'must be "latest" or "v1.x"'
    return Version(1, int(match.group(1))), ""


def compare_levels(a: str, b: str) -> int:
    """``CompareLevels``: privileged < baseline < restricted."""
    return VALID_LEVELS.index(a) - VALID_LEVELS.index(b) if a != b else 0


def _append(errs: list[Cause], err: str, label: str, value: str) -> None:
    if err:
        errs.append(invalid(f"metadata.labels[{label}]", value, err))


def policy_to_evaluate(labels: dict[str, Any] | None, defaults: Policy
                       ) -> tuple[Policy, list[Cause]]:
    """``PolicyToEvaluate``: the defaults overridden by the namespace's labels; an invalid
    enforce level is restricted, an invalid audit or warn level privileged (fail open), an
    invalid version latest. Without its own warn label, warn follows a stricter enforce."""
    errs: list[Cause] = []
    if not labels:
        return defaults, errs
    enforce, audit, warn = defaults.enforce, defaults.audit, defaults.warn
    has_enforce_level = False
    if (value := labels.get(ENFORCE_LEVEL_LABEL)) is not None:
        level, err = parse_level(value)
        enforce = replace(enforce, level=level)
        has_enforce_level = not err
        _append(errs, err, ENFORCE_LEVEL_LABEL, value)
    if (value := labels.get(ENFORCE_VERSION_LABEL)) is not None:
        version, err = parse_version(value)
        enforce = replace(enforce, version=version)
        _append(errs, err, ENFORCE_VERSION_LABEL, value)
    if (value := labels.get(AUDIT_LEVEL_LABEL)) is not None:
        level, err = parse_level(value)
        audit = replace(audit, level=PRIVILEGED if err else level)
        _append(errs, err, AUDIT_LEVEL_LABEL, value)
    if (value := labels.get(AUDIT_VERSION_LABEL)) is not None:
        version, err = parse_version(value)
        audit = replace(audit, version=version)
        _append(errs, err, AUDIT_VERSION_LABEL, value)
    has_warn_level = WARN_LEVEL_LABEL in labels
    if (value := labels.get(WARN_LEVEL_LABEL)) is not None:
        level, err = parse_level(value)
        warn = replace(warn, level=PRIVILEGED if err else level)
        _append(errs, err, WARN_LEVEL_LABEL, value)
    has_warn_version = WARN_VERSION_LABEL in labels
    if (value := labels.get(WARN_VERSION_LABEL)) is not None:
        version, err = parse_version(value)
        warn = replace(warn, version=version)
        _append(errs, err, WARN_VERSION_LABEL, value)
    if not has_warn_level and has_enforce_level and compare_levels(enforce.level,
                                                                   warn.level) > 0:
        warn = LevelVersion(enforce.level,
                            warn.version if has_warn_version else enforce.version)
    return Policy(enforce, audit, warn), errs
