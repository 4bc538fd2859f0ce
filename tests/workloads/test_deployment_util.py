"""The Deployment controller's arithmetic, without a cluster."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.workloads.controllers import deployment_util as du

Obj = dict[str, Any]


def deployment(replicas: int = 10, surge: Any = "25%", unavailable: Any = "25%",
               kind: str = "RollingUpdate") -> Obj:
    strategy: Obj = {"type": kind}
    if kind == "RollingUpdate":
        strategy["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    return {"metadata": {"name": "d", "generation": 1},
            "spec": {"replicas": replicas, "strategy": strategy,
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def replica_set(name: str, replicas: int, created: str = "2024-01-01T00:00:00Z",
                **notes: str) -> Obj:
    return {"metadata": {"name": name, "uid": name, "creationTimestamp": created,
                         "annotations": dict(notes)},
            "spec": {"replicas": replicas}, "status": {}}


@pytest.mark.parametrize(("replicas", "surge", "unavailable", "expected"), [
    (10, "25%", "25%", (3, 2)),      # surge rounds up, unavailability down
    (4, "25%", "25%", (1, 1)),
    (1, "25%", "25%", (1, 0)),
    (3, "0%", "10%", (0, 1)),        # both zero: one may be unavailable
    (10, 2, 0, (2, 0)),
    (10, "50%", 3, (5, 3)),
])
def test_fenceposts_round_as_kubernetes(replicas: int, surge: Any, unavailable: Any,
                                        expected: tuple[int, int]) -> None:
    assert du.resolve_fenceposts(surge, unavailable, replicas) == expected


def test_max_unavailable_is_capped_by_replicas_and_zero_for_recreate() -> None:
    assert du.max_unavailable(deployment(replicas=2, surge=0, unavailable=5)) == 2
    assert du.max_unavailable(deployment(kind="Recreate")) == 0
    assert du.max_surge(deployment(kind="Recreate")) == 0


def test_percentages_must_be_percentages() -> None:
    with pytest.raises(ValueError, match="not a percentage"):
        du.scaled_value("25", 10, True)


def test_hash_is_stable_safe_encoded_and_changes_with_collision_count() -> None:
    template = deployment()["spec"]["template"]
    first = du.compute_hash(template, None)
    assert first == du.compute_hash({"spec": template["spec"],
                                     "metadata": template["metadata"]}, None)
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert du.compute_hash(template, 1) != first
    assert du.compute_hash(template, 1) != du.compute_hash(template, 2)
    assert du.safe_encode("0123456789") == "456789bcdf"


def test_fnv32a_matches_the_reference_vectors() -> None:
    assert du.fnv32a(b"") == 0x811C9DC5
    assert du.fnv32a(b"a") == 0xE40C292C
    assert du.fnv32a(b"foobar") == 0xBF9CF968


def test_new_replica_set_is_the_oldest_with_the_same_template_ignoring_hash() -> None:
    d = deployment()
    same = replica_set("same", 1, "2024-01-02T00:00:00Z")
    same["spec"]["template"] = {"metadata": {"labels": {"app": "d", "pod-template-hash": "h"}},
                                "spec": d["spec"]["template"]["spec"]}
    older_same = {**same, "metadata": {**same["metadata"], "name": "older", "uid": "older",
                                       "creationTimestamp": "2024-01-01T00:00:00Z"}}
    other = replica_set("other", 1)
    other["spec"]["template"] = {"metadata": {"labels": {"app": "d"}},
                                 "spec": {"containers": [{"name": "c", "image": "y"}]}}
    assert du.find_new_replica_set(d, [same, other, older_same]) is older_same
    with_replicas, everything = du.find_old_replica_sets(d, [same, other, older_same])
    assert [rs["metadata"]["name"] for rs in everything] == ["same", "other"]
    assert with_replicas == everything
    other["spec"]["replicas"] = 0
    assert du.find_old_replica_sets(d, [same, other, older_same])[0] == [same]


def test_new_replica_set_annotations_keep_revision_history_on_rollback() -> None:
    d = deployment()
    d["metadata"]["annotations"] = {"kubernetes.io/change-cause": "why",
                                    du.REVISION: "9", du.LAST_APPLIED: "{}"}
    rs = replica_set("rs", 0, **{du.REVISION: "1"})
    assert du.set_new_replica_set_annotations(d, rs, "3", exists=True)
    notes = rs["metadata"]["annotations"]
    assert notes == {du.REVISION: "3", du.REVISION_HISTORY: "1",
                     "kubernetes.io/change-cause": "why"}
    rs["metadata"]["annotations"][du.REVISION] = "5"
    du.set_new_replica_set_annotations(d, rs, "7", exists=True)
    assert notes[du.REVISION_HISTORY] == "1,5"
    assert not du.set_new_replica_set_annotations(d, rs, "7", exists=True)
    fresh = replica_set("fresh", 0)
    du.set_new_replica_set_annotations(d, fresh, "1", exists=False)
    assert fresh["metadata"]["annotations"][du.DESIRED_REPLICAS] == "10"
    assert fresh["metadata"]["annotations"][du.MAX_REPLICAS] == "13"


def test_new_rs_grows_only_within_surge() -> None:
    d = deployment()
    old, new = replica_set("old", 10), replica_set("new", 0)
    assert du.new_rs_new_replicas(d, [old, new], new) == 3
    old["spec"]["replicas"] = 8
    new["spec"]["replicas"] = 3
    assert du.new_rs_new_replicas(d, [old, new], new) == 5
    assert du.new_rs_new_replicas(deployment(kind="Recreate"), [old, new], new) == 10


def test_proportions_follow_max_replicas_annotation() -> None:
    d = deployment(replicas=20)
    old = replica_set("old", 8, **{du.MAX_REPLICAS: "13"})
    new = replica_set("new", 5, **{du.MAX_REPLICAS: "13"})
    assert du.get_proportion(old, d, 12, 0) == 7
    assert du.get_proportion(new, d, 12, 7) == 5
    shrink = deployment(replicas=5)
    assert du.get_proportion(old, shrink, -7, 0) == -4   # 8 * 7 / 13 = 4.3 -> 4
    assert du.get_proportion(old, deployment(replicas=0), -13, 0) == -8


def test_sorting_by_revision_and_size() -> None:
    a = replica_set("a", 1, "2024-01-03T00:00:00Z", **{du.REVISION: "2"})
    b = replica_set("b", 3, "2024-01-01T00:00:00Z", **{du.REVISION: "10"})
    c = replica_set("c", 3, "2024-01-02T00:00:00Z", **{du.REVISION: "1"})
    assert [rs["metadata"]["name"] for rs in du.by_revision([a, b, c])] == ["c", "a", "b"]
    assert [rs["metadata"]["name"] for rs in du.by_size_newer([a, b, c])] == ["c", "b", "a"]
    assert [rs["metadata"]["name"] for rs in du.by_size_older([a, b, c])] == ["b", "c", "a"]


def test_conditions_keep_transition_time_while_status_holds() -> None:
    status: Obj = {}
    first = du.new_condition(du.PROGRESSING, "True", du.NEW_REPLICA_SET, "a")
    first["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    du.set_condition(status, first)
    du.set_condition(status, du.new_condition(du.PROGRESSING, "True", du.NEW_REPLICA_SET, "b"))
    assert du.get_condition(status, du.PROGRESSING)["message"] == "a"  # type: ignore[index]
    du.set_condition(status, du.new_condition(du.PROGRESSING, "True", du.NEW_RS_AVAILABLE, "c"))
    current = du.get_condition(status, du.PROGRESSING)
    assert current is not None
    assert current["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    assert current["message"] == "c"
    du.remove_condition(status, du.PROGRESSING)
    assert status == {}


def test_a_status_write_does_not_make_the_template_comparison_start_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ReplicaSet's template is in its spec, and the apiserver moves ``generation`` on
    every spec change of a Deployment or ReplicaSet (pkg/registry/apps/replicaset/
    strategy.go PrepareForUpdate), never on a status write: comparing the templates again
    after a status write (a new resourceVersion, the same generation) reuses the memo;
    a spec change (a new generation) is compared anew and sees the new template."""
    computed: list[Any] = []
    semantic = du._semantic

    def counted(value: Any) -> Any:
        computed.append(value)
        return semantic(value)

    monkeypatch.setattr(du, "_semantic", counted)
    d = deployment()
    d["metadata"].update(uid="d-uid", resourceVersion="10")
    rs: Any = {"metadata": {"name": "d-1", "uid": "rs-uid", "generation": 1,
                            "resourceVersion": "11"},
               "spec": {"replicas": 10, "template": {
              "metadata": {"labels": {"app": "d", du.POD_TEMPLATE_HASH: "1"}},
              "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    assert du.same_template(rs, d)
    first = len(computed)
    for version in range(12, 20):  # status writes: the RS's and the Deployment's
        rs["metadata"]["resourceVersion"] = str(version)
        d["metadata"]["resourceVersion"] = str(version + 100)
        assert du.same_template(rs, d)
    assert len(computed) == first
    rs["metadata"].update(generation=2, resourceVersion="30")
    rs["spec"]["template"]["spec"]["containers"][0]["image"] = "y"
    assert not du.same_template(rs, d)
