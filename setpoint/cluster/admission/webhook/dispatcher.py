"""The MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission plugins.

A write's admission points (:mod:`setpoint.cluster.registry.admissionpoints`) are answered here from
the stored Mutating/ValidatingWebhookConfigurations, as the apiserver's webhook dispatchers
do: webhooks in the order of their configurations' names; a webhook is called when a rule
matches the request (operation, group, version, resource/subresource, scope, or with
``matchPolicy: Equivalent`` an equivalent resource: :mod:`.equivalence`), its namespace and object
selectors match and its ``matchConditions`` hold. Mutating webhooks run one after another,
each on the previous one's result, those with ``reinvocationPolicy: IfNeeded`` once more when
a later one changed the object; validating webhooks run concurrently. A webhook that cannot
be called fails the request unless its ``failurePolicy`` is Ignore; a denial answers with the
webhook's status, worded ``admission webhook "name" denied the request: ...``.

The configurations themselves are never sent to webhooks, so that a bad webhook cannot lock
its own configuration.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from setpoint.cluster.admission.webhook import equivalence
from setpoint.cluster.admission.webhook import matching as match
from setpoint.cluster.admission.webhook.matching import Hook
from setpoint.cluster.admission.webhook.request import admission_request
from setpoint.cluster.audit.context import add_annotation
from setpoint.cluster.registry.admissionpoints import (
    MUTATING,
    AdmissionPoint,
    Changed,
    ConversionPoint,
    Point,
    Steps,
    run_async,
)
from setpoint.cluster.webhook import client as webhookclient
from setpoint.machinery import errors, gojson
from setpoint.machinery.errors import Cause, StatusError
from setpoint.machinery.names import is_qualified_name
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.admission.policy.validating import ValidatingAdmissionPolicy
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Reader
    from setpoint.cluster.webhook.client import WebhookClient

log = logging.getLogger("setpoint.cluster.webhooks")

T = TypeVar("T")
# mutating/dispatcher.go and validating/dispatcher.go: the audit annotations' prefixes
MUTATION_ANNOTATION_PREFIX = "mutation.webhook.admission.k8s.io/"
PATCH_ANNOTATION_PREFIX = "patch.webhook.admission.k8s.io/"
FAILED_OPEN_ANNOTATION_PREFIX = "failed-open." + MUTATION_ANNOTATION_PREFIX
VALIDATING_FAILED_OPEN_PREFIX = "failed-open.validating.webhook.admission.k8s.io/"

GROUP = "admissionregistration.k8s.io"
CONFIGURATIONS = {MUTATING: f"{GROUP}/mutatingwebhookconfigurations",
                  "validating": f"{GROUP}/validatingwebhookconfigurations"}
_MUTATING_CONFIGURATIONS = CONFIGURATIONS[MUTATING]
_VALIDATING_CONFIGURATIONS = CONFIGURATIONS["validating"]
EXEMPT_RESOURCES = {"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
                    "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                    "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}
REVIEW_GROUP = "admission.k8s.io"
REVIEW_VERSION = f"{REVIEW_GROUP}/v1"
MAX_RETRIES = 10  # of a write whose object changed while webhooks were consulted


@dataclass(frozen=True)
class Invocation:
    """A hook to call, and the resource it asked for (the request's or an equivalent)."""

    hook: Hook
    rt: ResourceType


class WebhookAdmission:
    """Answers admission points by calling the configured webhooks."""

    def __init__(self, store: Reader, registry: Registry, client: WebhookClient,
                 policies: ValidatingAdmissionPolicy | None = None) -> None:
        self.store = store
        self.registry = registry
        self.client = client
        # the ValidatingAdmissionPolicy plugin, for what no built-in validating plugin sees:
        # DELETEs, and subresources admitted as their own kind (CONNECT options, a Scale,
        # a Binding or Eviction); it answers the other CREATEs and UPDATEs among them
        self.policies = policies

    def __repr__(self) -> str:
        return f"WebhookAdmission(configured={self.configured()})"

    def configured(self) -> bool:
        """Whether any webhook configuration exists (otherwise writes need not stop)."""
        count = self.store.count  # (asked on every write: no generator)
        return bool(count(_MUTATING_CONFIGURATIONS) or count(_VALIDATING_CONFIGURATIONS)
                    or (self.policies is not None and self.policies.source.has_bindings()))

    async def run(self, steps: Callable[[], Steps[T]], user: Obj) -> tuple[T, list[str]]:
        """Run a request, calling webhooks at its points (admission, and conversion of
        custom resources whose CRD converts by webhook); (result, warnings)."""
        last: AdmissionPoint | None = None
        for _ in range(MAX_RETRIES):
            request = _Request(user)
            try:
                result = await run_async(steps(), request.answering(self._answer))
            except Changed:
                last = request.last
                continue
            return result, request.warnings
        assert last is not None
        raise errors.stale_conflict(last.rt.resource, last.name, last.rt.group)

    # -- answering a point ---------------------------------------------------------------

    async def _answer(self, point: Point, request: _Request) -> Any:
        if isinstance(point, ConversionPoint):
            from setpoint.cluster.apiextensions import conversionwebhook

            return await conversionwebhook.convert(self.client, point)
        request.last = point
        if self.policies is not None and point.phase != MUTATING \
                and (point.operation == "DELETE" or point.kind is not None):
            # kube-apiserver's order: ValidatingAdmissionPolicy before the webhooks
            self.policies.admit(point, request.user,
                                point.warnings if point.warnings is not None
                                else request.warnings)
        if point.rt.group == GROUP and point.rt.resource in EXEMPT_RESOURCES:
            return None
        hooks = self._hooks(point.phase)
        if not hooks:
            return None
        if point.phase == MUTATING:
            return await self._mutate(point, hooks, request)
        await self._validate(point, hooks, request)
        return None

    def _hooks(self, phase: str) -> list[Hook]:
        configs = sorted(self.store.list(CONFIGURATIONS[phase]),
                         key=lambda c: c["metadata"]["name"])
        return [Hook(c["metadata"]["name"], spec) for c in configs
                for spec in c.get("webhooks") or []]

    async def _mutate(self, point: AdmissionPoint, hooks: list[Hook],
                      request: _Request) -> Obj | None:
        """mutating/dispatcher.go Dispatch, in its first round or (the write's
        reinvocation) its second; a point without a reinvocation context runs both."""
        context = point.reinvocation
        if context is None:
            state = _ReinvokeState()
            obj, changed = await self._mutate_round(point, hooks, request, state, point.obj)
            if changed:  # nothing built in runs between the rounds here
                obj, _ = await self._mutate_round(point, hooks, request, state, obj,
                                                  reinvoke=True)
            return obj if changed else None
        if not context.is_reinvoke:
            context.webhooks = state = _ReinvokeState()
            obj, changed = await self._mutate_round(point, hooks, request, state, point.obj)
            return obj if changed else None
        state = context.webhooks
        if not isinstance(state, _ReinvokeState):
            return None
        if context.changed_since_webhooks:
            # the built-in plugins changed the webhooks' output: those invoked since the
            # last change are reinvoked too (IsOutputChangedSinceLastWebhookInvocation)
            state.require_reinvoking()
        obj, changed = await self._mutate_round(point, hooks, request, state, point.obj,
                                                reinvoke=True)
        return obj if changed else None

    async def _mutate_round(self, point: AdmissionPoint, hooks: list[Hook],
                            request: _Request, state: _ReinvokeState, obj: Obj | None, *,
                            reinvoke: bool = False) -> tuple[Obj | None, bool]:
        """One round of the mutating webhooks, each on the previous one's result; on
        reinvocation only those IfNeeded webhooks whose output a later change overtook, never
        one called for the first time; (the object, whether any changed it)."""
        changed = False
        for index, hook in enumerate(hooks):
            invocation = await self._invocation(hook, point, obj, request)
            if invocation is None:
                continue
            key = (hook.configuration, hook.name)
            if reinvoke and key not in state.reinvoke:
                continue
            # webhookAnnotator: the audit annotations' keys name the round and the index
            where = f"round_{1 if reinvoke else 0}_index_{index}"
            patched = None
            try:
                patched = await self._call_mutating(invocation, point, obj, request, where)
            finally:
                add_annotation(MUTATION_ANNOTATION_PREFIX + where, gojson.dumps({
                    "configuration": hook.configuration, "webhook": hook.name,
                    "mutated": patched is not None}).decode())
            if patched is not None:
                obj, changed = patched, True
                state.require_reinvoking()
            if hook.reinvocable:
                state.invoked.add(key)
        return obj, changed

    async def _call_mutating(self, invocation: Invocation, point: AdmissionPoint,
                             obj: Obj | None, request: _Request, where: str) -> Obj | None:
        """``callAttrMutatingHook``: the object the webhook's patch makes, or None when it
        changes nothing; the patch annotates the audit event at level Request (``where``:
        the round and index of the call)."""
        hook = invocation.hook
        try:
            response = await self._call(invocation, point, obj, request)
        except _Failed as failure:
            if hook.ignore_failures:
                log.warning("webhook_failed_open webhook=%s reason=%s", hook.name, failure)
                add_annotation(FAILED_OPEN_ANNOTATION_PREFIX + where, hook.name)
                return None
            raise _internal(f'failed calling webhook "{hook.name}": {failure}') from None
        patch_b64 = response.get("patch")
        if not patch_b64:
            return None
        try:
            raw_patch = base64.b64decode(patch_b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            # the review's []byte field would not decode: the call itself failed
            if hook.ignore_failures:
                return None
            raise _internal(f'failed calling webhook "{hook.name}": failed to call webhook: '
                            f"illegal base64 data: {exc}") from None
        try:
            # a patch that is no JSON Patch is the write's error, whatever the failurePolicy
            operations = orjson.loads(raw_patch)
        except orjson.JSONDecodeError as exc:
            raise _internal(str(exc)) from None
        if not isinstance(operations, list):
            raise _internal("json: cannot unmarshal object into Go value of type "
                            "jsonpatch.Patch")
        if not operations:
            return None
        if obj is None:
            raise _internal(f'admission webhook "{hook.name}" attempted to modify the object, '
                            "which is not supported for this operation")
        if response.get("patchType") != "JSONPatch":
            unsupported = f'unsupported patch type "{response.get("patchType")}"'
            if hook.ignore_failures:
                log.warning("webhook_failed_open webhook=%s reason=%s", hook.name, unsupported)
                return None
            raise _internal(f'failed calling webhook "{hook.name}": {unsupported}')
        from setpoint.machinery.patch import json_patch

        sent = await self._versioned(obj, point, invocation.rt, request)
        assert sent is not None
        try:
            patched = json_patch(sent, operations)
        except StatusError as exc:
            raise _internal(exc.message) from None
        if not isinstance(patched, dict):
            raise _internal(f'admission webhook "{hook.name}" patched the object into a '
                            "non-object")
        # addPatchAnnotation: jsonpatch.Patch's operations are Go maps, written key-sorted
        add_annotation(PATCH_ANNOTATION_PREFIX + where, gojson.dumps({
            "configuration": hook.configuration, "webhook": hook.name,
            "patch": [dict(sorted(op.items())) if isinstance(op, dict) else op
                      for op in operations],
            "patchType": "JSONPatch"}).decode(), level="Request")
        if patched == sent:  # changed = !Semantic.DeepEqual(VersionedObject, patched)
            return None
        return await self._back(patched, point, invocation.rt)

    async def _validate(self, point: AdmissionPoint, hooks: list[Hook],
                        request: _Request) -> None:
        obj = point.obj
        invocations = [(index, inv) for index, hook in enumerate(hooks)
                       if (inv := await self._invocation(hook, point, obj, request)) is not None]
        if not invocations:
            return
        outcomes = await asyncio.gather(
            *(self._call(inv, point, obj, request) for _, inv in invocations),
            return_exceptions=True)
        for (index, inv), outcome in zip(invocations, outcomes, strict=True):
            if isinstance(outcome, _Failed):
                if inv.hook.ignore_failures:
                    log.warning("webhook_failed_open webhook=%s reason=%s", inv.hook.name,
                                outcome)
                    add_annotation(f"{VALIDATING_FAILED_OPEN_PREFIX}round_0_index_{index}",
                                   inv.hook.name)
                    continue
                raise _internal(f'failed calling webhook "{inv.hook.name}": {outcome}')
            if isinstance(outcome, BaseException):
                raise outcome

    # -- one call ------------------------------------------------------------------------

    async def _call(self, invocation: Invocation, point: AdmissionPoint, obj: Obj | None,
                    request: _Request) -> Obj:
        """The webhook's response (allowed), or a StatusError (denied), or _Failed."""
        hook = invocation.hook
        if point.dry_run and hook.spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise StatusError(400, "BadRequest",
                              f'admission webhook "{hook.name}" does not support dry run')
        review_version = _review_version(hook.spec)
        if review_version is None:
            raise _Failed("could not create admission objects: webhook does not accept known "
                          "AdmissionReview versions (v1, v1beta1)")
        uid = str(uuid.uuid4())
        objects = (await self._versioned(obj, point, invocation.rt, request),
                   await self._versioned(point.old, point, invocation.rt, request))
        review = {"kind": "AdmissionReview", "apiVersion": review_version,
                  "request": admission_request(point, invocation.rt, request.user, uid=uid,
                                               objects=objects)}
        try:
            answer = await self.client.post(hook.spec.get("clientConfig") or {},
                                                        review, hook.timeout_s)
        except webhookclient.ClientConfigError as exc:
            raise _Failed(f"could not get REST client: {exc}") from None
        except webhookclient.CallError as exc:
            raise _Failed(f"failed to call webhook: {exc}") from None
        try:
            response = _verify(answer, uid, review_version, mutating=point.phase == MUTATING)
        except _Failed as exc:
            raise _Failed(f"received invalid webhook response: {exc}") from None
        # recorded as the webhook answers, before what the write records after this point
        recorder = point.warnings if point.warnings is not None else request.warnings
        recorder.extend(str(w) for w in response.get("warnings") or [])
        for key, value in (response.get("auditAnnotations") or {}).items():
            # the webhook's own audit annotations, under its name (checkKeyFormat: a key
            # that is no qualified name is dropped)
            if not is_qualified_name(f"{hook.name}/{key}"):
                add_annotation(f"{hook.name}/{key}", str(value))
        if not response.get("allowed"):
            raise _denial(hook.name, response.get("status"))
        return response

    async def _versioned(self, obj: Obj | None, point: AdmissionPoint, target: ResourceType,
                         request: _Request) -> Obj | None:
        """``obj`` as the resource the webhook asked for, through the CRD's conversion
        webhook when it has one (generic/conversion.go ConvertVersionedAttributes, once per
        version: versionedAttributeAccessor); a subresource's own kind as it is."""
        if obj is None or point.kind is not None:
            return obj
        if (point.rt.group, point.rt.version) == (target.group, target.version):
            return obj
        key = (id(obj), target.group, target.version)
        cached = request.versioned.get(key)
        if cached is not None and cached[0] is obj:
            return cached[1]
        converted = await self._convert(obj, point.rt, target)
        request.versioned[key] = (obj, converted)
        return converted

    async def _convert(self, obj: Obj, source: ResourceType, target: ResourceType) -> Obj:
        if target.is_custom and target.conversion_webhook is not None:
            from setpoint.cluster.apiextensions import conversionwebhook

            [out] = await conversionwebhook.convert(
                self.client, ConversionPoint(target, [obj], target.api_version,
                                             single=True))
            return out
        return equivalence.convert(obj, source, target)

    async def _back(self, patched: Obj, point: AdmissionPoint, target: ResourceType) -> Obj:
        """A patched object, as the webhook's resource, back as the request's."""
        if point.kind is not None:
            return patched
        return await self._convert(patched, target, point.rt)

    # -- matching ------------------------------------------------------------------------

    async def _invocation(self, hook: Hook, point: AdmissionPoint, obj: Obj | None,
                          request: _Request) -> Invocation | None:
        """Whether (and at which version) ``hook`` is called for this point: as
        generic/webhook.go ShouldCallHook, a selector that cannot be evaluated (the
        namespace is not found) fails the request only when a rule matches it."""
        try:
            in_namespace: bool | StatusError = match.namespace_selector(
                self.store, hook.spec, point, obj)
        except StatusError as exc:
            in_namespace = exc
        if in_namespace is False:
            return None
        try:
            selected: bool | StatusError = match.object_selector(hook.spec, obj, point.old)
        except StatusError as exc:
            selected = exc
        if selected is False:
            return None
        target = match.rules(hook.spec, point,
                             equivalence.equivalent_resources(self.registry, point.rt))
        if target is None:
            return None
        for outcome in (in_namespace, selected):
            if isinstance(outcome, StatusError):
                raise outcome
        conditions = hook.spec.get("matchConditions") or []
        if conditions and not match.conditions(
                hook, conditions, point,
                await self._versioned(obj, point, target, request),
                await self._versioned(point.old, point, target, request),
                target):
            return None
        return Invocation(hook, target)

class _ReinvokeState:
    """mutating/reinvocationcontext.go webhookReinvokeContext: the IfNeeded webhooks called
    since the object last changed, and those to call again."""

    def __init__(self) -> None:
        self.invoked: set[tuple[str, str]] = set()
        self.reinvoke: set[tuple[str, str]] = set()

    def require_reinvoking(self) -> None:
        self.reinvoke |= self.invoked
        self.invoked = set()


class _Request:
    """What one request's webhook calls share: who asks, and the warnings they returned."""

    def __init__(self, user: Obj) -> None:
        self.user = user
        self.warnings: list[str] = []
        self.last: AdmissionPoint | None = None
        # objects converted for webhooks of another version: (object, converted) by the
        # object's identity and the version
        self.versioned: dict[tuple[int, str, str], tuple[Obj, Obj]] = {}

    def answering(self, answer: Callable[[Point, _Request], Awaitable[Any]]
                  ) -> Callable[[Point], Awaitable[Any]]:
        """``answer`` bound to this request."""
        return lambda point: answer(point, self)


class _Failed(Exception):  # kept apart from denials: the failurePolicy applies to it
    """A webhook that could not be called, or answered something unusable."""


def _internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}",
                       causes=[Cause("", message, "")])


