"""The monitoring manifest printers (``python -m operators.monitoring.selfmonitoring`` and
``python -m operators.etcd.monitoring``): every object in the namespace asked for, and the
labels asked for on what a Prometheus selects."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

from operators.etcd import monitoring as etcd_monitoring
from operators.monitoring import selfmonitoring


@pytest.mark.parametrize("main", [selfmonitoring.main, etcd_monitoring.main])
def test_a_printer_puts_every_object_in_the_namespace_and_labels_what_prometheus_selects(
        main: Callable[[list[str]], None], capsys: pytest.CaptureFixture[str]) -> None:
    main(["--namespace", "ops", "--label", "team=ops"])
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert {d["kind"] for d in docs} >= {"Service", "ServiceMonitor", "PrometheusRule"}
    assert all(d["metadata"]["namespace"] == "ops" for d in docs)
    selected = [d for d in docs if d["kind"] in ("ServiceMonitor", "PrometheusRule")]
    assert selected and all(d["metadata"]["labels"]["team"] == "ops" for d in selected)
