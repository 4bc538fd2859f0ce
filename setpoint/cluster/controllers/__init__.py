"""Controllers that run inside the embedded API server process.

They stand in for the kube-controller-manager controllers a cluster cannot work without:
``serviceaccount`` (the ``default`` ServiceAccount), ``root-ca-certificate-publisher``
(ConfigMap ``kube-root-ca.crt``), ``namespace`` (emptying and finalizing deleted namespaces),
``garbage-collector`` (owner references) and ``clusterrole-aggregation``. Each listens to
the store and works through the server's internal REST storage, never over HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from setpoint.cluster.controllers.clusterroleaggregation import ClusterRoleAggregation
from setpoint.cluster.controllers.garbagecollector import GarbageCollector
from setpoint.cluster.controllers.namespace import NamespaceController
from setpoint.cluster.controllers.rootca import RootCAPublisher
from setpoint.cluster.controllers.serviceaccounts import ServiceAccountsController

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer

__all__ = ["BuiltinControllers", "ClusterRoleAggregation", "GarbageCollector",
           "NamespaceController", "RootCAPublisher", "ServiceAccountsController", "start_all"]


@dataclass(frozen=True)
class BuiltinControllers:
    """The running in-process controllers (for tests and introspection)."""

    service_accounts: ServiceAccountsController
    root_ca: RootCAPublisher
    namespaces: NamespaceController
    garbage_collector: GarbageCollector
    cluster_role_aggregation: ClusterRoleAggregation


def start_all(api: APIServer) -> BuiltinControllers:
    """Start the controllers a bare API server needs; must run on the server's event loop.

    They see every later write through store listeners and sync what is already stored.
    """
    controllers = BuiltinControllers(
        service_accounts=ServiceAccountsController(api),
        root_ca=RootCAPublisher(api),
        namespaces=NamespaceController(api),
        garbage_collector=GarbageCollector(api),
        cluster_role_aggregation=ClusterRoleAggregation(api),
    )
    controllers.service_accounts.start()
    controllers.root_ca.start()
    controllers.namespaces.start()
    controllers.garbage_collector.start()
    controllers.cluster_role_aggregation.start()
    return controllers
