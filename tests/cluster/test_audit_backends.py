"""kube-apiserver 1.32's audit backends and modes over real HTTP: the log file rotated as
lumberjack rotates it, the ``legacy`` format, the modes (blocking, blocking-strict, batch),
truncation, the webhook backend (an EventList POSTed to a local HTTPS receiver named by a
kubeconfig), and the ResponseStarted stage of long-running requests.

Sources (k8s.io/apiserver v0.32.0 unless named): pkg/server/options/audit.go
(``getWriter``: lumberjack with maxsize/maxbackup/maxage/compress; ``wrapBackend`` of each
mode; ``defaultLogBatchConfig``, ``defaultWebhookBatchConfig``); gopkg.in/natefinch/
lumberjack.v2 ``Logger.Write``, ``openNew``, ``backupName``, ``millRunOnce``;
plugin/pkg/audit/log/backend.go (``FormatLegacy``) with pkg/audit/format.go
``EventString``; plugin/pkg/audit/buffered/buffered.go (``collectEvents``: a batch is sent
when full or when its wait is over; ``Shutdown`` sends the rest); plugin/pkg/audit/truncate
(``truncate``, ``audit.k8s.io/truncated``); plugin/pkg/audit/webhook/webhook.go
(``processEvents``: an EventList, ``retryOnError``) with pkg/util/webhook
``WithExponentialBackoff``; pkg/endpoints/filters/audit.go (``WithAudit``: a failure to
store RequestReceived is ``responsewriters.InternalError``; ``auditResponseWriter.processCode``:
ResponseStarted of a long-running request whatever its code, 101 on ``Hijack``)."""

from __future__ import annotations

import asyncio
import gzip
import re
import ssl
import stat
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from setpoint.cluster import serve
from setpoint.cluster.audit.backend import Backend
from setpoint.cluster.audit.backends import build_backend
from setpoint.cluster.audit.buffered import wrap_mode
from setpoint.cluster.audit.logbackend import LogBackend
from setpoint.cluster.audit.options import (
    AuditOptions,
    BatchConfig,
    BatchOptions,
    TruncateOptions,
    WebhookOptions,
    log_batch_config,
)
from setpoint.cluster.audit.policy import policy_from_document
from setpoint.cluster.audit.truncate import wrap_truncate
from tests.auditreceiver import Receiver
from tests.waiting import quiet_period, wait_for

NS = "/api/v1/namespaces/default"
BACKUP = re.compile(r"audit-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3})\.log(\.gz)?")


def policy(*rules: dict[str, Any]) -> Any:
    return policy_from_document({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                 "rules": list(rules)})


CONFIGMAPS = policy({"level": "RequestResponse", "resources": [{"resources": ["configmaps"]}]},
                    {"level": "None"})


class Client:
    """Requests to a served cluster over HTTPS, as its administrator."""

    def __init__(self, running: Any, session: aiohttp.ClientSession) -> None:
        self.running = running
        self.session = session
        self.tls = ssl.create_default_context(cafile=str(running.ca_file))

    async def call(self, method: str, path: str, body: Any = None,
                   **headers: str) -> tuple[int, bytes, aiohttp.ClientResponse]:
        async with self.session.request(
                method, self.running.url + path, ssl=self.tls,
                data=orjson.dumps(body) if body is not None else None,
                headers={"Authorization": f"Bearer {self.running.token}",
                         "Content-Type": "application/json", **headers}) as resp:
            return resp.status, await resp.read(), resp


@asynccontextmanager
async def audited(backend: Backend, rules: Any = CONFIGMAPS) -> AsyncIterator[Client]:
    async with serve(audit_policy=rules, audit_log=backend) as running, \
            aiohttp.ClientSession() as session:
        yield Client(running, session)


def configmap(name: str, size: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"blob": "x" * size}}


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


