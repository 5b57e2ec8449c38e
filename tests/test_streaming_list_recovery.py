"""Streaming lists survive a transient failure: only a definitive answer (400/422, a server that
ignores sendInitialEvents) turns them off; a hiccup makes the next sync stream again, and a run of
failures lists by pages for a while (``stream_pause``), then streams again."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Recorder, cm, running_informer, wait_until

from informer.reflector import StreamingState
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault, RecordedRequest


def streamed(r: RecordedRequest) -> bool:
    return r.verb == "watch" and r.query.get("sendInitialEvents") == "true"


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
        "details": {"retryAfterSeconds": 0},
    }


TRANSIENT = {
    "duplicated initial ADDED": {"duplicate_events": True},
    "stall past the idle limit": {"after_events": 1, "stall": 30.0},
    "cut connection": {"after_events": 1, "cut_mid_line": True},
    "403": {"status": 403},
    "404": {"status": 404},
    "500": {"status": 500},
    "ERROR event 410": {"error_event": status(410, "Expired", "too old resource version: 1")},
    # what v1.36 answers a streaming list from a future RV: 200, then this ERROR event
    "ERROR event 504": {
        "error_event": status(504, "Timeout", "Timeout: Too large resource version: 99, current: 5")
    },
}


@pytest.mark.parametrize("fault", TRANSIENT.values(), ids=TRANSIENT.keys())
async def test_a_transient_failure_streams_again_on_the_next_sync(fault: dict[str, Any]) -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="watch", predicate=streamed, **fault))
        async with running_informer(server, list_strategy="auto", sync=False) as inf:
            rec = Recorder()
            rec.attach(inf)
            await inf.wait_for_sync(timeout=10)
            await rec.wait(lambda calls: len(calls) == 3)
            stats = inf.statistics()
        assert stats.streaming is StreamingState.SUPPORTED and stats.streaming_supported
        assert stats.stream_lists == 1 and stats.stream_failures == 1
        lists = [r for r in server.requests if r.verb in ("list", "watch")]
        assert all(streamed(r) for r in lists[:2])  # no paginated list: streamed again
        assert not any(r.verb == "list" and r.query != {"limit": "1"} for r in lists)
        # v1.36 sends the end bookmark only to watches that allow bookmarks
        assert all(r.query.get("allowWatchBookmarks") == "true" for r in lists if streamed(r))
        assert [c[0] for c in rec.calls] == ["add"] * 3  # no duplicate for handlers


async def test_a_run_of_failures_lists_by_pages_for_a_while_then_streams_again() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="watch", predicate=streamed, status=503, times=3))
        async with running_informer(
            server, list_strategy="auto", stream_pause=0.0, stream_failures_before_pause=3
        ) as inf:
            assert inf.statistics().streaming is StreamingState.PAUSED
            assert [r.verb for r in server.requests[:4]] == ["watch"] * 3 + ["list"]
            # the next relist (a 410 on the watch) tries streaming again, and it works
            server.faults.add(Fault(verb="watch", error_event=status(410, "Expired", "old")))
            await wait_until(lambda: inf.statistics().streaming is StreamingState.SUPPORTED)
            stats = inf.statistics()
        assert stats.stream_lists == 1 and stats.stream_failures == 3 and len(inf.store) == 3


async def test_422_for_the_parameters_turns_streaming_off_for_good() -> None:
    async with ApiServer("no-watch-list", too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, list_strategy="auto") as inf:
            stats = inf.statistics()
        assert stats.streaming is StreamingState.UNSUPPORTED and stats.stream_failures == 0
