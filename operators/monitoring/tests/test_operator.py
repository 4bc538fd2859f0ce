"""The monitoring operator on a whole embedded cluster (simulated pods): what it writes
for a Prometheus, an Alertmanager and a RouteMonitor, and what it refuses to roll out."""

from __future__ import annotations

import base64
import shutil
from typing import Any

import pytest
import yaml

from operators.monitoring.prometheus_controller import STATUS_CLEANUP
from operators.monitoring.resources import (
    Alertmanager,
    Prometheus,
    PrometheusRule,
    RouteMonitor,
    ServiceMonitor,
)
from setpoint.client import ApiError, Client
from setpoint.resources.models.apps_v1 import Deployment, StatefulSet
from setpoint.resources.models.core_v1 import ConfigMap, Secret, Service
from setpoint.testing import OperatorRunner, present
from setpoint.testing.plugin import Waiter

TIMEOUT = 30.0
TEAM = {"team": "web"}


def nginx(replicas: int = 1) -> list[dict[str, Any]]:
    labels = {"app": "nginx"}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "nginx", "labels": labels},
         "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                      {"name": "nginx", "image": "nginx:1.27",
                       "ports": [{"name": "http", "containerPort": 80}]}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "nginx",
                                                             "labels": labels},
         "spec": {"selector": labels, "ports": [{"name": "http", "port": 80,
                                                 "targetPort": "http"}]}},
    ]


def reconciled(reason: str) -> Any:
    def check(obj: Any) -> bool:
        condition = obj.status.get_condition("Reconciled")
        return (obj.status.observed_generation == obj.metadata.generation
                and condition is not None and condition.reason == reason)
    check.__qualname__ = f"reconciled({reason})"
    return check


async def prometheus_config(k8s: Client, name: str = "main") -> dict[str, Any]:
    secret = await k8s.get(Secret, f"prometheus-{name}")
    return dict(yaml.safe_load(base64.b64decode(present(secret.data)["prometheus.yaml"])))


def service_monitor() -> ServiceMonitor:
    return ServiceMonitor.model_validate({
        "metadata": {"name": "nginx", "labels": TEAM},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}},
                 "endpoints": [{"port": "http", "path": "/", "interval": "5s"}]}})


def prometheus(**spec: Any) -> Prometheus:
    return Prometheus.model_validate({"metadata": {"name": "main"}, "spec": {
        "serviceMonitorSelector": {"matchLabels": TEAM},
        "ruleSelector": {"matchLabels": TEAM}, "scrapeInterval": "5s",
        "evaluationInterval": "5s", **spec}})


