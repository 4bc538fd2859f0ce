"""Version upgrades: one member at a time, the leader last, each healthy before the next.

Planned only once the membership is as wanted (every voter healthy, no learner). A member
is upgraded by deleting its pod; the next reconcile starts it again on its claim with the
spec's version (:mod:`.members` plans the ``CreatePod``), and etcd restarts it from its
data. etcd 3.5 reads 3.4's data and runs in a mixed cluster until the last member is
upgraded, when the cluster version moves to 3.5 (etcd's ``upgrade_3_5.md``).
"""

from __future__ import annotations

from operators.etcd.health import version_key
from operators.etcd.members import Step
from operators.etcd.observe import Reading
from operators.etcd.resource import EtcdCluster


def plan(cluster: EtcdCluster, reading: Reading) -> Step:
    """The next member to upgrade, or ``Done`` when each runs the spec's version."""
    obs = reading.observed
    wanted = cluster.spec.version
    behind = []
    for member in obs.members or ():
        ordinal = obs.member_ordinals.get(member.id)
        pod = obs.pods.get(ordinal) if ordinal is not None else None
        if ordinal is None or pod is None:
            continue
        if pod.version != wanted:
            behind.append((member.id == obs.leader, ordinal, member))
    if not behind:
        return Step("Done", "AsExpected",
                    f"{len(obs.members or ())} healthy voting member(s) on {wanted}")
    unready = sorted(member.name or member.hex_id for member in obs.members or ()
                     if (o := obs.member_ordinals.get(member.id)) is not None
                     and (view := obs.pods.get(o)) is not None and not view.ready)
    if unready:
        # etcd answering is not enough: the kubelet's probe must pass too, as a
        # StatefulSet's rolling update waits for each pod to be Ready (and etcd-operator
        # upgrades only while every member's pod runs and is ready)
        return Step("Wait", "MembersNotReady",
                    f"waiting for member(s) {', '.join(unready)} to be Ready before "
                    f"upgrading the next one to {wanted}")
    # followers first, by ordinal; the leader last (each upgrade of the leader costs an
    # election, so it is done once)
    _, ordinal, member = sorted(behind, key=lambda b: (b[0], b[1]))[0]
    running = reading.statuses.get(member.id)
    have = running.version if running is not None else "?"
    if running is not None and version_key(running.version) > version_key(wanted):
        return Step("Wait", "DowngradeRefused",
                    f"member {member.name} runs {have}, newer than {wanted}: etcd does not "
                    "downgrade; set the version back")
    return Step("UpgradeMember", "UpgradingMember",
                f"upgrading member {member.name} from {have} to {wanted} ({len(behind)} "
                "member(s) to go)", ordinal, member)
