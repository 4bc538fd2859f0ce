"""Admission webhooks against kube-apiserver 1.32: the review sent, the answers refused and
the messages given (k8s.io/apiserver pkg/admission/plugin/webhook)."""

from __future__ import annotations

import asyncio
import base64

import orjson
from aiohttp import web

from tests.cluster.conftest import API
from tests.cluster.test_admission_webhooks import CMS, Obj, cm, configure, webhook
from tests.hookserver import Hooks


def _tls(hooks: Hooks, path: str) -> Obj:
    return {"url": hooks.url(path), "caBundle": hooks.ca_bundle}


def _b64(value: object) -> str:
    return base64.b64encode(orjson.dumps(value)).decode()


async def test_a_webhook_that_lists_v1beta1_first_is_sent_a_v1beta1_review(
        api: API, hooks: Hooks) -> None:
    """Rule: the review is sent at the first of the webhook's admissionReviewVersions the
    server knows (v1, v1beta1); a v1beta1 answer's uid and patchType are not checked, and a
    patch in it is a JSON Patch.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/request/admissionreview.go
    (CreateAdmissionObjects, VerifyAdmissionResponse's v1beta1 case)."""
    hooks.on("/mutate", lambda r: {"allowed": True, "uid": "anything",
                                   "patch": _b64([{"op": "add", "path": "/data/seen",
                                                   "value": r["kind"]["kind"]}])})
    await configure(api, "Mutating", "old-style", webhook(
        "old.example.com", _tls(hooks, "/mutate"), admissionReviewVersions=["v1beta1", "v1"]))
    status, created = await api.post(CMS, cm("beta"))
    assert status == 201, created
    assert created["data"] == {"k": "v", "seen": "ConfigMap"}
    [call] = hooks.calls["/mutate"]
    assert call["review"]["apiVersion"] == "admission.k8s.io/v1beta1"
    assert call["review"]["request"]["operation"] == "CREATE"
    assert (await api.delete(f"{CMS}/beta"))[0] == 200


async def test_a_validating_webhook_returning_a_patch_is_refused_for_the_patch(
        api: API, hooks: Hooks) -> None:
    """Rule: a validating webhook's response.patch is refused before its patchType
    ("validating webhook may not return response.patch"), whether patchType is there or not.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/request/admissionreview.go
    (VerifyAdmissionResponse, mutating=false); validating/dispatcher.go ("received invalid
    webhook response: %w", then NewInternalError in Dispatch)."""
    answers = iter([{"allowed": True, "patch": _b64([])},
                    {"allowed": True, "patch": _b64([]), "patchType": "JSONPatch"}])
    hooks.on("/validate", lambda r: next(answers))
    await configure(api, "Validating", "patcher", webhook(
        "patcher.example.com", _tls(hooks, "/validate")))
    for _ in range(2):
        status, body = await api.post(CMS, cm("vp"))
        assert status == 500, body
        assert body["message"] == (
            'Internal error occurred: failed calling webhook "patcher.example.com": received '
            "invalid webhook response: validating webhook may not return response.patch")


async def test_the_response_uid_is_checked_before_its_kind(api: API, hooks: Hooks) -> None:
    """Rule: VerifyAdmissionResponse checks response presence, then response.uid, then the
    review's group/version/kind.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/request/admissionreview.go."""
    hooks.on("/validate", lambda r: web.json_response({
        "apiVersion": "admission.k8s.io/v1", "kind": "Other",
        "response": {"uid": "wrong", "allowed": True}}))
    await configure(api, "Validating", "confused", webhook(
        "confused.example.com", _tls(hooks, "/validate")))
    status, body = await api.post(CMS, cm("u"))
    assert status == 500
    assert 'received invalid webhook response: expected response.uid="' in body["message"]
    assert body["message"].endswith('got "wrong"')