async def test_the_log_rotates_at_maxsize_into_timestamped_backups_keeping_maxbackup(
        tmp_path: Path) -> None:
    """lumberjack ``Write``: a write that would pass ``--audit-log-maxsize`` MiB first moves
    the file aside as ``audit-<UTC 2006-01-02T15-04-05.000>.log`` (``backupName``) and
    starts a new one with the old one's mode (0600, ``openNew``); ``millRunOnce`` keeps
    the ``--audit-log-maxbackup`` newest backups. No line is cut across files."""
    log = tmp_path / "logs" / "audit.log"
    async with audited(LogBackend(str(log), max_size=1, max_backups=2)) as api:
        for i in range(8):  # each create's ResponseComplete holds ~2 x 300 KB
            status, body, _ = await api.call("POST", f"{NS}/configmaps",
                                             configmap(f"big-{i}", 300_000))
            assert status == 201, body

        def backups() -> list[Path]:
            return sorted(p for p in log.parent.iterdir() if p != log)

        await wait_for(lambda: len(backups()) == 2)
        await quiet_period(0.3)
        assert len(backups()) == 2
    names = [BACKUP.fullmatch(p.name) for p in backups()]
    assert all(names), [p.name for p in backups()]
    for path in [*backups(), log]:
        assert path.stat().st_size <= 1024 * 1024
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        events = lines(path)  # (each line whole: a rotation never splits one)
        assert all(e["kind"] == "Event" for e in events)
    created = [e["objectRef"]["name"] for p in [*backups(), log] for e in lines(p)
               if e["stage"] == "ResponseComplete"]
    assert "big-7" in created and "big-0" not in created  # the oldest backups are gone


async def test_maxage_removes_old_backups_and_compress_gzips_the_rest(tmp_path: Path) -> None:
    """``millRunOnce``: a backup whose name's time is more than ``--audit-log-maxage`` days
    old is removed; with ``--audit-log-compress`` the others become ``.gz`` (the same mode),
    the originals removed. Files not named as backups are left alone."""
    log = tmp_path / "audit.log"
    old = tmp_path / "audit-2020-01-02T03-04-05.678.log"
    old.write_text("{}\n")
    recent_name = "audit-2999-01-01T00-00-00.000.log"  # (in the future: never too old)
    (tmp_path / recent_name).write_text("{}\n")
    stranger = tmp_path / "audit-notes.log"
    stranger.write_text("mine\n")
    async with audited(LogBackend(str(log), max_size=1, max_age=1, compress=True)) as api:
        for i in range(4):
            status, body, _ = await api.call("POST", f"{NS}/configmaps",
                                             configmap(f"big-{i}", 300_000))
            assert status == 201, body

        def settled() -> bool:
            names = {p.name for p in tmp_path.iterdir()}
            rotated = [n for n in names if BACKUP.fullmatch(n) and "2999" not in n]
            return old.name not in names and bool(rotated) \
                and all(n.endswith(".gz") for n in rotated) and f"{recent_name}.gz" in names

        await wait_for(settled)
    assert stranger.read_text() == "mine\n"
    rotated = [p for p in tmp_path.iterdir() if BACKUP.fullmatch(p.name) and "2999" not in p.name]
    for path in rotated:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        events = [orjson.loads(x) for x in gzip.decompress(path.read_bytes()).splitlines()]
        assert events and all(e["apiVersion"] == "audit.k8s.io/v1" for e in events)


async def test_the_legacy_format_is_one_line_of_text_an_event(tmp_path: Path) -> None:
    """format.go ``EventString``: the time the request came (RFC 3339, UTC), then id,
    stage, first source IP, verb, user and groups (%q each), ``<self>``/``<lookup>``
    without impersonation, user agent, namespace, URI and the response code
    (``<deferred>`` before there is one)."""
    log = tmp_path / "audit.log"
    async with audited(LogBackend(str(log), format="legacy")) as api:
        status, _, _ = await api.call("GET", f"{NS}/configmaps/nope", **{
            "Audit-ID": "legacy-1", "User-Agent": 'agent "q"'})
        assert status == 404
        await wait_for(lambda: log.read_text().count("\n") == 2)
    received, complete = log.read_text().splitlines()
    pattern = (r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z AUDIT: id="legacy-1" '
               r'stage="{stage}" ip="127\.0\.0\.1" method="get" user="(?P<user>[^"]+)" '
               r'groups="(?P<groups>.*)" as="<self>" asgroups="<lookup>" '
               r'user-agent="agent \\"q\\"" namespace="default" '
               r'uri="/api/v1/namespaces/default/configmaps/nope" response="{code}"')
    first = re.fullmatch(pattern.replace("{stage}", "RequestReceived")
                         .replace("{code}", "<deferred>"), received)
    assert first is not None, received
    assert '\\"system:masters\\"' in first["groups"]
    assert re.fullmatch(pattern.replace("{stage}", "ResponseComplete")
                        .replace("{code}", "404"), complete), complete
    assert received.split(" ")[0] == complete.split(" ")[0]  # both: when it came


