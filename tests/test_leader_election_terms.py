"""A leader's term ends on time and survives garbage, over real HTTP with a manual clock: the
teardown of a term (work stopped, ``on_stopped_leading`` once) completes whatever cancels ``run``;
an answer that is not a Lease is one failed attempt, not the end of the campaign; a term never
outlives the start of its last successful attempt + ``renew_deadline``, however long the attempts
took."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from informer import ElectionState
from informer.testing import ApiServer, Fault, RecordedRequest
from tests.election_helpers import RENEW, RETRY, Election, election

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("ending", ["lost", "cancelled"])
async def test_cancelling_run_while_a_term_ends_waits_for_its_teardown(
    api_server: ApiServer, ending: str
) -> None:
    async with election(api_server, "a") as e:
        drained = asyncio.Event()
        e.start("a", drain=drained)
        await e.clock.idle(1)
        a = e.candidates["a"].elector
        task = e.candidates["a"].task
        assert a.is_leader and task is not None
        e.stuck = lambda: 1 if e.times("a", "work_cancelled") else 0  # draining, not sleeping
        if ending == "lost":  # the Lease is lost; its work takes a while to stop
            api_server.faults.add(Fault(verb="update", resource="leases", status=500, times=None))
            while a.is_leader:
                await e.step(0.5)
        else:  # a first cancellation (SIGTERM) starts the teardown
            task.cancel()
            await e.wait_logged("a", "work_cancelled")
        assert e.history("a") == ["started", "work_cancelled"]
        task.cancel()  # (another) SIGTERM while the work still drains
        drained.set()
        await asyncio.wait({task})
        assert task.cancelled()
        assert e.history("a") == [
            "started",
            "work_cancelled",
            "work_done",
            "stopped",
            "run_returned",
        ]
        assert a.state is ElectionState.STOPPED


@pytest.mark.parametrize(
    ("verb", "body"), [("create", "null"), ("update", "[]"), ("get", '{"spec": 5}')]
)
async def test_an_answer_that_is_not_a_lease_is_one_failed_attempt(
    api_server: ApiServer, verb: str, body: str
) -> None:
    garbage = Fault(verb=verb, resource="leases", status=200, text_body=body)
    async with election(api_server, "ab") as e:
        a, b = e.candidates["a"].elector, e.candidates["b"].elector
        if verb == "create":  # the first acquisition
            api_server.faults.add(garbage)
            e.start("a")
            await e.clock.idle(1)
            assert not a.is_leader
            await e.step(RETRY * 2.5)
            assert a.is_leader and a.attempt_errors == 1
        elif verb == "update":  # a renewal
            e.start("a")
            await e.clock.idle(1)
            api_server.faults.add(garbage)
            await e.step(RETRY * 3)
            assert a.is_leader and a.terms == 1
            assert a.attempt_errors == 1 and a.renew_failures == 1
            assert e.history("a") == ["started"]
        else:  # a follower reads a Lease whose spec is not an object (only followers GET)
            e.start("a")
            await e.clock.idle(1)
            api_server.faults.add(garbage)
            e.start("b")
            await e.clock.idle(2)
            assert b.attempt_errors == 1 and b.state is ElectionState.FOLLOWING
            await e.stop("a")  # released: b's next attempt takes over
            while not b.is_leader:
                await e.step(0.5)
        assert garbage.fired == 1
        campaigning = [n for n, c in e.candidates.items() if c.task and not c.task.done()]
        assert campaigning == (["b"] if verb == "get" else ["a"])


def answers_late(e: Election, seconds: float, then_fail: bool) -> Callable[[RecordedRequest], bool]:
    """A fault predicate: the first matching request is answered ``seconds`` later (the manual
    clock moves while the server holds it, then the server answers normally); the following ones
    fail (500) when ``then_fail``."""
    started: list[float] = []

    def predicate(_: RecordedRequest) -> bool:
        if started:
            return then_fail
        started.append(e.clock.now())
        e.clock.advance(seconds)
        return False

    predicate.started = started  # type: ignore[attr-defined]
    return predicate


@pytest.mark.parametrize("slow", ["acquisition", "renewal"])
async def test_a_term_ends_by_its_last_successful_attempts_start_plus_renew_deadline(
    api_server: ApiServer, slow: str
) -> None:
    async with election(api_server, "a") as e:
        a = e.candidates["a"].elector
        # the slow attempt succeeds just before its deadline (an acquisition may take up to
        # RENEW, a renewal started RETRY after the last success up to RENEW - RETRY); every
        # later write of the Lease fails
        took = RENEW - 1 if slow == "acquisition" else RENEW - RETRY - 1
        late = answers_late(e, took, then_fail=True)
        if slow == "acquisition":
            api_server.faults.add(Fault(verb="create", resource="leases", predicate=late))
            api_server.faults.add(Fault(verb="update", resource="leases", status=500, times=None))
            e.start("a")
            await e.clock.idle(1)
        else:
            e.start("a")
            await e.clock.idle(1)
            await e.step(RETRY)
            api_server.faults.add(
                Fault(verb="update", resource="leases", predicate=late, status=500, times=None)
            )
            while not late.started:  # type: ignore[attr-defined]
                await e.step(0.5)
        [attempt_started] = late.started  # type: ignore[attr-defined]
        assert e.history("a") == ["started"]
        while a.is_leader:
            await e.step(0.5)
        [stopped] = e.times("a", "stopped")
        assert stopped <= attempt_started + RENEW
        assert e.times("a", "work_cancelled") == [stopped]
        await e.step(RENEW)
        assert e.history("a") == ["started", "work_cancelled", "stopped"]
