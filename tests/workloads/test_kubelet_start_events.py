"""The events of a container's start, as ``kubectl describe pod`` / ``kubectl events`` show
them on a 1.32 cluster.

kubernetes/kubernetes v1.32: pkg/kubelet/kuberuntime/kuberuntime_container.go
``startContainer`` ensures the image, then records ``Created`` (``Created container: <name>``)
after CreateContainer and ``Started`` (``Started container <name>``) after StartContainer,
each about the container (``involvedObject.fieldPath: spec.containers{<name>}``,
pkg/kubelet/container/ref.go GenerateContainerRef). pkg/kubelet/images/image_manager.go
``EnsureImageExists`` decides by ``shouldPullImage``: an image present and not ``Always``
gives ``Pulled: Container image "<image>" already present on machine``; a pull records
``Pulling: Pulling image "<image>"`` then ``Pulled: Successfully pulled image "<image>" in
<d> (<d> including waiting). Image size: <n> bytes.``; ``Never`` with the image absent
records the Warning ``ErrImageNeverPull`` (``Container image "<image>" is not present with
pull policy of Never``), and startContainer the Warning ``Failed`` (``Error:
ErrImageNeverPull``), the container waiting with that reason. The recorder is client-go's
(tools/record events_cache.go EventCorrelator): the same event again is a count PATCH.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from setpoint.client import Kind
from setpoint.workloads.kubelet import KubeletOptions
from tests.waiting import quiet_period
from tests.workloads.process.support import Kubectl
from tests.workloads.test_kubelet_support import (
    FAST,
    Env,
    kubelet_env,
    pod,
    ready,
    statuses,
    wait_for,
)

EVENT = Kind("v1", "Event")
Obj = dict[str, Any]
PULLED = re.compile(r'Successfully pulled image "nginx:1\.27" in \d+(\.\d+)?m?s '
                    r'\(\d+(\.\d+)?m?s including waiting\)\. Image size: \d+ bytes\.')


async def events_of(env: Env, name: str) -> list[Obj]:
    """The kubelet's events about pod ``name``, in the order they were written."""
    listed = await env.client.list(EVENT, namespace="default")
    mine = [e for e in listed.items if e["involvedObject"].get("name") == name
            and (e.get("source") or {}).get("component") == "kubelet"]
    return sorted(mine, key=lambda e: int(e["metadata"]["resourceVersion"]))


def reasons(events: list[Obj]) -> list[tuple[str, str, str]]:
    return [(e["reason"], e["involvedObject"].get("fieldPath", ""), e["message"])
            for e in events]


async def test_describe_shows_pulling_pulled_created_started_then_already_present(
        tmp_path: Path) -> None:
    """IfNotPresent (the API's default for a tagged image): the node's first pod of the
    image pulls it; the next pod on that node finds it present (EnsureImageExists)."""
    async with kubelet_env(FAST) as env:
        kubectl = Kubectl(env, tmp_path, None)
        await env.run(pod("first", "c", containers=[{"name": "c", "image": "nginx:1.27"}]))
        await env.until("first", ready)

        async def four() -> list[Obj] | None:
            got = await events_of(env, "first")
            return got if len(got) >= 4 else None
        first = await wait_for(four)
        got = reasons(first)
        assert [r[:2] for r in got] == [("Pulling", "spec.containers{c}"),
                                        ("Pulled", "spec.containers{c}"),
                                        ("Created", "spec.containers{c}"),
                                        ("Started", "spec.containers{c}")]
        assert got[0][2] == 'Pulling image "nginx:1.27"'
        assert PULLED.fullmatch(got[1][2]), got[1][2]
        assert got[2][2] == "Created container: c" and got[3][2] == "Started container c"
        described = await kubectl.ok("describe", "pod", "first")
        for line in ('Pulling image "nginx:1.27"', "Successfully pulled image",
                     "Created container: c", "Started container c"):
            assert re.search(rf"Normal\s+\w+\s+.*kubelet\s+{re.escape(line)}", described), \
                described

        await env.run(pod("second", "c", containers=[{"name": "c", "image": "nginx:1.27"}]))
        await env.until("second", ready)

        async def three() -> list[Obj] | None:
            got = await events_of(env, "second")
            return got if len(got) >= 3 else None
        second = reasons(await wait_for(three))
        assert second == [
            ("Pulled", "spec.containers{c}",
             'Container image "nginx:1.27" already present on machine'),
            ("Created", "spec.containers{c}", "Created container: c"),
            ("Started", "spec.containers{c}", "Started container c")]
        shown = await kubectl.ok("events", "--for", "pod/second")
        assert 'Container image "nginx:1.27" already present on machine' in shown, shown
        assert "Pulling" not in shown, shown

        # another node holds no image yet: it pulls
        await env.run(pod("third", "c", containers=[{"name": "c", "image": "nginx:1.27"}]),
                      "node-b")
        third = await wait_for(lambda: _has(env, "third", "Pulling"))
        assert third


