"""The Widget custom resource (``setpoint generate crds examples.widget.api``)."""

from __future__ import annotations

from pydantic import Field

from setpoint.resources import CustomResource, Model, PrinterColumn


class WidgetSpec(Model):
    """What a widget should be."""

    size: int = Field(1, ge=1, description="How big the widget is.")
    message: str = Field("", description="The message the widget's ConfigMap carries.")


class WidgetStatus(Model):
    """What the operator last did about a widget."""

    ready: bool = Field(False, description="True once the ConfigMap matches the spec.")
    observed_generation: int | None = Field(
        None, description="The generation of the spec the ConfigMap was last made for.")


class Widget(CustomResource, group="bench.setpoint.dev", version="v1",
             printer_columns=[PrinterColumn("Ready", "boolean", ".status.ready"),
                              PrinterColumn("Message", "string", ".spec.message"),
                              PrinterColumn.age()]):
    """A widget: a message and a size, published as the ConfigMap "<name>-cfg"."""

    spec: WidgetSpec
    status: WidgetStatus = WidgetStatus()