def _denial(name: str, status: Any) -> StatusError:
    """``ToStatusErr``: the webhook's status, at least a 400, naming the webhook."""
    status = dict(status) if isinstance(status, dict) else {}
    denied = f'admission webhook "{name}" denied the request'
    code = int(status.get("code") or 0)
    message, reason = str(status.get("message") or ""), str(status.get("reason") or "")
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    err = StatusError.from_status({**status, "message": text}, max(code, 400))
    err.code = max(code, 400)
    return err


def _review_version(spec: Obj) -> str | None:
    """``CreateAdmissionObjects``: the first of the webhook's admissionReviewVersions this
    server can send."""
    for version in spec.get("admissionReviewVersions") or []:
        if version in ("v1", "v1beta1"):
            return f"{REVIEW_GROUP}/{version}"
    return None


def _verify(answer: Obj, uid: str, review_version: str, *, mutating: bool) -> Obj:
    """``VerifyAdmissionResponse`` (request/admissionreview.go): the response, its patch
    normalized to a JSON Patch and dropped for validating webhooks of v1beta1."""
    response = answer.get("response")
    if not isinstance(response, dict):
        raise _Failed("webhook response was absent")
    if review_version != REVIEW_VERSION:
        # v1beta1 answers were never checked for uid, kind or patchType
        response = {k: v for k, v in response.items() if k not in ("patch", "patchType")}
        if mutating and answer["response"].get("patch"):
            response["patch"] = answer["response"]["patch"]
            response["patchType"] = "JSONPatch"
        return response
    if response.get("uid") != uid:
        raise _Failed(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    kind, api_version = answer.get("kind", ""), answer.get("apiVersion", "")
    if (kind, api_version) != ("AdmissionReview", REVIEW_VERSION):
        group, _, version = api_version.rpartition("/")
        raise _Failed("expected webhook response of admission.k8s.io/v1, "
                      f"Kind=AdmissionReview, got {group}/{version}, Kind={kind}")
    patch, patch_type = response.get("patch"), response.get("patchType")
    if mutating:
        if patch and patch_type is None:
            raise _Failed("webhook returned response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise _Failed("webhook returned response.patchType but not response.patch")
        if patch_type == "":
            raise _Failed('webhook returned invalid response.patchType of ""')
    else:
        if patch:
            raise _Failed("validating webhook may not return response.patch")
        if patch_type is not None:
            raise _Failed("validating webhook may not return response.patchType")
    return response
