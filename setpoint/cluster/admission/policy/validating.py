"""The ValidatingAdmissionPolicy admission plugin.

k8s.io/apiserver pkg/admission/plugin/policy/validating (dispatcher.go ``Dispatch``,
validator.go, plugin.go) over policy/generic and policy/matching: for every policy whose
matchConstraints select the request, every binding naming it whose matchResources select it
too, with each param the binding's paramRef finds, the policy's validations decide; a
binding's validationActions say what a failure does: Deny refuses the request (the first
denial, ``ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request:``,
with the validation's reason, Invalid by default), Warn adds a warning, Audit an audit
annotation. kube-apiserver orders the plugin after the mutating webhooks and before the
validating webhooks (pkg/kubeapiserver/options/plugins.go ``AllOrderedPlugins``): here the
last of the built-in validating plugins, in the chain only while a binding exists, so a
cluster without policies neither pays for it nor loads CEL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.admission.forbidden import new_forbidden
from setpoint.cluster.admission.policy import matching
from setpoint.cluster.admission.policy.source import PolicyHook, PolicySource
from setpoint.cluster.admission.webhook import equivalence
from setpoint.cluster.admission.webhook.matching import request_namespace
from setpoint.cluster.admission.webhook.request import admission_request
from setpoint.cluster.audit.context import add_annotation
from setpoint.cluster.registry.admissionpoints import VALIDATING, AdmissionPoint, Attributes
from setpoint.machinery import gojson, labels
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.admission.policy.authzlib import Decide
    from setpoint.cluster.admission.policy.evaluation import Result
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.genericstore import Admission
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

VALIDATION_FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024  # dispatcher.go
# policy_decision.go reasonToCode
_REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413,
                 "Invalid": 422}


# generic/plugin.go shouldIgnoreResource over kube-apiserver's excluded admission resources
# (pkg/kubeapiserver/admission/exclusion): no policy can lock the policies and bindings (the
# other excluded kinds, the non-persisted reviews, reach no validating plugin here)
_EXCLUDED = frozenset({"validatingadmissionpolicies", "validatingadmissionpolicybindings",
                       "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"})


class ConfigurationError(Exception):
    """A policy or binding that cannot be applied: denied under failurePolicy Fail."""


class _Request:
    """What one request's policies share: where it is, who asks, its warnings."""

    def __init__(self, point: AdmissionPoint, user: Obj | None, warnings: list[str] | None
                 ) -> None:
        self.point, self.user, self.warnings = point, user, warnings


class _Denial:
    def __init__(self, policy: str, binding: str | None, message: str, reason: str) -> None:
        self.policy, self.binding, self.message, self.reason = policy, binding, message, reason


