"""Where a controller's requests come from: the events of a watched kind.

An :class:`EventSource` is what a controller adds to the shared informer of each kind it
reconciles, owns or watches (controller-runtime's ``source.Kind`` with its handler and
predicates): the informer tells it of every add, update and delete, and it turns those that
pass the predicates into requests on the controller's workqueue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from setpoint.machinery.objects import Obj
from setpoint.runtime._handlers import Handler
from setpoint.runtime._ownwrites import OwnWrite
from setpoint.runtime._predicates import Predicate
from setpoint.runtime._reconcile import Request

Enqueue = Callable[[Request], None]


class EventSource:
    """A controller's source of events from one informer (controller-runtime's
    ``source.Kind``): it filters each event with predicates, maps it to requests with
    ``handler`` and passes each request to ``enqueue`` (the controller's workqueue).

    ``controller`` names the controller the requests are for: the echo of a write one of
    its reconciles made does not queue that reconcile's own request again.
    """

    def __init__(self, handler: Handler, predicates: Sequence[Predicate],
                 enqueue: Enqueue, controller: str | None = None) -> None:
        self.handler = handler
        self.predicates = tuple(predicates)
        self.enqueue = enqueue
        self.controller = controller

    def __repr__(self) -> str:
        return f"EventSource({self.handler!r}, predicates={list(self.predicates)!r})"

    def on_add(self, obj: Obj) -> None:
        if not self.predicates or all(p.create(obj) for p in self.predicates):
            for request in self.handler.requests(obj):
                self.enqueue(request)

    def on_update(self, old: Obj, new: Obj) -> None:
        if not self.predicates or all(p.update(old, new) for p in self.predicates):
            for request in self.handler.update_requests(old, new):
                self.enqueue(request)

    def on_delete(self, obj: Obj) -> None:
        if not self.predicates or all(p.delete(obj) for p in self.predicates):
            for request in self.handler.requests(obj):
                self.enqueue(request)

    def on_own_write(self, old: Obj | None, new: Obj, write: OwnWrite) -> None:
        """An add or update that is exactly ``write``: the same requests, except the one of
        the reconcile that made it, when that reconcile is this controller's."""
        if old is None:
            if self.predicates and not all(p.create(new) for p in self.predicates):
                return
            requests = self.handler.requests(new)
        else:
            if self.predicates and not all(p.update(old, new) for p in self.predicates):
                return
            requests = self.handler.update_requests(old, new)
        for request in requests:
            if not write.echoes(self.controller, request):
                self.enqueue(request)