async def test_a_webhook_answering_an_http_error_is_reported_as_client_go_words_it(
        api: API, hooks: Hooks) -> None:
    """Rule: a non-2xx answer that is not a Status becomes client-go's generic server
    response ("an error on the server (%q) has prevented the request from succeeding" for
    a 500 with a text body; the fixed text of its code otherwise); a Status answer gives its
    own message; either way the webhook call failed (failurePolicy applies): 500 InternalError.
    Source: k8s.io/client-go rest/request.go (transformResponse,
    newUnstructuredResponseError), k8s.io/apimachinery pkg/api/errors/errors.go
    (NewGenericServerResponse); k8s.io/apiserver pkg/admission/plugin/webhook/validating/
    dispatcher.go ("failed to call webhook: %w")."""
    answers = iter([
        web.Response(status=500, text="boom\n"),
        web.json_response({"kind": "Other"}, status=503),
        web.json_response({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                           "code": 409, "reason": "Conflict", "message": "busy"},
                          status=409),
    ])
    hooks.on("/validate", lambda r: next(answers))
    await configure(api, "Validating", "erring", webhook(
        "erring.example.com", _tls(hooks, "/validate")))
    prefix = 'Internal error occurred: failed calling webhook "erring.example.com": ' \
             "failed to call webhook: "
    for expected in ['an error on the server ("boom") has prevented the request from '
                     "succeeding",
                     "the server is currently unable to handle the request",
                     "busy"]:
        status, body = await api.post(CMS, cm("e"))
        assert (status, body["reason"]) == (500, "InternalError"), body
        assert body["message"] == prefix + expected


async def test_a_webhook_past_its_timeout_fails_the_call_as_a_deadline(
        api: API, hooks: Hooks) -> None:
    """Rule: timeoutSeconds bounds the call (sent as ?timeout=Ns); past it the call fails
    with the context's deadline, a 500 unless failurePolicy is Ignore.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/validating/dispatcher.go
    (context.WithTimeout, r.Timeout, "failed to call webhook: %w", NewInternalError)."""
    release = asyncio.Event()

    async def stall(request: Obj) -> Obj:
        await release.wait()
        return {"allowed": True}

    hooks.on("/validate", stall)
    url = hooks.url("/validate")
    await configure(api, "Validating", "slow", webhook(
        "slow.example.com", _tls(hooks, "/validate"), timeoutSeconds=1))
    try:
        status, body = await api.post(CMS, cm("t"))
    finally:
        release.set()
    assert (status, body["reason"]) == (500, "InternalError"), body
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call '
        f'webhook: Post "{url}?timeout=1s": context deadline exceeded')


async def test_a_false_match_condition_skips_the_webhook_even_after_another_one_erred(
        api: API, hooks: Hooks) -> None:
    """Rule: every match condition is evaluated; any false one means the webhook is not
    called, errors count only when none is false, and then fail closed as a 403 (unless
    failurePolicy is Ignore).
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/matchconditions/matcher.go
    (Match); generic/webhook.go (ShouldCallHook: NewForbidden(resource, name, err))."""
    hooks.on("/validate", lambda r: {"allowed": False})
    erring = {"name": "erring", "expression": "object.data.missing == 'x'"}
    await configure(api, "Validating", "conditional", webhook(
        "conditional.example.com", _tls(hooks, "/validate"),
        matchConditions=[erring, {"name": "never", "expression": "false"}]))
    status, body = await api.post(CMS, cm("mc"))
    assert status == 201, body
    assert hooks.calls["/validate"] == []
    assert (await api.delete(f"{CMS}/mc"))[0] == 200

    await configure(api, "Validating", "erring", webhook(
        "erring.example.com", _tls(hooks, "/validate"), matchConditions=[
            erring, {"name": "other", "expression": "object.data.other == 'x'"}]))
    status, body = await api.post(CMS, cm("mc2"))
    assert (status, body["reason"]) == (403, "Forbidden"), body
    assert body["message"] == (
        'configmaps "mc2" is forbidden: [expression \'object.data.missing == \'x\'\' resulted '
        "in error: no such key: missing, expression 'object.data.other == 'x'' resulted in "
        "error: no such key: other]")


