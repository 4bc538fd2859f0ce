"""The ``pods/binding`` and ``pods/eviction`` subresources (POST).

``bind`` is the registry's BindingREST: it assigns an unassigned pod to a node in one storage
update (no admission, no managed fields), merging the binding's annotations and setting the
``PodScheduled`` condition. ``evict`` is EvictionREST: a pod that is terminal, pending or
already being deleted is deleted at once; otherwise the PodDisruptionBudget that selects it
must allow a disruption, which the eviction consumes (recording the pod in the budget's
``disruptedPods``) before deleting the pod with the eviction's DeleteOptions.

Each is given what it uses: binding the store it writes in one step and the clock; eviction a
reader of pods and budgets, the REST ``update`` of a budget's status, the REST ``delete`` of
a pod, the budgets' resource type and the clock.

Both answer ``Status Success`` with code 201, as the real create handler does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from setpoint.cluster.registry.genericstore import WriteResult, storage_precondition_conflict
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions, dry_run_values
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Reader, Store
from setpoint.machinery import errors
from setpoint.machinery.errors import Cause, StatusError
from setpoint.machinery.fielderrors import go_quote
from setpoint.machinery.labels import SelectorError, from_label_selector
from setpoint.machinery.objects import Obj

DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
MAX_DISRUPTED_POD_SIZE = 2000
APISERVER_MANAGER = "kube-apiserver"


def _success() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "code": 201}


def _check_body(body: Any, kind: str, api_versions: tuple[str, ...], ns: str,
                name: str) -> Obj:
    """Decode-time checks of a subresource body: its kind, namespace and name."""
    if not isinstance(body, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind})")
    given_kind = body.get("kind") or kind
    given_version = body.get("apiVersion") or api_versions[0]
    if given_kind != kind or given_version not in api_versions:
        version = str(given_version).rsplit("/", 1)[-1]
        raise errors.bad_request(
            f'{given_kind} in version "{version}" cannot be handled as a {kind}: converting '
            f"({version}.{given_kind}) to ({api_versions[0].rsplit('/', 1)[0]}.{kind}): "
            "unknown conversion")
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind})")
    if meta.get("namespace") and meta["namespace"] != ns:
        raise errors.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
    if meta.get("name", "") != name:
        raise errors.bad_request(f"name in URL does not match name in {kind} object")
    return meta


# -- binding -------------------------------------------------------------------------------

def _validate_binding(body: Obj) -> None:
    """``ValidatePodBinding``; its aggregate error is not a Status, so it answers 500."""
    target = body.get("target") or {}
    problems = []
    kind = target.get("kind") or ""
    if kind and kind != "Node":
        problems.append(f'target.kind: Unsupported value: {go_quote(kind)}: supported values: '
                        '"Node", "<empty>"')
    if not target.get("name"):
        problems.append("target.name: Required value")
    if problems:
        message = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise StatusError(500, "", message)


def set_pod_scheduled(status: Obj, now: str) -> None:
    """``UpdatePodCondition`` with PodScheduled=True (the transition time moves only when the
    status changes)."""
    conditions = [dict(c) for c in status.get("conditions") or []]
    new = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
           "lastTransitionTime": now}
    for i, old in enumerate(conditions):
        if old.get("type") == "PodScheduled":
            if old.get("status") == "True":
                new["lastTransitionTime"] = old.get("lastTransitionTime")
            conditions[i] = new
            break
    else:
        conditions.append(new)
    status["conditions"] = conditions


class PodBinding:
    """BindingREST (pkg/registry/core/pod/storage/storage.go): one storage update of a pod."""

    def __init__(self, store: Store, clock: Callable[[], str]) -> None:
        self._store = store
        self._clock = clock

    def bind(self, rt: ResourceType, ns: str, name: str, body: Any) -> Obj:
        """POST pods/<name>/binding: assign the pod to ``target.name``."""
        meta = _check_body(body, "Binding", ("v1",), ns, name)
        _validate_binding(body)
        pod = self._store.get(rt.storage_key, ns, name)
        if pod is None:
            raise errors.not_found(rt.resource, name, rt.group)
        pod_meta = pod["metadata"]
        if meta.get("uid") and meta["uid"] != pod_meta.get("uid"):
            raise storage_precondition_conflict(
                rt, ns, name, "Precondition failed: UID in precondition: "
                f"{meta['uid']}, UID in object meta: {pod_meta.get('uid')}")
        if meta.get("resourceVersion") and meta["resourceVersion"] != pod_meta.get(
                "resourceVersion"):
            raise storage_precondition_conflict(
                rt, ns, name, "Precondition failed: ResourceVersion in precondition: "
                f"{meta['resourceVersion']}, ResourceVersion in object meta: "
                f"{pod_meta.get('resourceVersion')}")
        binding_resource = f"{rt.resource}/binding"
        spec = pod.get("spec") or {}
        if pod_meta.get("deletionTimestamp"):
            raise errors.conflict(binding_resource, name,
                                  f"pod {name} is being deleted, cannot be assigned to a host",
                                  rt.group)
        if spec.get("nodeName"):
            raise errors.conflict(binding_resource, name, f"pod {name} is already assigned to node "
                                  f"{go_quote(spec['nodeName'])}", rt.group)
        if spec.get("schedulingGates"):
            raise errors.conflict(binding_resource, name,
                                  f"pod {name} has non-empty .spec.schedulingGates", rt.group)
        new = pod  # (the store decodes each read afresh: nobody else holds this object)
        new["spec"]["nodeName"] = body["target"]["name"]
        annotations = meta.get("annotations") or {}
        if annotations:
            new["metadata"]["annotations"] = {**(pod_meta.get("annotations") or {}), **annotations}
        status = new.setdefault("status", {})
        set_pod_scheduled(status, self._clock())
        self._store.put(rt.storage_key, new)
        return _success()


# -- eviction ------------------------------------------------------------------------------

def _pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _can_ignore_pdb(pod: Obj) -> bool:
    """Terminal, pending and terminating pods no longer count against a budget."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp"))


