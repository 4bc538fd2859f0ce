"""A server's start loads only what serving needs: PyYAML, jsonpatch, prometheus_client and
a kind's validation rules come with the first request that uses them.

``cluster up``'s parent process is the critical path of its start (docs/benchmarks.md,
Start-up, issue 12): what the server imports before it serves delays the workloads' first
request. YAML bodies and answers, go-yaml's strict duplicate checks and JSON patches are
not needed by a start (its own kubeconfig is written without PyYAML:
tests/cluster/test_kubeconfig_file.py), nor is the Prometheus text format of ``/metrics``
before its first scrape, nor Pod Security's checks before the first pod a namespace's
policy has checked, nor a kind's validation rules before its first write
(``registry/validation.py``: the pod's load with the first pod), so those load on first
use. Nor is cryptography's ``x509`` package (docs/benchmarks.md, Start-up, eighteenth pass):
the start's certificates are encoded by ``setpoint.machinery.x509encode``; nor is
``logging.config`` run (``setpoint/machinery/packageinit.py``). Here, in a fresh
interpreter (this one has them loaded), a started server has none
loaded, and then answers a YAML create, a JSON patch, a scrape (with the request counts)
and a pod create under a baseline policy as before, which loads them. uvicorn's package
``__init__`` (its command line and supervisors) is never run for serving
(``endpoints/uvicornparts.py``), yet ``import uvicorn`` afterwards gives the whole package.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import asyncio, http.client, json, ssl, sys
    from setpoint.cluster import serve

    HEAVY = ("yaml", "jsonpatch", "jsonpointer", "prometheus_client",
             "setpoint.cluster.admission.podsecurity.evaluator",
             "setpoint.cluster.registry.validation_pods")
    # uvicorn's package __init__ (its command line, supervisors): never needed to serve;
    # nor, for these requests, go-cmp's diff (a refused pod or claim update's message),
    # the CRD schema package (the first CRD), the audit policy's types (a policy read), nor
    # cryptography's x509 package and serialization formats (a client certificate, a CSR:
    # the start's certificates are encoded by setpoint.machinery.x509encode)
    NEVER = ("uvicorn.main", "uvicorn.supervisors", "click", "setpoint.machinery.gocmp",
             "setpoint.cluster.apiextensions.schema", "setpoint.cluster.audit.policy",
             "cryptography.x509", "cryptography.hazmat.primitives.serialization")

    def call(running, method, path, body, content_type, decode=json.loads):
        context = ssl.create_default_context(cafile=str(running.ca_file))
        host, port = running.url.removeprefix("https://").rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), context=context)
        try:
            conn.request(method, path, body=body, headers={
                "Authorization": f"Bearer {running.token}", "Content-Type": content_type,
                "Accept": "application/json"})
            answer = conn.getresponse()
            return answer.status, decode(answer.read())
        finally:
            conn.close()

    def requests(running):
        path = "/api/v1/namespaces/default/configmaps"
        created = call(running, "POST", path,
                       b"apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: lazy\\n"
                       b"data:\\n  a: '1'\\n", "application/yaml")
        patched = call(running, "PATCH", path + "/lazy",
                       b'[{"op": "add", "path": "/data/b", "value": "2"}]',
                       "application/json-patch+json")
        call(running, "POST", "/api/v1/namespaces", json.dumps({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "checked", "labels": {
                "pod-security.kubernetes.io/enforce": "baseline"}}}).encode(),
            "application/json")
        pod = call(running, "POST", "/api/v1/namespaces/checked/pods", json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "checked"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}).encode(),
            "application/json")
        scraped = call(running, "GET", "/metrics", None, "text/plain", decode=bytes.decode)
        counted = 'verb="POST"' in scraped[1] and "apiserver_storage_objects" in scraped[1]
        return [created[0], created[1]["data"], patched[0], patched[1]["data"],
                scraped[0], counted, pod[0]]

    async def main():
        async with serve() as running:
            at_serving = [m for m in HEAVY + NEVER if m in sys.modules]
            # imported by uvicorn.config, its code not run (the server gives no log_config)
            if "__getattr__" not in vars(sys.modules["logging.config"]):
                at_serving.append("logging.config run")
            answers = await asyncio.to_thread(requests, running)
        after = [m for m in HEAVY + NEVER if m in sys.modules]
        # another user of uvicorn in the process sees the package a plain import leaves
        import uvicorn
        from uvicorn import Config
        package = [uvicorn.__version__ != "", Config.__name__, uvicorn.Server.__name__,
                   callable(uvicorn.run)]
        print(json.dumps({"at_serving": at_serving, "answers": answers, "after": after,
                          "package": package}))

    asyncio.run(main())
""")


def test_serving_loads_neither_pyyaml_jsonpatch_nor_prometheus_until_a_request_needs_them() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["at_serving"] == []
    assert result["answers"] == [201, {"a": "1"}, 200, {"a": "1", "b": "2"}, 200, True,
                                 201]
    assert result["after"] == ["yaml", "jsonpatch", "jsonpointer", "prometheus_client",
                               "setpoint.cluster.admission.podsecurity.evaluator",
                               "setpoint.cluster.registry.validation_pods"]
    assert result["package"] == [True, "Config", "Server", True]