async def _has(env: Env, name: str, reason: str) -> bool:
    return any(e["reason"] == reason for e in await events_of(env, name))


async def test_always_pulls_every_time_and_init_containers_have_their_field_path(
        tmp_path: Path) -> None:
    """``nginx`` (no tag) is defaulted to imagePullPolicy Always (pkg/apis/core/v1/
    defaults.go SetDefaults_Container): shouldPullImage pulls even when present. Init
    containers start first, their events about ``spec.initContainers{...}``."""
    async with kubelet_env(FAST) as env:
        for name in ("a1", "a2"):
            await env.run(pod(name, "c", initContainers=[{"name": "setup", "image": "nginx"}]))
            await env.until(name, ready)
        got = reasons(await wait_for(lambda: _all(env, "a2", 8)))
        assert [r[:2] for r in got] == [
            ("Pulling", "spec.initContainers{setup}"), ("Pulled", "spec.initContainers{setup}"),
            ("Created", "spec.initContainers{setup}"), ("Started", "spec.initContainers{setup}"),
            ("Pulling", "spec.containers{c}"), ("Pulled", "spec.containers{c}"),
            ("Created", "spec.containers{c}"), ("Started", "spec.containers{c}")]
        assert got[0][2] == 'Pulling image "nginx"'
        assert got[1][2].startswith('Successfully pulled image "nginx" in ')
        described = await Kubectl(env, tmp_path, None).ok("describe", "pod", "a2")
        assert 'Pulling image "nginx"' in described, described


async def _all(env: Env, name: str, count: int) -> list[Obj] | None:
    got = await events_of(env, name)
    return got if len(got) >= count else None


async def test_never_without_the_image_waits_err_image_never_pull_and_counts_retries(
        tmp_path: Path) -> None:
    """imagePullPolicy Never on a node without the image: ErrImageNeverPull (Warning),
    ``Failed: Error: ErrImageNeverPull``; the container waits with that reason and message
    (convertToAPIContainerStatuses), and each retried sync repeats the events, which the
    correlator turns into a count on the same Event."""
    async with kubelet_env(FAST.__class__(**{**FAST.__dict__, "start_retry": 0.3})) as env:
        await env.run(pod("never", "c", containers=[
            {"name": "c", "image": "nginx:1.27", "imagePullPolicy": "Never"}]))
        message = 'Container image "nginx:1.27" is not present with pull policy of Never'
        waiting = await env.until("never", lambda p: (statuses(p).get("c", {}).get(
            "state") or {}).get("waiting", {}).get("reason") == "ErrImageNeverPull")
        assert statuses(waiting)["c"]["state"]["waiting"]["message"] == message
        assert waiting["status"]["phase"] == "Pending"

        async def repeated() -> list[Obj] | None:
            got = await events_of(env, "never")
            counts = {e["reason"]: e.get("count", 1) for e in got}
            return got if counts.get("ErrImageNeverPull", 0) >= 2 and \
                counts.get("Failed", 0) >= 2 else None
        got = await wait_for(repeated)
        assert {(e["type"], e["reason"], e["message"]) for e in got} == {
            ("Warning", "ErrImageNeverPull", message),
            ("Warning", "Failed", "Error: ErrImageNeverPull")}
        shown = await Kubectl(env, tmp_path, None).ok("describe", "pod", "never")
        assert re.search(r"Warning\s+ErrImageNeverPull\s+.*\(x\d+ over", shown), shown
        assert "ErrImageNeverPull" in shown and "Started" not in shown


async def test_lifecycle_events_off_records_no_start_events() -> None:
    """``kubelet.lifecycle-events=false`` (scale benchmarks) leaves the Normal start events
    out; failures are still recorded."""
    assert KubeletOptions().lifecycle_events  # on by default, as a real kubelet records them
    assert not KubeletOptions.from_extra({"kubelet.lifecycle-events": "false"}).lifecycle_events
    options = FAST.__class__(**{**FAST.__dict__, "lifecycle_events": False})
    async with kubelet_env(options) as env:
        await env.run(pod("quiet", "c", containers=[{"name": "c", "image": "nginx:1.27"}]))
        await env.run(pod("loud", "c", containers=[
            {"name": "c", "image": "busybox:1.36", "imagePullPolicy": "Never"}]))
        await env.until("quiet", ready)
        await wait_for(lambda: _has(env, "loud", "ErrImageNeverPull"))
        await quiet_period()
        assert await events_of(env, "quiet") == []
