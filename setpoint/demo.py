"""``make demo``: start the embedded cluster, apply a CRD and a resource with kubectl, show it.

Everything happens in a temporary directory: its own kubeconfig, kubectl cache and state.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.demo.setpoint.dev
    spec:
      group: demo.setpoint.dev
      scope: Namespaced
      names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
      versions:
      - name: v1
        served: true
        storage: true
        subresources: {status: {}}
        additionalPrinterColumns:
        - {name: Size, type: integer, jsonPath: .spec.size}
        - {name: Message, type: string, jsonPath: .spec.message}
        - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                required: [size]
                properties:
                  size: {type: integer, minimum: 1, default: 1}
                  message: {type: string, default: hello}
              status:
                type: object
                properties:
                  ready: {type: boolean}
""")

WIDGET = textwrap.dedent("""\
    apiVersion: demo.setpoint.dev/v1
    kind: Widget
    metadata:
      name: first
    spec:
      size: 3
      message: hello from setpoint
""")


def _step(title: str) -> None:
    print(f"\n\033[1m==> {title}\033[0m", flush=True)


def main() -> int:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("kubectl is not on the PATH; the demo drives the cluster with it.", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="setpoint-demo-") as tmp:
        work = Path(tmp)
        kubeconfig = work / "kubeconfig"
        _step("starting the embedded cluster (setpoint cluster up --memory --port 0)")
        started = time.monotonic()
        server = subprocess.Popen(
            [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory",
             "--port", "0", "--kubeconfig", str(kubeconfig)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert server.stdout is not None
            for line in server.stdout:
                print("   " + line.rstrip())
                if line.startswith("Press Ctrl+C"):
                    break
            else:
                print("the cluster did not start", file=sys.stderr)
                return 1
            print(f"   ready in {time.monotonic() - started:.2f}s")

            def run(*args: str, stdin: str | None = None) -> None:
                cmd = [kubectl, "--kubeconfig", str(kubeconfig), "--cache-dir",
                       str(work / "cache"), *args]
                print("$ kubectl " + " ".join(args), flush=True)
                subprocess.run(cmd, input=stdin, text=True, check=True,
                               env={**os.environ, "HOME": str(work)})

            _step("applying a CustomResourceDefinition")
            run("apply", "-f", "-", stdin=CRD)
            run("wait", "--for=condition=Established", "crd/widgets.demo.setpoint.dev",
                "--timeout=30s")
            _step("applying a Widget")
            run("apply", "-f", "-", stdin=WIDGET)
            _step("reading it back")
            run("get", "widgets", "-o", "wide")
            run("get", "widget", "first", "-o", "yaml")
            _step("scaling through a patch, then listing namespaces")
            run("patch", "widget", "first", "--type", "merge", "-p", '{"spec":{"size":5}}')
            run("get", "wg")
            run("get", "namespaces")
        finally:
            _step("stopping the cluster")
            server.terminate()
            server.wait(timeout=10)
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
