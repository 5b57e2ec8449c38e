"""``informer.testing.eventually``: waits until a sync or async condition passes, returns its
result, and fails with the last failure; shown on what a real HTTP write makes visible."""

from __future__ import annotations

import asyncio

import pytest

from informer import CONFIGMAPS, Client
from informer.testing import ApiServer, eventually


def cm(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": {"k": name}}


async def test_a_predicate_passes_once_true_and_returns_its_value(api_server: ApiServer) -> None:
    async def write_later() -> None:
        await asyncio.sleep(0.05)
        api = api_server.api_client()
        try:
            await Client(api).create(CONFIGMAPS, cm("late"))
        finally:
            await api.close()

    writer = asyncio.create_task(write_later())
    found = await eventually(lambda: api_server.get(CONFIGMAPS, "late", namespace="default"))
    assert found is not None and found["data"] == {"k": "late"}
    await writer


async def test_an_async_assert_style_check_passes_once_it_stops_raising(
    api_server: ApiServer,
) -> None:
    api = api_server.api_client()
    client = Client(api)
    calls = 0
    try:
        await client.create(CONFIGMAPS, cm("a"))

        async def patched() -> bool:
            nonlocal calls
            calls += 1
            if calls == 2:  # the change happens between two checks
                await client.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
            obj = await client.get(CONFIGMAPS, "a", namespace="default")
            assert obj["data"] == {"k": "2"}
            return True

        assert await eventually(patched, interval=0) is True
        assert calls == 2
    finally:
        await api.close()


async def test_it_fails_with_the_last_failure_after_the_timeout(api_server: ApiServer) -> None:
    api = api_server.api_client()
    try:
        client = Client(api)

        async def missing() -> bool:
            await client.get(CONFIGMAPS, "never", namespace="default")
            return True

        with pytest.raises(AssertionError, match="NotFound") as failed:
            await eventually(missing, timeout=0.05, message="the ConfigMap")
        assert str(failed.value).startswith("the ConfigMap: not true after 0.05 s")
        assert type(failed.value.__cause__).__name__ == "NotFound"
        with pytest.raises(AssertionError, match="returned None"):  # None never passes
            await eventually(lambda: api_server.get(CONFIGMAPS, "never"), timeout=0)
    finally:
        await api.close()


async def test_a_hanging_async_condition_is_cut_at_the_deadline() -> None:
    async def hangs() -> bool:
        await asyncio.Event().wait()
        return True

    with pytest.raises(AssertionError, match="did not return in time"):
        await eventually(hangs, timeout=0.05)
