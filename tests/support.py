"""Helpers for tests that run the server as users do: ``setpoint cluster up`` in a process."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType

import yaml


class ServerProcess:
    """``setpoint cluster up --memory --port 0`` in a child process, ready on enter."""

    def __init__(self, workdir: Path, *extra: str, data: Path | None = None) -> None:
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        self._extra = extra
        self._data = data
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> ServerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.unlink(missing_ok=True)
        store = ["--data", str(self._data)] if self._data else ["--memory"]
        self.log = open(self.workdir / "server.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", *store, "--port", "0",
             "--kubeconfig", str(self.kubeconfig), *self._extra],
            stdout=self.log, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: " + (self.workdir / "server.log").read_text())
            if self.kubeconfig.exists():
                try:
                    with urllib.request.urlopen(self.url + "/readyz", context=self.ssl_context(),
                                                timeout=2) as resp:
                        if resp.status == 200:
                            return
                except OSError:
                    pass
            time.sleep(0.02)
        raise TimeoutError("server did not become ready")

    @property
    def config(self) -> dict:  # type: ignore[type-arg]
        config = yaml.safe_load(self.kubeconfig.read_text())
        assert isinstance(config, dict)
        return config

    @property
    def url(self) -> str:
        return str(self.config["clusters"][0]["cluster"]["server"])

    @property
    def token(self) -> str:
        return str(self.config["users"][0]["user"]["token"])

    def ssl_context(self) -> ssl.SSLContext:
        import base64

        ca = base64.b64decode(self.config["clusters"][0]["cluster"]["certificate-authority-data"])
        return ssl.create_default_context(cadata=ca.decode())

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
