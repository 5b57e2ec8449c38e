"""Who should hold which part of the hash space: a deterministic function of the live members.

The space ``[0, 2^64)`` is cut into ``partitions`` equal ranges (128 by default). Each partition
goes to a member by rendezvous hashing (highest random weight: every member scores every
partition with a keyed hash of both, the best score wins) under a tight load bound: every member
holds ``floor(P/N)`` or ``ceil(P/N)`` partitions. The bound is applied greedily over all
(member, partition) pairs from the best score down, so a member keeps the partitions it scores
best on, and the result depends only on the set of member names: every replica computes the same
assignment from the same set, whatever order it learned the names in.

Why partitions and not a ring of virtual points: a member's ranges become one ``shardSelector``
(a union of ranges) on every LIST and WATCH. Unbounded consistent hashing needs about a thousand
points per member to hold 3-10 members within +-15% of their share, i.e. a selector of a thousand
ranges; 128 bounded partitions hold every member within one partition of its share (N = 10: 12
or 13 partitions, -6%/+2%) with at most 128/N ranges per member. The price of the bound is
movement: one member joining or leaving moves about 1.3 times the minimum 1/N (measured over
3-10 members, ``tests/test_ring_assignment.py``), where an unbounded ring moves exactly 1/N.

The scores use BLAKE2b (stdlib), not the objects' FNV-1a: FNV-1a of names that differ in their
last characters (``replica-1``, ``replica-2``) differ mostly in their low bits, which would
cluster the scores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from informer.shards import ShardRange, ShardSet

__all__ = ["DEFAULT_PARTITIONS", "assign", "partitions_of"]

DEFAULT_PARTITIONS = 128


def _score(member: str, partition: int) -> bytes:
    data = partition.to_bytes(4, "big") + member.encode()
    return hashlib.blake2b(data, digest_size=8, person=b"informer-ring").digest()


def partitions_of(count: int) -> tuple[ShardRange, ...]:
    """The ``count`` equal ranges the space is cut into."""
    return ShardRange.split(count)


def assign(members: Iterable[str], partitions: int = DEFAULT_PARTITIONS) -> Mapping[str, ShardSet]:
    """Member -> the ranges it should hold; every partition to exactly one member (an empty
    mapping when there is no member). Deterministic in the *set* of ``members``."""
    names = sorted(set(members))
    if not names:
        return {}
    if partitions < 1:
        raise ValueError("partitions must be >= 1")
    base, extra = divmod(partitions, len(names))
    ranked = sorted(((_score(m, p), m, p) for m in names for p in range(partitions)), reverse=True)
    load = dict.fromkeys(names, 0)
    owner: dict[int, str] = {}
    big = 0  # members already holding base + 1
    for _, member, p in ranked:
        if p in owner:
            continue
        held = load[member]
        if held < base or (held == base and big < extra):
            big += held == base
            load[member] = held + 1
            owner[p] = member
            if len(owner) == partitions:
                break
    grid = partitions_of(partitions)
    ranges: dict[str, list[ShardRange]] = {m: [] for m in names}
    for p, member in owner.items():
        ranges[member].append(grid[p])
    return {m: ShardSet(rs) for m, rs in ranges.items()}
