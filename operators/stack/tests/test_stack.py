"""The stack operators on a whole embedded cluster (simulated pods): a Moodle waits for its
MysqlCluster, places every pod of the stack as its spec says, keeps the database's
credentials, and verifies its setup again after a web pod restarts."""

from __future__ import annotations

from typing import Any

import pytest

from operators.stack import moodle as moodle_objects
from operators.stack.mysql import credentials_name
from operators.stack.resources import Moodle, MoodleSpec, MysqlCluster, MysqlClusterSpec
from setpoint.client import Client, InvalidError
from setpoint.resources.models.apps_v1 import Deployment, StatefulSet
from setpoint.resources.models.core_v1 import (
    PersistentVolumeClaim,
    Pod,
    ResourceRequirements,
    Secret,
    Toleration,
)
from setpoint.resources.models.networking_v1 import Ingress
from setpoint.testing import OperatorRunner, SetpointCluster, present
from setpoint.testing.plugin import Waiter
from setpoint.workloads import faults

TIMEOUT = 30.0
PLACEMENT: dict[str, Any] = {
    "resources": ResourceRequirements(requests={"cpu": "250m", "memory": "256Mi"},
                                      limits={"cpu": "500m", "memory": "512Mi"}),
    "node_selector": {"kubernetes.io/os": "linux"},
    "tolerations": [Toleration(key="dedicated", operator="Equal", value="stack",
                               effect="NoSchedule")]}


def available(obj: Any) -> bool:
    return bool(obj.status.is_true("Available")
                and obj.status.observed_generation == obj.metadata.generation)


def condition(type_: str, reason: str) -> Any:
    def check(obj: Any) -> bool:
        found = obj.status.get_condition(type_)
        return found is not None and found.reason == reason

    check.__qualname__ = f"condition({type_}={reason})"
    return check


async def test_a_moodle_waits_for_its_database_then_serves_on_it(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(Moodle(name="m1", spec=MoodleSpec(mysql_cluster="db",
                                                       host="moodle.example.com",
                                                       cluster_issuer="letsencrypt")))
    await wait_for(Moodle, "m1", condition("DatabaseReady", "DatabaseMissing"),
                   timeout=TIMEOUT)
    assert (await k8s.list(Deployment)).items == []  # nothing before the database

    await k8s.create(MysqlCluster(name="db", spec=MysqlClusterSpec(database="moodle")))
    await wait_for(MysqlCluster, "db", available, timeout=TIMEOUT)
    moodle = await wait_for(Moodle, "m1", available, timeout=TIMEOUT)
    assert moodle.status.url == "https://moodle.example.com/"

    web = await k8s.get(Deployment, "m1")
    pod = present(present(present(web.spec).template).spec)
    env = {e.name: e for e in present(pod.containers)[0].env or ()}
    assert env["MOODLE_DATABASE_HOST"].value == "db"
    password = present(present(env["MOODLE_DATABASE_PASSWORD"].value_from).secret_key_ref)
    assert password.name == "db-credentials"
    ingress = await k8s.get(Ingress, "m1")
    assert ingress.metadata.annotations == {moodle_objects.CLUSTER_ISSUER: "letsencrypt"}
    assert present(present(ingress.spec).tls)[0].hosts == ["moodle.example.com"]
    claims = {c.metadata.name for c in (await k8s.list(PersistentVolumeClaim)).items}
    assert {"m1-moodledata", "data-db-0"} <= claims


async def test_every_pod_of_the_stack_gets_the_placement_its_spec_asks_for(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(MysqlCluster(name="db", spec=MysqlClusterSpec(**PLACEMENT)))
    await k8s.create(Moodle(name="m1", spec=MoodleSpec(mysql_cluster="db", replicas=2,
                                                       **PLACEMENT)))
    await wait_for(Moodle, "m1", available, timeout=TIMEOUT)
    pods = (await k8s.list(Pod)).items
    assert {p.metadata.name for p in pods if present(p.metadata.name).startswith("db-")} == {"db-0"}
    assert len([p for p in pods if present(p.metadata.name).startswith("m1-")]) == 2
    for pod in pods:
        assert present(pod.spec).node_selector == {"kubernetes.io/os": "linux"}, pod.metadata.name
        tolerations = present(pod.spec).tolerations or ()
        assert any(t.key == "dedicated" for t in tolerations), pod.metadata.name
        resources = present(present(pod.spec).containers)[0].resources
        assert present(resources).requests == {"cpu": "250m", "memory": "256Mi"}, pod.metadata.name
        assert present(resources).limits == {"cpu": "500m", "memory": "512Mi"}, pod.metadata.name


async def test_the_database_credentials_are_made_once_and_kept(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(MysqlCluster(name="db"))
    await wait_for(MysqlCluster, "db", available, timeout=TIMEOUT)
    first = await k8s.get(Secret, credentials_name(await k8s.get(MysqlCluster, "db")))
    assert set(first.data or {}) == {"database", "user", "password", "root-password"}

    await k8s.patch(MysqlCluster, "db", {"spec": {"version": "11.8"}})
    await wait_for(MysqlCluster, "db", available, timeout=TIMEOUT)
    statefulset = await k8s.get(StatefulSet, "db")
    pod = present(present(present(statefulset.spec).template).spec)
    assert present(pod.containers)[0].image == "mariadb:11.8"
    assert (await k8s.get(Secret, "db-credentials")).data == first.data


async def test_the_storage_size_cannot_change_and_the_error_says_why(
        k8s: Client, operator: OperatorRunner) -> None:
    await k8s.create(MysqlCluster(name="db"))
    with pytest.raises(InvalidError) as raised:
        await k8s.patch(MysqlCluster, "db", {"spec": {"storage": "2Gi"}})
    assert "storage cannot change once the database exists" in str(raised.value)


async def test_a_web_pod_restart_makes_the_operator_verify_the_setup_again(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter,
        cluster: SetpointCluster) -> None:
    await k8s.create(MysqlCluster(name="db"))
    await k8s.create(Moodle(name="m1", spec=MoodleSpec(mysql_cluster="db")))
    moodle = await wait_for(Moodle, "m1", available, timeout=TIMEOUT)
    moodle = await wait_for(Moodle, "m1", condition("SetupVerified", "Verified"),
                            timeout=TIMEOUT)
    assert moodle.status.verified_restarts == 0
    (web,) = [p for p in (await k8s.list(Pod)).items if present(p.metadata.name).startswith("m1-")]

    await faults.restart_container(k8s, present(web.metadata.name), cluster.namespace)

    moodle = await wait_for(Moodle, "m1", lambda m: m.status.verified_restarts == 1,
                            timeout=TIMEOUT)
    assert "after 1 web pod restart(s)" in moodle.status.get_condition("SetupVerified").message