class ValidatingAdmissionPolicy:
    """The plugin, a built-in validating admission plugin over CREATE and UPDATE."""

    def __init__(self, store: Informer, registry: Registry, decide: Decide) -> None:
        self._store = store
        self._registry = registry
        self._decide_access = decide  # the authorizer of CEL's ``authorizer``
        self.source = PolicySource(store, registry)

    def __repr__(self) -> str:
        return "ValidatingAdmissionPolicy()"

    def install(self, chain: list[Admission]) -> None:
        """Be at the end of ``chain`` exactly while some binding exists."""
        self.source.on_change(lambda: self._arm(chain))
        self._arm(chain)

    def _arm(self, chain: list[Admission]) -> None:
        present = self in chain
        if self.source.has_bindings():
            if not present:
                chain.append(self)
        elif present:
            chain.remove(self)

    def __call__(self, attributes: Attributes) -> None:
        """A CREATE or UPDATE, among the built-in validating plugins."""
        meta = attributes.obj.get("metadata") or {}
        name = attributes.name if attributes.name is not None else str(meta.get("name") or "")
        point = AdmissionPoint(VALIDATING, attributes.operation, attributes.rt,
                               str(meta.get("namespace") or ""), name,
                               attributes.obj, attributes.old, attributes.dry_run,
                               attributes.subresource, attributes.options)
        self.admit(point, attributes.user, attributes.warnings)

    def admit(self, point: AdmissionPoint, user: Obj | None, warnings: list[str] | None
              ) -> None:
        """Refuse the request at ``point`` when a policy bound with Deny says so; Warn's
        texts go to ``warnings``. A DELETE, and a subresource admitted as its own kind (a
        CONNECT's options, a Scale, a Binding), come here from their validating point (the
        webhook dispatcher's)."""
        rt = point.rt
        if rt.group == "admissionregistration.k8s.io" and rt.resource in _EXCLUDED:
            return
        denials: list[_Denial] = []
        for hook in self.source.hooks():
            self._dispatch(hook, _Request(point, user, warnings), denials)
        if denials:
            raise _refusal(point, denials[0])

    def _dispatch(self, hook: PolicyHook, request: _Request, denials: list[_Denial]) -> None:
        point = request.point
        spec = hook.policy.get("spec") or {}
        fail = spec.get("failurePolicy", "Fail") != "Ignore"

        def config_error(exc: Exception, binding: str | None) -> None:
            if fail:
                what = "policy" if binding is None else "binding"
                denials.append(_Denial(hook.name, binding,
                                       f"failed to configure {what}: {exc}", "Invalid"))

        try:
            target = matching.matches(spec.get("matchConstraints") or {}, point, self._store,
                                      self._registry)
        except matching.MatchError as exc:
            config_error(exc, None)
            return
        if target is None:
            return
        try:
            param_rt = self._param_resource(spec)
        except ConfigurationError as exc:
            config_error(exc, None)
            return
        annotations: dict[str, list[str]] = {}
        for binding in hook.bindings:
            binding_name = str(binding["metadata"]["name"])
            binding_spec = binding.get("spec") or {}
            resources = binding_spec.get("matchResources")
            try:
                if resources is not None and matching.matches(
                        resources, point, self._store, self._registry) is None:
                    continue
                params = self._params(spec, param_rt, binding_spec, point)
            except (matching.MatchError, ConfigurationError) as exc:
                config_error(exc, binding_name)
                continue
            for param in params:
                result = self._validate(spec, request, target, param)
                self._decide(hook.name, binding, result, request.warnings, denials,
                             annotations)
        for key, values in annotations.items():
            add_annotation(f"{hook.name}/{key}", ", ".join(values))

    # -- params --------------------------------------------------------------------------

    def _param_resource(self, spec: Obj) -> ResourceType | None:
        kind = spec.get("paramKind")
        if not kind:
            return None
        group, _, version = str(kind.get("apiVersion", "")).rpartition("/")
        rt = self._registry.by_kind(group, version, str(kind.get("kind", "")))
        if rt is None or not rt.served:
            raise ConfigurationError(f"failed to find resource referenced by paramKind: "
                                     f"'{group}/{version}, Kind={kind.get('kind', '')}'")
        return rt

    def _params(self, spec: Obj, rt: ResourceType | None, binding_spec: Obj,
                point: AdmissionPoint) -> list[Obj | None]:
        """generic/policy_dispatcher.go CollectParams."""
        ref = binding_spec.get("paramRef")
        if rt is None or not ref:
            return [None]
        namespace = ""
        if rt.namespaced:
            namespace = str(ref.get("namespace") or request_namespace(point))
            if not namespace:
                raise ConfigurationError("cannot use namespaced paramRef in policy binding "
                                         "that matches cluster-scoped resources")
        elif ref.get("namespace"):
            raise ConfigurationError("paramRef.namespace must not be provided for a "
                                     "cluster-scoped `paramKind`")
        if ref.get("name"):
            found = self._store.get(rt.storage_key, namespace, str(ref["name"]))
            params = [found] if found is not None else []
        elif ref.get("selector") is not None:
            try:
                selector = labels.from_label_selector(ref["selector"])
            except labels.SelectorError as exc:
                raise ConfigurationError(str(exc)) from None
            params = [p for p in self._store.list(rt.storage_key, namespace if rt.namespaced
                                                   else None)
                      if selector.matches((p.get("metadata") or {}).get("labels") or {})]
        else:
            raise ConfigurationError("one of name or selector must be provided")
        if not params and ref.get("parameterNotFoundAction") == "Deny":
            raise ConfigurationError("no params found for policy binding with `Deny` "
                                     "parameterNotFoundAction")
        kind = spec.get("paramKind") or {}
        # dispatcher.go wrappedParam: the param's TypeMeta as the paramKind names it
        return [{**p, "apiVersion": kind.get("apiVersion"), "kind": kind.get("kind")}
                for p in params]

    # -- evaluation ----------------------------------------------------------------------

    def _validate(self, spec: Obj, request: _Request, target: ResourceType,
                  param: Obj | None) -> Result:
        from setpoint.cluster.admission.policy import evaluation

        point = request.point
        rt = point.rt
        obj, old = point.obj, point.old
        if target is not rt:  # matchPolicy Equivalent: the object as the matched resource
            obj = equivalence.convert(obj, rt, target) if obj is not None else None
            old = equivalence.convert(old, rt, target) if old is not None else None
        namespace_name = "" if (rt.group, rt.resource) == ("", "namespaces") \
            else request_namespace(point)
        stored = self._store.get("/namespaces", "", namespace_name) if namespace_name \
            else None
        namespace = _namespace_object(stored) if stored is not None else None
        admission_request = _admission_request(point, request.user, target)
        # matchconditions/matcher.go Match: CreateAdmissionRequest with the request's own
        # resource (versionedAttr.GetResource()) beside the matched kind
        match_request = {**admission_request, "resource": admission_request["requestResource"]}
        return evaluation.validate(spec, evaluation.activation(
            obj, old, admission_request, param, namespace, request.user, self._decide_access),
            stored, match_request)

    def _decide(self, policy: str, binding: Obj, result: Result, warnings: list[str] | None,
                denials: list[_Denial], annotations: dict[str, list[str]]) -> None:
        binding_name = str(binding["metadata"]["name"])
        actions = list((binding.get("spec") or {}).get("validationActions") or [])
        for index, decision in enumerate(result.decisions):
            if not decision.deny:
                continue
            for action in actions:
                if action == "Deny":
                    denials.append(_Denial(policy, binding_name, decision.message,
                                           decision.reason or "Invalid"))
                elif action == "Audit":
                    # (Go's json.Marshal; the attributes keep a key's first value)
                    add_annotation(VALIDATION_FAILURE_ANNOTATION, gojson.dumps([{
                        "message": decision.message, "policy": policy,
                        "binding": binding_name, "expressionIndex": index,
                        "validationActions": actions}]).decode())
                elif action == "Warn" and warnings is not None:
                    warnings.append(
                        f"Validation failed for ValidatingAdmissionPolicy '{policy}' with "
                        f"binding '{binding_name}': {decision.message}")
        for annotation in result.annotations:
            if annotation.error:
                denials.append(_Denial(policy, binding_name, annotation.error, "Invalid"))
            elif annotation.value:
                values = annotations.setdefault(annotation.key, [])
                value = annotation.value[:MAX_AUDIT_ANNOTATION_VALUE_LENGTH]
                if value not in values:  # auditAnnotationCollector.add
                    values.append(value)


