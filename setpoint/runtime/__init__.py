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

The names here are the public API. The modules behind them (``_informer``, ``_cache``,
``_workqueue``, ...) are private: their names and contents may change.
"""

from typing import TYPE_CHECKING

from setpoint._lazy import lazy_exports
from setpoint.runtime._cache import Cache, NotWatchedError, Store
from setpoint.runtime._context import Context
from setpoint.runtime._controller import Controller
from setpoint.runtime._events import EventRecorder
from setpoint.runtime._handlers import (
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    Handler,
    map_to_owner_by_label,
)
from setpoint.runtime._informer import Informer
from setpoint.runtime._leaderelection import LeaderElectionConfig, LeaderElectionLost, LeaderElector
from setpoint.runtime._logs import JsonFormatter, TextFormatter
from setpoint.runtime._manager import Manager, ManagerStoppingError
from setpoint.runtime._metrics import metrics_registry
from setpoint.runtime._ownership import AlreadyOwnedError, controller_of, owner_reference
from setpoint.runtime._permissions import controller_permissions, manager_permissions
from setpoint.runtime._predicates import (
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
from setpoint.runtime._ratelimit import (
    BucketRateLimiter,
    ItemExponentialRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
)
from setpoint.runtime._readiness import Readiness, object_readiness, readiness
from setpoint.runtime._reconcile import Reconciler, Request, Result, TerminalError
from setpoint.runtime._series_events import SeriesEventRecorder
from setpoint.runtime._settings import CacheScope, ManagerSettings
from setpoint.runtime._source import EventSource
from setpoint.runtime._workqueue import ShutDown, WorkQueue
from setpoint.runtime._writer import OperationResult

if TYPE_CHECKING:
    from setpoint.runtime._webhook import (
        AdmissionContext,
        AdmissionRequest,
        AdmissionResponse,
        Conversion,
        ConversionError,
        Denied,
        HookOptions,
        UserInfo,
        Webhook,
        WebhookServer,
    )

# the webhooks (aiohttp's server, certificates) load on first use: a manager without them,
# as the embedded cluster's workloads, starts without paying for them
__getattr__, __dir__ = lazy_exports(__name__, {name: "setpoint.runtime._webhook" for name in (
    "AdmissionContext", "AdmissionRequest", "AdmissionResponse", "Conversion",
    "ConversionError", "Denied", "HookOptions", "UserInfo", "Webhook", "WebhookServer")})

__all__ = [
    "AdmissionContext",
    "AdmissionRequest",
    "AdmissionResponse",
    "AlreadyOwnedError",
    "AnnotationsChanged",
    "BucketRateLimiter",
    "Cache",
    "CacheScope",
    "Context",
    "Controller",
    "Conversion",
    "ConversionError",
    "Denied",
    "EnqueueForObject",
    "EnqueueForOwner",
    "EnqueueMapped",
    "EventRecorder",
    "EventSource",
    "Funcs",
    "GenerationChanged",
    "Handler",
    "HookOptions",
    "Informer",
    "ItemExponentialRateLimiter",
    "JsonFormatter",
    "LabelsChanged",
    "LeaderElectionConfig",
    "LeaderElectionLost",
    "LeaderElector",
    "Manager",
    "ManagerSettings",
    "ManagerStoppingError",
    "MaxOfRateLimiter",
    "NotWatchedError",
    "OperationResult",
    "Predicate",
    "RateLimiter",
    "Readiness",
    "Reconciler",
    "Request",
    "ResourceVersionChanged",
    "Result",
    "SeriesEventRecorder",
    "ShutDown",
    "Store",
    "TerminalError",
    "TextFormatter",
    "UserInfo",
    "Webhook",
    "WebhookServer",
    "WorkQueue",
    "and_",
    "controller_of",
    "controller_permissions",
    "manager_permissions",
    "map_to_owner_by_label",
    "metrics_registry",
    "not_",
    "object_readiness",
    "or_",
    "owner_reference",
    "readiness",
]
