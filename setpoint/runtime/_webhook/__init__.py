"""``setpoint.runtime._webhook``: admission and conversion webhooks, the SDK side.

    hooks = Webhook.for_(Memcached)

    @hooks.default
    async def default(ctx: AdmissionContext[Memcached], mc: Memcached) -> None: ...

    @hooks.validate
    async def validate(ctx, mc, old, operation) -> list[str] | None:
        raise Denied("must be at least 1", field="spec.replicas", value=mc.spec.replicas)

    manager = Manager([memcached], webhooks=[hooks, conversion])

- :mod:`~setpoint.runtime._webhook.admission`: the :class:`Webhook` builder and the context
  its handlers get;
- :mod:`~setpoint.runtime._webhook.denial`: :class:`Denied`, how a handler refuses;
- :mod:`~setpoint.runtime._webhook.conversion`: :class:`Conversion`, the CRD conversion
  webhook;
- :mod:`~setpoint.runtime._webhook.review`: the AdmissionReview wire format and JSON Patch;
- :mod:`~setpoint.runtime._webhook.server`: :class:`WebhookServer` (HTTPS, metrics);
- :mod:`~setpoint.runtime._webhook.certs`: serving certificates, read or generated.

The manifests that register them with the API server come from
:mod:`setpoint.resources._webhooks`.
"""

from setpoint.runtime._webhook.admission import AdmissionContext, HookOptions, Webhook
from setpoint.runtime._webhook.conversion import Conversion, ConversionError
from setpoint.runtime._webhook.denial import Denied
from setpoint.runtime._webhook.review import AdmissionRequest, AdmissionResponse, UserInfo
from setpoint.runtime._webhook.server import WebhookServer

__all__ = [
    "AdmissionContext",
    "AdmissionRequest",
    "AdmissionResponse",
    "Conversion",
    "ConversionError",
    "Denied",
    "HookOptions",
    "UserInfo",
    "Webhook",
    "WebhookServer",
]
