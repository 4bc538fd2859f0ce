"""A write's watch event told by its answer's bytes (setpoint/client/echoes.py): only an
exact repeat of a remembered answer, of a watched resource, in an ADDED or MODIFIED line
framed as kube-apiserver frames it (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/
watch.go: ``{"type":...,"object":...}`` per line) is an echo; the memory is bounded."""

from __future__ import annotations

from typing import Any

import orjson

from setpoint.client import ResourceInfo
from setpoint.client.echoes import WriteAnswers

PODS = ResourceInfo("", "v1", "pods", "Pod", True)
CONFIGMAPS = ResourceInfo("", "v1", "configmaps", "ConfigMap", True)


def answer(name: str, rv: str, size: int = 0) -> tuple[bytes, dict[str, Any]]:
    obj = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
           "spec": {"padding": "x" * size}}
    return orjson.dumps(obj), obj


def line(event_type: str, body: bytes, newline: bool = True) -> bytes:
    return b'{"type":"%s","object":%s}%s' % (event_type.encode(), body,
                                               b"\n" if newline else b"")


def test_only_an_exact_repeat_of_a_watched_resources_answer_is_an_echo() -> None:
    answers = WriteAnswers()
    answers.watch(PODS)
    body, obj = answer("web-1", "42")
    answers.remember(PODS, body, obj)
    unwatched, other = answer("cm-1", "43")
    answers.remember(CONFIGMAPS, unwatched, other)  # no informer watches configmaps
    assert len(answers) == 1
    for event_type in ("ADDED", "MODIFIED"):
        for newline in (True, False):
            found = answers.echo(line(event_type, body, newline))
            assert found is not None
            assert found[0] == event_type
            echo = found[1]
            assert (echo.namespace, echo.name, echo.resource_version) == ("ns", "web-1", "42")
            assert echo.decode() == obj
    assert answers.echo(line("DELETED", body)) is None  # a deletion is always decoded
    assert answers.echo(line("MODIFIED", unwatched)) is None
    assert answers.echo(line("MODIFIED", body.replace(b'"42"', b'"44"'))) is None
    spaced = b'{"type": "MODIFIED", "object": %s}\n' % body  # framed another way
    assert answers.echo(spaced) is None
    assert answers.echo(line("MODIFIED", body)[:-2] + b',"extra":1}\n') is None


def test_an_answer_ending_with_encoders_newline_is_told_in_its_watch_line() -> None:
    """kube-apiserver writes a JSON answer with Encoder.Encode, which ends it with a
    newline (k8s.io/apimachinery/pkg/runtime/serializer/json/json.go doEncode); the watch
    line's object (watch.go) has none: the answer is remembered without it."""
    answers = WriteAnswers()
    answers.watch(PODS)
    body, obj = answer("web-1", "42")
    answers.remember(PODS, body + b"\n", obj)
    found = answers.echo(line("MODIFIED", body))
    assert found is not None and found[1].decode() == obj
    assert answers.echo(line("MODIFIED", body + b"\n")) is None  # not a framing of it


def test_the_memory_forgets_the_oldest_answers_past_its_count_or_bytes() -> None:
    answers = WriteAnswers(limit=3, budget=16 * 1024)
    answers.watch(PODS)
    bodies = []
    for i in range(5):
        body, obj = answer(f"web-{i}", str(i))
        answers.remember(PODS, body, obj)
        bodies.append(body)
    assert len(answers) == 3
    assert [answers.echo(line("ADDED", b)) is not None for b in bodies] == [
        False, False, True, True, True]
    by_bytes = WriteAnswers(limit=100, budget=4096)
    by_bytes.watch(PODS)
    bodies = []
    for i in range(40):
        body, obj = answer(f"web-{i:02d}", str(i), size=100)
        by_bytes.remember(PODS, body, obj)
        bodies.append(body)
    kept = [b for b in bodies if by_bytes.echo(line("ADDED", b)) is not None]
    assert kept == bodies[-len(kept):]  # the newest, in a row
    assert sum(map(len, kept)) <= 4096 < sum(map(len, kept)) + len(bodies[0])
    huge, obj = answer("huge", "99", size=300)  # more than a sixteenth of the budget
    by_bytes.remember(PODS, huge, obj)
    assert by_bytes.echo(line("ADDED", huge)) is None
