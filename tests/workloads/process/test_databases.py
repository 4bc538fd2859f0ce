"""Database images on the process runtime keep their images' contract: an empty data
directory is initialized from the environment before the server starts (docker-library
postgres and MariaDB/mariadb-docker ``docker-entrypoint.sh``:
setpoint/workloads/kubelet/process/entrypoints.py), and the server answers on the pod's IP.
Also redis, which needs no initialization."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

from setpoint.workloads.kubelet.process.catalog import ImageCatalog, LaunchContext
from setpoint.workloads.kubelet.process.entrypoints import mariadb_setup_sql
from tests.workloads.process.support import need, process_env, runtime_of
from tests.workloads.test_kubelet_support import Env, pod, ready, statuses

ROOT_PASSWORD = "r00t'pass"


def server(name: str, image: str, port: int, env: dict[str, str], data: str,
           **extra: Any) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"] = [{
        "name": "db", "image": image, "ports": [{"containerPort": port}],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "volumeMounts": [{"name": "data", "mountPath": data}],
        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1}, **extra}]
    body["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    return body


def run(*argv: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_setup_statements_quote_what_the_environment_says() -> None:
    sql = mariadb_setup_sql({"MARIADB_ROOT_PASSWORD": ROOT_PASSWORD, "MYSQL_DATABASE": "a`b",
                             "MARIADB_USER": "u", "MARIADB_PASSWORD": "p\\q"})
    assert "ALTER USER 'root'@'localhost' IDENTIFIED BY 'r00t''pass';" in sql
    assert "CREATE DATABASE IF NOT EXISTS `a``b`;" in sql
    assert "CREATE USER 'u'@'%' IDENTIFIED BY 'p\\\\q';" in sql
    assert "GRANT ALL ON `a``b`.* TO 'u'@'%';" in sql


def test_the_data_directory_is_the_mounted_volume_else_the_containers_own(
        tmp_path: Path) -> None:
    entry = ImageCatalog().lookup("mariadb:11")
    assert entry is not None
    mounted = entry.argv([], [], LaunchContext("127.16.0.9", tmp_path,
                                               mounts=("/var/lib/mysql",)))
    assert "--datadir=/var/lib/mysql" in mounted
    assert "--bind-address=127.16.0.9" in mounted
    own = entry.argv([], [], LaunchContext("127.16.0.9", tmp_path))
    assert f"--datadir={tmp_path / 'mysql'}" in own
    # the server runs after the image's initialization, as its entrypoint does
    assert own[2:4] == ["setpoint.workloads.kubelet.process.entrypoints", "mariadb"]
    assert all(len(a.split("=", 1)[-1]) < 108 for a in own if a.startswith("--socket="))


async def test_mariadb_creates_the_database_and_user_its_environment_names(
        tmp_path: Path) -> None:
    need("mariadbd", "mariadb-server")
    async with process_env(tmp_path) as env:
        await env.run(server("maria", "mariadb:11", 3306, {
            "MARIADB_ROOT_PASSWORD": ROOT_PASSWORD, "MARIADB_DATABASE": "app",
            "MARIADB_USER": "app", "MARIADB_PASSWORD": "secret"}, "/var/lib/mysql"))
        ip = (await env.until("maria", ready, timeout=90))["status"]["podIP"]
        client = ["mariadb", "-h", ip, "-P", "3306", "-uapp", "-psecret", "app", "-N", "-e"]
        await asyncio.to_thread(run, *client, "CREATE TABLE t (x INT); INSERT INTO t VALUES (42)")
        assert (await asyncio.to_thread(run, *client, "SELECT x FROM t")).strip() == "42"
        root = ["mariadb", "-h", ip, "-uroot", f"-p{ROOT_PASSWORD}", "-N", "-e", "SELECT 1"]
        assert (await asyncio.to_thread(run, *root)).strip() == "1"


async def test_an_uninitialized_mariadb_without_a_password_option_refuses_to_start(
        tmp_path: Path) -> None:
    need("mariadbd", "mariadb-server")
    async with process_env(tmp_path) as env:
        body = server("maria", "mariadb:11", 3306, {}, "/var/lib/mysql")
        body["spec"]["restartPolicy"] = "Never"
        await env.run(body)
        done = await env.until("maria", lambda p: "terminated" in (
            statuses(p).get("db", {}).get("state") or {}), timeout=60)
        assert statuses(done)["db"]["state"]["terminated"]["exitCode"] == 1
        logs = await _logs(env, "maria")
        assert "password option is not specified" in logs, logs


async def test_postgres_initializes_with_its_password_and_database(tmp_path: Path) -> None:
    need("psql", "postgresql")
    async with process_env(tmp_path) as env:
        await env.run(server("pg", "postgres:16", 5432, {
            "POSTGRES_PASSWORD": "pw", "POSTGRES_DB": "app"}, "/var/lib/postgresql/data"))
        ip = (await env.until("pg", ready, timeout=90))["status"]["podIP"]
        out = await asyncio.to_thread(
            run, "psql", "-h", ip, "-U", "postgres", "-d", "app", "-tAc",
            "CREATE TABLE t (x int); INSERT INTO t VALUES (7); SELECT x FROM t",
            env={"PGPASSWORD": "pw"})
        assert out.splitlines()[-1] == "7"  # after the CREATE and INSERT tags


async def test_redis_answers_on_its_pod_ip(tmp_path: Path) -> None:
    need("redis-server", "redis-server")
    async with process_env(tmp_path) as env:
        body = pod("cache")
        body["spec"]["containers"] = [{
            "name": "redis", "image": "redis:7", "ports": [{"containerPort": 6379}],
            "readinessProbe": {"tcpSocket": {"port": 6379}, "periodSeconds": 1}}]
        await env.run(body)
        ip = (await env.until("cache", ready))["status"]["podIP"]
        reader, writer = await asyncio.open_connection(ip, 6379)
        writer.write(b"SET k hello\r\nGET k\r\n")
        await writer.drain()
        assert await reader.readuntil(b"+OK\r\n") == b"+OK\r\n"
        assert await reader.readuntil(b"hello\r\n") == b"$5\r\nhello\r\n"
        writer.close()


async def _logs(env: Env, name: str) -> str:
    paths = runtime_of(env).log_paths("default", name, "db")
    return "".join(p.read_text() for p in paths)
