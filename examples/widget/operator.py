"""The Widget operator: per Widget, a ConfigMap ``<name>-cfg`` with its message and size.

Run it with ``setpoint run examples.widget.operator:manager`` (see the README).

The reconcile is level-triggered: it states what the ConfigMap should hold and what the
status should say. ``ctx.create_or_update`` reads the ConfigMap from the cache, creates it
when missing (with the Widget as its controller owner, so deleting the Widget deletes it),
updates it when its data differs and sends nothing otherwise; ``ctx.update_status`` sends
only what changed. A Widget therefore costs two requests when created and two per change
of its spec, and none at all while nothing changes. (``ctx.apply``, server-side apply,
would do as well with the same two requests, but costs the API server more per request
than a create or an update: see docs/benchmarks.md.)
"""

from __future__ import annotations

from examples.widget.api import Widget
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import Context, Controller, Manager, ManagerSettings, Result

widgets = Controller.for_(Widget, name="widget").owns(ConfigMap)


def config_map_for(widget: Widget) -> ConfigMap:
    """The ConfigMap a widget should have (namespace and owner are set by the context)."""
    return ConfigMap(name=f"{widget.metadata.name}-cfg", data=data_for(widget))


def data_for(widget: Widget) -> dict[str, str]:
    return {"message": widget.spec.message, "size": str(widget.spec.size)}


@widgets.reconcile
async def reconcile(ctx: Context[Widget], widget: Widget) -> Result:
    def wanted(cm: ConfigMap) -> None:
        cm.data = data_for(widget)

    await ctx.create_or_update(config_map_for(widget), wanted)
    widget.status.ready = True
    widget.status.observed_generation = widget.metadata.generation
    await ctx.update_status(widget)
    return Result()


manager = Manager([widgets], settings=ManagerSettings(name="widget-operator"))
