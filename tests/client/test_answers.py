"""A typed write's answer is validated when first read (setpoint/client/answers.py).

controller-runtime's ``client.Create``/``Update`` fill the object passed in and most
reconciles drop it; here a write returns an instance of the class sent that holds the
server's JSON and becomes the validated model on its first attribute read of any kind.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any, ClassVar

import orjson
import pytest
from pydantic import BaseModel, ConfigDict

from setpoint.client import Client
from setpoint.client.answers import UnreadableAnswerError, answer_like, is_unread
from setpoint.resources.models.core_v1 import ConfigMap
from tests.client.test_crud import Meta, Widget, WidgetSpec

ANSWER = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "a", "namespace": "n", "resourceVersion": "7"},
          "data": {"k": "v"}}


def _answer() -> ConfigMap:
    return answer_like(ConfigMap, orjson.dumps(ANSWER))


@pytest.mark.parametrize("read", [
    lambda a: a.metadata.name,
    lambda a: a.to_dict(),
    lambda a: a.model_dump(),
    repr,
    lambda a: a == ConfigMap.from_dict(ANSWER),
    copy.copy,
    copy.deepcopy,
    lambda a: pickle.loads(pickle.dumps(a)),
    lambda a: dict(a),
    lambda a: setattr(a, "data", {"k": "v"}),
    lambda a: isinstance(a, dict),
    lambda a: a.__dict__,
], ids=["field", "to_dict", "model_dump", "repr", "eq", "copy", "deepcopy", "pickle",
        "iter", "setattr", "isinstance-other", "dict"])
def test_any_first_read_makes_the_answer_the_validated_model(read: Any) -> None:
    answer = _answer()
    assert is_unread(answer) and isinstance(answer, ConfigMap)
    read(answer)
    assert not is_unread(answer)
    assert type(answer) is ConfigMap
    assert answer == ConfigMap.from_dict(ANSWER)
    assert answer.to_dict() == ANSWER


def test_an_unread_answer_inside_another_model_is_serialized_whole() -> None:
    class Holder(BaseModel):
        config_map: ConfigMap

    held = Holder(config_map=_answer())
    assert held.model_dump(mode="json", by_alias=True, exclude_none=True) == \
        {"config_map": ANSWER}


def test_an_answer_the_class_cannot_read_raises_on_every_read_naming_the_object() -> None:
    body = orjson.dumps({**ANSWER, "data": {"k": ["not", "a", "string"]}})
    answer = answer_like(ConfigMap, body)
    for _ in range(2):
        with pytest.raises(UnreadableAnswerError, match=r"(?s)ConfigMap n/a does not validate as "
                                                        r"ConfigMap: .*data\.k"):
            answer.data  # noqa: B018
    assert is_unread(answer)


class Registered(BaseModel):
    """A model whose own ``__init_subclass__`` registers subclasses: built at once."""

    api_version: ClassVar[str] = "v1"
    kind: ClassVar[str] = "ConfigMap"
    subclasses: ClassVar[list[type[Any]]] = []
    model_config = ConfigDict(extra="allow")

    @classmethod
    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Registered.subclasses.append(cls)


def test_a_class_with_its_own_subclass_hook_is_validated_at_once() -> None:
    answer = answer_like(Registered, orjson.dumps(ANSWER))
    assert type(answer) is Registered and not is_unread(answer)
    assert Registered.subclasses == []


async def test_a_typed_write_answers_an_unread_model_that_reads_as_the_server_answered(
        client: Client) -> None:
    created = await client.create(Widget(metadata=Meta(name="t"), spec=WidgetSpec(replicas=2)))
    assert is_unread(created) and isinstance(created, Widget)
    got = await client.get(Widget, "t")
    assert created == got and type(created) is Widget
    updated = await client.update(Widget(metadata=got.metadata, spec=WidgetSpec(replicas=3)))
    assert is_unread(updated)
    assert updated.spec.replicas == 3
    assert updated.metadata.resourceVersion != got.metadata.resourceVersion
    patched = await client.patch(Widget, "t", {"spec": {"message": "hi"}})
    assert is_unread(patched)
    assert patched == await client.get(Widget, "t") and patched.spec.message == "hi"


class StrictMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class StrictWidget(BaseModel):
    """A model stricter than the server: its answer carries metadata it forbids."""

    api_version: ClassVar[str] = "example.com/v1"
    kind: ClassVar[str] = "Widget"
    plural: ClassVar[str] = "widgets"
    namespaced: ClassVar[bool] = True
    metadata: StrictMeta


async def test_a_model_stricter_than_the_servers_answer_is_told_when_it_is_read(
        client: Client) -> None:
    created = await client.create(StrictWidget(metadata=StrictMeta(name="s")))
    with pytest.raises(UnreadableAnswerError,
                       match=r"Widget team-a/s does not validate as StrictWidget"):
        created.metadata  # noqa: B018
