"""The typed objects and log lines of one Widget update, in process: no I/O, no server.

What ``examples/widget/operator.py`` does per change besides its requests and the
runtime's queues: decode the reconciled Widget, decode the cached ConfigMap for
``mutate``, dump it for the update, decode the update's answer, dump the status for its
patch, decode that answer, and write one INFO line per write (to /dev/null, through
``setpoint run``'s formatter); since the seventh pass also the five reads of the kind,
namespace and name of a typed object the context and the writer make for the two writes
(``identity``). Prints the least CPU per event of 5 rounds, in µs.

Before/after (issue 12, sixth pass), the two trees alternately:

    git archive main setpoint examples | tar -x -C DIR
    (cd DIR && PYTHONPATH=DIR $PWD/.venv/bin/python $PWD/bench/typed_event.py)
    PYTHONPATH=. .venv/bin/python bench/typed_event.py
"""

from __future__ import annotations

import logging
import time
from typing import Any

from examples.widget.api import Widget
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import TextFormatter
from setpoint.runtime._logs import BoundLogger
from setpoint.runtime._objects import as_dict, clone, decode, identity, with_status_only


def _managed(api_version: str, fields: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"manager": "setpoint", "operation": "Update", "apiVersion": api_version,
             "time": "2026-11-26T19:21:02Z", "fieldsType": "FieldsV1", "fieldsV1": fields}]


CONFIG_MAP: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {
        "name": "w-1-cfg", "namespace": "default", "uid": "0b7c2a4e-1111-2222-3333-444455556666",
        "resourceVersion": "12345", "creationTimestamp": "2026-11-26T19:21:02Z",
        "ownerReferences": [{"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
                             "name": "w-1", "uid": "abc", "controller": True,
                             "blockOwnerDeletion": True}],
        "managedFields": _managed("v1", {"f:data": {".": {}, "f:message": {}, "f:size": {}}}),
    },
    "data": {"message": "hello", "size": "3"},
}
WIDGET: dict[str, Any] = {
    "apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
    "metadata": {
        "name": "w-1", "namespace": "default", "uid": "abc", "resourceVersion": "12",
        "generation": 2, "creationTimestamp": "2026-11-26T19:21:02Z",
        "managedFields": _managed("bench.setpoint.dev/v1",
                                  {"f:spec": {".": {}, "f:message": {}, "f:size": {}}}),
    },
    "spec": {"size": 3, "message": "hello"},
    "status": {"ready": True, "observedGeneration": 1},
}


def main() -> None:
    handler = logging.StreamHandler(open("/dev/null", "w"))  # noqa: SIM115 - process-long
    handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level="INFO", handlers=[handler])
    log = BoundLogger(logging.getLogger("setpoint.runtime.controller"), controller="widget",
                      namespace="default", name="w-1", reconcileID="3f2a9c")

    def event() -> None:
        widget = decode(Widget, clone(WIDGET))
        current = decode(ConfigMap, clone(CONFIG_MAP))
        identity(current)  # Context.create_or_update, then Writer.create_or_update
        identity(current)
        current.data = {"message": widget.spec.message, "size": str(widget.spec.size)}
        as_dict(current)
        decode(ConfigMap, clone(CONFIG_MAP))
        log.info("object_written", verb="update", kind="ConfigMap", object="default/w-1-cfg")
        widget.status.observed_generation = 2
        identity(widget)  # Context._version_of, Writer.update_status, Context._log_write
        identity(widget)
        identity(widget)
        with_status_only(widget)
        decode(Widget, clone(WIDGET))
        log.info("object_written", verb="update_status", kind="Widget", object="default/w-1")

    for _ in range(500):
        event()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(3000):
            event()
        best = min(best, (time.process_time() - start) / 3000)
    print(f"{best * 1e6:.1f}")


if __name__ == "__main__":
    main()
