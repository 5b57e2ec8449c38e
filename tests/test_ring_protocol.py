"""The ring's no-overlap invariant under generated schedules (hypothesis), over real HTTP with a
manual clock: members join, leave cleanly, crash, lose the ability to write their Lease (500s)
and get it back, in any order and at any time. At no moment do two members act on one hash, and
once the faults are over the members converge on the assignment."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informer.testing import ApiServer, Fault
from tests.election_helpers import LEASE, RETRY
from tests.ring_helpers import cluster

ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.integers(1, 40)),  # half-seconds
        st.tuples(st.sampled_from(["crash", "leave", "cut", "heal"]), st.integers(0, 9)),
        st.tuples(st.just("join"), st.just(0)),
    ),
    min_size=1,
    max_size=12,
)


async def _schedule(actions: list[tuple[str, int]]) -> None:
    async with ApiServer() as server, cluster(server, "abc") as c:
        cuts: dict[str, Fault] = {}
        joined = 0
        for action, n in actions:
            names = sorted(c.rings)
            name = names[n % len(names)] if names else None
            if action == "step":
                await c.step(0.5 * n)
            elif action == "join" or name is None:
                joined += 1
                c.add(f"n{joined}")
                await c.clock.settle(c.sleepers)
            elif action in ("crash", "leave"):
                if len(names) > 1:
                    await (c.crash(name) if action == "crash" else c.remove(name))
            elif action == "cut" and name not in cuts:
                lease = f"ops-{name}"

                def writes_of(r: Any, lease: str = lease) -> bool:
                    return r.name == lease and r.verb in ("update", "create", "delete")

                cuts[name] = server.faults.add(Fault(status=500, times=None, predicate=writes_of))
            elif action == "heal" and name in cuts:
                server.faults.remove(cuts.pop(name))
            assert c.acting.overlaps == [], (action, name, c.describe())
        for fault in cuts.values():
            server.faults.remove(fault)
        await c.until_converged(limit=2 * LEASE + 4 * RETRY)
        assert c.acting.overlaps == []


@settings(max_examples=6, database=None)
@given(actions=ACTIONS)
def test_no_hash_is_ever_acted_on_by_two_members(actions: list[tuple[str, int]]) -> None:
    asyncio.run(_schedule(actions))


@pytest.mark.soak
@settings(max_examples=300, database=None)
@given(actions=ACTIONS)
def test_no_hash_is_ever_acted_on_by_two_members_soak(actions: list[tuple[str, int]]) -> None:
    asyncio.run(_schedule(actions))
