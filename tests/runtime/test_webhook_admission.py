"""Admission webhooks served over HTTPS, called with AdmissionReviews as the kube-apiserver
sends them: defaulting answers with a JSON Patch, validation admits with warnings or
refuses with a Status the API server relays."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import jsonpatch
import pytest

from setpoint.client import Kind
from setpoint.machinery import fielderrors
from setpoint.machinery.errors import conflict
from setpoint.runtime import AdmissionContext, Denied, Webhook
from tests.runtime.test_webhook_support import (
    Memcached,
    admit,
    memcached,
    patch_of,
    post,
    review,
    running,
)

MUTATE = "/mutate-cache-example-com-v1-memcached"
VALIDATE = "/validate-cache-example-com-v1-memcached"
POD = Kind("v1", "Pod")


def apply(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    patched: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(obj), patch_of(response))
    return patched


# -- defaulting --------------------------------------------------------------------------

async def test_defaulter_patch_turns_the_sent_object_into_the_defaulted_one() -> None:
    hooks = Webhook.for_(Memcached)

    @hooks.default
    async def default(ctx: AdmissionContext[Memcached], mc: Memcached) -> None:
        mc.spec.topology = mc.spec.topology or "sharded"
        mc.metadata.labels = {**(mc.metadata.labels or {}), "tier": "cache"}

    sent = memcached(image="memcached:1.6")      # replicas missing: the model defaults it
    async with running(hooks) as server:
        response = await admit(server, MUTATE, review("CREATE", sent))
    assert response["allowed"] is True
    assert response["status"]["code"] == 200
    expected = copy.deepcopy(sent)
    expected["spec"] = {"image": "memcached:1.6", "replicas": 3, "topology": "sharded"}
    expected["metadata"]["labels"] = {"app": "cache", "tier": "cache"}
    assert apply(sent, response) == expected
    # server-set metadata survives the typed round trip untouched
    assert all(not op["path"].startswith(("/metadata/managedFields", "/metadata/uid",
                                           "/metadata/creationTimestamp"))
               for op in patch_of(response))


async def test_defaulter_that_changes_nothing_sends_no_patch() -> None:
    hooks = Webhook.for_(Memcached)
    hooks.default(lambda ctx, mc: None)
    async with running(hooks) as server:
        response = await admit(server, MUTATE,
                               review("CREATE", memcached(replicas=2, topology="sharded")))
    assert response["allowed"] is True
    assert patch_of(response) == []


async def test_defaulter_of_a_dict_kind_mutates_the_dict_and_may_return_a_new_one() -> None:
    hooks = Webhook.for_(POD)

    @hooks.default
    async def default(ctx: AdmissionContext[dict[str, Any]], pod: dict[str, Any]
                      ) -> dict[str, Any]:
        pod["spec"]["containers"][0].setdefault("imagePullPolicy", "IfNotPresent")
        return {**pod, "metadata": {**pod["metadata"], "annotations": {"defaulted": "yes"}}}

    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert hooks.mutate_path == "/mutate--v1-pod"
    async with running(hooks) as server:
        response = await admit(server, "/mutate--v1-pod",
                               review("CREATE", pod, gvk=("", "v1", "Pod"), resource="pods"))
    patched = apply(pod, response)
    assert patched["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert patched["metadata"]["annotations"] == {"defaulted": "yes"}


class Narrow:
    """A typed class that keeps only ``spec.replicas`` (an outdated Go type, say)."""

    api_version: ClassVar[str] = "cache.example.com/v1"
    kind: ClassVar[str] = "Memcached"

    def __init__(self, data: dict[str, Any]) -> None:
        self.metadata = data.get("metadata") or {}
        self.replicas = (data.get("spec") or {}).get("replicas")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Narrow:
        return cls(data)

    def to_dict(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": self.metadata,
                "spec": {"replicas": self.replicas}}


@pytest.mark.parametrize("remove", [False, True])
async def test_defaulter_keeps_fields_its_class_does_not_know_unless_told(
        remove: bool) -> None:
    hooks = Webhook.for_(Narrow).with_options(remove_unknown_fields=remove)

    @hooks.default
    def default(ctx: AdmissionContext[Narrow], obj: Narrow) -> None:
        obj.replicas = obj.replicas or 5

    sent = memcached(image="memcached:1.6")
    async with running(hooks) as server:
        response = await admit(server, MUTATE, review("CREATE", sent))
    spec = apply(sent, response)["spec"]
    assert spec == ({"replicas": 5} if remove else {"image": "memcached:1.6", "replicas": 5})


async def test_defaulter_is_not_called_on_delete() -> None:
    calls: list[str] = []
    hooks = Webhook.for_(Memcached)
    hooks.default(lambda ctx, mc: calls.append(ctx.operation))
    async with running(hooks) as server:
        response = await admit(server, MUTATE, review("DELETE", None, memcached()))
        await admit(server, MUTATE, review("UPDATE", memcached(), memcached()))
    assert response == {"uid": response["uid"], "allowed": True,
                        "status": {"metadata": {}, "code": 200}}
    assert calls == ["UPDATE"]


async def test_defaulter_may_refuse_and_a_failing_defaulter_refuses_with_500() -> None:
    hooks = Webhook.for_(Memcached)

    @hooks.default
    async def default(ctx: AdmissionContext[Memcached], mc: Memcached) -> None:
        if mc.spec.image == "boom":
            raise RuntimeError("bug")
        raise Denied("images are pinned", code=400)

    async with running(hooks) as server:
        refused = await admit(server, MUTATE, review("CREATE", memcached(image="x")))
        failed = await admit(server, MUTATE, review("CREATE", memcached(image="boom")))
    assert refused["allowed"] is False
    assert refused["status"] == {"metadata": {}, "status": "Failure",
                                 "message": "images are pinned", "reason": "BadRequest",
                                 "code": 400}
    assert "patch" not in refused
    assert failed["allowed"] is False
    assert failed["status"]["code"] == 500
    assert "RuntimeError('bug')" in failed["status"]["message"]


async def test_object_that_is_not_a_valid_instance_is_refused_with_400() -> None:
    hooks = Webhook.for_(Memcached)
    hooks.default(lambda ctx, mc: None)
    async with running(hooks) as server:
        response = await admit(server, MUTATE, review("CREATE", memcached(replicas=0)))
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert "replicas" in response["status"]["message"]


# -- validation --------------------------------------------------------------------------

async def test_validator_admits_with_the_warnings_it_returns() -> None:
    hooks = Webhook.for_(Memcached)

    @hooks.validate
    async def validate(ctx: AdmissionContext[Memcached], mc: Memcached,
                       old: Memcached | None, operation: str) -> list[str]:
        ctx.warn("checked by the test")
        return [f"topology {mc.spec.topology} is deprecated"]

    async with running(hooks) as server:
        response = await admit(server, VALIDATE,
                               review("CREATE", memcached(topology="replicated")))
    assert response["allowed"] is True
    assert response["warnings"] == ["checked by the test", "topology replicated is deprecated"]
    assert "patch" not in response


async def test_denial_is_a_403_status_with_the_message() -> None:
    hooks = Webhook.for_(Memcached)

    @hooks.validate
    async def validate(ctx: Any, mc: Memcached, old: Any, operation: str) -> None:
        ctx.warn("frozen since monday")
        raise Denied("memcached pools are frozen")

    async with running(hooks) as server:
        response = await admit(server, VALIDATE, review("CREATE", memcached()))
    assert response["allowed"] is False
    assert response["status"] == {"metadata": {}, "status": "Failure",
                                  "message": "memcached pools are frozen",
                                  "reason": "Forbidden", "code": 403}
    assert response["warnings"] == ["frozen since monday"]


async def test_field_denial_reads_as_the_api_servers_own_invalid_error() -> None:
    hooks = Webhook.for_(Memcached)

    @hooks.validate
    async def validate(ctx: Any, mc: Memcached, old: Any, operation: str) -> None:
        raise Denied("must be at most 64", field="spec.replicas", value=mc.spec.replicas,
                     causes=[fielderrors.required("spec.image")])

    async with running(hooks) as server:
        response = await admit(server, VALIDATE, review("CREATE", memcached(replicas=100)))
    assert response["allowed"] is False
    assert response["status"] == {
        "metadata": {}, "status": "Failure",
        "message": 'Memcached.cache.example.com "m" is invalid: [spec.replicas: Invalid '
                   'value: 100: must be at most 64, spec.image: Required value]',
        "reason": "Invalid",
        "details": {"name": "m", "group": "cache.example.com", "kind": "Memcached",
                    "causes": [
                        {"reason": "FieldValueInvalid",
                         "message": "Invalid value: 100: must be at most 64",
                         "field": "spec.replicas"},
                        {"reason": "FieldValueRequired", "message": "Required value",
                         "field": "spec.image"}]},
        "code": 422}


async def test_status_error_raised_by_a_validator_is_answered_as_it_is() -> None:
    hooks = Webhook.for_(Memcached)

    @hooks.validate
    async def validate(ctx: Any, mc: Memcached, old: Any, operation: str) -> None:
        raise conflict("memcacheds", mc.metadata.name or "", "pool is busy",
                       group="cache.example.com")

    async with running(hooks) as server:
        response = await admit(server, VALIDATE, review("CREATE", memcached()))
    assert response["status"]["code"] == 409
    assert response["status"]["reason"] == "Conflict"
    assert "kind" not in response["status"]


async def test_validator_gets_old_object_on_update_and_the_deleted_one_on_delete() -> None:
    seen: list[tuple[str, int, int | None]] = []
    hooks = Webhook.for_(Memcached)

    @hooks.validate(operations=("CREATE", "UPDATE", "DELETE"))
    async def validate(ctx: Any, mc: Memcached, old: Memcached | None, operation: str) -> None:
        seen.append((operation, mc.spec.replicas, old.spec.replicas if old else None))
        if operation == "UPDATE" and old is not None and mc.spec.replicas < old.spec.replicas:
            raise Denied("scaling down is not allowed", field="spec.replicas")

    async with running(hooks) as server:
        created = await admit(server, VALIDATE, review("CREATE", memcached(replicas=3)))
        down = await admit(server, VALIDATE,
                           review("UPDATE", memcached(replicas=2), memcached(replicas=3)))
        deleted = await admit(server, VALIDATE, review("DELETE", None, memcached(replicas=7)))
    assert seen == [("CREATE", 3, None), ("UPDATE", 2, 3), ("DELETE", 7, 7)]
    assert created["allowed"] and deleted["allowed"]
    assert down["allowed"] is False
    assert down["status"]["message"] == ('Memcached.cache.example.com "m" is invalid: '
                                         "spec.replicas: Invalid value: scaling down is "
                                         "not allowed")


async def test_deletes_are_admitted_unjudged_unless_the_validator_asks_for_them() -> None:
    calls: list[str] = []
    hooks = Webhook.for_(Memcached)
    hooks.validate(lambda ctx, mc, old, op: calls.append(op))
    async with running(hooks) as server:
        response = await admit(server, VALIDATE, review("DELETE", None, memcached()))
        connect = await admit(server, VALIDATE, review("CONNECT", {"kind": "PodExecOptions"}))
        unknown = await admit(server, VALIDATE, review("PATCH", memcached()))
    assert response["allowed"] is True and connect["allowed"] is True
    assert calls == []
    assert unknown["allowed"] is False
    assert unknown["status"] == {"metadata": {}, "message": 'unknown operation request "PATCH"',
                                 "code": 400}


async def test_context_carries_user_dry_run_namespace_name_and_options() -> None:
    seen: list[AdmissionContext[Any]] = []
    hooks = Webhook.for_(Memcached)

    @hooks.validate
    def validate(ctx: AdmissionContext[Memcached], mc: Memcached, old: Any, op: str) -> None:
        seen.append(ctx)

    async with running(hooks) as server:
        await admit(server, VALIDATE, review("CREATE", memcached("web"), dry_run=True,
                                             user="bob"))
    ctx = seen[0]
    assert (ctx.operation, ctx.namespace, ctx.name, ctx.dry_run) == (
        "CREATE", "default", "web", True)
    assert ctx.user_info.username == "bob"
    assert "system:masters" in ctx.user_info.groups
    assert ctx.kind == {"group": "cache.example.com", "version": "v1", "kind": "Memcached"}
    assert ctx.options == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert ctx.request.raw["requestResource"]["resource"] == "memcacheds"


async def test_v1beta1_reviews_are_answered_in_v1beta1() -> None:
    hooks = Webhook.for_(Memcached)
    hooks.validate(lambda ctx, mc, old, op: None)
    async with running(hooks) as server:
        response = await admit(server, VALIDATE, review(
            "CREATE", memcached(), api_version="admission.k8s.io/v1beta1"))
    assert response["allowed"] is True


# -- what is not a review ----------------------------------------------------------------

@pytest.mark.parametrize(("body", "content_type", "message"), [
    (b"", "application/json", "request body is empty"),
    (b"{}", "text/plain", "contentType=text/plain, expected application/json"),
    (b"{not json", "application/json", "couldn't decode the AdmissionReview"),
    (b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v2","request":{}}',
     "application/json", 'no kind "AdmissionReview" is registered for version '
                         '"admission.k8s.io/v2"'),
    (b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}', "application/json",
     "got an empty AdmissionReview request"),
])
async def test_a_body_that_is_not_an_admission_review_is_a_400(
        body: bytes, content_type: str, message: str) -> None:
    hooks = Webhook.for_(Memcached)
    hooks.validate(lambda ctx, mc, old, op: None)
    async with running(hooks) as server:
        status, answer = await post(server, VALIDATE, body, content_type=content_type)
    assert status == 400
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 400
    assert answer["response"]["status"]["message"].startswith(message)


async def test_only_post_on_registered_paths_is_served() -> None:
    hooks = Webhook.for_(Memcached)
    hooks.validate(lambda ctx, mc, old, op: None)
    async with running(hooks) as server:
        assert server.paths == [VALIDATE]
        status, _ = await post(server, MUTATE, review("CREATE", memcached()))
        assert status == 404
        status, _ = await post(server, VALIDATE, b"", method="GET")
        assert status == 405


def test_builder_refuses_a_second_handler_and_unknown_operations() -> None:
    hooks = Webhook.for_(Memcached)
    hooks.validate(lambda ctx, mc, old, op: None)
    with pytest.raises(ValueError, match="already has a validator"):
        hooks.validate(lambda ctx, mc, old, op: None)
    with pytest.raises(ValueError, match="operations must be some of"):
        Webhook.for_(Memcached).default(operations=("DELETE",))
    with pytest.raises(ValueError, match="neither a defaulter nor a validator"):
        Webhook.for_(Memcached).endpoints()