def _refusal(point: AdmissionPoint, denial: _Denial) -> Exception:
    """dispatcher.go: admission.NewForbidden's naming (errors.go extractResourceName: the
    request's name, else the object's name or generateName, else ``Unknown``), the
    decision's reason and its code, and the message again as a cause."""
    if denial.binding is not None:
        message = (f"ValidatingAdmissionPolicy '{denial.policy}' with binding "
                   f"'{denial.binding}' denied request: {denial.message}")
    else:
        message = f"ValidatingAdmissionPolicy '{denial.policy}' denied request: {denial.message}"
    named = {"metadata": {"name": point.name}} if point.name else point.obj or {}
    error = new_forbidden(point.rt, named, message)
    error.reason = denial.reason
    error.code = _REASON_CODES.get(denial.reason, 422)
    error.causes = [*error.causes, Cause("", message)]
    return error


def _admission_request(point: AdmissionPoint, user: Obj | None, target: ResourceType) -> Obj:
    """cel/condition.go CreateAdmissionRequest, as the unstructured map CEL sees: Go's
    ``omitempty`` fields absent when empty, and no objects (CEL has them as ``object`` and
    ``oldObject``)."""
    user_info = {k: user[k] for k in ("username", "uid", "groups", "extra")
                 if user and user.get(k)}
    request = admission_request(point, target, user_info)
    for key in ("name", "options"):
        if not request[key]:
            del request[key]
    return request


_NAMESPACE_META = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
                   "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                   "labels", "annotations", "finalizers")


def _namespace_object(namespace: Obj) -> Obj:
    """cel/condition.go CreateNamespaceObject: the namespace's spec, status and part of its
    metadata (no managed fields or owners)."""
    meta = namespace.get("metadata") or {}
    out: Obj = {"metadata": {k: meta[k] for k in _NAMESPACE_META if k in meta}}
    for key in ("spec", "status"):
        if key in namespace:
            out[key] = namespace[key]
    return out
