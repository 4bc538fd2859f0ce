"""The API server assembled: each part is built here and handed exactly what it uses.

Storage, the registry and the REST storage come first; the CRD machinery, the RBAC
authorizer, the admission plugins, the webhook client and the in-server controllers are then
given the narrow faces of them they declare (a store reader, the REST verbs, a resource
type), as kube-apiserver's admission initializers hand each plugin only what it asks for
(k8s.io/apiserver/pkg/admission/initializer); the HTTP front is handed ``FrontParts``
(``endpoints/parts.py``). No part is given this object.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric import ec

from setpoint.cluster.admission import (
    certificates,
    crd,
    csrrequestor,
    defaultingressclass,
    defaultstorageclass,
    lifecycle,
    limitranger,
    nodetaint,
    paramauthorization,
    persistentvolumeclaimresize,
    pods,
    priorityclasses,
    rbacescalation,
    resourcequota,
    runtimeclass,
    services,
    storageobjectinuseprotection,
)
from setpoint.cluster.admission.admissionconfig import AdmissionConfiguration
from setpoint.cluster.admission.podsecurity.admission import PodSecurity
from setpoint.cluster.admission.policy.validating import ValidatingAdmissionPolicy
from setpoint.cluster.aggregator import Aggregator
from setpoint.cluster.aggregator.frontproxy import (
    FrontProxy,
    authentication_configmap_data,
)
from setpoint.cluster.apiextensions.customresources import CustomResources
from setpoint.cluster.authentication.serviceaccount import ServiceAccountTokens
from setpoint.cluster.authentication.tokens import TokenIssuer
from setpoint.cluster.authorization.rbac import Authorizer
from setpoint.cluster.endpoints.parts import FrontParts, OpenStreams, ServingState
from setpoint.cluster.registry import Registry
from setpoint.cluster.registry.ensurer import Ensurer
from setpoint.cluster.registry.podsubresources import PodBinding, PodEviction
from setpoint.cluster.registry.rest import REST
from setpoint.cluster.registry.systempriorityclasses import (
    bootstrap_system_priority_classes,
    refuse_system_class_delete,
)
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.storage import Store
from setpoint.cluster.storage.freshness import Freshness
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.admission.webhook.dispatcher import WebhookAdmission
    from setpoint.cluster.controllers import BuiltinControllers
    from setpoint.cluster.webhook.client import WebhookClient


SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
KUBERNETES_SERVICE_IP = "10.96.0.1"
"""The ``kubernetes`` Service's address in the default service CIDR."""
STORED_ADMISSION = tuple(f"admissionregistration.k8s.io/{resource}" for resource in (
    "mutatingwebhookconfigurations", "validatingwebhookconfigurations",
    "validatingadmissionpolicies", "validatingadmissionpolicybindings"))


def kubernetes_service_ip(service_cluster_ip_range: str) -> str:
    """The first address of the service CIDR: the ``kubernetes`` Service's ClusterIP
    (kube-apiserver's ``ServiceIPRange``, pkg/controlplane/services.go), which refuses a
    range of fewer than 8 addresses."""
    network = ipaddress.ip_network(service_cluster_ip_range)
    if network.num_addresses < 8:
        raise ValueError(f"the service cluster IP range must be at least 8 IP addresses, "
                         f"not {service_cluster_ip_range}")
    return str(network.network_address + 1)


