"""Coordinated sharding across replicas: a ring of members, each holding a Lease of its own,
sharing the hash space of KEP-5866 (``informer.shards``) so that each object is reconciled by one
replica, and a range moves between replicas without two of them acting on it at once.

Terms. The space ``[0, 2^64)`` of object hashes (FNV-1a of the uid, or of the namespace) is cut
into equal partitions. A *member* is a replica in the ring: it holds the Lease
``<ring>-<identity>`` (``coordination.k8s.io/v1``, labelled ``ring.kube-informer.io/name=<ring>``)
and renews it under the ``LeaderElector``'s rules (its own monotonic clock, every request cut at
the renew deadline, the term over when no renewal succeeded within ``renew_deadline`` of the last
success's start). Its Lease also publishes ``held``: the ranges it *claims*, with an ``epoch``
counting their changes. It *acts* on (reconciles the keys of) a subset of what it claims.

Invariant (no overlap): at no moment do two members act on the same hash. Kept by four rules:

1. Claim before acting: a member acts on a range only after a write of its Lease claiming it has
   succeeded, and a quorum read (a LIST of the ring's Leases) made after that write shows its own
   claim and no claim on the range by another member it considers live.
2. Stop before releasing: to give a range up, a member stops taking its keys, lets reconciles in
   flight finish up to ``handover_timeout`` and cancels the rest, and only then publishes
   ``held`` without it (its acknowledgement). Every write of its Lease carries ``held`` ⊇ what it
   acts on, so a claim stays visible while the member acts.
3. Fencing: when a member's term ends (no renewal within ``renew_deadline``), it stops acting on
   every range at once: no new key, reconciles in flight cancelled. It claims nothing until it
   has written its Lease again, with ``held`` empty.
4. Liveness by observation: a member considers another one live unless its Lease is released,
   gone, or unchanged (same ``resourceVersion``) for the Lease's ``leaseDurationSeconds`` since
   this member first saw that version, on this member's own clock, as confirmed by a quorum read.
   Claims of members not considered live are ignored.

Why it holds: take two members acting on a hash, A since its verifying read R_A, B since R_B,
R_A before R_B (reads are linearizable). While A acts, its published claim is there (rule 2), so
R_B shows it, and B ignored it only because A's Lease had not changed for a lease duration
(rule 4). Every renewal A counts as a success completes before its renew deadline, i.e. within
``renew_deadline`` of the start of a write that R_B's observer had already seen, so it would have
changed the Lease before R_B (``renew_deadline < lease_duration``): A's term had ended, and by
rule 3 A was no longer acting. A member that claims a range at the same time as another cannot
both succeed: the later writer's verifying read shows the earlier claim (rule 1), and a member
that sees a conflict withdraws its claim (it never acts on a contested range; the assignment
settles who retries).

Timing assumptions (those of leader election): clocks of the replicas run at the same rate
(bounded drift, no agreement on the time needed); fencing takes effect within
``lease_duration - renew_deadline`` (5 s with the defaults): reconciles are cancelled at their
next await, and a write already sent may still land (as for a leader stepping down); the API
server's reads are linearizable (quorum reads, what LIST without a resourceVersion is).

Assignment: the partitions are spread over the live members by ``assign`` (bounded-load
rendezvous hashing, deterministic in the set of names), so replicas that see the same members
agree without talking; while their views differ, rule 1 keeps them apart. A dead member's ranges
are claimed by their new holders once its Lease expired (at most ``lease_duration`` after its last
renewal was observed, plus a round); ranges move between live members after the acknowledgement.

A range taken over starts like a new leader's term: the controller's caches first catch up with
a consistent list (so they show the previous holder's last writes), then every object of the
range is queued.
"""

from informer.ring._assignment import DEFAULT_PARTITIONS, assign
from informer.ring._controller import ControllerShard, ControllerShardStats, InformerShard
from informer.ring._ring import Participant, Ring, RingState, RingStats

__all__ = [
    "DEFAULT_PARTITIONS",
    "ControllerShard",
    "ControllerShardStats",
    "InformerShard",
    "Participant",
    "Ring",
    "RingState",
    "RingStats",
    "assign",
]
