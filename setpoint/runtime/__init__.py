"""``setpoint.runtime``: controllers, the shared cache, the workqueue and the manager.

    widgets = Controller.for_(Widget).owns(ConfigMap)

    @widgets.reconcile
    async def reconcile(ctx: Context[Widget], widget: Widget) -> Result:
        await ctx.apply(config_map_for(widget))
        ...

    hooks = Webhook.for_(Widget)

    @hooks.validate
    async def validate(ctx: AdmissionContext[Widget], widget: Widget, old, operation):
        if widget.spec.size < 1:
            raise Denied("must be at least 1", field="spec.size", value=widget.spec.size)

    manager = Manager([widgets], webhooks=[hooks])
    await manager.run()

The names here are the public API; the modules hold the parts (informer, cache, workqueue,
handlers, predicates, events, leader election, metrics, webhooks) for those who need them
alone.
"""

from setpoint.runtime.cache import Cache, NotWatchedError, Store
from setpoint.runtime.context import Context
from setpoint.runtime.controller import Controller
from setpoint.runtime.events import EventRecorder
from setpoint.runtime.handlers import (
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    Handler,
    map_to_owner_by_label,
)
from setpoint.runtime.informer import Informer
from setpoint.runtime.leaderelection import LeaderElectionConfig, LeaderElectionLost, LeaderElector
from setpoint.runtime.manager import Manager
from setpoint.runtime.ownership import AlreadyOwnedError, controller_of, owner_reference
from setpoint.runtime.predicates import (
    AnnotationsChanged,
    Funcs,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    ResourceVersionChanged,
    and_,
    not_,
    or_,
)
from setpoint.runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
)
from setpoint.runtime.reconcile import Reconciler, Request, Result, TerminalError
from setpoint.runtime.settings import CacheScope, ManagerSettings
from setpoint.runtime.source import EventSource
from setpoint.runtime.webhook import AdmissionContext, Conversion, Denied, Webhook, WebhookServer
from setpoint.runtime.workqueue import ShutDown, WorkQueue
from setpoint.runtime.writer import OperationResult

__all__ = [
    "AdmissionContext",
    "AlreadyOwnedError",
    "AnnotationsChanged",
    "BucketRateLimiter",
    "Cache",
    "CacheScope",
    "Context",
    "Controller",
    "Conversion",
    "Denied",
    "EnqueueForObject",
    "EnqueueForOwner",
    "EnqueueMapped",
    "EventRecorder",
    "EventSource",
    "Funcs",
    "GenerationChanged",
    "Handler",
    "Informer",
    "ItemExponentialRateLimiter",
    "LabelsChanged",
    "LeaderElectionConfig",
    "LeaderElectionLost",
    "LeaderElector",
    "Manager",
    "ManagerSettings",
    "MaxOfRateLimiter",
    "NotWatchedError",
    "OperationResult",
    "Predicate",
    "RateLimiter",
    "Reconciler",
    "Request",
    "ResourceVersionChanged",
    "Result",
    "ShutDown",
    "Store",
    "TerminalError",
    "Webhook",
    "WebhookServer",
    "WorkQueue",
    "and_",
    "controller_of",
    "map_to_owner_by_label",
    "not_",
    "or_",
    "owner_reference",
]
