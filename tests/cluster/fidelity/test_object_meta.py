"""Object metadata validation that is not the kind's own: finalizer names.

Each test is one rule of kube-apiserver 1.32, read from the source it cites; all share one
server (``module_api``) and write objects of their own names.
"""

from __future__ import annotations

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import MERGE

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
NOT_QUALIFIED = "name is neither a standard finalizer name nor is it fully qualified"


async def test_a_finalizer_without_a_domain_is_invalid_at_its_index(module_api: API) -> None:
    """Rule: core's ValidateObjectMeta checks each finalizer without a '/' against Kubernetes'
    own (kubernetes, orphan, foregroundDeletion), one cause per finalizer at its index.
    Source: pkg/apis/core/validation/validation.go (ValidateObjectMeta:
    validateKubeFinalizerName(..., fldPath.Child("finalizers").Index(i)))."""
    status, out = await module_api.post(f"{NS}/configmaps", {"metadata": {
        "name": "fin-create", "finalizers": ["example.com/ok", "mine", "orphan", "yours"]}})
    assert (status, out["reason"], out["message"], out["details"]["causes"]) == (
        422, "Invalid",
        f'ConfigMap "fin-create" is invalid: [metadata.finalizers[1]: Invalid value: "mine": '
        f'{NOT_QUALIFIED}, metadata.finalizers[3]: Invalid value: "yours": {NOT_QUALIFIED}]',
        [{"reason": "FieldValueInvalid", "message": f'Invalid value: "mine": {NOT_QUALIFIED}',
          "field": "metadata.finalizers[1]"},
         {"reason": "FieldValueInvalid", "message": f'Invalid value: "yours": {NOT_QUALIFIED}',
          "field": "metadata.finalizers[3]"}])


async def test_an_update_adding_a_finalizer_without_a_domain_is_invalid(module_api: API) -> None:
    """Rule: ValidateObjectMetaUpdate runs the same finalizer check on the new object, and
    ValidateConfigMapUpdate then validates the new ConfigMap whole (ValidateObjectMeta again):
    the cause comes twice, as the message lists it once.
    Source: pkg/apis/core/validation/validation.go (ValidateObjectMetaUpdate,
    ValidateConfigMapUpdate: "allErrs = append(allErrs, ValidateConfigMap(newCfg)...)"),
    k8s.io/apimachinery pkg/util/validation/field/errors.go (ToAggregate drops repeats)."""
    status, out = await module_api.post(f"{NS}/configmaps", {"metadata": {"name": "fin-update"}})
    assert status == 201, out
    status, out = await module_api.patch(f"{NS}/configmaps/fin-update",
                                         {"metadata": {"finalizers": ["kubernetes", "mine"]}},
                                         MERGE)
    cause = {"reason": "FieldValueInvalid", "message": f'Invalid value: "mine": {NOT_QUALIFIED}',
             "field": "metadata.finalizers[1]"}
    assert (status, out["message"], out["details"]["causes"]) == (
        422, f'ConfigMap "fin-update" is invalid: metadata.finalizers[1]: Invalid value: "mine": '
        f"{NOT_QUALIFIED}", [cause, cause])


async def test_system_metadata_on_create_and_a_generation_the_kind_does_not_track(
        module_api: API) -> None:
    """Rule: a create wipes the system fields the client sent (uid, creationTimestamp,
    deletionTimestamp, deletionGracePeriodSeconds, selfLink) and fills uid and
    creationTimestamp; a kind whose strategy does not track generation (ConfigMap) keeps the
    generation sent, and an update cannot change it.
    Source: k8s.io/apiserver pkg/endpoints/handlers/create.go (rest.WipeObjectMetaSystemFields),
    pkg/registry/rest/meta.go (FillObjectMetaSystemFields), pkg/registry/rest/update.go
    (BeforeUpdate: "Ensure requests cannot update generation"),
    pkg/registry/core/configmap/strategy.go (PrepareForCreate)."""
    status, out = await module_api.post(f"{NS}/configmaps", {"metadata": {
        "name": "sysmeta", "generation": 7, "uid": "client-uid",
        "creationTimestamp": "2020-01-01T00:00:00Z", "selfLink": "/somewhere",
        "deletionTimestamp": "2020-01-01T00:00:00Z", "deletionGracePeriodSeconds": 5}})
    meta = out["metadata"]
    assert (status, meta["generation"], "deletionTimestamp" in meta,
            "deletionGracePeriodSeconds" in meta, "selfLink" in meta) == (
        201, 7, False, False, False)
    assert meta["uid"] != "client-uid" and meta["creationTimestamp"] != "2020-01-01T00:00:00Z"
    status, out = await module_api.patch(f"{NS}/configmaps/sysmeta",
                                         {"metadata": {"generation": 9}}, MERGE)
    assert (status, out["metadata"]["generation"]) == (200, 7)
