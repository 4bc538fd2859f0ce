"""Truncation of large events and batches (k8s.io/apiserver plugin/pkg/audit/truncate,
``--audit-<backend>-truncate-enabled``, ``-max-event-size``, ``-max-batch-size``).

An event whose JSON is larger than ``max_event_size`` bytes loses its request and response
objects, if its level has them, and is annotated ``audit.k8s.io/truncated: "true"``; one
still too large is dropped ("event is too large even after truncating"). Batches are cut so
that each stays within ``max_batch_size`` bytes."""

from __future__ import annotations

import inspect

from setpoint.cluster.audit.backend import Backend, Event, Result, all_stored
from setpoint.cluster.audit.context import level_at_least
from setpoint.cluster.audit.event import encoded
from setpoint.cluster.audit.metrics import plugin_error
from setpoint.cluster.audit.options import TruncateOptions

PLUGIN_NAME = "truncate"
ANNOTATION_KEY = "audit.k8s.io/truncated"


def wrap_truncate(delegate: Backend, options: TruncateOptions) -> Backend:
    """``AuditTruncateOptions.wrapBackend``: only when enabled."""
    return Truncating(delegate, options) if options.enabled else delegate


def truncated(event: Event) -> Event:
    """``truncate``: a copy without the objects, annotated."""
    copy = {k: v for k, v in event.items() if k not in ("requestObject", "responseObject")}
    copy["annotations"] = {**event.get("annotations", {}), ANNOTATION_KEY: "true"}
    return copy


class Truncating:
    def __init__(self, delegate: Backend, options: TruncateOptions) -> None:
        self.delegate = delegate
        self.options = options

    def __repr__(self) -> str:
        return f"truncate<{self.delegate!r}>"

    def process_events(self, events: list[Event]) -> Result:
        """``ProcessEvents``."""
        results: list[Result] = []
        impacted: list[Event] = []
        batch: list[Event] = []
        batch_size = 0
        for event in events:
            size = len(encoded(event))
            if size > self.options.max_event_size and level_at_least(event["level"], "Request"):
                event = truncated(event)
                size = len(encoded(event))
            if size > self.options.max_event_size:
                impacted.append(event)
                continue
            if batch and batch_size + size > self.options.max_batch_size:
                results.append(self.delegate.process_events(batch))
                batch, batch_size = [], 0
            batch_size += size
            batch.append(event)
        if batch:
            results.append(self.delegate.process_events(batch))
        if impacted:
            plugin_error(PLUGIN_NAME, "event is too large even after truncating", impacted)
        if any(inspect.isawaitable(r) for r in results):
            return all_stored(results)
        return all(bool(r) for r in results)

    async def shutdown(self) -> None:
        await self.delegate.shutdown()
