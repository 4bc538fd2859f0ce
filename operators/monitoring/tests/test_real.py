"""The monitoring operator on the process runtime: real Prometheus, Alertmanager and
blackbox exporter processes (the Debian packages), nginx as the monitored service.

Each test asks the servers themselves over their HTTP APIs (the pods' loopback
addresses), not only the operator's status.

Time here is what the servers' own intervals make it, so the objects ask for short ones
through their own fields: scrape, evaluation and probe intervals of 1-2 s, an alert resend
delay of 2 s. A test that asks a server itself waits for the server to answer at its pod's
address, not for the pod to be Ready (the kubelet's probe, every 5 s, adds nothing the
test looks at)."""

from __future__ import annotations

import shutil
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from operators.monitoring import selfmonitoring
from operators.monitoring.operator import manager
from operators.monitoring.resources import (
    Alertmanager,
    Prometheus,
    PrometheusRule,
    RouteMonitor,
    ServiceMonitor,
)
from operators.monitoring.serverapi import get_json
from setpoint.client import Client
from setpoint.resources.models.apps_v1 import Deployment
from setpoint.resources.models.core_v1 import Pod
from setpoint.testing import OperatorRunner, SetpointCluster, kill_container_process, present
from setpoint.testing.plugin import ManagerLauncher, Waiter
from setpoint.testing.waiting import wait_for as wait_until

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(300)]
TIMEOUT = 150.0
TEAM = {"team": "web"}
INTERVAL = "1s"
"""Scrape and evaluation interval of the test's Prometheus servers (the default is 30s)."""
METRICS = "# TYPE hello gauge\nhello 1\n"


@pytest.fixture(autouse=True)
def _programs_installed() -> None:
    for program in ("prometheus", "prometheus-alertmanager", "prometheus-blackbox-exporter",
                    "nginx"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed: apt-get install -y prometheus "
                        "prometheus-alertmanager prometheus-blackbox-exporter nginx-light")


@pytest.fixture(autouse=True)
async def diagnostics(request: pytest.FixtureRequest, k8s: Client,
                      cluster: SetpointCluster) -> AsyncIterator[None]:
    """On failure, what the pods and servers said (torn down before the cluster)."""
    yield
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        print(await diagnose(k8s))  # shown with the failure's captured output


def nginx() -> list[dict[str, Any]]:
    """nginx serving a metrics file at /metrics (a ConfigMap over its html root)."""
    labels = {"app": "nginx"}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "html"},
         "data": {"metrics": METRICS, "index.html": "<html>ok</html>\n"}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "nginx", "labels": labels},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {
                      "containers": [{
                          "name": "nginx", "image": "nginx:1.27",
                          "ports": [{"name": "http", "containerPort": 80}],
                          "readinessProbe": {"httpGet": {"path": "/", "port": "http"},
                                             "periodSeconds": 2},
                          "volumeMounts": [{"name": "html",
                                            "mountPath": "/usr/share/nginx/html"}]}],
                      "volumes": [{"name": "html", "configMap": {"name": "html"}}]}}}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "nginx", "labels": labels},
         "spec": {"selector": labels, "ports": [{"name": "http", "port": 80,
                                                 "targetPort": "http"}]}},
    ]


def prometheus(**spec: Any) -> Prometheus:
    return Prometheus.model_validate({"metadata": {"name": "main"}, "spec": {
        "serviceMonitorSelector": {"matchLabels": TEAM},
        "ruleSelector": {"matchLabels": TEAM}, "scrapeInterval": INTERVAL,
        "evaluationInterval": INTERVAL, **spec}})


