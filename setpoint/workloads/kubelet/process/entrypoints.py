"""What the database images' ``docker-entrypoint.sh`` does before it starts the server.

The official postgres and mariadb images do not start their server on an empty data
directory: their entrypoint script first creates the database files, sets the superuser's
password and the database and user the environment asks for (``POSTGRES_*``,
``MARIADB_*``/``MYSQL_*``), runs the scripts in ``/docker-entrypoint-initdb.d``, and only
then executes the server. Operators rely on that contract, so the process runtime keeps it:
the catalog starts these images as

    python -m setpoint.workloads.kubelet.process.entrypoints postgres DATA SOCKETS -- ARGV

which initializes an empty ``DATA`` the way the image does and then replaces itself with
``ARGV`` (the server). A data directory that is already initialized (a PVC that outlived its
pod) is used as it is. Read from docker-library/postgres and MariaDB/mariadb-docker,
``docker-entrypoint.sh``.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

INITDB_D = Path("/docker-entrypoint-initdb.d")
READY_TIMEOUT = 60.0


class EntrypointError(Exception):
    """The image would refuse to start; the message is what it says."""


def _quote(value: str) -> str:
    """A SQL string literal (MariaDB: backslashes are escapes too)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _init_scripts(kind: tuple[str, ...]) -> list[Path]:
    if not INITDB_D.is_dir():
        return []
    return sorted(p for p in INITDB_D.iterdir() if p.suffix in kind and p.is_file())


# -- postgres --------------------------------------------------------------------------------

def _as_postgres_user(paths: Sequence[Path]) -> None:
    """postgres refuses to run as root: hand the files to the ``postgres`` account and
    become it, as the image's entrypoint does with gosu."""
    if os.geteuid() != 0:
        return
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        raise EntrypointError("postgres cannot run as root and this machine has no "
                              "'postgres' account (install the postgresql package)") from None
    for path in paths:
        for root, dirs, files in os.walk(path):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.chown(name, account.pw_uid, account.pw_gid)
    os.setgid(account.pw_gid)
    os.setuid(account.pw_uid)
    os.environ["HOME"] = str(paths[-1])
    os.chdir(paths[0])  # the container's own directory is the runtime's, closed to it


def postgres(data: Path, sockets: Path, argv: list[str], env: Mapping[str, str]) -> None:
    user = env.get("POSTGRES_USER") or "postgres"
    password = env.get("POSTGRES_PASSWORD", "")
    auth = env.get("POSTGRES_HOST_AUTH_METHOD") or ("scram-sha-256" if password else "")
    fresh = not (data / "PG_VERSION").exists()
    if fresh and not password and auth != "trust":
        raise EntrypointError(
            "Database is uninitialized and superuser password is not specified.\n"
            "You must specify POSTGRES_PASSWORD to a non-empty value for the superuser. "
            "For example, \"-e POSTGRES_PASSWORD=password\" on \"docker run\".")
    data.mkdir(parents=True, exist_ok=True)
    sockets.mkdir(parents=True, exist_ok=True)
    _as_postgres_user([data, sockets])
    if not fresh:
        return
    data.chmod(0o700)
    bindir = Path(argv[0]).resolve().parent  # initdb, pg_ctl and psql live beside it
    # not in the data directory: initdb wants it empty. Private to the postgres account.
    with tempfile.NamedTemporaryFile("w", prefix="setpoint-pw-") as pwfile:
        pwfile.write(password + "\n")
        pwfile.flush()
        subprocess.run([str(bindir / "initdb"), "-D", str(data), "--username", user,
                        "--pwfile", pwfile.name,
                        *env.get("POSTGRES_INITDB_ARGS", "").split()],
                       check=True, stdout=sys.stderr)
    with (data / "pg_hba.conf").open("a") as hba:
        hba.write(f"\nhost all all all {auth}\n")
    database = env.get("POSTGRES_DB") or user
    ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-w"]
    subprocess.run([*ctl, "-o", f"-c listen_addresses='' -k {sockets}", "start"],
                   check=True, stdout=sys.stderr)
    try:
        psql = [str(bindir / "psql"), "-v", "ON_ERROR_STOP=1", "-h", str(sockets),
                "-U", user, "--no-password"]
        if database != "postgres":
            subprocess.run([*psql, "-d", "postgres", "-c",
                            'CREATE DATABASE "' + database.replace('"', '""') + '"'],
                           check=True, stdout=sys.stderr)
        for script in _init_scripts((".sql", ".sh")):
            run = ([*psql, "-d", database, "-f", str(script)] if script.suffix == ".sql"
                   else ["sh", str(script)])
            subprocess.run(run, check=True, stdout=sys.stderr)
    finally:
        subprocess.run([*ctl, "-m", "fast", "stop"], check=True, stdout=sys.stderr)


