"""Query parameters as the parameter codec converts them: bools (force, watch,
allowWatchBookmarks, sendInitialEvents) false only when absent, "0" or "false" (any case);
int64s (limit, timeoutSeconds) by strconv.ParseInt, its error the 400's message.

Each test is one rule of kube-apiserver 1.32, read from the source it cites; all share one
server (``module_api``) and write objects of their own names.
"""

from __future__ import annotations

import orjson
import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import APPLY, MERGE, create_configmap, failure

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"


@pytest.mark.parametrize(("value", "forced"), [
    ("yes", True), ("", True), ("TRUE", True), ("FALSE", False), ("0", False)])
async def test_force_is_true_unless_false_or_zero(module_api: API, value: str,
                                                  forced: bool) -> None:
    """Rule: PatchOptions.force is a *bool decoded from the query: absent, "0" and "false"
    in any case are false, anything else (the empty value and "yes" included) is true.
    Source: k8s.io/apimachinery v0.32 pkg/runtime/conversion.go
    (Convert_Slice_string_To_Pointer_bool), k8s.io/apiserver pkg/endpoints/handlers/patch.go
    (PatchResource: "force" read from PatchOptions). A non-apply patch is refused whatever
    the value: PatchOptions.Force is a pointer, set by any value (zz_generated.conversion.go
    autoConvert_url_Values_To_v1_PatchOptions), and ValidatePatchOptions forbids it when not
    nil (pkg/apis/meta/v1/validation/validation.go)."""
    name = f"force-{value.lower() or 'empty'}"
    await create_configmap(module_api, name)
    path = f"{NS}/configmaps/{name}"
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: '2'\n"
    status, out = await module_api.patch(f"{path}?fieldManager=applier&force={value}", None,
                                         APPLY, raw=body.encode())
    assert (status, status == 200 and out["data"]["a"]) == ((200, "2") if forced else
                                                            (409, False))
    status, out = await module_api.patch(f"{path}?force={value}", {"data": {"b": "1"}}, MERGE)
    assert (status, out) == (422, failure(
        422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
        "specified for non-apply patch", {"group": "meta.k8s.io", "kind": "PatchOptions",
                                          "causes": [{"reason": "FieldValueForbidden",
                                                      "message": "Forbidden: may not be "
                                                      "specified for non-apply patch",
                                                      "field": "force"}]}))


async def test_a_collection_get_with_watch_yes_is_a_watch(module_api: API) -> None:
    """Rule: a collection's GET is a watch when ListOptions.watch decodes true, which any
    value but "0" and "false" does; the watch ends at timeoutSeconds.
    Source: k8s.io/apimachinery v0.32 pkg/runtime/conversion.go (Convert_Slice_string_To_bool),
    k8s.io/apiserver pkg/endpoints/request/requestinfo.go (NewRequestInfo: verb "watch" when
    opts.Watch), pkg/endpoints/handlers/get.go (ListResource: "if opts.Watch || forceWatch")."""
    await create_configmap(module_api, "watch-yes")
    status, text = await module_api.get(
        f"{NS}/configmaps?watch=yes&timeoutSeconds=1&fieldSelector=metadata.name%3Dwatch-yes")
    events = [orjson.loads(line) for line in text.splitlines() if line] \
        if isinstance(text, str) else [text]
    assert (status, [(e["type"], e["object"]["metadata"]["name"]) for e in events]) == (
        200, [("ADDED", "watch-yes")])


async def test_a_named_get_ignores_the_watch_parameter(module_api: API) -> None:
    """Rule: a GET of one object is GetResource, which reads only GetOptions: "watch=true"
    on it returns the object once (only the deprecated /watch/ prefix watches one name).
    Source: k8s.io/apiserver pkg/endpoints/request/requestinfo.go (NewRequestInfo: list or
    watch only "if len(requestInfo.Name) == 0"), pkg/endpoints/installer.go (the item "GET"
    route: restfulGetResource), pkg/endpoints/handlers/get.go (GetResource)."""
    await create_configmap(module_api, "named-watch")
    status, out = await module_api.get(f"{NS}/configmaps/named-watch?watch=true")
    assert (status, out["kind"], out["metadata"]["name"]) == (200, "ConfigMap", "named-watch")