async def diagnose(k8s: Client) -> str:
    """What the pods and servers say, shown when a wait fails: each pod's phase and
    container states, the tail of each container's log, Prometheus' active targets."""
    lines = []
    for pod in (await k8s.list(Pod)).items:
        status = pod.status
        lines.append(f"pod {pod.metadata.name} {status.phase if status else None} "
                     f"ip={status.pod_ip if status else None}")
        for cs in (status.container_statuses or ()) if status else ():
            lines.append(f"  {cs.name} ready={cs.ready} restarts={cs.restart_count} "
                         f"state={cs.state.model_dump(exclude_none=True) if cs.state else {}}")
        for container in present(pod.spec.containers if pod.spec else ()):
            try:
                log = await k8s.request(
                    "GET", f"/api/v1/namespaces/{k8s.namespace}/pods/{pod.metadata.name}/log",
                    params={"container": container.name, "tailLines": 15})
            except Exception as error:
                log = f"(no log: {error})"
            lines += [f"  | {container.name}: {line}" for line in str(log).splitlines()]
        if (pod.metadata.labels or {}).get("app.kubernetes.io/name") == "prometheus" \
                and status and status.pod_ip:
            targets = await get_json(f"http://{status.pod_ip}:9090/api/v1/targets")
            lines.append(f"  targets: {targets}")
    return "\n".join(lines)


async def ready_ips(k8s: Client, selector: str, count: int, *, ready: bool = True
                    ) -> list[str]:
    """The addresses of ``count`` pods: Ready ones, or with ``ready=False`` running ones
    (for a test that then waits for the server itself to answer)."""
    async def found() -> list[str] | None:
        pods = (await k8s.list(Pod, label_selector=selector)).items
        ips = sorted(str(p.status.pod_ip) for p in pods if p.status and p.status.pod_ip
                     and not p.metadata.deletion_timestamp
                     and (p.status.phase == "Running" if not ready else
                          any(c.type == "Ready" and c.status == "True"
                              for c in p.status.conditions or ())))
        return ips if len(ips) == count else None

    ips: list[str] = await wait_until(found, timeout=TIMEOUT, message=f"{count} "
                                      f"{'ready' if ready else 'running'} pod(s) {selector}")
    return ips


async def query(ip: str, promql: str) -> list[dict[str, Any]] | None:
    body = await get_json(f"http://{ip}:9090/api/v1/query", {"query": promql})
    if not isinstance(body, dict) or body.get("status") != "success":
        return None
    return list(body["data"]["result"])


async def value_of(ip: str, promql: str, wanted: str) -> None:
    async def seen() -> bool:
        result = await query(ip, promql)
        return bool(result) and present(result)[0]["value"][1] == wanted

    await wait_until(seen, timeout=TIMEOUT, message=f"{promql} == {wanted}")


async def test_prometheus_scrapes_the_service_monitors_nginx_and_reports_it_up(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    for obj in nginx():
        await k8s.create(obj)
    await k8s.create(ServiceMonitor.model_validate({
        "metadata": {"name": "nginx", "labels": TEAM},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}},
                 "endpoints": [{"port": "http", "interval": INTERVAL}]}}))
    await k8s.create(prometheus())
    # the scrape pool is serviceMonitor/<ns>/<name>/<i>, the series' job label the
    # Service's name, as the prometheus-operator relabels them
    # (pkg/prometheus/promcfg.go, generateServiceMonitorConfig: job <- service name)
    (ip,) = await ready_ips(k8s, "app.kubernetes.io/name=prometheus", 1, ready=False)
    series = f'job="nginx",namespace="{k8s.namespace}",service="nginx",endpoint="http"'
    await value_of(ip, f"up{{{series}}}", "1")
    await value_of(ip, f"hello{{{series}}}", "1")
    targets = await get_json(f"http://{ip}:9090/api/v1/targets")
    assert targets is not None
    assert [t["scrapePool"] for t in targets["data"]["activeTargets"]] == [
        f"serviceMonitor/{k8s.namespace}/nginx/0"]
    # and the operator's status says what the server says
    prom = await wait_for(Prometheus, "main", lambda p: p.status.targets_up == 1,
                          timeout=TIMEOUT)
    assert prom.status.targets[0].job == "nginx" and prom.status.targets[0].health == "up"


