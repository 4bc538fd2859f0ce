"""A Job's ``/status`` writes held to kube-apiserver 1.32's transition rules.

Sources: pkg/registry/batch/job/strategy.go ``getStatusValidationOptions`` (JobManagedBy is
beta and on in 1.32: counters never decrease, terminal conditions stay, completion and
start times follow the conditions, a finished Job has no active or uncounted pods; most
rules only when the fields they judge change) and pkg/apis/batch/validation/validation.go
``validateJobStatus``/``ValidateJobStatusUpdate`` for the words.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

JOBS = "/apis/batch/v1/namespaces/default/jobs"
START = "2024-01-01T00:00:00Z"
END = "2024-01-01T00:05:00Z"


def _condition(kind: str) -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": "R", "message": "m",
            "lastProbeTime": END, "lastTransitionTime": END}


@pytest_asyncio.fixture(loop_scope="module")
async def job(module_api: API, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A suspended Job named after the test (no Job controller runs here); its path."""
    name = request.node.name.split("[")[0].replace("_", "-")[-50:].strip("-")
    code, out = await module_api.post(JOBS, {"metadata": {"name": name}, "spec": {
        "suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "i"}]}}}})
    assert code == 201, out
    yield f"{JOBS}/{name}"
    await module_api.delete(f"{JOBS}/{name}")


async def _write(api: API, path: str, status: dict[str, Any]) -> tuple[int, Any]:
    code, current = await api.get(path)
    assert code == 200, current
    return await api.put(f"{path}/status", {**current, "status": status})


def _messages(answer: Any) -> list[tuple[str, str]]:
    assert answer["reason"] == "Invalid", answer
    return [(c["field"], c["message"]) for c in answer["details"]["causes"]]


async def test_counters_never_decrease(module_api: API, job: str) -> None:
    code, out = await _write(module_api, job, {"succeeded": 2, "failed": 3})
    assert code == 200, out
    code, out = await _write(module_api, job, {"succeeded": 1, "failed": 2})
    assert (code, _messages(out)) == (422, [
        ("status.failed", "Invalid value: 2: cannot decrease the failed counter"),
        ("status.succeeded", "Invalid value: 1: cannot decrease the succeeded counter")])


async def test_a_complete_job_needs_its_times_and_keeps_its_condition(
        module_api: API, job: str) -> None:
    code, out = await _write(module_api, job, {"conditions": [_condition("Complete")]})
    assert (code, _messages(out)) == (422, [
        ("status.completionTime", "Required value: completionTime is required for "
                                  "Complete jobs"),
        ("status.startTime", "Required value: startTime is required for finished job")])
    code, out = await _write(module_api, job, {"completionTime": END})
    assert (code, _messages(out)) == (422, [(
        "status.completionTime", "Invalid value: 2024-01-01 00:05:00 +0000 UTC: cannot set "
                                 "completionTime when there is no Complete=True condition")])
    code, out = await _write(module_api, job, {
        "conditions": [_condition("Complete"), _condition("Failed")], "startTime": END,
        "completionTime": START, "active": 1})
    assert (code, _messages(out)) == (422, [
        ("status.conditions", "Invalid value: cannot set Complete=True and Failed=true "
                              "conditions"),
        ("status.completionTime", "Invalid value: 2024-01-01 00:00:00 +0000 UTC: "
                                  "completionTime cannot be set before startTime"),
        ("status.active", "Invalid value: 1: active>0 is invalid for finished job")])
    complete = {"conditions": [_condition("Complete")], "startTime": START,
                "completionTime": END, "succeeded": 1}
    code, out = await _write(module_api, job, complete)
    assert code == 200, out
    code, out = await _write(module_api, job, {**complete, "conditions": [],
                                               "completionTime": START})
    assert (code, _messages(out)) == (422, [
        ("status.completionTime", "Invalid value: 2024-01-01 00:00:00 +0000 UTC: cannot set "
                                  "completionTime when there is no Complete=True condition"),
        ("status.conditions", "Invalid value: cannot disable the terminal Complete=True "
                              "condition"),
        ("status.completionTime", "Invalid value: 2024-01-01 00:00:00 +0000 UTC: "
                                  "completionTime cannot be mutated")])


async def test_uncounted_pods_and_indexes_are_checked(module_api: API, job: str) -> None:
    code, out = await _write(module_api, job, {
        "uncountedTerminatedPods": {"succeeded": ["a", ""], "failed": ["a"]},
        "completedIndexes": "0", "failedIndexes": "1"})
    assert (code, _messages(out)) == (422, [
        ("status.uncountedTerminatedPods.succeeded[1]", 'Invalid value: "": must not be empty'),
        ("status.uncountedTerminatedPods.failed[0]", 'Duplicate value: "a"'),
        ("status.completedIndexes", 'Invalid value: "0": cannot set non-empty completedIndexes '
                                    "when non-indexed completion mode"),
        ("status.failedIndexes", 'Invalid value: "1": cannot set non-null failedIndexes when '
                                 "backoffLimitPerIndex is null")])
    code, out = await _write(module_api, job, {
        "conditions": [_condition("Failed"), _condition("FailureTarget")],
        "startTime": START, "uncountedTerminatedPods": {"failed": ["b"]}})
    assert (code, _messages(out)) == (422, [(
        "status.uncountedTerminatedPods",
        'Invalid value: batch.UncountedTerminatedPods{Succeeded:[]types.UID(nil), '
        'Failed:[]types.UID{"b"}}: uncountedTerminatedPods needs to be empty for finished '
        "job")])
