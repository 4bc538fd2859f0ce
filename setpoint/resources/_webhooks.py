"""Webhook registrations and their manifests (``setpoint generate webhooks``).

An admission webhook is two things: a handler the operator serves over HTTPS, and a
``MutatingWebhookConfiguration`` or ``ValidatingWebhookConfiguration`` telling the API
server which requests to send to it. The runtime's webhook builders describe the second
as :class:`AdmissionRegistration` and :class:`ConversionRegistration` records (through
their ``registrations()`` method); :func:`generate_webhook_configurations` turns them into
``admissionregistration.k8s.io/v1`` objects, :func:`set_conversion_webhooks` points the
CRDs of converted kinds at the conversion endpoint, and :func:`webhook_service` is the
Service in front of the operator's webhook port, as kubebuilder's scaffold has it.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "AdmissionRegistration",
    "ClientConfig",
    "ConversionRegistration",
    "generate_webhook_configurations",
    "set_conversion_webhooks",
    "webhook_service",
]

ADMISSION_API = "admissionregistration.k8s.io/v1"
WEBHOOK_PORT = 9443

WebhookType = Literal["mutating", "validating"]


@dataclass(frozen=True)
class AdmissionRegistration:
    """One webhook of a Mutating- or ValidatingWebhookConfiguration.

    ``group``/``version``/``resource`` name what the rule matches (``resource`` is the
    plural); ``operations`` the verbs sent (``CREATE``, ``UPDATE``, ``DELETE``,
    ``CONNECT``); the rest maps one to one onto the API fields of the same name.
    """

    type: WebhookType
    name: str
    path: str
    group: str
    version: str
    resource: str
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    scope: str | None = None
    failure_policy: str = "Fail"
    side_effects: str = "None"
    timeout_seconds: int | None = None
    match_policy: str | None = None
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    reinvocation_policy: str | None = None


@dataclass(frozen=True)
class ConversionRegistration:
    """A kind whose versions a conversion webhook at ``path`` converts."""

    group: str
    kind: str
    path: str = "/convert"


@dataclass(frozen=True)
class ClientConfig:
    """Where the API server reaches the webhooks: the Service ``namespace/service`` on
    ``port`` (the default), or ``url`` (``https://host:port``, the path is appended);
    ``ca_bundle`` (PEM) is the CA that signed the serving certificate."""

    namespace: str = "default"
    service: str = "webhook-service"
    port: int = 443
    url: str | None = None
    ca_bundle: bytes | str | None = None

    def for_path(self, path: str) -> dict[str, Any]:
        """The ``clientConfig`` of the webhook served at ``path``."""
        out: dict[str, Any] = {}
        if self.url is not None:
            out["url"] = self.url.rstrip("/") + path
        else:
            out["service"] = {"namespace": self.namespace, "name": self.service,
                              "path": path, "port": self.port}
        if self.ca_bundle:
            pem = self.ca_bundle.encode() if isinstance(self.ca_bundle, str) \
                else self.ca_bundle
            out["caBundle"] = base64.b64encode(pem).decode("ascii")
        return out


def _registrations(sources: Any) -> list[AdmissionRegistration | ConversionRegistration]:
    """The registrations of one source or many: registrations themselves, or objects with a
    ``registrations()`` method (the runtime's ``Webhook`` and ``Conversion``)."""
    if isinstance(sources, AdmissionRegistration | ConversionRegistration):
        return [sources]
    method = getattr(sources, "registrations", None)
    if callable(method):
        return list(method())
    if isinstance(sources, Iterable) and not isinstance(sources, str | bytes | Mapping):
        return [r for source in sources for r in _registrations(source)]
    raise TypeError(f"{sources!r} is neither a webhook registration nor declares "
                    "registrations()")


def _webhook(reg: AdmissionRegistration, client: ClientConfig) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [reg.group], "apiVersions": [reg.version],
                            "resources": [reg.resource], "operations": list(reg.operations)}
    if reg.scope is not None:
        rule["scope"] = reg.scope
    out: dict[str, Any] = {
        "name": reg.name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client.for_path(reg.path),
        "failurePolicy": reg.failure_policy,
        "sideEffects": reg.side_effects,
        "rules": [rule],
    }
    if reg.match_policy is not None:
        out["matchPolicy"] = reg.match_policy
    if reg.namespace_selector is not None:
        out["namespaceSelector"] = dict(reg.namespace_selector)
    if reg.object_selector is not None:
        out["objectSelector"] = dict(reg.object_selector)
    if reg.timeout_seconds is not None:
        out["timeoutSeconds"] = reg.timeout_seconds
    if reg.type == "mutating" and reg.reinvocation_policy is not None:
        out["reinvocationPolicy"] = reg.reinvocation_policy
    return out


def generate_webhook_configurations(
    sources: Any,
    *,
    name: str = "setpoint-operator",
    client: ClientConfig | None = None,
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration of ``sources`` (each only when it
    has webhooks), named ``<name>-mutating`` and ``<name>-validating``.

    ``sources`` are registrations or objects with ``registrations()`` (one or a list);
    conversion registrations are skipped (see :func:`set_conversion_webhooks`). ``client``
    says where the API server calls (default: Service ``webhook-service`` in ``default``).
    Two webhooks with the same name in one configuration raise ``ValueError``, as the API
    server would refuse them.
    """
    client = client or ClientConfig()
    meta_labels = dict(labels) if labels is not None else {
        "app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "setpoint"}
    out: list[dict[str, Any]] = []
    admission = [r for r in _registrations(sources) if isinstance(r, AdmissionRegistration)]
    for type_, kind in (("mutating", "MutatingWebhookConfiguration"),
                        ("validating", "ValidatingWebhookConfiguration")):
        hooks = [r for r in admission if r.type == type_]
        if not hooks:
            continue
        names = [h.name for h in hooks]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"{kind}: webhook names must be unique: {duplicates}")
        out.append({
            "apiVersion": ADMISSION_API, "kind": kind,
            "metadata": {"name": f"{name}-{type_}", "labels": dict(meta_labels)},
            "webhooks": [_webhook(h, client) for h in hooks],
        })
    return out


def set_conversion_webhooks(
    crds: Sequence[Mapping[str, Any]], sources: Any, *, client: ClientConfig | None = None,
) -> list[dict[str, Any]]:
    """Copies of ``crds`` where each CRD of a kind that ``sources`` convert gets
    ``spec.conversion`` with ``strategy: Webhook`` pointing at the conversion path
    (``conversionReviewVersions: ["v1"]``); the other CRDs come back unchanged."""
    client = client or ClientConfig()
    # keyed like the CRD's fields are read, which may be missing
    wanted: dict[tuple[str | None, str | None], ConversionRegistration] = {
        (r.group, r.kind): r for r in _registrations(sources)
        if isinstance(r, ConversionRegistration)}
    out: list[dict[str, Any]] = []
    for crd in crds:
        copied = copy.deepcopy(dict(crd))
        spec = copied.get("spec") or {}
        reg = wanted.get((spec.get("group"), (spec.get("names") or {}).get("kind")))
        if reg is not None:
            spec["conversion"] = {"strategy": "Webhook", "webhook": {
                "clientConfig": client.for_path(reg.path),
                "conversionReviewVersions": ["v1"]}}
        out.append(copied)
    return out


def webhook_service(name: str, namespace: str, selector: Mapping[str, str], *,
                    port: int = 443, target_port: int | str = WEBHOOK_PORT) -> dict[str, Any]:
    """The Service the API server calls: ``port`` (443) onto the pods' webhook port."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "setpoint"}},
        "spec": {"selector": dict(selector),
                 "ports": [{"name": "webhook", "port": port, "protocol": "TCP",
                            "targetPort": target_port}]},
    }