class APIServer:
    """Everything behind the HTTP front. Runs on one event loop; no locks needed."""

    controllers: BuiltinControllers  # once started

    def __init__(self, data: Path | None = None, *, ca_pem: bytes = b"", ca_key_pem: bytes = b"",
                 tokens: TokenIssuer | None = None,
                 service_cluster_ip_range: str = services.DEFAULT_SERVICE_CIDR,
                 front_proxy: FrontProxy | None = None,
                 admission_config: AdmissionConfiguration | None = None,
                 default_toleration_seconds: pods.DefaultTolerationSeconds | None = None,
                 ) -> None:
        # kube-apiserver's --service-cluster-ip-range: where ClusterIPs come from (a
        # loopback range when the kubelets run real processes, see docs/process-runtime.md)
        self.service_cluster_ip_range = service_cluster_ip_range
        self.kubernetes_service_ip = kubernetes_service_ip(service_cluster_ip_range)
        self.store = Store(data / "state.db" if data is not None else None)
        self.freshness = Freshness(self.store)
        self.registry = Registry()
        # the CRD machinery serves custom resources through the REST storage it is given,
        # and the REST storage asks it for their schemas: bound late, at call time
        self.rest = REST(self.store, self.registry, lambda rt: self.custom.schema_for(rt))
        self.custom = CustomResources(self.store, self.registry, self.rest)
        self.ca_pem = ca_pem
        self.ca_key_pem = ca_key_pem  # signs CSRs (none: no CSR signing controller)
        self.front_proxy = front_proxy
        # kube-aggregator: APIServices with a Service are proxied to their backends
        self.aggregator = Aggregator(self.store, front_proxy)
        self.tokens = tokens or TokenIssuer(ec.generate_private_key(ec.SECP256R1()))
        self.service_accounts = ServiceAccountTokens(self.tokens, self.store)
        self.serving = ServingState()  # ready, external address: set by start() and stop()
        # the start's bootstrap writes (from the recording of the full path while it knows
        # them: registry/ensurer.py)
        self.ensurer = Ensurer(self.store, self.registry, self.rest)
        self.streams = OpenStreams()
        self._background: list[Callable[[], None]] = []
        self.authorizer = Authorizer(self.store)
        self.pod_binding = PodBinding(self.store, self.rest.clock)
        self.pod_eviction = PodEviction(
            self.store, self.registry.require("policy", "v1", "poddisruptionbudgets"),
            self.rest.update, self.rest.delete, self.rest.clock)
        # the built-in admission plugins, in the apiserver's order
        limit_ranger = limitranger.LimitRanger(self.store)
        runtime_class = runtimeclass.RuntimeClassAdmission(self.store)
        default_priority = priorityclasses.DefaultPriorityClass(self.store)
        self.rest.delete_admission.extend([lifecycle.check_namespace_delete,
                                           refuse_system_class_delete])
        self.rest.admission.extend([
            lifecycle.NamespaceLifecycle(self.store),
            limit_ranger.admit,
            nodetaint.taint_nodes_by_condition,
            pods.PodDefaults(self.store, default_priority, default_toleration_seconds),
            defaultstorageclass.DefaultStorageClass(self.store),
            storageobjectinuseprotection.storage_object_in_use_protection,
            runtime_class.admit,
            defaultingressclass.DefaultIngressClass(self.store),
        ])
        # and those of the REST storage, after the mutating webhooks
        self.rest.storage_admission.extend([
            services.ServiceAllocation(self.store,
                                       service_cidr=service_cluster_ip_range),
            crd.validate_definition,
            rbacescalation.EscalationCheck(self.authorizer),
            csrrequestor.record_requesting_user,
        ])
        # and the strategies' checks of the requesting user, once an object is valid
        self.rest.user_validation.append(paramauthorization.ParamAuthorization(
            self.authorizer, self.store, self._served_resource_of_kind))
        # (kube-apiserver's --admission-control-config-file configures PodSecurity; its
        # metrics are served on /metrics)
        self.pod_security = PodSecurity(self.store, admission_config.pod_security()
                                        if admission_config is not None else None)
        # and the validating ones, before the validating webhooks
        self.rest.validating_admission.extend([
            limit_ranger.validate,
            self.pod_security,
            priorityclasses.PriorityClassDefault(default_priority),
            persistentvolumeclaimresize.PersistentVolumeClaimResize(self.store),
            runtime_class.validate,
            certificates.CertificateApproval(self.authorizer),
            certificates.CertificateSigning(self.authorizer),
            certificates.certificate_subject_restriction,
        ])
        # and ValidatingAdmissionPolicy, last of them, before the validating webhooks (in
        # the chain only while a binding exists)
        self.validating_policies = ValidatingAdmissionPolicy(self.store, self.registry,
                                                             self.authorizer.decide)
        self.validating_policies.install(self.rest.validating_admission)
        # and ResourceQuota, after the validating webhooks, last of kube-apiserver's order
        resourcequota.ResourceQuotaAdmission(
            self.store, self.registry.require("", "v1", "resourcequotas"), self.rest.update,
        ).install(self.rest.final_validating_admission, self.store)

    @cached_property
    def webhook_client(self) -> WebhookClient:
        """The pooled HTTP client of admission and conversion webhook calls."""
        from setpoint.cluster.webhook.client import WebhookClient

        return WebhookClient(self.store)

    @cached_property
    def webhooks(self) -> WebhookAdmission:
        """The admission webhooks configured in this cluster."""
        from setpoint.cluster.admission.webhook.dispatcher import WebhookAdmission

        return WebhookAdmission(self.store, self.registry, self.webhook_client,
                                self.validating_policies)

    def front_parts(self) -> FrontParts:
        """What the HTTP front (``endpoints/``) is handed: the parts it serves from."""
        return FrontParts(
            store=self.store, freshness=self.freshness, registry=self.registry,
            rest=self.rest, authorizer=self.authorizer, aggregator=self.aggregator,
            tokens=self.tokens, state=self.serving, streams=self.streams,
            service_account_identity=self.service_accounts.identity,
            request_token=self.service_accounts.request, bind_pod=self.pod_binding.bind,
            evict_pod=self.pod_eviction.evict,
            admission_webhooks=lambda: self.webhooks,
            conversion_client=lambda: self.webhook_client,
            metric_components=(self.pod_security.metrics,))

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, *, advertise_address: str = "127.0.0.1", port: int = 443) -> None:
        """Bootstrap system objects and start the in-process controllers. The
        ``default/kubernetes`` Service points at ``advertise_address:port``."""
        from setpoint.cluster import controllers
        from setpoint.cluster.controllers.kubernetesservice import publish_kubernetes_service

        self.custom.restore()
        self.controllers = controllers.start_all(
            self.store, self.rest, self.registry, ca_pem=self.ca_pem, ca_key_pem=self.ca_key_pem,
            aggregator_transport=self.aggregator.transport,
            authentication_data=authentication_configmap_data(self.ca_pem, self.front_proxy),
            issuer=self.tokens, type_check=self._type_check_policy)
        self.aggregator.start()
        self.serving.autoregister = self.controllers.autoregister
        self.on_stop(self.controllers.shutdown)
        # (admission the recording did not see: a restart's stored webhooks or policies
        # would be asked about a bootstrap object a user deleted, so it takes the full path)
        ensurer = self.ensurer
        ensurer.begin(any(self.store.count(key) for key in STORED_ADMISSION))
        try:
            for ns in SYSTEM_NAMESPACES:
                ensurer.ensure("", "v1", "namespaces", None, {"metadata": {"name": ns}})
            self.authorizer.bootstrap(ensurer.ensure)
            bootstrap_system_priority_classes(ensurer.ensure)
            ensurer.flowcontrol(self.controllers.flow_schema_status.sync_now)
        finally:
            ensurer.end()
        # the generic server's ExternalAddress: net.JoinHostPort(advertise address, port)
        host = f"[{advertise_address}]" if ":" in advertise_address else advertise_address
        self.serving.external_address = f"{host}:{port}"
        publish_kubernetes_service(ensurer, self.kubernetes_service_ip, advertise_address, port)
        # kube-system/extension-apiserver-authentication: the CAs and request headers an
        # extension API server verifies its callers by, written at start and kept
        self.controllers.authentication_trust.sync_now()
        self.store.compact()
        self.serving.ready = True

    def post_start(self) -> None:
        """What kube-apiserver runs as post-start hooks once it serves: the
        ``kube-apiserver-autoregistration`` hook registers the local APIServices (their
        writes follow on the loop, after the start, so they never delay readiness)."""
        self.controllers.autoregister.start()

    async def stop(self) -> None:
        self.serving.ready = False
        self.streams.close_all()
        for stop in self._background:
            stop()
        await self.aggregator.stop()
        if "webhook_client" in self.__dict__:  # (only once a webhook was called)
            await self.webhook_client.close()
        self.store.close()

    def on_stop(self, callback: Callable[[], None]) -> None:
        self._background.append(callback)

    def _type_check_policy(self, policy: Obj) -> list[Obj]:
        """The ValidatingAdmissionPolicy type checker over this server's schemas (the status
        controller's ``expressionWarnings``)."""
        from setpoint.cluster.admission.policy import schemaresolver, typechecking

        return typechecking.check(
            policy, self.registry, lambda gvk: schemaresolver.resolve_schema(gvk, self.registry),
            schemaresolver.is_builtin)

    def _served_resource_of_kind(self, group: str, version: str, kind: str) -> str | None:
        """The discovery resolver of a kind's resource (only what is served)."""
        rt = self.registry.by_kind(group, version, kind)
        return rt.resource if rt is not None and rt.served else None

    def resource(self, group: str, version: str, resource: str) -> ResourceType:
        return self.registry.require(group, version, resource)
