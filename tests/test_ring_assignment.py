"""The ring's assignment: every partition to exactly one live member, the same from any order of
the names, each of 3-10 members within +-15% of its share, one member joining or leaving moving
about 1/N of the space (hypothesis over member names)."""

from __future__ import annotations

import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from informer.ring._assignment import DEFAULT_PARTITIONS, assign
from informer.shards import HASH_SPACE, ShardSet

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=40)
members = st.sets(names, min_size=3, max_size=10)


def moved(a: dict[str, ShardSet], b: dict[str, ShardSet]) -> float:
    """The share of the space whose holder differs between ``a`` and ``b``."""
    kept = sum((a[m] & b[m]).size for m in a.keys() & b.keys())
    return 1 - kept / HASH_SPACE


@settings(max_examples=60, deadline=None)
@given(members, st.randoms(use_true_random=False))
def test_every_hash_has_one_holder_whatever_the_order(names: set[str], rnd: object) -> None:
    order = sorted(names)
    rnd.shuffle(order)  # type: ignore[attr-defined]
    a = assign(order)
    assert a == assign(sorted(names))
    union = ShardSet()
    for s in a.values():
        assert not (union & s)
        union = union | s
    assert union == ShardSet.full()


@settings(max_examples=60, deadline=None)
@given(members)
def test_each_member_holds_its_share_within_15_percent(names: set[str]) -> None:
    for s in assign(names).values():
        assert abs(s.share * len(names) - 1) <= 0.15
        assert len(s) <= DEFAULT_PARTITIONS // len(names) + 1  # ranges in one selector


@settings(max_examples=40, deadline=None)
@given(members, names)
def test_one_member_joining_or_leaving_moves_about_one_nth(names: set[str], new: str) -> None:
    if new in names:
        return
    before = dict(assign(names))
    after = dict(assign(names | {new}))
    n = len(names) + 1
    assert after[new].share * n >= 0.85
    assert moved(before, after) <= 2.5 / n  # the joiner's share, and some reshuffling
    gone = min(names)
    left = dict(assign(names - {gone}))
    assert moved(before, left) <= 2.5 / len(names)


def test_movement_is_on_average_close_to_the_minimum() -> None:
    ratios = []
    for trial in range(6):
        pool = [f"replica-{trial}-{i}" for i in range(11)]
        for n in range(3, 10):
            a, b = dict(assign(pool[:n])), dict(assign(pool[: n + 1]))
            ratios.append(moved(a, b) * (n + 1))  # join: the minimum is 1/(n+1)
            c = dict(assign(pool[1 : n + 1]))
            ratios.append(moved(b, c) * (n + 1))  # leave: the minimum is 1/(n+1)
    assert statistics.mean(ratios) <= 1.5