@pytest.mark.parametrize(("query", "message"), [
    ("limit=abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("limit=", 'strconv.ParseInt: parsing "": invalid syntax'),
    ("limit=99999999999999999999", 'strconv.ParseInt: parsing "99999999999999999999": '
     "value out of range"),
    ("limit=x&timeoutSeconds=y", 'strconv.ParseInt: parsing "y": invalid syntax'),
    ("watch=1&timeoutSeconds=1.5", 'strconv.ParseInt: parsing "1.5": invalid syntax'),
])
async def test_a_list_option_that_is_no_int64_is_strconvs_error(module_api: API, query: str,
                                                                 message: str) -> None:
    """Rule: ListOptions are decoded from the query field by field in their declared order
    (timeoutSeconds before limit), each int64 by strconv.ParseInt; the first error is a 400
    BadRequest with its text alone.
    Source: k8s.io/apimachinery v0.32 pkg/apis/meta/v1/zz_generated.conversion.go
    (autoConvert_url_Values_To_v1_ListOptions), pkg/runtime/conversion.go
    (Convert_Slice_string_To_int64, _To_Pointer_int64), k8s.io/apiserver
    pkg/endpoints/handlers/get.go (ListResource: DecodeParameters error -> NewBadRequest)."""
    assert await module_api.get(f"{NS}/configmaps?{query}") == (400, failure(
        400, "BadRequest", message))


def _invalid_options(kind: str, causes: list[tuple[str, str, str]]) -> dict[str, object]:
    text = ", ".join(f"{field}: {message}" for _, message, field in causes)
    return failure(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: '
                   + (f"[{text}]" if len(causes) > 1 else text),
                   {"group": "meta.k8s.io", "kind": kind,
                    "causes": [{"reason": r, "message": m, "field": f} for r, m, f in causes]})


async def test_write_options_are_validated_in_apimachinerys_order(module_api: API) -> None:
    """Rule: ValidatePatchOptions checks force (non-apply) or a missing fieldManager (apply)
    first, then ValidateFieldManager (at most 128 bytes: field.TooLong's "may not be more
    than 128 bytes"; every character printable, "invalid character %#U (at position %d)"),
    then dryRun (any value but "All", the empty one too, as a []string), then
    fieldValidation; Create/UpdateOptions the same from ValidateFieldManager on, and a
    create takes no notice of ``force``.
    Source: k8s.io/apimachinery v0.32 pkg/apis/meta/v1/validation/validation.go
    (ValidatePatchOptions, ValidateCreateOptions, ValidateFieldManager, ValidateDryRun,
    ValidateFieldValidation), pkg/util/validation/field/errors.go (TooLong)."""
    await create_configmap(module_api, "options-order")
    path = f"{NS}/configmaps/options-order"
    long = "m" * 129
    status, out = await module_api.patch(
        f"{path}?fieldValidation=Loud&dryRun=&fieldManager={long}&force=false",
        {"data": {"b": "1"}}, MERGE)
    assert (status, out) == (422, _invalid_options("PatchOptions", [
        ("FieldValueForbidden", "Forbidden: may not be specified for non-apply patch", "force"),
        ("FieldValueTooLong", "Too long: may not be more than 128 bytes", "fieldManager"),
        ("FieldValueNotSupported", 'Unsupported value: []string{""}: supported values: "All"',
         "dryRun"),
        ("FieldValueNotSupported", 'Unsupported value: "Loud": supported values: "", '
         '"Ignore", "Strict", "Warn"', "fieldValidation")]))
    status, out = await module_api.post(
        f"{NS}/configmaps?fieldManager=a%07%C3%A9%08&force=true",
        {"metadata": {"name": "options-bell"}})
    assert (status, out) == (422, _invalid_options("CreateOptions", [
        ("FieldValueInvalid", 'Invalid value: "a\\aé\\b": invalid character U+0007 '
         "(at position 1)", "fieldManager"),
        ("FieldValueInvalid", 'Invalid value: "a\\aé\\b": invalid character U+0008 '
         "(at position 4)", "fieldManager")]))
    status, out = await module_api.post(f"{NS}/configmaps?force=true",
                                        {"metadata": {"name": "options-forced-create"}})
    assert status == 201, out
