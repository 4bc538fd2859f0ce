"""Restarting members on renewed certificates: one member at a time, the leader last.

:mod:`.tlssecrets` writes a renewed certificate into a member's Secret once it is within
``spec.tls.renewBefore`` of expiry, and another set of trusted CAs during a CA rotation
(:mod:`.carotation`). A pod records the serial it started with (and the CAs it trusts,
during a rotation); a member whose Secret now holds another is restarted (its pod
deleted, then made again on its claim by :mod:`.members`' ``CreatePod``), so each member
runs on the certificate and CAs its Secret holds. etcd reads its certificate files at
each handshake, but a restart is what proves a member starts on the new pair, and it is
the only way to pick up a new CA.

Planned only when nothing else is to be done (every voter answers, no learner, no
upgrade), and so one member at a time: the next restart waits for the last member to be
healthy again, and the quorum is never in question.
"""

from __future__ import annotations

from operators.etcd import tlssecrets
from operators.etcd.members import Step
from operators.etcd.observe import Reading
from operators.etcd.resource import EtcdCluster
from setpoint.runtime import Context

ACTIONS = ("RestartMember",)


def plan(ctx: Context[EtcdCluster], cluster: EtcdCluster, reading: Reading) -> Step | None:
    """The next member to restart on its renewed certificate, or None."""
    if not tlssecrets.enabled(cluster):
        return None
    obs = reading.observed
    stale = []
    for member in obs.members or ():
        ordinal = obs.member_ordinals.get(member.id)
        pod = reading.pods.get(ordinal) if ordinal is not None else None
        if ordinal is None or pod is None:
            continue
        if tlssecrets.member_serial(ctx, cluster, ordinal) is not None \
                and not tlssecrets.running_as_held(ctx, cluster, ordinal, pod):
            stale.append((member.id == obs.leader, ordinal, member))
    if not stale:
        return None
    _, ordinal, member = sorted(stale, key=lambda s: (s[0], s[1]))[0]
    return Step("RestartMember", "CertificateRenewed",
                f"restarting member {member.name} on its renewed certificate or trusted CAs "
                f"({len(stale)} member(s) to go)", ordinal, member)


async def carry_out(ctx: Context[EtcdCluster], cluster: EtcdCluster, reading: Reading,
                    step: Step) -> Step:
    assert step.ordinal is not None
    pod = reading.pods.get(step.ordinal)
    if pod is not None:
        await ctx.delete(pod)
    ctx.events.normal(step.reason, step.message, action=step.action)
    return step