async def test_the_legacy_format_names_whom_a_request_impersonates(tmp_path: Path) -> None:
    """format.go ``EventString``: ``as`` and ``asgroups`` are the impersonated user's name
    and groups (impersonation.go gives a user without groups ``system:authenticated``)."""
    log = tmp_path / "audit.log"
    async with audited(LogBackend(str(log), format="legacy")) as api:
        status, _, _ = await api.call("GET", f"{NS}/configmaps/nope", **{
            "Audit-ID": "as-1", "Impersonate-User": "jane"})
        assert status == 403
        await wait_for(lambda: log.read_text().count("\n") == 2)
    complete = log.read_text().splitlines()[1]
    assert ' as="jane" asgroups="\\"system:authenticated\\"" ' in complete, complete
    assert complete.endswith(' response="403"')


async def test_blocking_strict_refuses_a_request_whose_event_cannot_be_stored(
        tmp_path: Path) -> None:
    """filters/audit.go ``WithAudit``: under ``blocking-strict`` a RequestReceived event the
    backend cannot store (a log on /dev/full) fails the request with
    ``responsewriters.InternalError``'s text 500, before it is served: nothing is created.
    ``blocking`` (``ignoreErrorsBackend``) serves it all the same."""
    creates = policy({"level": "Metadata", "verbs": ["create"]}, {"level": "None"})
    strict = BatchOptions("blocking-strict", log_batch_config())
    async with audited(wrap_mode(LogBackend("/dev/full"), strict), creates) as api:
        status, body, resp = await api.call("POST", f"{NS}/configmaps", configmap("strict"))
        assert status == 500
        assert body == (b'Internal Server Error: "/api/v1/namespaces/default/configmaps": '
                        b"failed to store audit event\n")
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        status, _, _ = await api.call("GET", f"{NS}/configmaps/strict")  # (not audited)
        assert status == 404
    blocking = BatchOptions("blocking", log_batch_config())
    async with audited(wrap_mode(LogBackend("/dev/full"), blocking), creates) as api:
        status, body, _ = await api.call("POST", f"{NS}/configmaps", configmap("lenient"))
        assert status == 201, body


async def test_blocking_writes_before_the_answer_and_batch_waits_for_a_full_batch(
        tmp_path: Path) -> None:
    """``blocking`` (the log's default): both events are in the file when the answer
    comes. ``batch`` (buffered.go): events wait until ``--audit-log-batch-max-size`` of
    them are queued (or the wait is over); the rest are written at shutdown."""
    log = tmp_path / "blocking.log"
    async with audited(LogBackend(str(log))) as api:
        status, _, resp = await api.call("GET", f"{NS}/configmaps/a")
        assert status == 404
        assert [(e["stage"], e["auditID"]) for e in lines(log)] == [
            ("RequestReceived", resp.headers["Audit-Id"]),
            ("ResponseComplete", resp.headers["Audit-Id"])]
    log = tmp_path / "batch.log"
    config = BatchConfig(buffer_size=100, max_batch_size=3, max_batch_wait=3600,
                         throttle_enable=False, async_delegate=False)
    async with audited(wrap_mode(LogBackend(str(log)), BatchOptions("batch", config))) as api:
        assert (await api.call("GET", f"{NS}/configmaps/a"))[0] == 404
        await quiet_period(0.3)
        assert log.read_bytes() == b""  # two events: no batch yet
        assert (await api.call("GET", f"{NS}/configmaps/b"))[0] == 404
        await wait_for(lambda: len(lines(log)) == 3)
        await quiet_period(0.3)
        assert len(lines(log)) == 3
    assert [e["objectRef"]["name"] for e in lines(log)] == ["a", "a", "b", "b"]


async def test_batch_mode_drops_what_its_buffer_cannot_hold(tmp_path: Path) -> None:
    """buffered.go ``ProcessEvents``: an event that finds the buffer full
    (``--audit-log-batch-buffer-size``) is dropped ("audit buffer queue blocked"), the
    request served all the same; what was queued is written at shutdown."""
    log = tmp_path / "audit.log"
    config = BatchConfig(buffer_size=1, max_batch_size=2, max_batch_wait=3600,
                         throttle_enable=False, async_delegate=False)
    async with audited(wrap_mode(LogBackend(str(log)), BatchOptions("batch", config))) as api:
        status, _, resp = await api.call("GET", f"{NS}/configmaps/a")
        assert status == 404
    assert [(e["stage"], e["auditID"]) for e in lines(log)] == [
        ("RequestReceived", resp.headers["Audit-Id"])]


