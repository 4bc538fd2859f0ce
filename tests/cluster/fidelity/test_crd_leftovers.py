"""CustomResourceDefinition answers checked against apiextensions-apiserver v0.32, the
k8s.io/apiserver v0.32 CEL library and kube-openapi strfmt, over real HTTP to one server per
module. Each test writes CRDs of its own group, so the tests share the server."""

from __future__ import annotations

import asyncio
import base64
import copy
import itertools
from typing import Any

import orjson
import pytest

from setpoint.cluster.apiextensions import customresources
from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import (
    CRDS,
    create_served,
    widget,
    widget_crd,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

_groups = itertools.count()


def _crd(spec_schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    """A ``widgets`` CRD in a group no other test uses."""
    return widget_crd(f"left{next(_groups)}.example.com", spec_schema, **version)


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


# name -> (values strfmt accepts, values it refuses)
_FORMAT_CASES: dict[str, tuple[list[str], list[str]]] = {
    "isbn": (["0321751043", "978-0321751041"], ["0321751044"]),
    "isbn10": (["0-321-75104-3"], ["9780321751041"]),
    "isbn13": (["978 0321751041"], ["0321751043"]),
    "creditcard": (["4111-1111-1111-1111"], ["4111111111111112"]),
    "ssn": (["123-45-6789"], ["123456789"]),
    "hexcolor": (["#fff"], ["#ffff"]),
    "rgbcolor": (["rgb(255, 0, 10)"], ["rgb(256,0,0)"]),
    "byte": (["aGk="], ["", "aGk"]),
    "password": (["anything at all"], []),
    "uuid3": (["a987fbc9-4bed-3078-af07-9141ba07c9f3"], ["a987fbc9-4bed-4078-af07-9141ba07c9f3"]),
    "hostname": (["example.com", "bücher.de"], ["exa mple.com", "-a.com"]),
    "ipv4": (["010.1.1.1"], ["1.2.3"]),
    "ipv6": (["::ffff:1.2.3.4"], ["1.2.3.4", "fe80::1%eth0"]),
    "cidr": (["10.0.0.0/8"], ["10.0.0.0/33", "10.0.0.0"]),
    "duration": (["1h30m", "3 seconds"], ["1 fortnight"]),
    "date-time": (["2024-01-02T03:04:05Z"], ["2024-01-02"]),
}


async def test_string_formats_are_the_supported_strfmts(module_api: API) -> None:
    """apiextensions pkg/apiserver/validation/formats.go keeps only ``supportedFormats``
    (compared after go-openapi's DefaultNameNormalizer drops "-", kube-openapi
    pkg/validation/strfmt/format.go); each is checked as kube-openapi strfmt/default.go
    registers it (govalidator IsISBN/IsCreditCard/IsSSN/IsRGBcolor/IsBase64, IsHostname's
    Unicode pattern, ParseIPSloppy, ParseDuration's Scala fallback). Unsupported formats
    (int32, k8s-short-name) validate nothing."""
    props: dict[str, Any] = {
        f"f{i}": {"type": "array", "items": {"type": "string", "format": name}}
        for i, name in enumerate(_FORMAT_CASES)}
    props["loose"] = {"type": "array", "items": {"type": "string", "format": "int32"}}
    props["dashed"] = {"type": "array", "items": {"type": "string", "format": "is-bn"}}
    crd = _crd({"type": "object", "properties": props})
    path = await create_served(module_api, crd)
    good = {f"f{i}": ok for i, (ok, _) in enumerate(_FORMAT_CASES.values())}
    good |= {"loose": ["not a number"], "dashed": ["0321751043"]}
    status, body = await module_api.post(path, widget(crd, "good", good))
    assert status == 201, _causes(body) if status == 422 else body
    bad = {f"f{i}": no for i, (_, no) in enumerate(_FORMAT_CASES.values()) if no}
    bad["dashed"] = ["0321751044"]
    status, body = await module_api.post(path, widget(crd, "bad", bad))
    assert status == 422, body
    names = {f"f{i}": name for i, name in enumerate(_FORMAT_CASES)} | {"dashed": "is-bn"}
    expected = [(f"spec.{k}[{j}]", v, names[k]) for k, values in bad.items()
                for j, v in enumerate(values)]
    assert _causes(body) == [
        ("FieldValueTypeInvalid", p, f'Invalid value: "{v}": {p} in body must be of type '
                                     f'{fmt}: "{v}"') for p, v, fmt in expected]


async def test_cel_regex_functions_are_go_regexp(module_api: API) -> None:
    """CEL ``matches`` (cel-go String.Match: regexp.MatchString) and ``find``/``findAll``
    (k8s.io/apiserver pkg/cel/library/regex.go: regexp.Compile, FindString, FindAllString)
    use Go's RE2: "$" only at the end, ASCII "\\d", no empty match right after a match.
    A constant pattern Go refuses fails the CRD: cel-go's ValidateRegexLiterals (enabled by
    apiserver pkg/cel/environment/base.go) reports "invalid matches argument" at argument 0
    of matches; otherwise the program's regex optimizations (cel-go MatchesRegexOptimization
    under OptOptimize, regex.go FindRegexOptimization) fail env.Program, which apiextensions
    pkg/apiserver/schema/cel/compilation.go words "program instantiation failed".
    A pattern known only at runtime fails the rule with Go's error."""
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    for rule, field, detail in [
        ("self.s.matches('(')", "rule",
         "compilation failed: ERROR: <input>:1:16: invalid matches argument\n"
         " | self.s.matches('(')\n | ...............^"),
        ("matches(self.s, '(') && matches('[', self.s)", "rule",
         "compilation failed: ERROR: <input>:1:33: invalid matches argument\n"
         " | matches(self.s, '(') && matches('[', self.s)\n"
         " | ................................^"),
        ("matches(self.s, '(')", "rule",
         "program instantiation failed: error parsing regexp: missing closing ): `(`"),
        ("self.s.find('(?=a)') == ''", "rule",
         "program instantiation failed: error parsing regexp: invalid or unsupported Perl "
         "syntax: `(?=`"),
    ]:
        crd = _crd({"type": "object", "properties": {"s": {"type": "string"}},
                    "x-kubernetes-validations": [{"rule": rule}]})
        status, body = await module_api.post(CRDS, crd)
        assert status == 422, body
        causes = _causes(body)
        assert len(causes) == 1 and causes[0][:2] == ("FieldValueInvalid", f"{at}[0].{field}")
        assert causes[0][2].endswith(": " + detail), causes[0][2]
    crd = _crd({"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 20}, "p": {"type": "string", "maxLength": 20}},
        "x-kubernetes-validations": [
            {"rule": "!'a\\n'.matches('^a$') && !'\\u0663'.matches('\\\\d')"},
            {"rule": "'baaac'.findAll('a*') == ['', 'aaa', ''] && 'aaa'.findAll('a', 0) == []"},
            {"rule": "self.s.matches(self.p)"},
            {"rule": "self.s.find(self.p) == ''"},
            {"rule": "self.s.findAll(self.p).size() >= 0"}]})
    path = await create_served(module_api, crd)
    status, body = await module_api.post(path, widget(crd, "ok", {"s": "x", "p": "q*"}))
    assert status == 201, _causes(body) if status == 422 else body
    status, body = await module_api.post(path, widget(crd, "bad", {"s": "x", "p": "a**"}))
    assert status == 422, body
    go_error = "error parsing regexp: invalid nested repetition operator: `**`"
    assert _causes(body) == [
        ("FieldValueInvalid", "spec",
         f'Invalid value: "object": {go_error} evaluating rule: self.s.matches(self.p)'),
        ("FieldValueInvalid", "spec",
         f'Invalid value: "object": Illegal regex: {go_error} evaluating rule: '
         "self.s.find(self.p) == ''"),
        ("FieldValueInvalid", "spec",
         f'Invalid value: "object": Illegal regex: {go_error} evaluating rule: '
         "self.s.findAll(self.p).size() >= 0")]


def _refused(crd: dict[str, Any]) -> bool:
    return any(c["type"] == "Established" and c["reason"] == "InvalidCABundle"
               for c in (crd.get("status") or {}).get("conditions") or [])


def _established(crd: dict[str, Any]) -> bool:
    return any(c["type"] == "Established" and c["status"] == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


async def test_conversion_ca_bundle_is_checked_on_update_of_an_established_crd(
        module_api: API) -> None:
    """apiextensions validation.go validateCustomResourceConversion checks a set caBundle with
    apiserver pkg/util/webhook/validation.go ValidateCABundle (client-go transport
    TLSConfigFor: "unable to load root certificates: unable to parse bytes as PEM block",
    the []byte value printed with %#v) unless allowInvalidCABundle: always on create, on
    update while the old CRD is not Established or when its bundle was already invalid. The
    CRD created with the invalid bundle is never Established (establishing_controller.go:
    Established False, InvalidCABundle), so its update is allowed on both counts."""
    bad = base64.b64encode(b"not pem").decode()
    crd = _crd({"type": "object"})
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://127.0.0.1:1/convert", "caBundle": bad}}}
    lax = copy.deepcopy(crd)
    strict = copy.deepcopy(crd)
    del strict["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
    strict["metadata"]["name"] = "gadgets." + strict["spec"]["group"]
    strict["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    for created in (lax, strict):
        status, body = await module_api.post(CRDS, created)
        assert status == 201, body
    for created in (lax, strict):
        name = created["metadata"]["name"]

        async def established(name: str = name, lax: bool = created is lax
                              ) -> dict[str, Any] | None:
            current = (await module_api.get(f"{CRDS}/{name}"))[1]
            settled = _refused(current) if lax else _established(current)
            return current if settled else None

        current = await wait_for(established)
        current["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = bad
        current["metadata"].setdefault("labels", {})["touched"] = "yes"
        status, body = await module_api.put(f"{CRDS}/{name}", current)
        if created is lax:
            assert status == 200, body  # the old bundle was invalid already
            continue
        assert status == 422, body
        shown = "[]byte{" + ", ".join(hex(b) for b in b"not pem") + "}"
        assert _causes(body) == [
            ("FieldValueInvalid", "spec.conversion.webhookClientConfig.caBundle",
             f"Invalid value: {shown}: unable to load root certificates: unable to parse "
             "bytes as PEM block")]


async def test_cleanup_that_cannot_finish_reports_instance_deletion_check(
        module_api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    """pkg/controller/finalizer/crd_finalizer.go deleteInstances: when objects (held by
    finalizers) remain after its one-minute wait, the Terminating condition becomes
    InstanceDeletionCheck "could not confirm zero CustomResources remaining: timed out
    waiting for the condition" and the failed sync is retried from
    InstanceDeletionInProgress; once the objects go, the CRD goes. (The wait is shortened.)"""
    monkeypatch.setattr(customresources, "INSTANCE_DELETION_TIMEOUT_S", 0.2)
    crd = _crd({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    path = await create_served(module_api, crd)
    held = widget(crd, "held", {}) | {"metadata": {"name": "held",
                                                    "finalizers": ["example.com/hold"]}}
    assert (await module_api.post(path, held))[0] == 201
    name = crd["metadata"]["name"]
    status, current = await module_api.get(f"{CRDS}/{name}")
    url = (f"{module_api.cluster.url}{CRDS}?watch=true&fieldSelector=metadata.name%3D{name}"
           f"&resourceVersion={current['metadata']['resourceVersion']}")
    seen: list[tuple[str, str, str]] = []
    async with module_api.session.get(url, ssl=module_api.ssl) as resp:
        assert (await module_api.delete(f"{CRDS}/{name}"))[0] == 200
        while seen[-2:] != [("True", "InstanceDeletionCheck", "could not confirm zero "
                             "CustomResources remaining: timed out waiting for the condition"),
                            ("True", "InstanceDeletionInProgress",
                             "CustomResource deletion is in progress")]:
            event = orjson.loads(await asyncio.wait_for(resp.content.readline(), 30))
            cond = next((c for c in event["object"]["status"]["conditions"]
                         if c["type"] == "Terminating"), None)
            if cond is not None and (not seen or seen[-1][1] != cond["reason"]):
                seen.append((cond["status"], cond["reason"], cond["message"]))
    assert seen[0][1] == "InstanceDeletionPending"
    status, _ = await module_api.patch(f"{path}/held", {"metadata": {"finalizers": None}},
                                       "application/merge-patch+json")
    assert status == 200

    async def gone() -> bool:
        return (await module_api.get(f"{CRDS}/{name}"))[0] == 404

    await wait_for(gone)
