"""A CRD without ``x-kubernetes-validations`` never loads the CEL machinery.

kube-apiserver compiles CEL only for the rules a schema declares (apiextensions-apiserver
``pkg/apiserver/schema/cel/compilation.go``: ``Compile`` walks the schema's
``XValidations``; a schema without any yields no programs). Here building the CEL
environment compiles ``celpy``'s grammar, a tenth of a second or more of the server's event
loop: a cluster whose CRDs declare no rules (most CRDs) must not pay it. Rules that are
declared are still enforced: the golden definitions and resources (``test_golden_*.py``)
hold those.

Run in a fresh interpreter, as the module cache of this one may hold ``celpy`` already.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from setpoint.client import Client, Kind, load_kubeconfig
    from setpoint.cluster import serve

    CRD = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.lazy.example.com"},
        "spec": {"group": "lazy.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "properties": {
                             "size": {"type": "integer", "default": 1,
                                      "minimum": 0}}}}}}}]}}

    async def main() -> None:
        async with serve() as running:
            client = Client(load_kubeconfig(running.kubeconfig))
            try:
                await client.create(CRD)
                widget = {"apiVersion": "lazy.example.com/v1", "kind": "Widget",
                          "metadata": {"name": "w", "namespace": "default"}, "spec": {}}
                created = await client.create(widget)
                assert created["spec"] == {"size": 1}, created
            finally:
                await client.close()
        print(sorted(m for m in sys.modules if m.partition(".")[0] == "celpy"))

    asyncio.run(main())
""")


def test_crd_without_rules_does_not_load_cel() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