async def test_a_prometheus_rule_change_is_reloaded_without_a_restart(
        k8s: Client, operator: OperatorRunner) -> None:
    def rule(record: str) -> dict[str, Any]:
        return {"groups": [{"name": "g", "rules": [{"record": record, "expr": "vector(1)"}]}]}

    await k8s.create(PrometheusRule.model_validate({
        "metadata": {"name": "r", "labels": TEAM}, "spec": rule("first")}))
    await k8s.create(prometheus())
    (ip,) = await ready_ips(k8s, "app.kubernetes.io/name=prometheus", 1, ready=False)
    await value_of(ip, "first", "1")
    (before,) = (await k8s.list(Pod, label_selector="app.kubernetes.io/name=prometheus")
                 ).items

    await k8s.patch(PrometheusRule, "r", {"spec": rule("second")})
    await value_of(ip, "second", "1")
    (after,) = (await k8s.list(Pod, label_selector="app.kubernetes.io/name=prometheus")
                ).items
    assert after.metadata.uid == before.metadata.uid
    assert [c.restart_count for c in present(present(after.status).container_statuses)] == [0, 0]
    # the server's own word that the last reload loaded (it does not scrape itself, so
    # prometheus_config_last_reload_successful is on its /metrics, not in its TSDB)
    info = await get_json(f"http://{ip}:9090/api/v1/status/runtimeinfo")
    assert info is not None and info["data"]["reloadConfigSuccess"] is True


async def test_three_alertmanagers_form_one_cluster_and_share_silences(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Alertmanager.model_validate({"metadata": {"name": "main"},
                                                  "spec": {"replicas": 3}}))
    ips = await ready_ips(k8s, "app.kubernetes.io/name=alertmanager", 3)

    async def clustered() -> bool:
        for ip in ips:
            status = await get_json(f"http://{ip}:9093/api/v2/status")
            if not status or len(status["cluster"].get("peers") or ()) != 3:
                return False
        return True

    await wait_until(clustered, timeout=TIMEOUT, message="every replica sees 3 peers")
    am = await wait_for(Alertmanager, "main", lambda a: len(a.status.peers or ()) == 3,
                        timeout=TIMEOUT)
    assert sorted(p.address.rsplit(":", 1)[0] for p in am.status.peers) == ips

    # silences are what the replicas gossip: one made on the first is on every replica
    silence = {"matchers": [{"name": "alertname", "value": "Test", "isRegex": False}],
               "startsAt": "2020-01-01T00:00:00Z", "endsAt": "2099-01-01T00:00:00Z",
               "createdBy": "test", "comment": "gossiped"}
    async with aiohttp.ClientSession() as session, \
            session.post(f"http://{ips[0]}:9093/api/v2/silences", json=silence) as response:
        assert response.status == 200, await response.text()
        silence_id = (await response.json())["silenceID"]

    async def everywhere() -> bool:
        for ip in ips:
            found = await get_json(f"http://{ip}:9093/api/v2/silence/{silence_id}")
            if not found:
                return False
        return True

    await wait_until(everywhere, timeout=TIMEOUT, message="the silence on every replica")

    # a replica killed with kill -9 is restarted in place by the kubelet, joins its peers
    # again (--cluster.peer, the same addresses) and gets the silence back from them: a
    # joining node's push-pull with a peer hands it the peer's whole state
    # (cluster/cluster.go, memberlist's LocalState/MergeRemoteState)
    (victim,) = [p for p in (await k8s.list(
        Pod, label_selector="app.kubernetes.io/name=alertmanager")).items
        if p.status and p.status.pod_ip == ips[2]]
    kill_container_process(ips[2], "prometheus-alertmanager")
    await wait_for(Pod, str(victim.metadata.name), lambda p: p.metadata.uid ==
                   victim.metadata.uid and restarts(p) > restarts(victim), timeout=TIMEOUT)
    await wait_until(clustered, timeout=TIMEOUT, message="the restarted replica rejoined")
    await wait_until(everywhere, timeout=TIMEOUT, message="the silence on the restarted one")


