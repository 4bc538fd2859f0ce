"""A running operator's webhooks, registered with the cluster it runs against.

Deployed, an operator's webhook configurations and CRDs' ``spec.conversion`` point at its
Service and trust the CA of its certificate (``setpoint generate manifests``). Run on this
machine (``setpoint run --register-webhooks``, or ``run_manager`` in a test), they point at
its webhook server on loopback and trust the certificate that server made for itself, so a
cluster on the same machine (``setpoint cluster up``) calls them on every write they cover.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from setpoint.client import Client, Kind, NotFoundError
from setpoint.resources._webhooks import (
    ClientConfig,
    generate_webhook_configurations,
    set_conversion_webhooks,
)
from setpoint.runtime._webhook.server import WebhookServer

CRDS = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
FIELD_MANAGER = "setpoint-webhooks"


@dataclass
class Registration:
    """What :func:`register` wrote, so that :func:`unregister` can take it back."""

    configurations: list[dict[str, Any]] = field(default_factory=list)


async def register(server: WebhookServer | None, webhooks: Sequence[Any], name: str,
                   client: Client) -> Registration:
    """Point the cluster at a running webhook ``server`` (a manager's): its admission
    ``webhooks`` (``<name>-mutating``, ``<name>-validating``) and the conversion of its
    CRDs, written with ``client``."""
    if server is None or not webhooks:
        return Registration()
    config = ClientConfig(url=server.url, ca_bundle=server.ca_pem)
    registration = Registration(generate_webhook_configurations(webhooks, name=name,
                                                                client=config))
    for configuration in registration.configurations:
        await client.apply(configuration, field_manager=FIELD_MANAGER, force=True)
    installed = (await client.list(CRDS)).items
    for before, after in zip(installed, set_conversion_webhooks(installed, webhooks,
                                                                client=config), strict=True):
        if after["spec"].get("conversion") != before["spec"].get("conversion"):
            await client.patch(CRDS, before["metadata"]["name"],
                               {"spec": {"conversion": after["spec"]["conversion"]}})
    return registration


async def unregister(client: Client, registration: Registration) -> None:
    """Remove the admission webhook configurations (CRD conversion stays: the objects stored
    in other versions still need it)."""
    for configuration in registration.configurations:
        kind = Kind(configuration["apiVersion"], configuration["kind"])
        with contextlib.suppress(NotFoundError):
            await client.delete(kind, configuration["metadata"]["name"])