async def test_a_patch_that_is_not_json_fails_the_write_whatever_the_failure_policy(
        api: API, hooks: Hooks) -> None:
    """Rule: a mutating webhook's patch that does not decode as a JSON Patch, or does not
    apply, is an internal error of the write, not a failed call: failurePolicy Ignore does
    not skip it.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/mutating/dispatcher.go
    (callAttrMutatingHook: jsonpatch.DecodePatch / patchObj.Apply errors returned as
    apierrors.NewInternalError, outside ErrCallingWebhook)."""
    answers = iter([
        {"allowed": True, "patchType": "JSONPatch",
         "patch": base64.b64encode(b"not json").decode()},
        {"allowed": True, "patchType": "JSONPatch",
         "patch": _b64([{"op": "remove", "path": "/data/absent"}])},
    ])
    hooks.on("/mutate", lambda r: next(answers))
    await configure(api, "Mutating", "garbled", webhook(
        "garbled.example.com", _tls(hooks, "/mutate"), failurePolicy="Ignore"))
    for _ in range(2):
        status, body = await api.post(CMS, cm("g"))
        assert (status, body["reason"]) == (500, "InternalError"), body
        assert body["message"].startswith("Internal error occurred: ")
    assert (await api.get(f"{CMS}/g"))[0] == 404


async def test_a_denial_comes_before_the_patch_type_is_looked_at(
        api: API, hooks: Hooks) -> None:
    """Rule: an unsupported patchType is refused only for an allowed answer with a patch; a
    denial is a denial.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/mutating/dispatcher.go
    (!result.Allowed checked, then jsonpatch.DecodePatch, then the switch on
    result.PatchType, whose default is 'unsupported patch type %q' as ErrCallingWebhook)."""
    answers = iter([
        {"allowed": False, "patchType": "MergePatch", "patch": _b64({}),
         "status": {"message": "no"}},
        {"allowed": True, "patchType": "MergePatch", "patch": _b64({"data": {}})},
        {"allowed": True, "patchType": "MergePatch",
         "patch": _b64([{"op": "add", "path": "/data/x", "value": "y"}])},
    ])
    hooks.on("/mutate", lambda r: next(answers))
    await configure(api, "Mutating", "merger", webhook(
        "merger.example.com", _tls(hooks, "/mutate")))
    status, body = await api.post(CMS, cm("d"))
    assert status == 400, body
    assert body["message"] == 'admission webhook "merger.example.com" denied the request: no'
    # the patch is decoded as a JSON Patch first, whatever its type says
    status, body = await api.post(CMS, cm("d"))
    assert status == 500, body
    assert body["message"] == ("Internal error occurred: json: cannot unmarshal object into "
                               "Go value of type jsonpatch.Patch")
    status, body = await api.post(CMS, cm("d"))
    assert status == 500, body
    assert body["message"] == ('Internal error occurred: failed calling webhook '
                               '"merger.example.com": unsupported patch type "MergePatch"')


