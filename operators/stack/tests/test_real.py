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

import pytest

from operators.stack.resources import Moodle, MoodleSpec, MysqlCluster, MysqlClusterSpec
from setpoint.client import Client
from setpoint.resources.models.core_v1 import Pod, Secret, Service
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