async def test_truncation_drops_the_objects_of_a_large_event(tmp_path: Path) -> None:
    """truncate.go: an event larger than ``--audit-log-truncate-max-event-size`` at level
    Request or more loses requestObject and responseObject and is annotated
    ``audit.k8s.io/truncated: "true"``; small events pass unchanged."""
    log = tmp_path / "audit.log"
    backend = wrap_truncate(LogBackend(str(log)),
                            TruncateOptions(enabled=True, max_event_size=4000))
    async with audited(backend) as api:
        assert (await api.call("POST", f"{NS}/configmaps", configmap("big", 10_000)))[0] == 201
        assert (await api.call("POST", f"{NS}/configmaps", configmap("small", 10)))[0] == 201
        await wait_for(lambda: len(lines(log)) == 4)
    by = {(e["objectRef"]["name"], e["stage"]): e for e in lines(log)
          if e["stage"] == "ResponseComplete"}
    big = by["big", "ResponseComplete"]
    assert big["annotations"]["audit.k8s.io/truncated"] == "true"
    assert "requestObject" not in big and "responseObject" not in big
    small = by["small", "ResponseComplete"]
    assert "audit.k8s.io/truncated" not in small.get("annotations", {})
    assert small["requestObject"]["data"] == {"blob": "x" * 10}
    assert all(len(line) <= 4000 for line in log.read_bytes().splitlines(keepends=True))


@pytest.fixture
async def receiver(tmp_path: Path) -> AsyncIterator[Receiver]:
    hook = Receiver(tmp_path / "receiver", failures=1)
    await hook.start()
    yield hook
    await hook.stop()


async def test_the_webhook_gets_event_lists_in_batches_and_retries(
        tmp_path: Path, receiver: Receiver) -> None:
    """webhook.go ``processEvents``: a batch is one POST of an ``audit.k8s.io/v1``
    EventList (its items without kind and apiVersion) to the kubeconfig's server, with its
    CA and token; a failed POST (the receiver's first answer, a 500) is tried again after
    ``--audit-webhook-initial-backoff``. In batch mode (its default) events wait for
    ``--audit-webhook-batch-max-size`` of them, or the batch's wait."""
    options = AuditOptions(webhook=WebhookOptions(
        config_file=str(receiver.kubeconfig(tmp_path / "webhook.yaml")), initial_backoff=0.05,
        batch=BatchOptions("batch", BatchConfig(max_batch_size=4, max_batch_wait=3600))))
    options.validate()
    backend = build_backend(options)
    assert backend is not None
    async with audited(backend) as api:
        ids = []
        for name in ("a", "b"):
            status, _, resp = await api.call("GET", f"{NS}/configmaps/{name}")
            assert status == 404
            ids.append(resp.headers["Audit-Id"])
        await wait_for(lambda: len(receiver.bodies) == 2)
    first, second = receiver.bodies
    assert first == second  # the same batch, sent again
    assert first["kind"] == "EventList" and first["apiVersion"] == "audit.k8s.io/v1"
    assert [(e["auditID"], e["stage"]) for e in first["items"]] == [
        (ids[0], "RequestReceived"), (ids[0], "ResponseComplete"),
        (ids[1], "RequestReceived"), (ids[1], "ResponseComplete")]
    assert all("kind" not in e and "apiVersion" not in e for e in first["items"])
    assert first["items"][1]["responseStatus"]["code"] == 404
    assert receiver.headers[0]["Authorization"] == "Bearer audit-token"
    assert receiver.headers[0]["Content-Type"] == "application/json"


