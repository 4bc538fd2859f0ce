"""Watch events that repeat a write's answer byte for byte, told without decoding them.

A controller's write comes back twice: as the write's answer, which its writer records
in its informer's store at once, and as the watch event of the same version, which the
informer then finds already stored and drops. Decoding that event (a pod is 2-5 KB of
JSON) is most of what the informer spends on it, and in a process of controllers most
watch events are such echoes (the workloads' process: about two in three).

An API server encodes the object of a write's answer and of its watch event from the
same stored object: kube-apiserver's and Setpoint's watch line is
``{"type":"MODIFIED","object":`` + the answer's bytes + ``}``. So a client remembers the
answers to its latest writes of the resources an informer watches (:meth:`WriteAnswers.watch`),
by their exact bytes, with the name and resourceVersion read from the decoded answer; a
watch line whose object is one of them is handed out as an :class:`Echo` (the name and
version, the object still undecoded), and the informer decodes it only if its store does
not hold that version already. Only an identical byte string matches, so an answer
encoded another way, or a line framed another way, is decoded as any other: the memory
saves work, never changes what an informer sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import orjson

if TYPE_CHECKING:
    from setpoint.client.resources import ResourceInfo
    from setpoint.machinery.objects import Obj

__all__ = ["Echo", "WriteAnswers"]

_ADDED = b'{"type":"ADDED","object":'
_MODIFIED = b'{"type":"MODIFIED","object":'


class Echo(NamedTuple):
    """A watch event's object that is byte for byte a recent write's answer: its name,
    namespace and resourceVersion as the answer had them, and the line it came in."""

    namespace: str | None
    name: str
    resource_version: str
    line: bytes
    start: int
    end: int

    def decode(self) -> Obj:
        """The object, decoded (as the watch would have handed it out)."""
        obj: Obj = orjson.loads(self.line[self.start:self.end])
        return obj


class WriteAnswers:
    """The bodies of a client's latest write answers, for the resources some informer of
    the client watches: at most ``limit`` of them and ``budget`` bytes in all (a body
    larger than a sixteenth of that is not kept), the oldest forgotten first."""

    __slots__ = ("_bytes", "_known", "_resources", "budget", "limit")

    def __init__(self, limit: int = 1024, budget: int = 8 << 20) -> None:
        self.limit = limit
        self.budget = budget
        self._known: dict[bytes, tuple[str | None, str, str]] = {}
        self._bytes = 0
        self._resources: set[tuple[str, str]] = set()

    def __len__(self) -> int:
        return len(self._known)

    def watch(self, info: ResourceInfo) -> None:
        """Remember the answers of writes to ``info``'s resource from now on."""
        self._resources.add((info.group, info.resource))

    def remember(self, info: ResourceInfo, body: bytes, answer: Obj) -> None:
        """``body`` is the answer to a write of ``info``'s resource; ``answer`` its
        decoded object, read now (before the caller may change it)."""
        if (info.group, info.resource) not in self._resources:
            return
        meta = answer.get("metadata")
        if type(meta) is not dict:
            return
        name, rv, namespace = meta.get("name"), meta.get("resourceVersion"), \
            meta.get("namespace")
        if type(name) is not str or type(rv) is not str \
                or (namespace is not None and type(namespace) is not str):
            return
        if body.endswith(b"\n"):
            # a JSON answer ends with Encoder.Encode's newline (kube-apiserver's and the
            # embedded server's); the watch line's object does not
            body = body[:-1]
        size = len(body)
        if size > self.budget >> 4:
            return
        known = self._known
        while known and (len(known) >= self.limit or self._bytes + size > self.budget):
            oldest = next(iter(known))  # its echo came long ago, or never will
            del known[oldest]
            self._bytes -= len(oldest)
        if body not in known:
            self._bytes += size
        known[body] = (namespace, name, rv)

    def echo(self, line: bytes) -> tuple[str, Echo] | None:
        """The type and :class:`Echo` of a watch ``line`` (with or without its newline)
        whose object is a remembered answer; None for any other line."""
        if not self._known:
            return None
        if line.startswith(_MODIFIED):
            event_type, start = "MODIFIED", len(_MODIFIED)
        elif line.startswith(_ADDED):
            event_type, start = "ADDED", len(_ADDED)
        else:
            return None
        end = len(line) - 2 if line.endswith(b"}\n") else len(line) - 1
        if line[end] != 0x7D:  # "}": the event's own end
            return None
        known = self._known.get(line[start:end])
        if known is None:
            return None
        return event_type, Echo(known[0], known[1], known[2], line, start, end)
