"""The storage and retention rule of operators/monitoring/storage.py, case by case."""

from __future__ import annotations

from typing import Any

import pytest

from operators.monitoring.resources.prometheus import PrometheusSpec
from operators.monitoring.storage import derive


@pytest.mark.parametrize(("spec", "size_limit", "retention", "retention_size"), [
    ({}, None, "24h", None),
    ({"resources": {"limits": {"memory": "1Gi"}}}, "8192Mi", "15d", "6553MB"),
    ({"storage": {"volumeClaimTemplate": {"spec": {"resources": {
        "requests": {"storage": "10Gi"}}}}}}, None, "15d", "8192MB"),
    ({"storage": {"emptyDir": {"sizeLimit": "1Gi"}}, "retention": "2d"}, None, "2d", "819MB"),
    ({"resources": {"limits": {"memory": "1Gi"}}, "retentionSize": "1GB",
      "retention": "7d"}, "8192Mi", "7d", "1GB"),
])
def test_storage_and_retention_are_derived_when_not_given(
        spec: dict[str, Any], size_limit: str | None, retention: str,
        retention_size: str | None) -> None:
    derived = derive(PrometheusSpec.model_validate(spec))
    assert (derived.empty_dir_size_limit, derived.retention, derived.retention_size) == (
        size_limit, retention, retention_size)


def test_gomemlimit_is_nine_tenths_of_the_memory_limit() -> None:
    spec = PrometheusSpec.model_validate({"resources": {"limits": {"memory": "1000Mi"}}})
    assert derive(spec).gomemlimit == 1000 * 1024 * 1024 * 9 // 10
