"""An operator under test running as its own service account, with its generated RBAC.

In a cluster an operator runs as a ServiceAccount bound to the roles ``setpoint generate
rbac`` (or ``generate manifests``) writes from its controllers' declarations. Here the same
roles and bindings are applied to the test's cluster, a token is requested for the account,
and the operator connects with it: a controller that touches what it never declared gets the
Forbidden error it would get in production, in the test. A controller added to the running
manager is granted what it declares too (:func:`grant`, before its informers list), as a
deployer would apply the operator's regenerated roles.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Any

from setpoint.client import Client, ClusterConfig, Kind, NotFoundError
from setpoint.client.auth import TokenAuth
from setpoint.resources import Permissions, generate_rbac
from setpoint.runtime import Controller, Manager, ManagerSettings
from setpoint.runtime._permissions import manager_permissions

FIELD_MANAGER = "setpoint-testing"


async def run_as_service_account(admin_config: ClusterConfig,
                                 controllers: Sequence[Controller[Any]],
                                 settings: ManagerSettings
                                 ) -> tuple[ClusterConfig, list[dict[str, Any]]]:
    """``admin_config`` turned into the operator's own identity: the ServiceAccount
    ``settings.name`` in the test's namespace, bound to the RBAC generated for
    ``controllers`` and ``settings`` (written with ``admin_config``); and the objects
    written, for :func:`remove`."""
    namespace = admin_config.namespace
    name = settings.name
    permissions = manager_permissions(Manager(list(controllers), settings=settings))
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": name, "namespace": namespace}}
    async with Client(admin_config) as admin:
        await _apply(admin, account)
    written = [account, *await grant(admin_config, permissions, name)]
    async with Client(admin_config) as admin:
        answer = await admin.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                  "spec": {"expirationSeconds": 3600}})
    config = dataclasses.replace(admin_config, auth=TokenAuth(answer["status"]["token"]),
                                 client_certificate_data=None, client_key_data=None)
    return config, written


async def grant(admin_config: ClusterConfig, permissions: Permissions,
                name: str) -> list[dict[str, Any]]:
    """Apply the roles and bindings ``setpoint generate rbac`` writes for ``permissions``
    to the ServiceAccount ``name`` of ``admin_config``'s namespace (applied again, they
    grow to what the permissions now hold); returns what was written."""
    namespace = admin_config.namespace
    written = generate_rbac(permissions, name=name, namespace=namespace,
                            service_account=name)
    async with Client(admin_config) as admin:
        for document in written:
            await _apply(admin, document)
    return written


async def remove(admin_config: ClusterConfig, written: list[dict[str, Any]]) -> None:
    """Delete what :func:`run_as_service_account` wrote (cluster roles outlive a test's
    namespace on a shared cluster)."""
    async with Client(admin_config) as admin:
        for obj in reversed(written):
            meta = obj["metadata"]
            with contextlib.suppress(NotFoundError):
                await admin.delete(Kind(obj["apiVersion"], obj["kind"]), meta["name"],
                                   namespace=meta.get("namespace"))


async def _apply(client: Client, obj: dict[str, Any]) -> None:
    """Create ``obj``, or take over what a previous run of the test left under its name."""
    await client.apply(obj, field_manager=FIELD_MANAGER, force=True,
                       namespace=obj["metadata"].get("namespace"))
