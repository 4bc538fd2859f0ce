"""ResourceQuota: a write that would take a namespace past one of its quotas is refused.

k8s.io/apiserver v0.32.0 (kube-apiserver 1.32) pkg/admission/plugin/resourcequota/admission.go
``Validate`` and controller.go ``checkRequest``: writes of cluster-scoped objects and of
namespaces are not its business; for every other create or update the evaluator of the
resource (:mod:`setpoint.cluster.quota.evaluators`) tells whether it handles the write (of a
subresource only ``pods/resize``: 1.32 moved that choice from the plugin to ``Handles``),
which quotas of the namespace it falls under and what it charges. A quota whose status does
not yet know a constrained resource refuses (``status unknown for quota``), one the charge
would exceed refuses (``exceeded quota``), and otherwise the charge is added to each quota's
``status.used`` before the object is stored
(dry runs are checked but not charged). kube-apiserver runs it last, after the validating
webhooks; so does the generic store (``final_validating_admission``), with nothing awaited
between the charge and the write.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

from setpoint.cluster.admission.forbidden import new_forbidden
from setpoint.cluster.quota import resources as rl
from setpoint.cluster.quota.evaluators import evaluator_for
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.genericstore import Admission
    from setpoint.cluster.storage import Informer, Reader

RESOURCEQUOTAS = "/resourcequotas"
# k8s.io/apiserver/pkg/quota/v1/install (kubernetes pkg/quota/v1/install/registry.go
# ignoredResources): events are never charged
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events")})
# the loopback client's User-Agent names kube-apiserver as the field manager of its
# status updates (quotaAccessor.UpdateQuotaStatus)
STATUS_WRITE = WriteOptions(field_manager="kube-apiserver", field_validation="Ignore")

UpdateStatus = Callable[[ResourceType, str | None, str, Decoded, WriteOptions, str], object]


class ResourceQuotaAdmission:
    """Checks a write against the namespace's quotas and charges it to them."""

    def __init__(self, store: Reader, quota_type: ResourceType,
                 update: UpdateStatus) -> None:
        self._store = store
        self._quota_type = quota_type
        self._update = update

    def __repr__(self) -> str:
        return "ResourceQuotaAdmission()"

    def install(self, chain: list[Admission], store: Informer) -> None:
        """Be in ``chain`` (at its end) exactly while the cluster has a ResourceQuota: as
        controller.go answers at once when a namespace has none, but without the call, so a
        cluster without quotas (the common case) pays nothing per write."""
        store.add_listener(lambda event: self._arm(chain), (RESOURCEQUOTAS,))
        self._arm(chain)

    def _arm(self, chain: list[Admission]) -> None:
        present = self in chain
        if self._store.count(RESOURCEQUOTAS):
            if not present:
                chain.append(self)
        elif present:
            chain.remove(self)

    def __call__(self, attributes: Attributes) -> None:
        rt = attributes.rt
        if not rt.namespaced or (rt.group, rt.resource) in IGNORED:
            return
        evaluator = evaluator_for(rt.group, rt.resource)
        if not evaluator.handles(attributes.operation, attributes.subresource):
            return
        obj = attributes.obj
        namespace = obj["metadata"].get("namespace") or ""
        quotas = self._store.list(RESOURCEQUOTAS, namespace)
        if not quotas:
            return

        def forbidden(reason: str) -> errors.StatusError:
            return new_forbidden(rt, obj, reason)

        interesting: list[Obj] = []
        for quota in quotas:
            if not evaluator.matches(quota, obj):
                continue
            status = quota.get("status") or {}
            hard = status.get("hard") or {}
            restricted = evaluator.matching_resources(hard)
            failed = evaluator.constraints(restricted, obj)
            if failed:
                raise forbidden(f"failed quota: {quota['metadata']['name']}: {failed}")
            used = status.get("used") or {}
            if any(r not in used for r in restricted):  # hasUsageStats
                raise forbidden(f"status unknown for quota: {quota['metadata']['name']}, "
                                f"resources: {','.join(sorted(restricted))}")
            interesting.append(quota)
        if not interesting:
            return
        usage = evaluator.usage(obj)
        negative = rl.negative(usage)
        if negative:
            raise forbidden("quota usage is negative for resource(s): "
                            + ",".join(sorted(negative)))
        deltas = {q["metadata"]["name"]: usage for q in interesting}
        old = attributes.old
        if attributes.operation == "UPDATE" and old is not None \
                and old["metadata"].get("resourceVersion"):
            delta = rl.subtract_non_negative(usage, evaluator.usage(old))
            for q in interesting:
                if evaluator.matches(q, old):
                    deltas[q["metadata"]["name"]] = delta
        charged: list[tuple[Obj, rl.ResourceList]] = []
        for quota in interesting:
            qname = quota["metadata"]["name"]
            delta = rl.remove_zeros(deltas[qname])
            if not delta:
                continue
            hard = rl.parse(quota["status"].get("hard"))
            used = rl.parse(quota["status"].get("used"))
            requested = rl.mask(delta, hard)
            new_used = rl.add(used, requested)
            over = rl.exceeded(rl.mask(new_used, requested), hard)
            if over:
                raise forbidden(
                    f"exceeded quota: {qname}"
                    f", requested: {rl.pretty_print(rl.mask(requested, over))}"
                    f", used: {rl.pretty_print(rl.mask(used, over))}"
                    f", limited: {rl.pretty_print(rl.mask(hard, over))}")
            if not rl.equals(new_used, used):
                charged.append((quota, new_used))
        if attributes.dry_run:  # checkQuotas: a dry run is not charged
            return
        for quota, new_used in charged:
            body = copy.deepcopy(quota)
            body["apiVersion"], body["kind"] = "v1", "ResourceQuota"
            body["status"]["used"] = rl.to_json(new_used)
            self._update(self._quota_type, namespace, quota["metadata"]["name"],
                         Decoded(body), STATUS_WRITE, "status")
