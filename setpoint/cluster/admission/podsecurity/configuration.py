"""The PodSecurity plugin's configuration (k8s.io/pod-security-admission admission/api:
``PodSecurityConfiguration`` of ``pod-security.admission.config.k8s.io`` v1, v1beta1 or
v1alpha1, its v1 defaults (defaults.go: every mode privileged at latest), and
validation/validation.go ``ValidatePodSecurityConfiguration``), as kube-apiserver reads it
from its admission configuration file (load/load.go ``LoadFromData``: strict decoding;
none given is the defaults)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from setpoint.cluster.admission.podsecurity.levels import (
    LATEST,
    PRIVILEGED,
    LevelVersion,
    Policy,
    parse_level,
    parse_version,
)
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.names import name_is_dns_label, name_is_dns_subdomain

GROUP = "pod-security.admission.config.k8s.io"
VERSIONS = ("v1", "v1beta1", "v1alpha1")
KIND = "PodSecurityConfiguration"
_DEFAULT_KEYS = ("enforce", "enforce-version", "audit", "audit-version", "warn",
                 "warn-version")
_EXEMPTION_KEYS = ("usernames", "namespaces", "runtimeClasses")

_PRIVILEGED_LATEST = LevelVersion(PRIVILEGED, LATEST)
DEFAULT_POLICY = Policy(_PRIVILEGED_LATEST, _PRIVILEGED_LATEST, _PRIVILEGED_LATEST)


class PodSecurityConfigurationError(ValueError):
    """A configuration kube-apiserver would not start with; the text says what and where."""


@dataclass(frozen=True)
class PodSecurityConfiguration:
    """The defaults a namespace without labels gets, and who and what is exempt."""

    defaults: Policy = DEFAULT_POLICY
    exempt_usernames: frozenset[str] = field(default_factory=frozenset)
    exempt_runtime_classes: frozenset[str] = field(default_factory=frozenset)
    exempt_namespaces: frozenset[str] = field(default_factory=frozenset)


def _strict(obj: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    """Strict decoding: a field the type lacks is an error, as ``EnableStrict`` makes it."""
    for key in obj:
        if key not in allowed:
            raise PodSecurityConfigurationError(
                f'strict decoding error: unknown field "{where}{key}"')


def _strings(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PodSecurityConfigurationError(f"{path}: must be a list of strings")
    return value


def _exemption_errors(values: list[str], path: str,
                      validate: Any) -> list[Cause]:
    """An invalid entry, then a repeated one (``validateNamespaces`` and its siblings)."""
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, value in enumerate(values):
        problems = validate(value)
        if problems:
            errs.append(fe.invalid(fe.index(path, i), value, ", ".join(problems)))
        elif value in seen:
            errs.append(fe.duplicate(fe.index(path, i), value))
        else:
            seen.add(value)
    return errs


def load_pod_security_configuration(obj: Any) -> PodSecurityConfiguration:
    """The configuration an admission configuration gives the plugin (None: the defaults),
    defaulted and validated; :class:`PodSecurityConfigurationError` says what is wrong."""
    if obj is None:
        return PodSecurityConfiguration()
    if not isinstance(obj, dict):
        raise PodSecurityConfigurationError(f"expected a {KIND} object")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version not in {f"{GROUP}/{v}" for v in VERSIONS} or kind != KIND:
        raise PodSecurityConfigurationError(
            f"expected apiVersion {GROUP}/v1 and kind {KIND}, got apiVersion "
            f"{api_version!r} and kind {kind!r}")
    _strict(obj, ("apiVersion", "kind", "defaults", "exemptions"), "")
    defaults = obj.get("defaults") or {}
    exemptions = obj.get("exemptions") or {}
    if not isinstance(defaults, dict) or not isinstance(exemptions, dict):
        raise PodSecurityConfigurationError("defaults and exemptions must be objects")
    _strict(defaults, _DEFAULT_KEYS, "defaults.")
    _strict(exemptions, _EXEMPTION_KEYS, "exemptions.")
    errs: list[Cause] = []
    modes = []
    for mode in ("enforce", "audit", "warn"):
        # SetDefaults_PodSecurityDefaults: privileged at latest for what is unset or empty
        level_text = str(defaults.get(mode) or PRIVILEGED)
        version_text = str(defaults.get(f"{mode}-version") or "latest")
        level, level_err = parse_level(level_text)
        version, version_err = parse_version(version_text)
        if level_err:
            errs.append(fe.invalid(f"defaults.{mode}", level_text, level_err))
        if version_err:
            errs.append(fe.invalid(f"defaults.{mode}-version", version_text, version_err))
        modes.append(LevelVersion(level, version))
    # (Go validates enforce, warn, then audit)
    order = {"defaults.enforce": 0, "defaults.enforce-version": 1, "defaults.warn": 2,
             "defaults.warn-version": 3, "defaults.audit": 4, "defaults.audit-version": 5}
    errs.sort(key=lambda cause: order[cause.field])
    namespaces = _strings(exemptions.get("namespaces"), "exemptions.namespaces")
    runtime_classes = _strings(exemptions.get("runtimeClasses"), "exemptions.runtimeClasses")
    usernames = _strings(exemptions.get("usernames"), "exemptions.usernames")
    errs += _exemption_errors(namespaces, "exemptions.namespaces",
                              lambda ns: name_is_dns_label(ns, False))
    errs += _exemption_errors(runtime_classes, "exemptions.runtimeClasses",
                              lambda rc: name_is_dns_subdomain(rc, False))
    errs += _exemption_errors(usernames, "exemptions.usernames",
                              lambda u: [] if u else ["username must not be empty"])
    if errs:
        raise PodSecurityConfigurationError(fe.aggregate_text(errs))
    return PodSecurityConfiguration(
        Policy(*modes), frozenset(usernames), frozenset(runtime_classes),
        frozenset(namespaces))