def _should_enforce_resource_version(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _too_many_requests(pdb_name: str) -> StatusError:
    err = errors.too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.", 10)
    err.causes.append(Cause(DISRUPTION_BUDGET_CAUSE,
                            f"The disruption budget {pdb_name} is still being processed by "
                            "the server."))
    return err


def _matching_budgets(reader: Reader, budgets: ResourceType, pod: Obj) -> list[Obj]:
    """The budgets in the pod's namespace whose non-empty selector matches its labels."""
    labels = pod["metadata"].get("labels") or {}
    found = []
    for pdb in reader.list(budgets.storage_key, pod["metadata"].get("namespace", "")):
        try:
            selector = from_label_selector((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if selector.empty or not selector.matches(labels):
            continue
        found.append(pdb)
    return found


def _disruption_allowed_condition(status: Obj, now: str) -> None:
    """``UpdateDisruptionAllowedCondition`` (metav1 SetStatusCondition semantics)."""
    allowed = (status.get("disruptionsAllowed") or 0) > 0
    new = {"type": "DisruptionAllowed", "status": "True" if allowed else "False",
           "observedGeneration": status.get("observedGeneration") or 0,
           "reason": "SufficientPods" if allowed else "InsufficientPods", "message": ""}
    conditions = [dict(c) for c in status.get("conditions") or []]
    for c in conditions:
        if c.get("type") == "DisruptionAllowed":
            if c.get("status") != new["status"]:
                c["lastTransitionTime"] = now
            c.update(new)
            break
    else:
        conditions.append({"type": new["type"], "status": new["status"],
                           "observedGeneration": new["observedGeneration"],
                           "lastTransitionTime": now, "reason": new["reason"],
                           "message": ""})
    status["conditions"] = conditions


class UpdateVerb(Protocol):
    """REST ``update``: what an eviction writes a budget's status with."""

    def __call__(self, rt: ResourceType, ns: str | None, name: str, body: Decoded,
                 opts: WriteOptions, subresource: str = "") -> WriteResult: ...


DeleteVerb = Callable[[ResourceType, str | None, str, DeleteOptions], tuple[int, Obj]]
"""REST ``delete``: what an eviction deletes the pod with."""


def _propagate_dry_run(options: dict[str, Any] | None,
                       requested: list[str]) -> dict[str, Any] | None:
    """propagateDryRun: the eviction's own DeleteOptions keep their dryRun; the request's
    fills it when they have none; two different non-empty lists are a plain error (no API
    status), which the handler answers as a 500 with reason Unknown."""
    if options is None or not options.get("dryRun"):
        return options
    given = options["dryRun"]
    if requested and given != requested:
        raise StatusError(500, "", "Non-matching dry-run options in request and content: "
                                   f"[{' '.join(requested)}] and "
                                   f"[{' '.join(str(v) for v in given)}]")
    return options


class PodEviction:
    """EvictionREST (pkg/registry/core/pod/storage/eviction.go)."""

    def __init__(self, reader: Reader, budgets: ResourceType, update: UpdateVerb,
                 delete: DeleteVerb, clock: Callable[[], str]) -> None:
        self._reader = reader
        self._budgets = budgets
        self._update = update
        self._delete = delete
        self._clock = clock

    def evict(self, rt: ResourceType, ns: str, name: str, query: Mapping[str, str],
              body: Any) -> Obj:
        """POST pods/<name>/eviction: delete the pod unless its disruption budget forbids it.
        ``query`` is the request's: its ``dryRun`` (CreateOptions) goes into the eviction's
        DeleteOptions unless they name their own (propagateDryRun)."""
        _check_body(body, "Eviction", ("policy/v1", "policy/v1beta1"), ns, name)
        raw_options = body.get("deleteOptions")
        options = DeleteOptions.parse(query, _propagate_dry_run(
            raw_options if isinstance(raw_options, dict) else None, dry_run_values(query)))
        pod = self._reader.get(rt.storage_key, ns, name)
        if pod is None:
            raise errors.not_found(rt.resource, name, rt.group)
        if _can_ignore_pdb(pod):
            direct = options
            if _should_enforce_resource_version(pod) and options.precondition_rv is None:
                direct = replace(options, precondition_rv=pod["metadata"].get("resourceVersion"))
            self._delete(rt, ns, name, direct)
            return _success()
        budgets = _matching_budgets(self._reader, self._budgets, pod)
        if len(budgets) > 1:
            # returned, not raised: the create handler writes it with its own 201
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "This pod has more than one PodDisruptionBudget, which the "
                               "eviction subresource does not support.", "code": 500}
        pin_version = False
        pdb_name = ""
        if budgets:
            pdb = budgets[0]
            pdb_name = pdb["metadata"]["name"]
            status = pdb.get("status") or {}
            unhealthy_policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
            if not _pod_ready(pod) and (
                    unhealthy_policy == "AlwaysAllow"
                    or (status.get("currentHealthy") or 0)
                    >= (status.get("desiredHealthy") or 0) > 0):
                # an unhealthy pod does not count towards the budget: delete it, but only as seen
                pin_version = True
            else:
                self._check_and_decrement(name, pdb, options.dry_run)
        final = options
        if pin_version:
            final = replace(options, precondition_rv=pod["metadata"].get("resourceVersion"))
        try:
            self._delete(rt, ns, name, final)
        except StatusError as err:
            if err.code == 409 and pin_version and options.precondition_rv is None:
                raise _too_many_requests(pdb_name) from None
            raise
        return _success()

    def _check_and_decrement(self, pod_name: str, pdb: Obj, dry_run: bool) -> None:
        status = dict(pdb.get("status") or {})
        meta = pdb["metadata"]
        name = meta["name"]
        if (status.get("observedGeneration") or 0) < (meta.get("generation") or 0):
            raise _too_many_requests(name)
        allowed = status.get("disruptionsAllowed") or 0
        if allowed < 0:
            raise errors.forbidden("poddisruptionbudget", name,
                                   "pdb disruptions allowed is negative", "policy")
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
            raise errors.forbidden("poddisruptionbudget", name, "DisruptedPods map too big - too "
                                   "many evictions not confirmed by PDB controller", "policy")
        if allowed == 0:
            err = errors.too_many_requests(
                "Cannot evict pod as it would violate the pod's disruption budget.")
            err.retry_after = None
            err.causes.append(Cause(
                DISRUPTION_BUDGET_CAUSE,
                f"The disruption budget {name} needs {status.get('desiredHealthy') or 0} healthy "
                f"pods and has {status.get('currentHealthy') or 0} currently"))
            raise err
        status["disruptionsAllowed"] = allowed - 1
        now = self._clock()
        if status["disruptionsAllowed"] == 0:
            _disruption_allowed_condition(status, now)
        if dry_run:
            return
        status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now}
        self._update(self._budgets, meta.get("namespace"), name,
                     Decoded({**pdb, "status": status}),
                     WriteOptions(field_manager=APISERVER_MANAGER, field_validation="Ignore"),
                     "status")
