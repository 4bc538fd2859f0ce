"""The start's bootstrap objects as the full write path stores them, recorded ahead.

kube-apiserver creates its bootstrap objects (the system namespaces, RBAC's roles and
bindings, the system PriorityClasses, the APF configuration) in post-start hooks that
``/readyz`` waits for. Through the whole create path (typed decoding, defaults, managed
fields, admission, validation, storage order) they were most of the server's start
(docs/benchmarks.md, Start-up, thirteenth pass); yet each is a constant object created by
the server itself: no webhook can exist yet, and what the path makes of it depends only on
the object and this code. ``recorded.json`` holds, per object, what the full path stored,
with its uid and times left blank; the start fills those and stores it (``Store.put``:
the same resourceVersion order and watch events). An object is keyed by a digest of its
write (resource, namespace, field manager, the object as sent): one the file does not know
takes the full path. ``tests/cluster/test_bootstrap_recorded.py`` proves the file current
and the objects equal to the full path's; regenerate it with
``.venv/bin/python tools/bootstrap_recorded.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import orjson

from setpoint.machinery.objects import Obj

PATH = Path(__file__).with_name("recorded.json")


def digest(group: str, version: str, resource: str, ns: str | None, manager: str,
           obj: Obj) -> str:
    """The key of one bootstrap write (key order counts: it orders what is stored)."""
    return hashlib.blake2b(orjson.dumps([group, version, resource, ns or "", manager, obj]),
                           digest_size=16).hexdigest()


def blanked(stored: Obj) -> Obj:
    """``stored`` without what each start makes anew: uid, times and resourceVersion."""
    meta = stored["metadata"]
    meta["uid"] = ""
    meta["creationTimestamp"] = ""
    meta.pop("resourceVersion", None)  # (put stamps it last, as on a create)
    for entry in meta.get("managedFields") or ():
        entry["time"] = ""
    return stored


def blanked_update(stored: Obj) -> Obj:
    """An update of a bootstrap object, as ``blanked``, its conditions' times blank too
    (its resourceVersion kept in place, blank: an update's put stamps it where it is)."""
    meta = stored["metadata"]
    meta["uid"] = ""
    meta["creationTimestamp"] = ""
    meta["resourceVersion"] = ""
    for entry in meta.get("managedFields") or ():
        entry["time"] = ""
    for condition in (stored.get("status") or {}).get("conditions") or ():
        condition["lastTransitionTime"] = ""
    return stored


class Recorded:
    """The recorded objects of one start, each taken at most once; then the status writes
    the APF config controller made at that start (``Dangling``, on FlowSchemas)."""

    def __init__(self, objects: dict[str, Obj], updates: list[tuple[str, Obj]]) -> None:
        self._objects = objects
        self._updates = updates
        self.missed = 0  # writes the file did not know (the full path made them)
        self.existing = 0  # bootstrap objects already stored (a restart)

    @classmethod
    def load(cls) -> Recorded:
        try:
            recording: dict[str, Any] = orjson.loads(PATH.read_bytes())
        except FileNotFoundError:
            recording = {"creates": {}, "updates": []}
        return cls(recording["creates"], [(r, o) for r, o in recording["updates"]])

    def updates(self) -> list[tuple[str, Obj]] | None:
        """The recorded status writes, when this start stored every bootstrap object from
        the recording onto none stored before: what the controller would write now."""
        if self.missed or self.existing or self._objects or not self._updates:
            return None
        return self._updates

    @staticmethod
    def fill_update(update: Obj, live: Obj, now: str) -> Obj:
        """A recorded update of ``live``: its uid and creation time, the times of the
        managed fields entries it already had, ``now`` for the rest."""
        meta, live_meta = update["metadata"], live["metadata"]
        meta["uid"] = live_meta["uid"]
        meta["creationTimestamp"] = live_meta["creationTimestamp"]
        had = {(e.get("manager"), e.get("operation"), e.get("subresource")): e.get("time")
               for e in live_meta.get("managedFields") or ()}
        for entry in meta.get("managedFields") or ():
            entry["time"] = had.get((entry.get("manager"), entry.get("operation"),
                                     entry.get("subresource"))) or now
        for condition in (update.get("status") or {}).get("conditions") or ():
            condition["lastTransitionTime"] = now
        return update

    def take(self, key: str, uid: str, now: str) -> Obj | None:
        """The object recorded for ``key``, with a new uid and ``now`` as its times."""
        stored = self._objects.pop(key, None)
        if stored is None:
            self.missed += 1
            return None
        meta = stored["metadata"]
        meta["uid"] = uid
        meta["creationTimestamp"] = now
        for entry in meta.get("managedFields") or ():
            entry["time"] = now
        return stored


class Recording(Protocol):
    """The writer of the bootstrap objects, whose recorder slot takes what it stored."""

    recorder: dict[str, Any] | None


class RecordingServer(Protocol):
    """What the recording needs of a server: its bootstrap writer, a start and a stop."""

    @property
    def ensurer(self) -> Recording: ...

    def start(self) -> None: ...

    async def stop(self) -> None: ...


def record(make_server: Callable[[], RecordingServer]) -> dict[str, Any]:
    """Start a server whose bootstrap writes all take the full path; what they stored.

    The server is given, not imported: the assembly imports this module, never the reverse.
    """
    import asyncio

    made: dict[str, Any] = {"creates": {}, "updates": []}

    async def start() -> None:
        server = make_server()
        server.ensurer.recorder = made
        server.start()
        await server.stop()

    asyncio.run(start())
    return made