async def test_an_events_k8s_io_event_meets_a_rule_on_core_events_as_a_core_event(
        api: API, hooks: Hooks) -> None:
    """Rule: under matchPolicy Equivalent a rule matches the resources that share the
    request's storage, across groups (events.k8s.io events cohabit with core events); the
    webhook is sent the equivalent kind/resource and object, and the request's own as
    requestKind/requestResource.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go (ShouldCallHook,
    EquivalentResourcesFor); request/admissionreview.go (CreateV1AdmissionReview);
    kubernetes pkg/kubeapiserver/default_storage_factory_builder.go (cohabiting events)."""
    hooks.on("/validate", lambda r: {"allowed": True})
    await configure(api, "Validating", "core-events", webhook(
        "events.example.com", _tls(hooks, "/validate"),
        rules=[{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["events"]}]))
    status, body = await api.post("/apis/events.k8s.io/v1/namespaces/default/events", {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev"},
        "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "x/y",
        "reportingInstance": "i", "action": "Act", "reason": "Why", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "note": "hi"})
    assert status == 201, body
    [call] = hooks.calls["/validate"]
    request = call["review"]["request"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Event"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "events"}
    assert request["requestKind"] == {"group": "events.k8s.io", "version": "v1",
                                      "kind": "Event"}
    assert request["requestResource"] == {"group": "events.k8s.io", "version": "v1",
                                          "resource": "events"}
    assert request["object"]["apiVersion"] == "v1"
    assert request["object"]["message"] == "hi"
    assert request["object"]["involvedObject"]["name"] == "p"


async def test_a_namespace_is_its_own_namespace_once_it_is_named_in_the_path(
        api: API, hooks: Hooks) -> None:
    """Rule: the review's namespace is the request's, from its path: absent for a created
    Namespace (POST /api/v1/namespaces), the Namespace's own name for a request to
    /api/v1/namespaces/<name> (update, delete); other cluster-scoped objects have none.
    Source: k8s.io/apiserver pkg/endpoints/request/requestinfo.go (/namespaces/{namespace}
    sets requestInfo.Namespace), pkg/endpoints/handlers/namer.go (ContextBasedNaming.Name
    returns requestInfo.Namespace), plugin/webhook/request/admissionreview.go
    (Namespace: attr.GetNamespace(), omitempty)."""
    hooks.on("/validate", lambda r: {"allowed": True})
    await configure(api, "Validating", "namespaces", webhook(
        "ns.example.com", _tls(hooks, "/validate"),
        rules=[{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"],
                "resources": ["namespaces", "persistentvolumes"]}]))
    assert (await api.post("/api/v1/namespaces", {"metadata": {"name": "audited"}}))[0] == 201
    status, _ = await api.patch("/api/v1/namespaces/audited",
                                {"metadata": {"labels": {"a": "b"}}},
                                "application/merge-patch+json")
    assert status == 200
    assert (await api.delete("/api/v1/namespaces/audited"))[0] == 200
    status, _ = await api.post("/api/v1/persistentvolumes", {
        "metadata": {"name": "audited-pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp/audited-pv"}}})
    assert status == 201
    assert (await api.delete("/api/v1/persistentvolumes/audited-pv"))[0] == 200
    seen = [(c["review"]["request"]["operation"], c["review"]["request"]["name"],
             c["review"]["request"].get("namespace")) for c in hooks.calls["/validate"]]
    assert seen == [("CREATE", "audited", None), ("UPDATE", "audited", "audited"),
                    ("DELETE", "audited", "audited"), ("CREATE", "audited-pv", None),
                    ("DELETE", "audited-pv", None)]