async def test_a_route_monitor_reports_probe_success_then_failure_when_nginx_is_gone(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    for obj in nginx():
        await k8s.create(obj)
    await k8s.create(RouteMonitor.model_validate({
        "metadata": {"name": "shop"},
        "spec": {"target": {"service": {"name": "nginx", "port": "http"}},
                 "slo": {"targetAvailabilityPercent": "99.5"}, "labels": TEAM,
                 "interval": "2s"}}))
    await k8s.create(prometheus())
    (ip,) = await ready_ips(k8s, "app.kubernetes.io/name=prometheus", 1, ready=False)
    series = 'probe_success{job="shop-blackbox-exporter"}'
    await value_of(ip, series, "1")
    await wait_for(RouteMonitor, "shop", lambda r: r.status.last_probe_success is True,
                   timeout=TIMEOUT)
    rules = await get_json(f"http://{ip}:9090/api/v1/rules")
    assert rules is not None
    alerts = [r for g in rules["data"]["groups"] for r in g["rules"]
              if r.get("name") == "ErrorBudgetBurn"]
    assert len(alerts) == 4

    await k8s.patch(Deployment, "nginx", {"spec": {"replicas": 0}})
    await value_of(ip, series, "0")
    await wait_for(RouteMonitor, "shop", lambda r: r.status.last_probe_success is False,
                   timeout=TIMEOUT)


async def test_prometheus_scrapes_the_operators_own_metrics(
        k8s: Client, cluster: SetpointCluster, run_manager: ManagerLauncher) -> None:
    # the operator serves /metrics (as `setpoint run` does in its pod); here it runs in
    # the test's process, so a selector-less Service and its Endpoints name its address,
    # as one names any server outside the cluster
    runner = await run_manager(manager, leader_election=False, http_port=0, rbac=True)
    assert runner.manager is not None and runner.manager.http_port is not None
    # selfmonitoring's Service without its selector (no operator pod here), and
    # Endpoints naming the test process' address
    metrics = selfmonitoring.service().model_dump(by_alias=True, exclude_none=True,
                                                  mode="json")
    del metrics["spec"]["selector"]
    await k8s.create(metrics)
    await k8s.create({"apiVersion": "v1", "kind": "Endpoints",
                      "metadata": {"name": selfmonitoring.JOB},
                      "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                                   "ports": [{"name": "metrics",
                                              "port": runner.manager.http_port}]}]})
    monitor = selfmonitoring.service_monitor(TEAM)
    monitor.spec.endpoints[0].interval = INTERVAL
    await k8s.create(monitor)
    await k8s.create(selfmonitoring.prometheus_rule(TEAM))
    await k8s.create(prometheus())
    (ip,) = await ready_ips(k8s, "app.kubernetes.io/name=prometheus", 1, ready=False)
    await value_of(ip, 'up{job="monitoring-operator"}', "1")
    # the Prometheus controller's own reconciles, counted by the operator and read back
    # from the Prometheus it made
    # (result "requeue_after": it polls the servers it made)
    await value_of(ip, 'sum(controller_runtime_reconcile_total{job="monitoring-operator",'
                   'controller="prometheus"}) > bool 0', "1")

    # its alerts are loaded and evaluate cleanly over those series, and none fires
    # (Down is pending only until the first scrape: absent(up) before it)
    quiet = {"MonitoringOperatorDown": ("ok", "inactive"),
             "MonitoringOperatorReconcileErrors": ("ok", "inactive"),
             "MonitoringOperatorWorkqueueBacklog": ("ok", "inactive")}

    async def alerts() -> dict[str, tuple[str, str]]:
        rules = await get_json(f"http://{ip}:9090/api/v1/rules", {"type": "alert"})
        return {r["name"]: (r["health"], r["state"])
                for g in (rules or {}).get("data", {}).get("groups", ())
                if g["name"] == "monitoring-operator" for r in g["rules"]}

    await wait_until(lambda: _equal(alerts(), quiet), timeout=TIMEOUT,
                     message=f"the operator's alerts {quiet}")


async def _equal(got: Any, wanted: Any) -> bool:
    value = await got
    assert value == wanted
    return True


