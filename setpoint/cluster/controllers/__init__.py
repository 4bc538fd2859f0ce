"""Controllers that run inside the embedded API server process.

They stand in for the kube-controller-manager controllers a cluster cannot work without:
``serviceaccount`` (the ``default`` ServiceAccount), ``serviceaccount-token`` (token Secrets),
``csrsigning`` (approved CertificateSigningRequests of the built-in signers signed with the
cluster's CA: a kube-apiserver alone signs nothing, its controller manager does),
``root-ca-certificate-publisher``
(ConfigMap ``kube-root-ca.crt``), ``namespace`` (emptying and finalizing deleted namespaces),
``garbage-collector`` (owner references), ``clusterrole-aggregation``, ``resourcequota``
(ResourceQuota status), ``pvc-protection`` and ``pv-protection`` (the finalizers that keep
a claim in use or a bound volume), and the
aggregator's ``apiservice-available`` (APIService status), and three of kube-apiserver's own:
``autoregister`` (the local APIServices), ``cluster_authentication_trust_controller`` and
the API Priority and Fairness config controller's FlowSchema status (``flowschemastatus``);
and ``validatingadmissionpolicy-status-controller`` (``policystatus``: a policy's
observedGeneration and typeChecking).
Each listens to the store and works through the server's internal REST storage, never over HTTP.
They run in every server, ``cluster up --no-workloads`` and ``serve()`` included: what that
flag leaves out is the workloads (nodes, scheduler, kubelets, the workload controllers of
setpoint.workloads), as kube-controller-manager's core would still run beside a real one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from setpoint.cluster.controllers.apiservice_available import APIServiceAvailable
from setpoint.cluster.controllers.autoregister import AutoRegister
from setpoint.cluster.controllers.clusterauthenticationtrust import ClusterAuthenticationTrust
from setpoint.cluster.controllers.clusterroleaggregation import ClusterRoleAggregation
from setpoint.cluster.controllers.csrsigning import CSRSigningController
from setpoint.cluster.controllers.flowschemastatus import FlowSchemaStatus
from setpoint.cluster.controllers.garbagecollector import GarbageCollector
from setpoint.cluster.controllers.namespace import NamespaceController
from setpoint.cluster.controllers.policystatus import PolicyStatus
from setpoint.cluster.controllers.pvcprotection import PVCProtectionController
from setpoint.cluster.controllers.pvprotection import PVProtectionController
from setpoint.cluster.controllers.resourcequota import ResourceQuotaController
from setpoint.cluster.controllers.rootca import RootCAPublisher
from setpoint.cluster.controllers.serviceaccounts import ServiceAccountsController
from setpoint.cluster.controllers.serviceaccounttokens import TokensController

if TYPE_CHECKING:
    from setpoint.cluster.aggregator.proxy import ProxyTransport
    from setpoint.cluster.authentication.tokens import TokenIssuer
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.storage import Store
    from setpoint.machinery.objects import Obj

__all__ = ["APIServiceAvailable", "AutoRegister", "BuiltinControllers",
           "CSRSigningController", "ClusterAuthenticationTrust", "ClusterRoleAggregation",
           "GarbageCollector", "NamespaceController", "PVCProtectionController",
           "PVProtectionController", "PolicyStatus", "ResourceQuotaController",
           "RootCAPublisher",
           "ServiceAccountsController", "start_all"]


@dataclass(frozen=True)
class BuiltinControllers:
    """The running in-process controllers (for tests and introspection)."""

    service_accounts: ServiceAccountsController
    root_ca: RootCAPublisher
    namespaces: NamespaceController
    garbage_collector: GarbageCollector
    cluster_role_aggregation: ClusterRoleAggregation
    apiservice_available: APIServiceAvailable
    autoregister: AutoRegister
    authentication_trust: ClusterAuthenticationTrust
    tokens: TokensController
    flow_schema_status: FlowSchemaStatus
    resource_quota: ResourceQuotaController
    pvc_protection: PVCProtectionController
    pv_protection: PVProtectionController
    policy_status: PolicyStatus
    csr_signing: CSRSigningController | None = None

    def shutdown(self) -> None:
        """Stop every controller's work queue."""
        for controller in (self.service_accounts, self.root_ca, self.namespaces,
                           self.garbage_collector, self.cluster_role_aggregation,
                           self.autoregister, self.authentication_trust, self.tokens,
                           self.flow_schema_status, self.resource_quota,
                           self.pvc_protection, self.pv_protection, self.policy_status):
            controller.queue.shutdown()
        if self.csr_signing is not None:
            self.csr_signing.queue.shutdown()
        self.apiservice_available.shutdown()


def start_all(store: Store, rest: REST, registry: Registry, *,
              ca_pem: bytes, ca_key_pem: bytes = b"", aggregator_transport: ProxyTransport,
              authentication_data: dict[str, str], issuer: TokenIssuer,
              type_check: Callable[[Obj], list[Obj]]) -> BuiltinControllers:
    """Start the controllers a bare API server needs; must run on the server's event loop.

    Each is handed what it uses: the store to read and follow, the REST storage to write
    through, and the resource types it writes. They see every later write through store
    listeners and sync what is already stored; :meth:`BuiltinControllers.shutdown` stops them.
    ``type_check`` is the ValidatingAdmissionPolicy type checker the status controller runs.
    """
    resource = registry.require
    controllers = BuiltinControllers(
        service_accounts=ServiceAccountsController(
            store, rest, resource("", "v1", "serviceaccounts")),
        root_ca=RootCAPublisher(store, rest, resource("", "v1", "configmaps"), ca_pem),
        namespaces=NamespaceController(store, rest, resource("", "v1", "namespaces"),
                                       registry),
        garbage_collector=GarbageCollector(store, rest, registry),
        cluster_role_aggregation=ClusterRoleAggregation(
            store, rest, resource("rbac.authorization.k8s.io", "v1", "clusterroles")),
        apiservice_available=APIServiceAvailable(
            store, rest, resource("apiregistration.k8s.io", "v1", "apiservices"),
            aggregator_transport),
        autoregister=AutoRegister(
            store, rest, resource("apiregistration.k8s.io", "v1", "apiservices"), registry),
        authentication_trust=ClusterAuthenticationTrust(
            store, rest, resource("", "v1", "configmaps"), authentication_data),
        tokens=TokensController(store, rest, resource("", "v1", "secrets"), issuer, ca_pem),
        flow_schema_status=FlowSchemaStatus(
            store, rest, resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas")),
        resource_quota=ResourceQuotaController(
            store, rest, resource("", "v1", "resourcequotas"), registry),
        pvc_protection=PVCProtectionController(
            store, rest, resource("", "v1", "persistentvolumeclaims")),
        pv_protection=PVProtectionController(
            store, rest, resource("", "v1", "persistentvolumes")),
        policy_status=PolicyStatus(store, rest, resource(
            "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"), type_check),
        csr_signing=CSRSigningController(
            store, rest, resource("certificates.k8s.io", "v1", "certificatesigningrequests"),
            ca_pem, ca_key_pem) if ca_key_pem else None,
    )
    controllers.service_accounts.start()
    controllers.root_ca.start()
    controllers.namespaces.start()
    controllers.garbage_collector.start()
    controllers.cluster_role_aggregation.start()
    controllers.apiservice_available.start()
    controllers.tokens.start()
    controllers.resource_quota.start()
    controllers.pvc_protection.start()
    controllers.pv_protection.start()
    controllers.policy_status.start()
    if controllers.csr_signing is not None:
        controllers.csr_signing.start()
    # autoregister starts once the server serves: APIServer.post_start
    return controllers