async def test_a_prometheus_scrapes_what_its_service_monitors_select(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    for obj in nginx():
        await k8s.create(obj)
    await k8s.create(service_monitor())
    await k8s.create(prometheus(resources={"limits": {"memory": "512Mi"}},
                                externalLabels={"cluster": "eu-1"},
                                rules={"alert": {"resendDelay": "2s",
                                                 "forGracePeriod": "5m"}}))

    async def scraped() -> Any:
        try:
            config = await prometheus_config(k8s)
        except Exception:  # not written yet
            return None
        jobs = config["scrape_configs"]
        return jobs if jobs and jobs[0]["static_configs"] else None

    jobs = await wait_for(scraped, timeout=TIMEOUT)
    assert jobs[0]["job_name"] == f"serviceMonitor/{k8s.namespace}/nginx/0"
    assert jobs[0]["metrics_path"] == "/" and jobs[0]["scrape_interval"] == "5s"
    group = jobs[0]["static_configs"][0]
    assert group["targets"][0].endswith(":80")
    assert group["labels"]["service"] == "nginx" and group["labels"]["endpoint"] == "http"
    assert group["labels"]["pod"].startswith("nginx-")
    config = await prometheus_config(k8s)
    assert config["global"]["external_labels"] == {
        "prometheus": f"{k8s.namespace}/main", "cluster": "eu-1"}

    sts = await k8s.get(StatefulSet, "prometheus-main")
    pod = present(sts.spec).template
    assert present(present(present(pod).metadata).labels)["app.kubernetes.io/name"] == "prometheus"
    server, reloader = present(present(present(pod).spec).containers)
    assert present(server.ports)[0].name == "web" and reloader.name == "config-reloader"
    # the storage rule: 8 x the memory limit, 80 % of it kept
    assert "--storage.tsdb.retention.size=3276MB" in present(server.args)
    assert "--web.enable-lifecycle" in present(server.args)
    # spec.rules.alert as the prometheus-operator renders it (its statefulset.go:
    # --rules.alert.<flag> for each field set, nothing otherwise)
    assert [a for a in present(server.args) if a.startswith("--rules.alert.")] == [
        "--rules.alert.for-grace-period=5m", "--rules.alert.resend-delay=2s"]
    db = next(v for v in present(present(present(pod).spec).volumes) if v.name == "prometheus-db")
    assert present(db.empty_dir).size_limit == "4Gi"
    service = await k8s.get(Service, "prometheus-main")
    assert present(present(service.spec).ports)[0].name == "web"


async def test_a_rule_that_does_not_parse_is_not_rolled_out(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(PrometheusRule.model_validate({
        "metadata": {"name": "good", "labels": TEAM},
        "spec": {"groups": [{"name": "g", "rules": [{"alert": "Down", "expr": "up == 0",
                                                     "for": "1m"}]}]}}))
    await k8s.create(prometheus())
    prom = await wait_for(Prometheus, "main", reconciled("ConfigurationAccepted"),
                          timeout=TIMEOUT)
    good = prom.status.configuration_hash
    await k8s.patch(PrometheusRule, "good", {"spec": {"groups": [
        {"name": "g", "rules": [{"alert": "Down", "expr": "up ==", "for": "1m"}]}]}})
    prom = await wait_for(Prometheus, "main", reconciled("InvalidConfiguration"),
                          timeout=TIMEOUT)
    message = prom.status.get_condition("Reconciled").message
    assert "parse error" in message or "expr" in message, message
    assert prom.status.configuration_hash == good
    rules = await k8s.get(ConfigMap, "prometheus-main-rulefiles-0")
    assert "up == 0" in present(rules.data)[f"{k8s.namespace}-good.yaml"]


async def test_alertmanager_replicas_name_every_peer(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Alertmanager.model_validate({"metadata": {"name": "main"},
                                                  "spec": {"replicas": 3}}))
    await wait_for(Alertmanager, "main", reconciled("ConfigurationAccepted"), timeout=TIMEOUT)
    sts = await k8s.get(StatefulSet, "alertmanager-main")
    args = present(present(present(present(sts.spec).template).spec).containers)[0].args
    peers = [a.split("=", 1)[1] for a in present(args) if a.startswith("--cluster.peer=")]
    assert peers == [f"alertmanager-main-{i}.alertmanager-main.{k8s.namespace}.svc:9094"
                     for i in range(3)]
    service = await k8s.get(Service, "alertmanager-main")
    service_spec = present(service.spec)
    assert service_spec.cluster_ip == "None" and service_spec.publish_not_ready_addresses
    assert [p.name for p in present(present(service.spec).ports)] == ["web", "tcp-mesh", "udp-mesh"]
    generated = await k8s.get(Secret, "alertmanager-main-generated")
    assert b"null" in base64.b64decode(present(generated.data)["alertmanager.yaml"])


async def test_a_route_monitor_deploys_an_exporter_a_monitor_and_burn_rate_rules(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    for obj in nginx():
        await k8s.create(obj)
    await k8s.create(RouteMonitor.model_validate({
        "metadata": {"name": "shop"},
        "spec": {"target": {"service": {"name": "nginx", "port": "http"}},
                 "path": "/healthz", "slo": {"targetAvailabilityPercent": "99.5"},
                 "labels": TEAM}}))
    rm = await wait_for(RouteMonitor, "shop", reconciled("ObjectsWritten"), timeout=TIMEOUT)
    url = f"http://nginx.{k8s.namespace}.svc:80/healthz"
    assert rm.status.url == url
    monitor = await k8s.get(ServiceMonitor, "shop")
    endpoint = monitor.spec.endpoints[0]
    assert endpoint.interval == "30s" and endpoint.params == {"module": ["http_2xx"],
                                                              "target": [url]}
    assert present(monitor.metadata.labels)["team"] == "web"
    rule = await k8s.get(PrometheusRule, "shop")
    labels = [(present(r.labels), r.for_) for r in rule.spec.groups[0].rules]
    alerts = [(lb["severity"], lb["long_window"], lb["short_window"], for_)
              for lb, for_ in labels]
    assert alerts == [("critical", "1h", "5m", "2m"), ("critical", "6h", "30m", "15m"),
                      ("warning", "1d", "2h", "1h"), ("warning", "3d", "6h", "3h")]
    await k8s.get(Deployment, "shop-blackbox-exporter")


async def test_an_slo_outside_90_to_100_is_refused(k8s: Client, cluster: Any) -> None:
    for value in ("90", "100", "99.999x"):
        with pytest.raises(ApiError) as caught:
            # a dict: the server, not the Python model, must refuse it
            await k8s.create({
                "apiVersion": RouteMonitor.api_version, "kind": "RouteMonitor",
                "metadata": {"name": "shop"},
                "spec": {"target": {"url": "http://example.test"},
                         "slo": {"targetAvailabilityPercent": value}}})
        assert caught.value.status["code"] == 422, value
        assert "targetAvailabilityPercent" in str(caught.value.status), value


async def test_a_route_monitor_probes_at_its_interval_and_counts_probes_at_it(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """``interval`` sets how often Prometheus probes, and the burn-rate rules expect the
    probes of that interval: at 10 s a 5m window needs 15 (half its 30), an hour 180."""
    await k8s.create(RouteMonitor.model_validate({
        "metadata": {"name": "shop"},
        "spec": {"target": {"url": "http://shop.example.test"}, "interval": "10s",
                 "slo": {"targetAvailabilityPercent": "99.5"}}}))
    await wait_for(RouteMonitor, "shop", reconciled("ObjectsWritten"), timeout=TIMEOUT)
    monitor = await k8s.get(ServiceMonitor, "shop")
    assert monitor.spec.endpoints[0].interval == "10s"
    page = (await k8s.get(PrometheusRule, "shop")).spec.groups[0].rules[0]
    assert "[5m])) >= 15)" in str(page.expr) and "[1h])) >= 180)" in str(page.expr)


async def test_a_probe_interval_outside_1s_to_5m_is_refused(k8s: Client, cluster: Any
                                                            ) -> None:
    for value in ("0s", "301s", "6m", "1h", "500ms"):
        with pytest.raises(ApiError) as caught:
            await k8s.create({
                "apiVersion": RouteMonitor.api_version, "kind": "RouteMonitor",
                "metadata": {"name": "shop"},
                "spec": {"target": {"url": "http://example.test"}, "interval": value,
                         "slo": {"targetAvailabilityPercent": "99.5"}}})
        assert caught.value.status["code"] == 422, value
        assert "spec.interval" in str(caught.value.status), value


def accepted(obj: Any) -> dict[tuple[str, str], tuple[str, str, int | None]]:
    """Each binding's Accepted condition: (namespace, name) -> (status, reason, generation)."""
    return {(b.namespace, b.name): (c.status, c.reason, c.observed_generation)
            for b in obj.status.bindings or () for c in b.conditions or ()
            if c.type == "Accepted"}


def summary(obj: Any) -> tuple[str | None, str | None, str | None, bool]:
    """(Reconciled reason, Accepted status, Accepted reason, observedGeneration current)."""
    reconciled, accepted = (obj.status.get_condition(t) for t in ("Reconciled", "Accepted"))
    return (reconciled.reason if reconciled else None,
            accepted.status if accepted else None, accepted.reason if accepted else None,
            obj.status.observed_generation == obj.metadata.generation)


async def test_service_monitors_and_rules_say_which_prometheus_accepted_them(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """The configuration objects' status as the prometheus-operator's ``status.bindings``
    (pkg/apis/monitoring/v1/types.go: ConfigResourceStatus, WorkloadBinding, condition
    Accepted): one binding per selecting Prometheus; a rule that fails validation is
    Accepted=False on its binding, another rule unchanged since it was accepted keeps
    Accepted=True (the servers keep it), and a Prometheus that stops selecting an object
    drops its binding."""
    ns = k8s.namespace
    good_rule = {"groups": [{"name": "g", "rules": [{"record": "one", "expr": "vector(1)"}]}]}
    await k8s.create(service_monitor())
    await k8s.create(ServiceMonitor.model_validate({
        "metadata": {"name": "other", "labels": {"team": "other"}},
        "spec": {"selector": {"matchLabels": {"app": "other"}}}}))
    for name in ("a", "b"):
        await k8s.create(PrometheusRule.model_validate({
            "metadata": {"name": name, "labels": TEAM}, "spec": good_rule}))
    await k8s.create(prometheus())

    def bound(wanted: dict[Any, Any], *summarised: Any) -> Any:
        def check(obj: Any) -> bool:
            return accepted(obj) == wanted and summary(obj) == summarised
        return check

    main_ok = {(ns, "main"): ("True", "Accepted", 1)}
    await wait_for(ServiceMonitor, "nginx", bound(main_ok, "Bound", "True", "Accepted", True),
                   timeout=TIMEOUT)
    await wait_for(PrometheusRule, "a", bound(main_ok, "Bound", "True", "Accepted", True),
                   timeout=TIMEOUT)
    await wait_for(ServiceMonitor, "other",
                   bound({}, "NotSelected", "Unknown", "NotSelected", True), timeout=TIMEOUT)

    await k8s.patch(PrometheusRule, "a", {"spec": {"groups": [
        {"name": "g", "rules": [{"record": "one", "expr": "vector("}]}]}})
    rule = await wait_for(PrometheusRule, "a", bound(
        {(ns, "main"): ("False", "InvalidConfiguration", 2)},
        "Bound", "False", "InvalidConfiguration", True), timeout=TIMEOUT)
    assert f"{ns}-a.yaml" in rule.status.get_condition("Accepted").message
    await wait_for(PrometheusRule, "b", bound(main_ok, "Bound", "True", "Accepted", True),
                   timeout=TIMEOUT)

    # no longer selected by main: its binding goes, and nothing else does
    await k8s.patch(PrometheusRule, "a", {"metadata": {"labels": {"team": "none"}}})
    await wait_for(PrometheusRule, "a", bound({}, "NotSelected", "Unknown", "NotSelected",
                                              True), timeout=TIMEOUT)
    await wait_for(PrometheusRule, "b", bound(main_ok, "Bound", "True", "Accepted", True),
                   timeout=TIMEOUT)

    # the last Prometheus deleted: its finalizer holds it until its bindings are gone
    # (the prometheus-operator's monitoring.coreos.com/status-cleanup, pkg/k8s/finalizer.go)
    assert STATUS_CLEANUP in ((await k8s.get(Prometheus, "main")).metadata.finalizers or ())
    await k8s.delete(Prometheus, "main")
    await wait_for(Prometheus, "main", gone=True, timeout=TIMEOUT)
    for kind, name in ((PrometheusRule, "b"), (ServiceMonitor, "nginx")):
        assert accepted(await k8s.get(kind, name)) == {}, name


async def test_remote_write_and_federation_are_rendered_and_a_bad_one_is_not_rolled_out(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """``remoteWrite`` becomes ``remote_write`` (with its write relabelings) and
    ``federation`` a ``/federate`` job whose ``match[]`` parameters are the selectors given
    (Prometheus' web/federate.go reads ``match[]``); a relabeling whose regex does not
    compile fails ``promtool check config`` and is not written."""
    await k8s.create(Prometheus.model_validate({"metadata": {"name": "leaf"}}))
    remote = {"url": "http://127.0.0.1:19291/api/v1/receive", "name": "thanos",
              "remoteTimeout": "10s",
              "writeRelabelConfigs": [{"sourceLabels": ["__name__"], "regex": "up",
                                       "action": "keep"}]}
    await k8s.create(prometheus(
        remoteWrite=[remote],
        federation=[{"name": "leaf", "match": ['{job="nginx"}', '{__name__=~"slo:.*"}']}]))

    async def federating() -> Any:
        try:
            config = await prometheus_config(k8s)
        except ApiError:  # not written yet
            return None
        jobs = [j for j in config["scrape_configs"] if j["job_name"].startswith("federate/")]
        return config if jobs and jobs[0]["static_configs"][0]["targets"] else None

    config = await wait_for(federating, timeout=TIMEOUT)
    (job,) = config["scrape_configs"]
    assert job["job_name"] == f"federate/{k8s.namespace}/leaf"
    assert job["metrics_path"] == "/federate" and job["honor_labels"] is True
    assert job["params"] == {"match[]": ['{job="nginx"}', '{__name__=~"slo:.*"}']}
    assert config["remote_write"] == [{
        "url": remote["url"], "name": "thanos", "remote_timeout": "10s",
        "write_relabel_configs": [{"source_labels": ["__name__"], "regex": "up",
                                   "action": "keep"}]}]
    if shutil.which("promtool") is None:
        return  # the regex is checked by promtool only
    await k8s.patch(Prometheus, "main", {"spec": {"remoteWrite": [
        {**remote, "writeRelabelConfigs": [{"sourceLabels": ["__name__"], "regex": "(",
                                            "action": "keep"}]}]}})
    prom = await wait_for(Prometheus, "main", reconciled("InvalidConfiguration"),
                          timeout=TIMEOUT)
    message = prom.status.get_condition("Reconciled").message
    assert "not rolled out" in message and "regex" in message.lower(), message
    assert (await prometheus_config(k8s))["remote_write"][0]["write_relabel_configs"][0][
        "regex"] == "up"