async def test_a_blocking_webhook_has_the_events_before_the_answer(
        tmp_path: Path, receiver: Receiver) -> None:
    """``--audit-webhook-mode=blocking``: each stage's event is sent (and retried) while
    the request waits, so the receiver has both when the answer comes."""
    receiver.failures = 0
    options = AuditOptions(webhook=WebhookOptions(
        config_file=str(receiver.kubeconfig(tmp_path / "webhook.yaml")),
        batch=BatchOptions("blocking", BatchConfig())))
    backend = build_backend(options)
    assert backend is not None
    async with audited(backend) as api:
        status, _, resp = await api.call("GET", f"{NS}/configmaps/now")
        assert status == 404
        assert [(e["auditID"], e["stage"]) for e in receiver.events()] == [
            (resp.headers["Audit-Id"], "RequestReceived"),
            (resp.headers["Audit-Id"], "ResponseComplete")]
        assert [len(b["items"]) for b in receiver.bodies] == [1, 1]


# -- long-running requests ------------------------------------------------------------------

async def _fake_kubelet() -> tuple[asyncio.Server, int]:
    """A kubelet that upgrades every request (101) and then closes; one for the container
    ``gone`` is refused (404)."""

    async def upgrade(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if b"/gone" in head.split(b"\r\n", 1)[0]:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                         b"X-Kubelet: yes\r\nContent-Length: 14\r\n\r\ncontainer gone")
            await writer.drain()
            writer.close()
            return
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                     b"Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                     b"\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upgrade, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def _backend() -> tuple[web.AppRunner, int]:
    """A web server behind a service: it answers with an Audit-Id of its own."""

    async def answer(request: web.Request) -> web.Response:
        return web.Response(text="from the backend", headers={"Audit-Id": "backend-id"})

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, runner.addresses[0][1]


async def test_long_running_requests_log_response_started_whatever_their_answer(
        tmp_path: Path) -> None:
    """filters/audit.go: a request ``BasicLongRunningRequestCheck`` calls long-running
    (watch, proxy, log, exec/attach/portforward) logs ResponseStarted as its answer
    starts, with that answer's code, then ResponseComplete: a watch refused with a 400, a
    log of a missing pod (404), a service proxy (the backend's 200, once its body is
    sent), an exec upgraded by the kubelet (101, ``Hijack``). A short request does not."""
    log = tmp_path / "audit.log"
    everything = policy({"level": "Metadata", "resources": [
        {"resources": ["configmaps", "pods", "pods/log", "pods/exec", "services/proxy"]}]},
        {"level": "None"})
    kubelet, kubelet_port = await _fake_kubelet()
    runner, port = await _backend()
    try:
        async with audited(LogBackend(str(log)), everything) as api:
            await _world(api, kubelet_port, port)
            calls = {
                "watch": ("GET", f"{NS}/configmaps?watch=true&fieldSelector=nope%3Dx"),
                "log": ("GET", f"{NS}/pods/missing/log"),
                "proxy": ("GET", f"{NS}/services/web:http/proxy/hello"),
                "short": ("GET", f"{NS}/configmaps/missing"),
            }
            codes = {}
            for key, (method, path) in calls.items():
                status, _, _ = await api.call(method, path, **{"Audit-ID": key})
                codes[key] = status
            assert codes == {"watch": 400, "log": 404, "proxy": 200, "short": 404}
            assert await _exec(api) == 101

            def stages(audit_id: str) -> list[tuple[str, int]]:
                return [(e["stage"], e.get("responseStatus", {}).get("code", 0))
                        for e in lines(log) if e["auditID"] == audit_id]

            await wait_for(lambda: len(stages("exec")) == 3)
            for key, code in codes.items():
                if key != "short":
                    await wait_for(lambda k=key: len(stages(k)) == 3)  # type: ignore[misc]
                    assert stages(key) == [("RequestReceived", 0), ("ResponseStarted", code),
                                           ("ResponseComplete", code)], key
            assert stages("short") == [("RequestReceived", 0), ("ResponseComplete", 404)]
            assert stages("exec") == [("RequestReceived", 0), ("ResponseStarted", 101),
                                      ("ResponseComplete", 101)]
    finally:
        kubelet.close()
        await runner.cleanup()


