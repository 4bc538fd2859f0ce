"""generateName: the server retries a generated name that is taken, and reports a collision
it cannot avoid as a generate-name conflict.

Sources (kubernetes/kubernetes, release 1.32): staging/src/k8s.io/apiserver/pkg/registry/
generic/registry/store.go (createWithGenerateNameRetry, maxNameGenerationCreateAttempts = 8,
RetryGenerateName GA), staging/src/k8s.io/apiserver/pkg/registry/rest/create.go
(CheckGeneratedNameError), staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go
(NewGenerateNameConflict).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from setpoint.cluster.registry import genericstore
from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


async def test_a_taken_name_with_generate_name_is_a_generate_name_conflict(api: API) -> None:
    """A name sent beside a generateName is the one used; when it is taken the conflict is
    worded as the server's failure to generate a unique name, retry after 1 s."""
    status, _ = await api.post(CONFIGMAPS, {"metadata": {"name": "taken"}})
    assert status == 201
    status, answer = await api.post(CONFIGMAPS, {"metadata": {"name": "taken",
                                                              "generateName": "t-"}})
    assert status == 409
    assert answer["reason"] == "AlreadyExists"
    assert answer["message"] == ('configmaps "taken" already exists, the server was not able '
                                 "to generate a unique name for the object")
    assert answer["details"] == {"name": "taken", "kind": "configmaps", "retryAfterSeconds": 1}


async def test_a_generated_name_that_is_taken_is_tried_again(
        api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    """The random suffixes are made to collide: the store tries new ones (up to 8 in all);
    once all 8 collide, the answer is the generate-name conflict."""
    status, _ = await api.post(CONFIGMAPS, {"metadata": {"name": "g-aaaaa"}})
    assert status == 201
    names: Iterator[str] = iter(["g-aaaaa", "g-aaaaa", "g-bbbbb"])
    monkeypatch.setattr(genericstore, "generate_name", lambda base: next(names))
    status, created = await api.post(CONFIGMAPS, {"metadata": {"generateName": "g-"}})
    assert (status, created["metadata"]["name"]) == (201, "g-bbbbb")
    attempts: list[str] = []

    def always_taken(base: str) -> str:
        attempts.append(base)
        return "g-aaaaa"

    monkeypatch.setattr(genericstore, "generate_name", always_taken)
    status, answer = await api.post(CONFIGMAPS, {"metadata": {"generateName": "g-"}})
    assert (status, answer["reason"]) == (409, "AlreadyExists")
    assert answer["message"].endswith("the server was not able to generate a unique name for "
                                      "the object")
    assert len(attempts) == 8