async def test_a_dry_run_create_is_sent_with_its_options(api: API, hooks: Hooks) -> None:
    """Rule: the review's options are the request's CreateOptions as the query gave them
    (dryRun, fieldManager, fieldValidation), as meta.k8s.io/v1; the manager taken from the
    User-Agent when none is given is for managedFields only, never written into them.
    Source: k8s.io/apiserver pkg/endpoints/handlers/create.go (options GVK CreateOptions,
    managerOrUserAgent(options.FieldManager, ...) passed to the field manager only);
    request/admissionreview.go (Options: attr.GetOperationOptions())."""
    hooks.on("/validate", lambda r: {"allowed": True})
    await configure(api, "Validating", "opts", webhook(
        "opts.example.com", _tls(hooks, "/validate")))
    query = "dryRun=All&fieldValidation=Strict&fieldManager=auditor"
    assert (await api.post(f"{CMS}?{query}", cm("dr")))[0] == 201
    request = hooks.calls["/validate"][-1]["review"]["request"]
    assert request["dryRun"] is True
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                  "dryRun": ["All"], "fieldManager": "auditor",
                                  "fieldValidation": "Strict"}
    assert (await api.post(f"{CMS}?dryRun=All", cm("dr")))[0] == 201
    assert hooks.calls["/validate"][-1]["review"]["request"]["options"] == {
        "kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]}


async def test_an_autoscaling_v1_hpa_meets_a_v2_webhook_converted_both_ways(
        api: API, hooks: Hooks) -> None:
    """Rule: a request at autoscaling/v1 matched by a rule for autoscaling/v2 only (matchPolicy
    Equivalent) is sent the object converted to v2 (metrics, not
    targetCPUUtilizationPercentage), with kind/resource v2 and requestKind/requestResource
    v1; its patch applies to the v2 object, which converts back. matchPolicy Exact skips it.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go (ShouldCallHook),
    generic/conversion.go (ConvertVersionedAttributes), mutating/dispatcher.go (patch applied
    to attr.VersionedObject, then converted back)."""
    def raise_target(request: Obj) -> Obj:
        return {"allowed": True, "patchType": "JSONPatch", "patch": _b64([
            {"op": "replace", "path": "/spec/maxReplicas", "value": 7},
            {"op": "replace", "path": "/spec/metrics/0/resource/target/averageUtilization",
             "value": 60}])}

    hooks.on("/mutate", raise_target)
    v2_rule = [{"apiGroups": ["autoscaling"], "apiVersions": ["v2"], "operations": ["CREATE"],
                "resources": ["horizontalpodautoscalers"]}]
    await configure(api, "Mutating", "hpa-v2", webhook(
        "hpa.example.com", _tls(hooks, "/mutate"), rules=v2_rule))
    await configure(api, "Validating", "hpa-exact", webhook(
        "exact.example.com", _tls(hooks, "/validate"), rules=v2_rule, matchPolicy="Exact"))
    hpas = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    status, created = await api.post(hpas, {
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"},
                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}})
    assert status == 201, created
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"]["maxReplicas"] == 7
    assert created["spec"]["targetCPUUtilizationPercentage"] == 60
    [call] = hooks.calls["/mutate"]
    request = call["review"]["request"]
    assert request["kind"] == {"group": "autoscaling", "version": "v2",
                               "kind": "HorizontalPodAutoscaler"}
    assert request["resource"]["version"] == "v2"
    assert request["requestKind"]["version"] == "v1"
    assert request["requestResource"]["version"] == "v1"
    sent = request["object"]
    assert sent["apiVersion"] == "autoscaling/v2"
    assert "targetCPUUtilizationPercentage" not in sent["spec"]
    assert sent["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50
    assert "/validate" not in hooks.calls
    assert (await api.delete(f"{hpas}/web"))[0] == 200


async def test_a_webhook_certificate_not_signed_by_the_ca_bundle_fails_as_x509_says(
        api: API, hooks: Hooks) -> None:
    """Rule: a caBundle that is no PEM fails building the client ("could not get REST client:
    unable to load root certificates: unable to parse bytes as PEM block"); a certificate the
    bundle (or, without one, the system roots) does not sign fails the TLS handshake with
    x509's "certificate signed by unknown authority". Both are failed calls: 500.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/validating/dispatcher.go
    (GetRESTClient error, "failed to call webhook: %w"); k8s.io/client-go transport/
    transport.go (rootCertPool, createErrorParsingCAData); Go crypto/x509
    UnknownAuthorityError."""
    hooks.on("/validate", lambda r: {"allowed": True})
    url = hooks.url("/validate")
    not_pem = base64.b64encode(b"not a certificate").decode()
    await configure(api, "Validating", "bad-bundle", webhook(
        "bundle.example.com", {"url": url, "caBundle": not_pem}))
    status, body = await api.post(CMS, cm("x509"))
    assert (status, body["reason"]) == (500, "InternalError"), body
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "bundle.example.com": could not get '
        "REST client: unable to load root certificates: unable to parse bytes as PEM block")
    status, _ = await api.delete(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/bad-bundle")
    assert status == 200

    await configure(api, "Validating", "no-bundle", webhook(
        "nobundle.example.com", {"url": url}))
    status, body = await api.post(CMS, cm("x509"))
    assert (status, body["reason"]) == (500, "InternalError"), body
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "nobundle.example.com": failed to '
        f'call webhook: Post "{url}?timeout=10s": tls: failed to verify certificate: x509: '
        "certificate signed by unknown authority")
    assert hooks.calls["/validate"] == []