async def test_a_prometheus_federates_another_ones_series(k8s: Client,
                                                          operator: OperatorRunner) -> None:
    for obj in nginx():
        await k8s.create(obj)
    await k8s.create(ServiceMonitor.model_validate({
        "metadata": {"name": "nginx", "labels": TEAM},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}},
                 "endpoints": [{"port": "http", "interval": INTERVAL}]}}))
    leaf = prometheus()
    leaf.metadata.name = "leaf"
    await k8s.create(leaf)
    # the global one selects no ServiceMonitor: what it has, it has from /federate
    await k8s.create(Prometheus.model_validate({"metadata": {"name": "global"}, "spec": {
        "scrapeInterval": INTERVAL, "evaluationInterval": INTERVAL,
        "federation": [{"name": "leaf", "match": ['{job="nginx"}']}]}}))
    (leaf_ip,) = await ready_ips(k8s, "app.kubernetes.io/instance=leaf", 1, ready=False)
    (global_ip,) = await ready_ips(k8s, "app.kubernetes.io/instance=global", 1, ready=False)
    await value_of(leaf_ip, 'hello{job="nginx"}', "1")
    # honor_labels keeps the series' own labels, and /federate adds the leaf's external
    # labels (web/federate.go), so the series says where it was scraped
    await value_of(global_ip, f'hello{{job="nginx",service="nginx",'
                   f'prometheus="{k8s.namespace}/leaf"}}', "1")
    await value_of(global_ip, f'up{{job="federate/{k8s.namespace}/leaf"}}', "1")


async def test_alerts_reach_every_alertmanager_and_keep_flowing_when_one_is_killed(
        k8s: Client, operator: OperatorRunner) -> None:
    def rule(*alerts: str) -> dict[str, Any]:
        return {"groups": [{"name": "g", "rules": [
            {"alert": alert, "expr": "vector(1)", "labels": {"severity": "none"}}
            for alert in alerts]}]}

    await k8s.create(Alertmanager.model_validate({"metadata": {"name": "main"},
                                                  "spec": {"replicas": 3}}))
    await k8s.create(PrometheusRule.model_validate({
        "metadata": {"name": "r", "labels": TEAM}, "spec": rule("First")}))
    # the alert fires from the first evaluation, before Prometheus knows every replica
    # (they get addresses one by one, each a reload): it reaches the others when resent,
    # after --rules.alert.resend-delay, 2 s here (1m by default). Each reload also makes
    # Prometheus 2.42 forget its Alertmanagers for up to 5 s, until discovery hands them
    # back, and what it sends then reaches none (prometheus/prometheus#13064, fixed in 3.0
    # by #14987): the resend is what delivers it.
    await k8s.create(prometheus(alerting={"alertmanagers": [{"name": "main"}]},
                                rules={"alert": {"resendDelay": "2s"}}))
    ips = await ready_ips(k8s, "app.kubernetes.io/name=alertmanager", 3, ready=False)
    (prom_ip,) = await ready_ips(k8s, "app.kubernetes.io/name=prometheus", 1, ready=False)

    async def sends_to_all() -> bool:
        found = await get_json(f"http://{prom_ip}:9090/api/v1/alertmanagers")
        active = (found or {}).get("data", {}).get("activeAlertmanagers") or ()
        return sorted(a["url"].split("//")[1].split(":")[0] for a in active) == ips

    await wait_until(sends_to_all, timeout=TIMEOUT, message="Prometheus knows 3 replicas")

    async def firing_on(addresses: list[str], alertname: str) -> bool:
        for address in addresses:
            alerts = await get_json(f"http://{address}:9093/api/v2/alerts",
                                    {"filter": f"alertname={alertname}"})
            if not alerts:
                return False
        return True

    # Prometheus sends every alert to every Alertmanager it is configured with
    # (notifier/notifier.go: sendAll), so each replica has it without gossip
    await wait_until(lambda: firing_on(ips, "First"), timeout=TIMEOUT,
                     message="First on all three replicas")

    (killed,) = [p for p in (await k8s.list(
        Pod, label_selector="app.kubernetes.io/name=alertmanager")).items
        if p.status and p.status.pod_ip == ips[0]]
    await k8s.delete(Pod, str(killed.metadata.name), grace_period_seconds=0)
    survivors = ips[1:]
    await wait_until(lambda: firing_on(survivors, "First"), timeout=TIMEOUT,
                     message="First still on the survivors")
    # a new alert after the kill still reaches the survivors
    await k8s.patch(PrometheusRule, "r", {"spec": rule("First", "Second")})
    await wait_until(lambda: firing_on(survivors, "Second"), timeout=TIMEOUT,
                     message="Second on the survivors")


