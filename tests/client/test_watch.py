"""Watch streams: events, bookmarks, resume points, 410 and the end of a stream."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from setpoint.client import Client, ExpiredError, GoneError, Kind, WatchEvent
from setpoint.client.watch import split_lines
from tests.client.fakeapi import FakeApi
from tests.client.test_crud import Meta, Widget

CM = Kind("v1", "ConfigMap")


def cm(name: str, ns: str = "team-a") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": ns}, "data": {"k": name}}


async def test_watch_from_a_resource_version_yields_later_changes_in_order(
    client: Client, api: FakeApi,
) -> None:
    api.put("configmaps", cm("before"))
    start = str(api.rv)
    api.put("configmaps", cm("one"))
    api.put("configmaps", {**cm("one"), "data": {"k": "changed"}}, "MODIFIED")
    api.put("configmaps", cm("one"), "DELETED")
    seen = []
    async with client.watch(CM, namespace="team-a", resource_version=start,
                            allow_bookmarks=False, timeout_seconds=1) as watch:
        async for event_type, obj in watch:
            seen.append((event_type, obj["metadata"]["name"]))
            if len(seen) == 3:
                break
    assert seen == [("ADDED", "one"), ("MODIFIED", "one"), ("DELETED", "one")]
    assert watch.resource_version == str(api.rv)
    sent = api.requests_to("GET", "/api/v1/namespaces/team-a/configmaps")[0].query
    assert sent == {"watch": "true", "resourceVersion": start, "timeoutSeconds": "1"}


async def test_watch_sees_changes_made_after_it_opened(client: Client, api: FakeApi) -> None:
    start = str(api.rv)
    watch = client.watch(CM, namespace="team-a", resource_version=start, allow_bookmarks=False,
                         timeout_seconds=5)
    first = asyncio.ensure_future(watch.__anext__())
    await asyncio.wait_for(api.watch_started.wait(), 30)
    await client.create({"apiVersion": "v1", "kind": "ConfigMap", **cm("late")})
    event = await asyncio.wait_for(first, 30)
    assert event == WatchEvent("ADDED", event.object)
    assert event.object["metadata"]["name"] == "late"
    await watch.close()


async def test_bookmarks_are_yielded_and_move_the_resume_point(
    client: Client, api: FakeApi,
) -> None:
    api.put("configmaps", cm("a"))
    start = str(api.rv - 1)
    api.put("configmaps", cm("other", ns="elsewhere"))  # filtered out, but advances the rv
    async with client.watch(CM, namespace="team-a", resource_version=start,
                            timeout_seconds=1) as watch:
        kinds = []
        async for event_type, _obj in watch:
            kinds.append(event_type)
            if event_type == "BOOKMARK":
                break
    assert kinds == ["ADDED", "BOOKMARK"]
    assert watch.resource_version == str(api.rv)
    assert api.requests[-1].query["allowWatchBookmarks"] == "true"


async def test_watch_without_resource_version_starts_with_the_current_objects(
    client: Client, api: FakeApi,
) -> None:
    api.put("configmaps", cm("existing"))
    async with client.watch(CM, namespace="team-a", timeout_seconds=1) as watch:
        event_type, obj = await watch.__anext__()
    assert (event_type, obj["metadata"]["name"]) == ("ADDED", "existing")
    assert "resourceVersion" not in api.requests[-1].query


async def test_an_expired_resource_version_raises_expired_gone(
    client: Client, api: FakeApi,
) -> None:
    api.compacted = 50
    with pytest.raises(GoneError) as info:
        async for _ in client.watch(CM, namespace="team-a", resource_version="10"):
            pytest.fail("no event may precede the ERROR")
    assert isinstance(info.value, ExpiredError)
    assert info.value.code == 410
    assert info.value.message == "too old resource version: 10 (50)"


async def test_the_stream_ends_when_the_server_times_it_out(client: Client, api: FakeApi) -> None:
    api.put("configmaps", cm("a"))
    events = [e async for e in client.watch(CM, namespace="team-a", resource_version=str(api.rv),
                                            allow_bookmarks=False, timeout_seconds=0)]
    assert events == []


async def test_a_dropped_stream_ends_quietly_and_keeps_the_resume_point(
    client: Client, api: FakeApi,
) -> None:
    start = str(api.rv)
    api.put("configmaps", cm("a"))
    api.put("configmaps", cm("b"))
    api.watch_drop_after = 1
    watch = client.watch(CM, namespace="team-a", resource_version=start, allow_bookmarks=False,
                         timeout_seconds=5)
    names = [obj["metadata"]["name"] async for _, obj in watch]
    assert names == ["a"]
    assert watch.resource_version == str(api.rv - 1)


async def test_watching_one_object_by_name_uses_a_field_selector(
    client: Client, api: FakeApi,
) -> None:
    async for _ in client.watch(CM, namespace="team-a", name="x", label_selector="a=b",
                                allow_bookmarks=False, timeout_seconds=0):
        pass
    query = api.requests[-1].query
    assert query["fieldSelector"] == "metadata.name=x"
    assert query["labelSelector"] == "a=b"


async def test_typed_watches_decode_objects_but_not_bookmarks(
    client: Client, api: FakeApi,
) -> None:
    start = str(api.rv)
    api.put("widgets", {"metadata": {"name": "w", "namespace": "team-a"}})
    async with client.watch(Widget, namespace="team-a", resource_version=start,
                            timeout_seconds=1) as watch:
        added = await watch.__anext__()
        bookmark = await watch.__anext__()
    assert isinstance(added.object, Widget)
    assert added.object.metadata == Meta(name="w", namespace="team-a",
                                         resourceVersion=str(api.rv),
                                         uid=added.object.metadata.uid)
    assert bookmark.type == "BOOKMARK" and isinstance(bookmark.object, dict)


async def test_leaving_a_watch_early_frees_its_connection(
    kubeconfig: Path, api: FakeApi,
) -> None:
    api.put("configmaps", cm("a"))
    async with Client.from_kubeconfig(kubeconfig, max_connections=1) as client:
        async with client.watch(CM, namespace="team-a", timeout_seconds=30) as watch:
            await watch.__anext__()
        # with one connection in the pool, this would wait forever on a leaked stream
        got = await asyncio.wait_for(client.get(CM, "a", namespace="team-a"), 30)
    assert got["metadata"]["name"] == "a"


def _lines_through_the_buffer(chunks: list[bytes]) -> tuple[list[bytes], bytes]:
    """The watch's former reading, every chunk appended to a buffer and each line copied
    out of it: what ``split_lines`` must give, line for line."""
    buffer, lines = bytearray(), list[bytes]()
    for chunk in chunks:
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end])
            start = end + 1
            if line.strip():
                lines.append(line)
        del buffer[:start]
    return lines, bytes(buffer)


@pytest.mark.parametrize("cut", [1, 2, 3, 7, 16, 64, 1000])
def test_split_lines_gives_the_lines_the_buffer_gave_however_the_stream_is_cut(
    cut: int,
) -> None:
    events = [b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}',
              b"", b"  ", b'{"type":"MODIFIED","object":{"data":{"k":"v\\n"}}}',
              b'{"type":"DELETED","object":{}}\r', b'{"type":"BOOKMARK"']
    stream = b"\n".join(events)
    chunks = [stream[i:i + cut] for i in range(0, len(stream), cut)]
    # whole lines per chunk (the common case) as well as lines cut anywhere
    for given in (chunks, [e + b"\n" for e in events], [stream + b"\n", b"\n\n"]):
        pending, lines = bytearray(), list[bytes]()
        for chunk in given:
            lines += split_lines(pending, chunk)
        # a line whole in its chunk keeps its newline, which JSON reads as whitespace
        assert ([line.removesuffix(b"\n") for line in lines], bytes(pending)) \
            == _lines_through_the_buffer(given)