async def test_a_pod_delete_is_sent_the_options_its_graceful_deletion_settled(
        api: API, hooks: Hooks) -> None:
    """Rule: delete admission (mutating and validating) runs in the store's
    deleteValidation, after rest.BeforeDelete: it is sent the grace period BeforeDelete
    settled (an unscheduled pod: 0; a scheduled one: its terminationGracePeriodSeconds), and
    is not called at all for a deletion already pending that the request does not shorten.
    Source: k8s.io/apiserver pkg/registry/generic/registry/store.go (Delete: BeforeDelete,
    pendingGraceful -> finalizeDelete, else deleteValidation with the same options),
    pkg/registry/rest/delete.go (BeforeDelete, AdmissionToValidateObjectDeleteFunc),
    pkg/endpoints/handlers/delete.go; kubernetes pkg/registry/core/pod/strategy.go
    (CheckGracefulDelete)."""
    hooks.on("/mutate", lambda r: {"allowed": True})
    hooks.on("/validate", lambda r: {"allowed": True})
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
              "resources": ["pods"]}]
    await configure(api, "Mutating", "pod-deletes-m", webhook(
        "deletes-m.example.com", _tls(hooks, "/mutate"), rules=rules))
    await configure(api, "Validating", "pod-deletes", webhook(
        "deletes.example.com", _tls(hooks, "/validate"), rules=rules))
    pods = "/api/v1/namespaces/default/pods"
    for name, node in (("graceful", None), ("scheduled", "audit-node")):
        spec: Obj = {"containers": [{"name": "c", "image": "busybox"}],
                     "terminationGracePeriodSeconds": 20}
        if node:
            spec["nodeName"] = node
        status, body = await api.post(pods, {"apiVersion": "v1", "kind": "Pod",
                                             "metadata": {"name": name}, "spec": spec})
        assert status == 201, body
    assert (await api.delete(f"{pods}/graceful"))[0] == 200
    assert (await api.delete(f"{pods}/scheduled"))[0] == 200  # now terminating, 20 s
    assert (await api.delete(f"{pods}/scheduled"))[0] == 200  # pending: no admission
    assert (await api.delete(f"{pods}/scheduled?gracePeriodSeconds=0"))[0] == 200
    assert (await api.get(f"{pods}/scheduled"))[0] == 404
    options = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
    expected = [(("graceful", {**options, "gracePeriodSeconds": 0})),
                ("scheduled", {**options, "gracePeriodSeconds": 20}),
                ("scheduled", {**options, "gracePeriodSeconds": 0})]
    for path in ("/mutate", "/validate"):
        sent = [(c["review"]["request"]["name"], c["review"]["request"]["options"])
                for c in hooks.calls[path]]
        assert sent == expected, path


async def test_an_exec_is_admitted_as_a_connect_of_its_options(
        api: API, hooks: Hooks) -> None:
    """Rule: pods/exec (attach, portforward) is a CONNECT: before anything else the webhooks
    are sent its PodExecOptions as the object, no oldObject and no options; a denial
    refuses the stream.
    Source: k8s.io/apiserver pkg/endpoints/handlers/rest.go (ConnectResource:
    NewAttributesRecord(opts, nil, ..., admission.Connect, nil, false, userInfo) for the
    mutating then the validating admission); request/admissionreview.go."""
    hooks.on("/validate", lambda r: {"allowed": False, "status": {"message": "no shells"}})
    await configure(api, "Validating", "no-exec", webhook(
        "noexec.example.com", _tls(hooks, "/validate"),
        rules=[{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CONNECT"],
                "resources": ["pods/exec"]}]))
    pods = "/api/v1/namespaces/default/pods"
    status, body = await api.post(
        f"{pods}/shell/exec?command=ls&command=-l&stdout=true&stdin=false&container=c", None)
    assert status == 400, body
    assert body["message"] == 'admission webhook "noexec.example.com" denied the request: ' \
                              "no shells"
    [call] = hooks.calls["/validate"]
    request = call["review"]["request"]
    assert request["operation"] == "CONNECT" and request["subResource"] == "exec"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["name"] == "shell" and request["namespace"] == "default"
    assert request["object"] == {"kind": "PodExecOptions", "apiVersion": "v1",
                                 "stdout": True, "container": "c", "command": ["ls", "-l"]}
    assert request["oldObject"] is None and request["options"] is None


