"""The writes client rides out throttling as client-go's REST client does: a 429 is sent again
after its Retry-After (any verb: the server refused it before running it), a 5xx with
Retry-After only where repeating is safe, a bounded number of times, never past the caller's
deadline; counted. Over real HTTP, the test server answering the faults; waits on a virtual
clock (read back, not waited)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import VirtualClock
from prometheus_client import CollectorRegistry

from informer import (
    CONFIGMAPS,
    LEASES,
    ApiError,
    Client,
    LeaderElector,
    PatchType,
    RetryPolicy,
    TooManyRequests,
    TransportError,
    WriteRecord,
    request_deadline,
)
from informer.metrics import register_metrics
from informer.testing import ApiServer, Fault
from tests.election_helpers import SteppedClock

pytestmark = pytest.mark.asyncio


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": data}


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
async def client(api_server: ApiServer, clock: VirtualClock) -> AsyncIterator[Client]:
    api = api_server.api_client()
    yield Client(api, field_manager="tests", clock=clock)
    await api.close()


def answers(server: ApiServer, verb: str) -> list[int]:
    return [r.status for r in server.requests if r.verb == verb]


async def test_a_throttled_create_is_sent_again_after_its_retry_after(
    api_server: ApiServer, client: Client, clock: VirtualClock
) -> None:
    writes: list[WriteRecord] = []
    client.observe_writes(writes.append)
    api_server.faults.add(Fault(verb="create", status=429, retry_after=2, times=2))
    created = await client.create(CONFIGMAPS, cm("a", k="1"))
    assert created.name == "a" and api_server.get(CONFIGMAPS, "a", "default") is not None
    assert answers(api_server, "create") == [429, 429, 201]
    assert clock.waits == [2.0, 2.0]
    assert [w.verb for w in writes] == ["create"]  # announced once, when it succeeded
    stats = client.statistics()
    assert (stats.retries, stats.throttled, stats.retries_exhausted) == (2, 2, 0)
    assert stats.retry_wait_seconds == 4.0


@pytest.mark.parametrize(
    "write",
    ["get", "replace", "merge_patch", "json_patch", "apply", "delete", "create"],
)
async def test_every_verb_rides_out_a_429(
    api_server: ApiServer, client: Client, clock: VirtualClock, write: str
) -> None:
    """Text body and no Retry-After, like the real max-in-flight limiter: the default wait."""
    made = api_server.create(CONFIGMAPS, cm("a", k="1"))
    verb = {"replace": "update", "merge_patch": "patch", "json_patch": "patch", "apply": "patch"}
    api_server.faults.add(
        Fault(verb=verb.get(write, write), status=429, text_body="Too many requests\n")
    )
    await _write(client, write, made)
    assert answers(api_server, verb.get(write, write)) == [429, 200 if write != "create" else 201]
    assert clock.waits == [RetryPolicy().default_retry_after]


async def _write(client: Client, write: str, made: dict[str, Any]) -> Any:
    rv = made["metadata"]["resourceVersion"]
    if write == "get":
        return await client.get(CONFIGMAPS, "a", "default")
    if write == "replace":
        return await client.replace(CONFIGMAPS, {**cm("a", k="2"), "metadata": made["metadata"]})
    if write == "merge_patch":
        return await client.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
    if write == "json_patch":
        op = [{"op": "replace", "path": "/data/k", "value": "2"}]
        return await client.patch(
            CONFIGMAPS, "a", op, namespace="default", type=PatchType.JSON, resource_version=rv
        )
    if write == "apply":
        return await client.apply(CONFIGMAPS, {**cm("a", k="2")}, force=True)
    if write == "delete":
        return await client.delete(CONFIGMAPS, "a", "default")
    return await client.create(CONFIGMAPS, cm("b"))


@pytest.mark.parametrize(
    ("write", "retried"),
    [
        ("get", True),
        ("replace", True),
        ("merge_patch", True),
        ("apply", True),
        ("delete", True),
        ("json_patch", False),  # an "add" to a list would add twice if the first one ran
        ("create", False),  # a generateName create would create twice
    ],
)
async def test_a_5xx_with_retry_after_is_retried_only_where_repeating_is_safe(
    api_server: ApiServer, client: Client, clock: VirtualClock, write: str, retried: bool
) -> None:
    made = api_server.create(CONFIGMAPS, cm("a", k="1"))
    verb = {"replace": "update", "merge_patch": "patch", "json_patch": "patch", "apply": "patch"}
    api_server.faults.add(Fault(verb=verb.get(write, write), status=503, retry_after=1))
    if retried:
        await _write(client, write, made)
        assert clock.waits == [1.0]
        assert client.statistics().retries == 1
    else:
        with pytest.raises(ApiError) as failed:
            await _write(client, write, made)
        assert failed.value.code == 503 and failed.value.retry_after == 1.0
        assert clock.waits == []
        assert client.statistics().retries == 0
    assert len(answers(api_server, verb.get(write, write))) == (2 if retried else 1)


async def test_a_5xx_without_retry_after_is_not_retried(
    api_server: ApiServer, client: Client, clock: VirtualClock
) -> None:
    made = api_server.create(CONFIGMAPS, cm("a", k="1"))
    api_server.faults.add(Fault(verb="update", status=500))
    with pytest.raises(ApiError) as failed:
        await _write(client, "replace", made)
    assert failed.value.code == 500
    assert answers(api_server, "update") == [500] and clock.waits == []


async def test_retries_are_bounded_and_the_last_error_is_raised(
    api_server: ApiServer, clock: VirtualClock
) -> None:
    api = api_server.api_client()
    try:
        client = Client(api, retry=RetryPolicy(max_retries=3), clock=clock)
        api_server.faults.add(Fault(verb="create", status=429, retry_after=0, times=None))
        with pytest.raises(TooManyRequests) as throttled:
            await client.create(CONFIGMAPS, cm("a"))
        assert throttled.value.request is not None and throttled.value.request.verb == "create"
        assert answers(api_server, "create") == [429] * 4  # one try and three retries
        stats = client.statistics()
        assert (stats.retries, stats.throttled, stats.retries_exhausted) == (3, 4, 1)
        # client-go's default: ten retries
        api_server.faults.clear()
        api_server.faults.add(Fault(verb="get", status=429, retry_after=0, times=None))
        with pytest.raises(TooManyRequests):
            await Client(api, clock=clock).get(CONFIGMAPS, "a", "default")
        assert answers(api_server, "get") == [429] * 11
    finally:
        await api.close()


async def test_a_get_whose_connection_drops_is_sent_again(
    api_server: ApiServer, client: Client, clock: VirtualClock
) -> None:
    """client-go retries a GET whose connection was reset or cut, after 1 s; a read is safe to
    repeat whatever the server did."""
    api_server.create(CONFIGMAPS, cm("a", k="1"))
    api_server.faults.add(Fault(verb="get", cut_mid_line=True))
    got = await client.get(CONFIGMAPS, "a", "default")
    assert got.get("data") == {"k": "1"}
    assert len([r for r in api_server.requests if r.verb == "get"]) == 2
    assert clock.waits == [RetryPolicy().default_retry_after]
    assert client.statistics().retries == 1


async def test_a_request_that_times_out_is_not_sent_again(
    api_server: ApiServer, clock: VirtualClock
) -> None:
    """A timeout is no dropped connection: retrying it would multiply ``request_timeout``."""
    api = api_server.api_client()
    try:
        client = Client(api, request_timeout=0.2, clock=clock)
        api_server.create(CONFIGMAPS, cm("a"))
        api_server.faults.add(Fault(verb="get", latency=5.0))
        with pytest.raises(TransportError):
            await client.get(CONFIGMAPS, "a", "default")
        assert len([r for r in api_server.requests if r.verb == "get"]) == 1
        assert clock.waits == [] and client.statistics().retries == 0
    finally:
        await api.close()


async def test_a_huge_retry_after_is_capped(
    api_server: ApiServer, client: Client, clock: VirtualClock
) -> None:
    api_server.faults.add(Fault(verb="create", status=429, retry_after=86400))
    await client.create(CONFIGMAPS, cm("a"))
    assert clock.waits == [RetryPolicy().max_retry_after]


async def test_no_retry_ends_past_the_callers_deadline(
    api_server: ApiServer, client: Client, clock: VirtualClock
) -> None:
    api_server.faults.add(Fault(verb="create", status=429, retry_after=5, times=None))
    with request_deadline(3.0), pytest.raises(TooManyRequests):
        await client.create(CONFIGMAPS, cm("a"))
    assert answers(api_server, "create") == [429] and clock.waits == []
    assert client.statistics().retries_exhausted == 1
    api_server.faults.clear()
    api_server.faults.add(Fault(verb="create", status=429, retry_after=1))
    with request_deadline(60.0), request_deadline(3.0):  # nested: the earliest wins
        await client.create(CONFIGMAPS, cm("a"))
    assert clock.waits == [1.0]


async def test_retries_are_exported_as_client_gos_retry_metric(
    api_server: ApiServer, client: Client
) -> None:
    registry = CollectorRegistry()
    register_metrics(registry=registry)
    labels = {"code": "429", "verb": "DELETE", "host": f"127.0.0.1:{api_server.port}"}

    def retried() -> float:
        return registry.get_sample_value("rest_client_request_retries_total", labels) or 0.0

    before = retried()
    api_server.faults.add(Fault(verb="delete", status=429, retry_after=0, times=2))
    api_server.create(CONFIGMAPS, cm("a"))
    await client.delete(CONFIGMAPS, "a", "default")
    assert retried() - before == 2
    # every try is a request too (rest_client_requests_total), as client-go counts them
    answered = registry.get_sample_value(
        "rest_client_requests_total",
        {**{k: v for k, v in labels.items() if k != "verb"}, "method": "DELETE"},
    )
    assert answered is not None and answered >= 2


# -- the leader elector: a renewal retried in time, never past the renew deadline ---------------


async def test_a_throttled_renewal_is_retried_within_the_renew_deadline(
    api_server: ApiServer,
) -> None:
    clock = SteppedClock()
    api = api_server.api_client()
    elector = LeaderElector(
        Client(api, field_manager="a"),
        "op",
        "default",
        identity="a",
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        clock=clock,
    )

    def renewals() -> list[int]:
        return [r.status for r in api_server.requests if r.verb == "update"]

    run = asyncio.create_task(elector.run(lambda: asyncio.Event().wait()))
    try:
        await elector.wait_until_leading()
        await clock.idle(1)
        # Retry-After 0: sent again by the client within the attempt (was: a failed renewal)
        api_server.faults.add(Fault(verb="update", resource="leases", status=429, retry_after=0))
        clock.advance(2.0)
        await clock.idle(1)
        assert renewals() == [429, 200]
        assert elector.is_leader and elector.renew_failures == 0
        # Retry-After 60 s, past the 10 s renew deadline: not waited for; the attempt fails at
        # once (not cut at the deadline like a hung request) and the renew loop tries again
        api_server.faults.add(Fault(verb="update", resource="leases", status=429, retry_after=60))
        clock.advance(2.0)
        await clock.idle(1)
        assert renewals() == [429, 200, 429]
        assert elector.renew_failures == 1 and elector.attempt_timeouts == 0
        clock.advance(2.0)
        await clock.idle(1)
        assert renewals() == [429, 200, 429, 200] and elector.is_leader
        lease = api_server.get(LEASES, "op", "default")
        assert lease is not None and lease["spec"]["holderIdentity"] == "a"
    finally:
        run.cancel()
        await asyncio.wait({run})
        await api.close()


async def test_a_release_throttled_past_the_renew_deadline_does_not_hold_up_shutdown(
    api_server: ApiServer,
) -> None:
    clock = SteppedClock()
    api = api_server.api_client()
    elector = LeaderElector(Client(api, field_manager="a"), "op", "default", clock=clock)
    run = asyncio.create_task(elector.run(lambda: asyncio.Event().wait()))
    try:
        await elector.wait_until_leading()
        await clock.idle(1)
        api_server.faults.add(
            Fault(verb="update", resource="leases", status=429, retry_after=30, times=None)
        )
        run.cancel()
        await asyncio.wait({run}, timeout=10)
        assert run.done()
        assert [r.status for r in api_server.requests if r.verb == "update"] == [429]
    finally:
        run.cancel()
        await api.close()
