"""The Widget operator of ``examples/widget/operator.py`` writing its ConfigMap with
``ctx.create_or_patch`` (a merge patch of what ``mutate`` changed, as controller-runtime's
``CreateOrPatch``) instead of ``ctx.create_or_update`` (a PUT of the whole object with its
resourceVersion): the benchmark's contender ``setpoint-patch``, which measures the write
verb alone, everything else the same.

    setpoint run bench.widget_patch:manager
"""

from __future__ import annotations

from examples.widget.api import Widget
from examples.widget.operator import config_map_for, data_for
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import Context, Controller, Manager, ManagerSettings, Result

widgets = Controller.for_(Widget, name="widget").owns(ConfigMap)


@widgets.reconcile
async def reconcile(ctx: Context[Widget], widget: Widget) -> Result:
    def wanted(cm: ConfigMap) -> None:
        cm.data = data_for(widget)

    await ctx.create_or_patch(config_map_for(widget), wanted)
    widget.status.ready = True
    widget.status.observed_generation = widget.metadata.generation
    await ctx.update_status(widget)
    return Result()


manager = Manager([widgets], settings=ManagerSettings(name="widget-operator"))
