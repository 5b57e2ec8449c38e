"""WorkQueue invariants under random operation sequences (Hypothesis), on a manual clock:
a key is never held by two workers, never handed out more often than it was added, and every add
is followed by a hand-out of that key (nothing lost, also when added while held)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from informer.workqueue import ExponentialBackoff, ManualClock, Priority, WorkQueue

KEYS = st.sampled_from("abcd")
PRIORITIES = st.sampled_from(list(Priority))
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), KEYS, PRIORITIES),
        st.tuples(st.just("add_after"), KEYS, st.sampled_from([0.5, 1.0, 3.0])),
        st.tuples(st.just("add_rate_limited"), KEYS, PRIORITIES),
        st.tuples(st.just("take"), st.none(), st.none()),
        st.tuples(st.just("done"), KEYS, st.none()),
        st.tuples(st.just("advance"), st.none(), st.sampled_from([0.5, 2.0])),
    ),
    max_size=40,
)


async def try_get(q: WorkQueue[str]) -> str | None:
    task = asyncio.create_task(q.get())
    for _ in range(3):
        await asyncio.sleep(0)
    if task.done():
        return task.result()
    task.cancel()
    return None


async def run(ops: list[tuple[str, object, object]]) -> None:
    clock = ManualClock()
    q: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=ExponentialBackoff(0.5, 2.0))
    held: set[str] = set()
    added: dict[str, int] = dict.fromkeys("abcd", 0)
    handed: dict[str, int] = dict.fromkeys("abcd", 0)
    owed: set[str] = set()  # added since last handed out (or since taken while held)
    for op, key, arg in ops:
        if op == "add":
            q.add(str(key), int(arg))  # type: ignore[call-overload]
        elif op == "add_after":
            q.add_after(str(key), float(arg))  # type: ignore[arg-type]
        elif op == "add_rate_limited":
            q.add_rate_limited(str(key), int(arg))  # type: ignore[call-overload]
        elif op == "take":
            got = await try_get(q)
            if got is not None:
                assert got not in held  # never two holders
                held.add(got)
                handed[got] += 1
                owed.discard(got)
            continue
        elif op == "done":
            if key in held:
                held.discard(str(key))
                q.done(str(key))
            continue
        else:
            clock.advance(float(arg))  # type: ignore[arg-type]
            continue
        added[str(key)] += 1
        owed.add(str(key))
    # drain: finish what is held, let every delay pass, take everything left
    for key in list(held):
        q.done(key)
    held.clear()
    clock.advance(1000.0)
    while (got := await try_get(q)) is not None:
        handed[got] += 1
        owed.discard(got)
        q.done(got)
    for key in "abcd":
        assert handed[key] <= added[key]
    assert not owed  # every add was followed by a hand-out: nothing lost
    assert len(q) == 0 and q.statistics().processing == 0


@settings(max_examples=150)
@given(OPS)
def test_queue_invariants_hold_for_any_operation_sequence(
    ops: list[tuple[str, object, object]],
) -> None:
    asyncio.run(run(ops))