async def test_a_denial_is_a_failure_of_at_least_400_with_the_webhooks_details(
        api: API, hooks: Hooks) -> None:
    """Rule: a denial keeps the webhook's status (reason, details) but its code is at least
    400 and its status Failure, whatever the webhook said.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/errors/statuserror.go
    (ToStatusErr)."""
    causes = [{"reason": "FieldValueInvalid", "message": "bad", "field": "data.k"}]
    answers = iter([
        {"allowed": False, "status": {"status": "Success", "code": 200, "message": "m",
                                      "details": {"causes": causes}}},
        {"allowed": False, "status": {"code": 422, "reason": "Invalid"}},
    ])
    hooks.on("/validate", lambda r: next(answers))
    await configure(api, "Validating", "strict", webhook(
        "strict.example.com", _tls(hooks, "/validate")))
    status, body = await api.post(CMS, cm("denied"))
    assert status == 400, body
    assert (body["status"], body["code"]) == ("Failure", 400)
    assert body["message"] == 'admission webhook "strict.example.com" denied the request: m'
    assert body["details"]["causes"] == causes
    status, body = await api.post(CMS, cm("denied"))
    assert (status, body["reason"], body["code"]) == (422, "Invalid", 422), body
    assert body["message"] == ('admission webhook "strict.example.com" denied the request: '
                               "Invalid")


async def test_a_missing_service_fails_the_call_to_the_services_own_url(
        api: API, hooks: Hooks) -> None:
    """Rule: a webhook behind a Service is called at https://<name>.<namespace>.svc:<port>
    <path>, the Service resolved only when dialling: a missing one fails that POST.
    Source: k8s.io/apiserver pkg/util/webhook/client.go (HookClient: cfg.Host and cfg.Dial
    through serviceResolver.ResolveEndpoint), pkg/util/proxy (ResolveCluster: the lister's
    NotFound); validating/dispatcher.go ("failed to call webhook: %w")."""
    hooks.on("/svc", lambda r: {"allowed": True})
    await configure(api, "Validating", "missing-svc", webhook(
        "svc.example.com", {"service": {"namespace": "default", "name": "missing",
                                        "path": "/svc"}, "caBundle": hooks.ca_bundle}))
    status, body = await api.post(CMS, cm("svc"))
    assert (status, body["reason"]) == (500, "InternalError"), body
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "svc.example.com": failed to call '
        'webhook: Post "https://missing.default.svc:443/svc?timeout=10s": service "missing" '
        "not found")


async def test_only_a_patch_that_changes_the_object_reinvokes(
        api: API, hooks: Hooks) -> None:
    """Rule: a patched object counts as changed only if it differs from what the webhook was
    sent, so a patch that changes nothing reinvokes no IfNeeded webhook.
    Source: k8s.io/apiserver pkg/admission/plugin/webhook/mutating/dispatcher.go
    (callAttrMutatingHook: jsonSerializer.Decode, changed = !Semantic.DeepEqual(...),
    o.GetObjectDefaulter().Default; Dispatch: RequireReinvokingPreviouslyInvokedPlugins only
    when changed)."""
    hooks.on("/first", lambda r: {"allowed": True})
    hooks.on("/second", lambda r: {"allowed": True, "patchType": "JSONPatch", "patch": _b64([
        {"op": "replace", "path": "/spec/restartPolicy", "value": "Always"}])})
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
              "resources": ["pods"]}]
    await configure(api, "Mutating", "a-first", webhook(
        "first.example.com", _tls(hooks, "/first"), rules=rules,
        reinvocationPolicy="IfNeeded"))
    await configure(api, "Mutating", "b-second", webhook(
        "second.example.com", _tls(hooks, "/second"), rules=rules))
    pods = "/api/v1/namespaces/default/pods"
    status, created = await api.post(pods, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "defaulted"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert status == 201, created
    assert created["spec"]["restartPolicy"] == "Always"
    assert len(hooks.calls["/second"]) == 1
    assert len(hooks.calls["/first"]) == 1  # nothing changed: not reinvoked
    assert (await api.delete(f"{pods}/defaulted?gracePeriodSeconds=0"))[0] == 200
