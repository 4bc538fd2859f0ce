"""Admission webhooks for Widgets: a defaulter and a validator, served by the operator.

    setpoint generate webhooks examples.widget.webhooks:manager --cert-manager ...
    setpoint run examples.widget.webhooks:manager --webhook-cert-dir DIR

The defaulter gives a widget without a message the message "hello <name>" (the API server
applies the JSON Patch of that change); the validator refuses a size above 100, naming the
field as the API server's own validation would, and warns when the message shrinks a
widget's ConfigMap to nothing. In tests, ``run_manager(manager)`` registers both with the
embedded cluster (``test_webhooks.py``).
"""

from __future__ import annotations

from examples.widget.api import Widget
from examples.widget.operator import widgets
from setpoint.runtime import AdmissionContext, Denied, Manager, ManagerSettings, Webhook

MAX_SIZE = 100

widget_hooks = Webhook.for_(Widget)


@widget_hooks.default
async def default(ctx: AdmissionContext[Widget], widget: Widget) -> None:
    if not widget.spec.message:
        widget.spec.message = f"hello {widget.metadata.name}"


@widget_hooks.validate
async def validate(ctx: AdmissionContext[Widget], widget: Widget, old: Widget | None,
                   operation: str) -> list[str]:
    if widget.spec.size > MAX_SIZE:
        raise Denied(f"must be at most {MAX_SIZE}", field="spec.size", value=widget.spec.size)
    if old is not None and old.spec.message and widget.spec.message.strip() == "":
        return ["the message is blank: the ConfigMap will carry nothing"]
    return []


manager = Manager([widgets], settings=ManagerSettings(name="widget-operator"),
                  webhooks=[widget_hooks])
