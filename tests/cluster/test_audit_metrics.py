"""kube-apiserver 1.32's audit metrics on ``/metrics``, scraped over real HTTP.

Sources (k8s.io/apiserver v0.32.0): pkg/audit/metrics.go (``apiserver_audit_event_total``,
``apiserver_audit_error_total`` by plugin, ``apiserver_audit_level_total`` by level,
``apiserver_audit_requests_rejected_total``; ``HandlePluginError`` adds the number of
events an error cost); pkg/endpoints/filters/audit.go (``evaluatePolicyAndCreateAuditEvent``
observes the policy's level of every request, ``None`` included; ``processAuditEvent``
counts each stage it hands the backend, not an omitted one; ``WithAudit`` counts a request
refused because its RequestReceived event could not be stored); plugin/pkg/audit/log
(``PluginName`` "log"), plugin/pkg/audit/buffered (``PluginName`` "buffered": "audit buffer
queue blocked").

The counters are process-wide as Go's ``legacyregistry``: each test reads them before and
after and checks the difference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from setpoint.cluster.audit.buffered import wrap_mode
from setpoint.cluster.audit.logbackend import LogBackend
from setpoint.cluster.audit.options import BatchConfig, BatchOptions, log_batch_config
from tests.cluster.test_audit_backends import NS, Client, audited, configmap, policy


async def scrape(api: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every ``apiserver_audit_*`` sample, by name and labels."""
    status, body, _ = await api.call("GET", "/metrics")
    assert status == 200
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name.startswith("apiserver_audit_"):
                found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def delta(after: dict[Any, float], before: dict[Any, float], name: str,
          **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def test_events_and_levels_are_counted_per_stage_and_per_request(tmp_path: Path) -> None:
    """Creates at Metadata log two stages each (RequestReceived is omitted here, so one
    per create: an omitted stage is not counted); the GETs at ``None`` count a level and
    no event."""
    rules = policy({"level": "Metadata", "verbs": ["create"],
                    "omitStages": ["RequestReceived"]},
                   {"level": "None"})
    log = LogBackend(str(tmp_path / "audit.log"))
    async with audited(wrap_mode(log, BatchOptions("blocking", log_batch_config())),
                       rules) as api:
        before = await scrape(api)
        for name in ("one", "two", "three"):
            status, body, _ = await api.call("POST", f"{NS}/configmaps", configmap(name))
            assert status == 201, body
        status, _, _ = await api.call("GET", f"{NS}/configmaps/one")
        assert status == 200
        after = await scrape(api)
    assert delta(after, before, "apiserver_audit_event_total") == 3
    assert delta(after, before, "apiserver_audit_level_total", level="Metadata") == 3
    # the GET and the second scrape (the policy is asked of every request, before it runs)
    assert delta(after, before, "apiserver_audit_level_total", level="None") == 2
    assert delta(after, before, "apiserver_audit_requests_rejected_total") == 0
    assert len((tmp_path / "audit.log").read_bytes().splitlines()) == 3


async def test_a_refused_request_and_its_lost_event_are_counted() -> None:
    """blocking-strict on a log that cannot be written (/dev/full): the create is refused
    (``requests_rejected_total``) and the event it lost is the log plugin's error."""
    creates = policy({"level": "Metadata", "verbs": ["create"]}, {"level": "None"})
    strict = BatchOptions("blocking-strict", log_batch_config())
    async with audited(wrap_mode(LogBackend("/dev/full"), strict), creates) as api:
        before = await scrape(api)
        status, _, _ = await api.call("POST", f"{NS}/configmaps", configmap("refused"))
        assert status == 500
        after = await scrape(api)
    assert delta(after, before, "apiserver_audit_requests_rejected_total") == 1
    assert delta(after, before, "apiserver_audit_error_total", plugin="log") == 1
    assert delta(after, before, "apiserver_audit_event_total") == 1


async def test_events_a_full_buffer_drops_count_as_the_buffered_plugins_errors(
        tmp_path: Path) -> None:
    """batch mode with a buffer of one that is never drained while the requests run (a
    long wait, a large batch): every event past the first is dropped and counted."""
    config = BatchConfig(buffer_size=1, max_batch_size=100, max_batch_wait=3600.0,
                         throttle_enable=False, throttle_qps=0.0, throttle_burst=0)
    log = LogBackend(str(tmp_path / "audit.log"))
    creates = policy({"level": "Metadata", "verbs": ["create"],
                      "omitStages": ["RequestReceived"]}, {"level": "None"})
    async with audited(wrap_mode(log, BatchOptions("batch", config)), creates) as api:
        before = await scrape(api)
        for name in ("a", "b", "c"):
            status, body, _ = await api.call("POST", f"{NS}/configmaps", configmap(name))
            assert status == 201, body
        after = await scrape(api)
    assert delta(after, before, "apiserver_audit_event_total") == 3
    assert delta(after, before, "apiserver_audit_error_total", plugin="buffered") == 2


async def test_the_counters_are_served_at_zero_before_any_auditing(tmp_path: Path) -> None:
    """The two counters without labels are registered at init, so they are on
    ``/metrics`` from the start, auditing or not."""
    rules = policy({"level": "None"})
    log = LogBackend(str(tmp_path / "audit.log"))
    async with audited(wrap_mode(log, BatchOptions("blocking", log_batch_config())),
                       rules) as api:
        found = await scrape(api)
    names = {name for name, _ in found}
    assert {"apiserver_audit_event_total",
            "apiserver_audit_requests_rejected_total"} <= names
