"""The admission configuration file: kube-apiserver's ``--admission-control-config-file``
(k8s.io/apiserver pkg/admission/config.go ``ReadAdmissionConfiguration``).

An ``AdmissionConfiguration`` (``apiserver.config.k8s.io/v1`` or ``v1alpha1``, or the older
``apiserver.k8s.io/v1alpha1``) lists plugins by name, each with its configuration embedded
(``configuration``) or in a file of its own (``path``, relative to the configuration file's
directory). Read once at start; a file the apiserver would not start with is an
:class:`AdmissionConfigError` whose text names the file, the place and the fix. Only the
plugins Setpoint configures read theirs (PodSecurity); any other plugin named is accepted and
its configuration left unread, as kube-apiserver leaves the configuration of a plugin that is
not enabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from setpoint.cluster.admission.podsecurity.configuration import (
    PodSecurityConfiguration,
    PodSecurityConfigurationError,
    load_pod_security_configuration,
)

API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1",
                "apiserver.k8s.io/v1alpha1")
KIND = "AdmissionConfiguration"
POD_SECURITY = "PodSecurity"


class AdmissionConfigError(ValueError):
    """The admission configuration cannot be used; the text says where and how to fix it."""


@dataclass(frozen=True)
class AdmissionConfiguration:
    """Each configured plugin's configuration object (None: configured without one)."""

    plugins: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def pod_security(self) -> PodSecurityConfiguration:
        """The PodSecurity plugin's configuration, defaulted and validated."""
        try:
            return load_pod_security_configuration(self.plugins.get(POD_SECURITY))
        except PodSecurityConfigurationError as exc:
            raise AdmissionConfigError(
                f"{self.source}: couldn't init admission plugin \"{POD_SECURITY}\": {exc}"
            ) from None


def _load(path: Path) -> Any:
    import yaml  # with a file to read: a server's start without one loads no YAML

    try:
        text = path.read_text()
    except OSError as exc:
        raise AdmissionConfigError(
            f'unable to read admission control configuration from "{path}" '
            f"[{exc.strerror or exc}]: pass a readable file") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AdmissionConfigError(f"{path}: not YAML or JSON: {exc}") from None


def read_admission_configuration(path: Path) -> AdmissionConfiguration:
    """The configuration ``path`` holds, each plugin's ``path`` read from its own file."""
    obj = _load(path)
    if not isinstance(obj, dict) or obj.get("kind") != KIND \
            or obj.get("apiVersion") not in API_VERSIONS:
        raise AdmissionConfigError(
            f"{path}: expected an {KIND} (apiVersion: {API_VERSIONS[0]}) listing "
            "plugins[].name with a configuration or a path")
    unknown = sorted(set(obj) - {"apiVersion", "kind", "plugins"})
    if unknown:
        raise AdmissionConfigError(
            f'{path}: strict decoding error: unknown field "{unknown[0]}"')
    plugins: dict[str, Any] = {}
    for i, plugin in enumerate(obj.get("plugins") or []):
        where = f"{path}: plugins[{i}]"
        if not isinstance(plugin, dict) or not isinstance(plugin.get("name"), str) \
                or not plugin["name"]:
            raise AdmissionConfigError(f"{where}: needs a name (the admission plugin's)")
        unknown = sorted(set(plugin) - {"name", "path", "configuration"})
        if unknown:
            raise AdmissionConfigError(
                f'{where}: strict decoding error: unknown field "plugins[{i}].{unknown[0]}"')
        configuration = plugin.get("configuration")
        if configuration is None and plugin.get("path"):
            # config.go makeAbs: relative to the configuration file's directory
            configuration = _load(path.parent / str(plugin["path"]))
        # ConfigFor: the first entry of a name is the plugin's
        plugins.setdefault(plugin["name"], configuration)
    config = AdmissionConfiguration(plugins, str(path))
    config.pod_security()  # refused at start, as the plugin's initialization refuses it
    return config
