"""The runtime's own pieces of a typed write, in process: no I/O, no server.

What the twelfth pass (issue 12) took down in the Widget operator's create-or-update and
status write, besides the requests: the check that ``mutate`` renamed nothing
(``_check_same_object`` of a typed ConfigMap), the hold on a write's echo
(``Writer.writing``, entered per write), ``as_ref`` of a kind and the resolve of a kind
whose group-version discovery already knows (``Discovery.for_kind``, several per write).
Prints the least CPU per call of 5 rounds, in µs.

Before/after, the two trees alternately:

    git -C /work/main archive main | tar -x -C DIR
    (cd DIR && PYTHONPATH=DIR $OLDPWD/.venv/bin/python $OLDPWD/bench/write_pieces.py)
    PYTHONPATH=. .venv/bin/python bench/write_pieces.py
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from setpoint.client.resources import Discovery, GroupVersionResources, ResourceInfo
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime._objects import KindKey, as_ref, clone, decode
from setpoint.runtime._writer import Writer, _check_same_object

CONFIG_MAP: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {
        "name": "w-1-cfg", "namespace": "default", "uid": "0b7c2a4e-1111-2222-3333-444455556666",
        "resourceVersion": "12345", "creationTimestamp": "2026-11-26T19:21:02Z",
        "ownerReferences": [{"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
                             "name": "w-1", "uid": "abc", "controller": True,
                             "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "setpoint", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-11-26T19:21:02Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {".": {}, "f:message": {},
                                                   "f:size": {}}}}],
    },
    "data": {"message": "hello", "size": "3"},
}
KEY = KindKey("v1", "ConfigMap")
ROUNDS, CALLS = 5, 20000


def least(call: Callable[[], object]) -> float:
    """The least CPU per call over the rounds, in µs."""
    for _ in range(500):
        call()
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.process_time()
        for _ in range(CALLS):
            call()
        best = min(best, (time.process_time() - start) / CALLS)
    return best * 1e6


class _Informer:
    """What ``Writer.writing`` asks of an informer, doing nothing."""

    def begin_write(self, key: str, limit: float) -> None:
        pass

    def end_write(self, key: str) -> None:
        pass


class _Transport:
    timeout = 30.0


class _Client:
    transport = _Transport()


def main() -> None:
    config_map = decode(ConfigMap, clone(CONFIG_MAP))
    writer = Writer.__new__(Writer)  # only the parts writing() reads
    writer.informers = {KEY: _Informer()}  # type: ignore[dict-item]
    writer.client = _Client()  # type: ignore[assignment]

    def writing() -> None:
        with writer.writing(KEY, "default", "w-1-cfg"):
            pass

    discovery = Discovery(None)  # type: ignore[arg-type]  # no request: the cache answers
    info = ResourceInfo("", "v1", "configmaps", "ConfigMap", True)
    discovery._cache["v1"] = GroupVersionResources({"configmaps": info}, {"ConfigMap": info})

    async def resolves() -> None:
        for _ in range(CALLS):
            await discovery.for_kind("v1", "ConfigMap")

    loop = asyncio.new_event_loop()
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.process_time()
        loop.run_until_complete(resolves())
        best = min(best, (time.process_time() - start) / CALLS)
    loop.close()
    found = {
        "check_same_object": least(lambda: _check_same_object(config_map, "default",
                                                              "w-1-cfg")),
        "writing": least(writing),
        "as_ref": least(lambda: as_ref(KEY)),
        "for_kind": best * 1e6,
    }
    print(" ".join(f"{name}={us:.2f}" for name, us in found.items()))


if __name__ == "__main__":
    main()