async def test_an_upgrade_the_kubelet_refuses_is_echoed_on_the_hijacked_connection(
        tmp_path: Path) -> None:
    """upgradeaware.go ``tryUpgrade``: a kubelet's error answer to an upgrade is written
    back on the hijacked connection as it came (its headers only: no Audit-Id, no header
    of the server's), then the connection closed; the audit event's code is the 101 that
    ``auditResponseWriter.Hijack`` fakes, not the kubelet's 404."""
    log = tmp_path / "audit.log"
    kubelet, kubelet_port = await _fake_kubelet()
    try:
        async with audited(LogBackend(str(log)), policy({"level": "Metadata", "resources": [
                {"resources": ["pods/exec"]}]}, {"level": "None"})) as api:
            await _world(api, kubelet_port, 9)
            answer = await _exec_answer(api, "gone", "refused")
            assert answer == (b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                              b"X-Kubelet: yes\r\nContent-Length: 14\r\n\r\ncontainer gone")
            await wait_for(lambda: len([e for e in lines(log) if e["auditID"] == "refused"]) == 3)
            assert [(e["stage"], e.get("responseStatus", {}).get("code", 0))
                    for e in lines(log) if e["auditID"] == "refused"] == [
                ("RequestReceived", 0), ("ResponseStarted", 101), ("ResponseComplete", 101)]
    finally:
        kubelet.close()


async def test_a_proxied_answer_carries_both_audit_ids(tmp_path: Path) -> None:
    """audit_init.go sets the apiserver's Audit-Id on the response writer before the
    handler runs; the proxy (upgradeaware.go, Go's httputil.ReverseProxy ``copyHeader``)
    then *adds* the backend's headers to it. A backend answering with its own Audit-Id
    therefore reaches the client after the apiserver's, two values of one header, the
    apiserver's the one its audit events carry."""
    log = tmp_path / "audit.log"
    runner, port = await _backend()
    try:
        async with audited(LogBackend(str(log)), policy({"level": "Metadata"})) as api:
            await _world(api, 0, port)
            status, body, resp = await api.call("GET", f"{NS}/services/web:http/proxy/x")
            assert (status, body) == (200, b"from the backend")
            ours, theirs = resp.headers.getall("Audit-Id")
            assert uuid.UUID(ours).version == 4 and theirs == "backend-id"
            await wait_for(lambda: any(e["auditID"] == ours and e["stage"] == "ResponseComplete"
                                       for e in lines(log)))
            assert not any(e["auditID"] == "backend-id" for e in lines(log))
    finally:
        await runner.cleanup()


async def _world(api: Client, kubelet_port: int, backend_port: int) -> None:
    """A node on loopback (its kubelet at ``kubelet_port``), a pod on it (containers ``c``
    and ``gone``), and the service ``web`` whose endpoint is that pod at ``backend_port``."""
    merge = {"Content-Type": "application/merge-patch+json"}
    assert (await api.call("POST", "/api/v1/nodes", {"metadata": {"name": "lo"}}))[0] == 201
    status, body, _ = await api.call("PATCH", "/api/v1/nodes/lo/status", {"status": {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port or 10250}}}}, **merge)
    assert status == 200, body
    status, body, _ = await api.call("POST", f"{NS}/pods", {
        "metadata": {"name": "lopod"},
        "spec": {"nodeName": "lo", "containers": [{"name": "c", "image": "i"},
                                                   {"name": "gone", "image": "i"}]}})
    assert status == 201, body
    status, body, _ = await api.call("PATCH", f"{NS}/pods/lopod/status", {"status": {
        "phase": "Running", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}, **merge)
    assert status == 200, body
    assert (await api.call("POST", f"{NS}/services", {
        "metadata": {"name": "web"}, "spec": {"ports": [{"name": "http", "port": 80}]}}))[0] \
        == 201
    status, body, _ = await api.call("PUT", f"{NS}/endpoints/web", {
        "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1", "targetRef": {
            "kind": "Pod", "namespace": "default", "name": "lopod"}}],
            "ports": [{"name": "http", "port": backend_port}]}]})
    assert status in (200, 201), body


async def _exec(api: Client, container: str = "c", audit_id: str = "exec") -> int:
    """An exec upgrade, written by hand (aiohttp upgrades only to websockets): the status
    of the answer's head."""
    return int((await _exec_answer(api, container, audit_id)).split(b" ", 2)[1])


async def _exec_answer(api: Client, container: str, audit_id: str) -> bytes:
    """Everything the client gets for an exec upgrade, until the connection closes."""
    host, port = api.running.url.removeprefix("https://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), ssl=api.tls,
                                                   server_hostname=host)
    writer.write((f"POST {NS}/pods/lopod/exec?command=ls&stdout=true&container={container} "
                  f"HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {api.running.token}\r\n"
                  f"Audit-ID: {audit_id}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                  "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n").encode())
    answer = await reader.read()  # the kubelet closes: the tunnel ends
    writer.close()
    return answer
