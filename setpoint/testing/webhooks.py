"""An operator's webhooks, registered with the test's cluster as its deployment would be.

In a cluster the webhook configurations and the CRDs' ``spec.conversion`` point at the
operator's Service and trust the CA that signed its certificate. In a test the operator runs
in the test process: the configurations point at its webhook server on loopback and trust the
certificate that server made for itself, so the embedded API server calls the operator's
webhooks on every write, as a real one would.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from setpoint.client import Client, Kind, NotFoundError
from setpoint.resources.webhooks import (
    ClientConfig,
    generate_webhook_configurations,
    set_conversion_webhooks,
)
from setpoint.runtime import Manager

CRDS = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
FIELD_MANAGER = "setpoint-testing"


@dataclass
class Registration:
    """What :func:`register` wrote, so that :func:`unregister` can take it back."""

    configurations: list[dict[str, Any]] = field(default_factory=list)


async def register(manager: Manager, name: str, client: Client) -> Registration:
    """Point the cluster at ``manager``'s running webhook server: its admission webhooks
    (``<name>-mutating``, ``<name>-validating``) and the conversion of its CRDs, written
    with ``client``."""
    server = manager.webhook_server
    if server is None or not manager.webhooks:
        return Registration()
    config = ClientConfig(url=server.url, ca_bundle=server.ca_pem)
    registration = Registration(generate_webhook_configurations(manager.webhooks, name=name,
                                                                client=config))
    for configuration in registration.configurations:
        await client.apply(configuration, field_manager=FIELD_MANAGER, force=True)
    installed = (await client.list(CRDS)).items
    for before, after in zip(installed, set_conversion_webhooks(installed, manager.webhooks,
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
