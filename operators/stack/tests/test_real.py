"""The stack on the process runtime: the MysqlCluster's pod runs real MariaDB, initialized
from the operator's Secret by the image's entrypoint contract, and answers the application's
user on the database Service's ClusterIP; the Moodle web tier (an image the runtime does not
run: simulated, and said so) is wired to it."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from operators.stack.resources import Moodle, MoodleSpec, MysqlCluster, MysqlClusterSpec
from setpoint.client import Client
from setpoint.resources.models.core_v1 import PersistentVolumeClaim, Pod, Secret, Service
from setpoint.resources.models.events_v1 import Event
from setpoint.testing import OperatorRunner, kill_container_process, present
from setpoint.testing.plugin import Waiter

pytestmark = [pytest.mark.setpoint_runtime("process"), pytest.mark.timeout(240)]
TIMEOUT = 120.0


@pytest.fixture(autouse=True)
def _mariadb_installed() -> None:
    if shutil.which("mariadbd") is None or shutil.which("mariadb") is None:
        pytest.skip("mariadb is not installed: apt-get update && apt-get install -y "
                    "mariadb-server")


def mariadb(host: str, user: str, password: str, database: str, sql: str) -> str:
    done = subprocess.run(["mariadb", "-h", host, "-u", user, f"-p{password}", database,
                           "-N", "-e", sql], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, "HOME": "/nonexistent"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def test_the_database_runs_real_mariadb_with_the_operators_credentials(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(MysqlCluster(name="db", spec=MysqlClusterSpec(database="moodle",
                                                                   user="moodle")))
    await wait_for(MysqlCluster, "db", lambda db: db.status.is_true("Available"),
                   timeout=TIMEOUT)
    secret = await k8s.get(Secret, "db-credentials")
    credentials = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    address = str(present((await k8s.get(Service, "db")).spec).cluster_ip)

    sql = "CREATE TABLE courses (name VARCHAR(20)); INSERT INTO courses VALUES ('maths')"
    await asyncio.to_thread(mariadb, address, "moodle", credentials["password"], "moodle", sql)
    found = await asyncio.to_thread(mariadb, address, "moodle", credentials["password"],
                                    "moodle", "SELECT name FROM courses")
    assert found == "maths"

    await k8s.create(Moodle(name="m1", spec=MoodleSpec(mysql_cluster="db")))
    await wait_for(Moodle, "m1", lambda m: m.status.is_true("SetupVerified")
                   and m.status.is_true("Available"), timeout=TIMEOUT)
    (web,) = [p for p in (await k8s.list(Pod)).items if present(p.metadata.name).startswith("m1-")]
    # the web image is not in the catalog: its pod runs simulated and says why
    assert any("simulated" in (c.message or "") for c in present(web.status).conditions or ()), \
        present(web.status).conditions


def ready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True"
               for c in (pod.status.conditions if pod.status else None) or ())


def restarts(pod: Pod) -> int:
    return sum(c.restart_count or 0 for c in present(pod.status).container_statuses or ())


async def test_the_databases_rows_survive_a_killed_mariadbd_and_a_deleted_pod(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """A row written through the Service is read back after mariadbd is killed with
    ``kill -9`` (the kubelet restarts it in place; InnoDB recovers from its redo log) and
    after the pod is deleted (the StatefulSet makes ``db-0`` again on the same claim,
    ``data-db-0``, so the entrypoint finds an initialized data directory and does not
    initialize it again: the credentials of the first start still hold)."""
    await k8s.create(MysqlCluster(name="db", spec=MysqlClusterSpec(database="moodle",
                                                                   user="moodle")))
    await wait_for(MysqlCluster, "db", lambda db: db.status.is_true("Available"),
                   timeout=TIMEOUT)
    secret = await k8s.get(Secret, "db-credentials")
    password = base64.b64decode((secret.data or {})["password"]).decode()
    address = str(present((await k8s.get(Service, "db")).spec).cluster_ip)

    async def query(sql: str) -> str:
        return await asyncio.to_thread(mariadb, address, "moodle", password, "moodle", sql)

    await query("CREATE TABLE courses (name VARCHAR(20)); INSERT INTO courses VALUES ('maths')")

    victim = await k8s.get(Pod, "db-0")
    kill_container_process(str(present(victim.status).pod_ip), "mariadbd")
    restarted = await wait_for(Pod, "db-0", lambda p: restarts(p) > restarts(victim)
                               and ready(p), timeout=TIMEOUT)
    assert restarted.metadata.uid == victim.metadata.uid
    await wait_for(MysqlCluster, "db", lambda db: db.status.is_true("Available"),
                   timeout=TIMEOUT)
    assert await query("SELECT name FROM courses") == "maths"
    await query("INSERT INTO courses VALUES ('physics')")

    await k8s.delete(Pod, "db-0")
    await wait_for(Pod, "db-0", lambda p: p.metadata.uid != victim.metadata.uid
                   and ready(p), timeout=TIMEOUT)
    await wait_for(MysqlCluster, "db", lambda db: db.status.is_true("Available"),
                   timeout=TIMEOUT)
    assert await query("SELECT name FROM courses ORDER BY name") == "maths\nphysics"


def progressing(reason: str) -> Callable[[MysqlCluster], bool]:
    def check(db: MysqlCluster) -> bool:
        found = db.status.get_condition("Progressing")
        return db.status.observed_generation == db.metadata.generation \
            and found is not None and found.reason == reason

    check.__qualname__ = f"progressing({reason})"
    return check


def runs(version: str) -> Callable[[MysqlCluster], bool]:
    def check(db: MysqlCluster) -> bool:
        return progressing("Complete")(db) and db.status.is_true("Available") \
            and db.status.current_version == version

    check.__qualname__ = f"runs({version})"
    return check


def reported(db: MysqlCluster) -> str:
    found = db.status.get_condition("Progressing")
    return (found.message or "") if found is not None else ""


async def a_database(k8s: Client, wait_for: Waiter) -> Callable[[str], Awaitable[str]]:
    """A MysqlCluster ``db`` on 11.4 with a row written; what runs SQL as its user."""
    await k8s.create(MysqlCluster(name="db", spec=MysqlClusterSpec(
        version="11.4", database="moodle", user="moodle")))
    await wait_for(MysqlCluster, "db", runs("11.4"), timeout=TIMEOUT)
    secret = await k8s.get(Secret, "db-credentials")
    password = base64.b64decode((secret.data or {})["password"]).decode()
    address = str(present((await k8s.get(Service, "db")).spec).cluster_ip)

    async def query(sql: str) -> str:
        return await asyncio.to_thread(mariadb, address, "moodle", password, "moodle", sql)

    await query("CREATE TABLE courses (name VARCHAR(20)); INSERT INTO courses VALUES ('maths')")
    return query


async def test_a_version_change_rolls_the_server_onto_the_same_data(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """``spec.version`` changed: the StatefulSet makes ``db-0`` again with the new image on
    the same claim (pkg/controller/statefulset/stateful_set_control.go
    ``updateStatefulSet``: a pod of an old revision is deleted, then made from the update
    revision), the status says which version now runs, and the rows and the user's
    password of the first start still hold."""
    query = await a_database(k8s, wait_for)
    before = await k8s.get(Pod, "db-0")
    claim = await k8s.get(PersistentVolumeClaim, "data-db-0")

    await k8s.patch(MysqlCluster, "db", {"spec": {"version": "11.8"}})
    await wait_for(MysqlCluster, "db", runs("11.8"), timeout=TIMEOUT)
    after = await k8s.get(Pod, "db-0")
    assert after.metadata.uid != before.metadata.uid
    assert [c.image for c in present(present(after.spec).containers)] == ["mariadb:11.8"]
    assert (await k8s.get(PersistentVolumeClaim, "data-db-0")).metadata.uid == \
        claim.metadata.uid
    assert await query("SELECT name FROM courses") == "maths"


@pytest.mark.setpoint_workload_settings(extra={"kubelet.image-catalog": str(
    Path(__file__).with_name("mariadb_that_does_not_start.yaml"))})
async def test_a_version_whose_server_does_not_start_is_reported_and_the_data_kept(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    """The new version's mariadbd aborts at every start (the pod waits in
    ``CrashLoopBackOff``): the MysqlCluster says so (``Progressing`` False, reason
    ``UpgradeFailed``, with the server's own error, the version the data last ran and how
    to go back), the claim is the same. Set back, the pod stuck on the failed version is
    deleted by the operator (StatefulSet would wait for it to be Ready first: the
    documented forced rollback), 11.4 runs again on the data, and the rows are there."""
    query = await a_database(k8s, wait_for)
    claim = await k8s.get(PersistentVolumeClaim, "data-db-0")

    await k8s.patch(MysqlCluster, "db", {"spec": {"version": "99.0"}})
    failed = await wait_for(MysqlCluster, "db", lambda db: progressing("UpgradeFailed")(db)
                            and "unknown variable" in reported(db), timeout=TIMEOUT)
    message = reported(failed)
    assert "MariaDB 99.0 does not start in pod db-0" in message, message
    assert "mariadbd: unknown variable 'innodb-setting-of-mariadb-99=1'" in message, message
    assert "set spec.version back to 11.4" in message and "data-db-0" in message, message
    assert not failed.status.is_true("Available")
    assert failed.status.current_version == "11.4"
    assert (await k8s.get(PersistentVolumeClaim, "data-db-0")).metadata.uid == \
        claim.metadata.uid

    await k8s.patch(MysqlCluster, "db", {"spec": {"version": "11.4"}})
    await wait_for(MysqlCluster, "db", runs("11.4"), timeout=TIMEOUT)
    pod = await k8s.get(Pod, "db-0")
    assert [c.image for c in present(present(pod.spec).containers)] == ["mariadb:11.4"]
    assert await query("SELECT name FROM courses") == "maths"
    events = (await k8s.list(Event)).items
    assert any(e.reason == "RollingBack" and present(e.regarding).name == "db"
               and "pod db-0 (99.0) does not start" in (e.note or "") for e in events)