# -- mariadb ---------------------------------------------------------------------------------

def _mariadb_env(env: Mapping[str, str], name: str) -> str:
    """``MARIADB_X``, else the older ``MYSQL_X`` the image also reads."""
    return env.get(f"MARIADB_{name}") or env.get(f"MYSQL_{name}") or ""


def _wait_for_socket(client: list[str], server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise EntrypointError(f"the server exited during initialization "
                                  f"({server.returncode})")
        if subprocess.run([*client, "-e", "SELECT 1"], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise EntrypointError("the server did not answer during initialization")


def mariadb_setup_sql(env: Mapping[str, str]) -> str:
    """The statements the image runs on a new data directory."""
    root_password = _mariadb_env(env, "ROOT_PASSWORD")
    host = _mariadb_env(env, "ROOT_HOST") or "%"
    statements = []
    if root_password:
        statements.append(f"ALTER USER 'root'@'localhost' IDENTIFIED BY {_quote(root_password)}")
    if host != "localhost":
        statements += [f"CREATE USER 'root'@{_quote(host)} IDENTIFIED BY {_quote(root_password)}",
                       f"GRANT ALL ON *.* TO 'root'@{_quote(host)} WITH GRANT OPTION"]
    database = _mariadb_env(env, "DATABASE")
    if database:
        statements.append(f"CREATE DATABASE IF NOT EXISTS {_identifier(database)}")
    user, password = _mariadb_env(env, "USER"), _mariadb_env(env, "PASSWORD")
    if user and password:
        statements.append(f"CREATE USER {_quote(user)}@'%' IDENTIFIED BY {_quote(password)}")
        if database:
            statements.append(f"GRANT ALL ON {_identifier(database)}.* TO {_quote(user)}@'%'")
    return "".join(f"{s};\n" for s in statements)


def mariadb(data: Path, sockets: Path, argv: list[str], env: Mapping[str, str]) -> None:
    if (data / "mysql").is_dir():
        return
    allowed_empty = _mariadb_env(env, "ALLOW_EMPTY_ROOT_PASSWORD") or \
        env.get("MYSQL_ALLOW_EMPTY_PASSWORD")
    if not _mariadb_env(env, "ROOT_PASSWORD") and not allowed_empty:
        raise EntrypointError(
            "Database is uninitialized and password option is not specified\n"
            "\tYou need to specify one of MARIADB_ROOT_PASSWORD, "
            "MARIADB_ROOT_PASSWORD_HASH, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD and "
            "MARIADB_RANDOM_ROOT_PASSWORD")
    data.mkdir(parents=True, exist_ok=True)
    sockets.mkdir(parents=True, exist_ok=True)
    user = ["--user=root"] if os.geteuid() == 0 else []
    subprocess.run(["mariadb-install-db", f"--datadir={data}", "--skip-test-db",
                    "--auth-root-authentication-method=normal", *user],
                   check=True, stdout=sys.stderr)
    socket = sockets / "init.sock"
    server = subprocess.Popen([argv[0], f"--datadir={data}", f"--socket={socket}",
                               "--skip-networking", f"--pid-file={sockets / 'init.pid'}",
                               *user], stdout=sys.stderr)
    client = ["mariadb", f"--socket={socket}", "-uroot"]
    try:
        _wait_for_socket(client, server)
        sql = mariadb_setup_sql(env) + "".join(
            script.read_text() + "\n" for script in _init_scripts((".sql",)))
        subprocess.run(client, input=sql.encode(), check=True, stdout=sys.stderr)
    finally:
        server.terminate()
        server.wait(READY_TIMEOUT)


INITIALIZERS = {"postgres": postgres, "mariadb": mariadb}


def main(args: list[str]) -> int:
    """``IMAGE DATA SOCKETS -- ARGV``: initialize, then become ``ARGV``."""
    kind, data, sockets, separator, *argv = args
    if separator != "--" or kind not in INITIALIZERS or not argv:
        print(f"usage: {__name__} postgres|mariadb DATA SOCKETS -- PROGRAM [ARG...]",
              file=sys.stderr)
        return 2
    try:
        INITIALIZERS[kind](Path(data), Path(sockets), argv, os.environ)
    except EntrypointError as exc:
        print(exc, file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"initialization failed: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    os.execv(argv[0], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