def restarts(pod: Pod) -> int:
    return sum(c.restart_count or 0 for c in present(pod.status).container_statuses or ())


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A webhook receiver on a loopback port of the machine's choosing: its URL and the
    notifications posted to it (Alertmanager's webhook payload, version 4)."""
    received: list[dict[str, Any]] = []

    async def receive(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response()

    app = web.Application()
    app.router.add_post("/alerts", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    await web.SockSite(runner, listener).start()
    try:
        yield f"http://127.0.0.1:{port}/alerts", received
    finally:
        await runner.cleanup()


async def test_an_alert_is_notified_through_alertmanager_and_resolved_across_a_killed_prometheus(
        k8s: Client, operator: OperatorRunner,
        webhook: tuple[str, list[dict[str, Any]]]) -> None:
    """The whole path a human checks: a rule fires in Prometheus, Prometheus sends it to
    the Alertmanager the operator wired it to, Alertmanager routes it to its receiver (a
    webhook here; notify/webhook/webhook.go posts the group), and when the rule is gone
    the alert is resolved and the receiver told (``send_resolved`` defaults to true for
    webhooks: config/notifiers.go ``DefaultWebhookConfig``). Prometheus' process is killed
    with ``kill -9`` in between: the kubelet restarts it in place and it evaluates and
    sends again from its configuration."""
    url, received = webhook
    config = (f"route: {{receiver: hook, group_by: [alertname], group_wait: 1s, "
              f"group_interval: 1s, repeat_interval: 1h}}\n"
              f"receivers:\n- name: hook\n  webhook_configs: [{{url: '{url}'}}]\n")
    await k8s.create({"apiVersion": "v1", "kind": "Secret",
                      "metadata": {"name": "alertmanager-main"},
                      "stringData": {"alertmanager.yaml": config}})
    await k8s.create(Alertmanager.model_validate({"metadata": {"name": "main"},
                                                  "spec": {"replicas": 1}}))
    await k8s.create(PrometheusRule.model_validate({
        "metadata": {"name": "r", "labels": TEAM}, "spec": {"groups": [{"name": "g", "rules": [
            {"alert": "Burning", "expr": "vector(1)", "labels": {"severity": "page"}}]}]}}))
    await k8s.create(prometheus(alerting={"alertmanagers": [{"name": "main"}]},
                                rules={"alert": {"resendDelay": "2s"}}))

    def notified(status: str) -> Any:
        async def check() -> bool:
            return any(n.get("status") == status and any(
                a["labels"].get("alertname") == "Burning" and a["status"] == status
                for a in n.get("alerts") or ()) for n in received)
        return check

    await wait_until(notified("firing"), timeout=TIMEOUT, message="Burning notified")
    (prom,) = (await k8s.list(Pod, label_selector="app.kubernetes.io/name=prometheus")).items
    ip = str(present(prom.status).pod_ip)
    firing = 'ALERTS{alertname="Burning",alertstate="firing"}'
    (sample,) = present(await query(ip, firing))
    kill_container_process(ip, "prometheus")

    async def restarted() -> bool:
        pod = await k8s.get(Pod, str(prom.metadata.name))
        return pod.metadata.uid == prom.metadata.uid and restarts(pod) > restarts(prom) \
            and bool(await query(ip, firing))

    await wait_until(restarted, timeout=TIMEOUT, message="Prometheus restarted, firing again")
    # the series written before the kill are still there: the TSDB's data directory is
    # an emptyDir, which outlives a container restart (only the pod's removal deletes it),
    # and Prometheus replays its write-ahead log on start
    body = await get_json(f"http://{ip}:9090/api/v1/query",
                          {"query": firing, "time": str(sample["value"][0])})
    assert body is not None and body["data"]["result"], body
    await k8s.delete(PrometheusRule, "r")
    await wait_until(notified("resolved"), timeout=TIMEOUT, message="Burning resolved")
