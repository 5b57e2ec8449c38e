"""Sharded informers (KEP-5866) through real HTTP, against a server with the gate on, the gate
off, and the watch cache off: the store holds exactly the objects of its ranges, every request
carries the selector, a change of ranges lists and watches only the change."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from informer._log import capture_logs
from informer.errors import ShardSelectorRejected, status_error
from informer.pager import retryable_page_error
from informer.resource import CONFIGMAPS
from informer.shards import HASH_SPACE, ShardField, ShardRange, ShardSet, hash_value, parse_selector
from informer.testing import ApiServer, Fault, RecordedRequest
from tests.conftest import FAST, cm, running_informer, wait_until

MODES = ["on", "off", "no-watch-cache"]
HALF = 1 << 63
LOW = ShardSet([ShardRange(0, HALF)])
HIGH = ShardSet([ShardRange(HALF, HASH_SPACE)])


def in_shards(obj: dict[str, Any], shards: ShardSet) -> bool:
    return shards.contains(hash_value(obj["metadata"]["uid"]))


def seed(server: ApiServer, count: int, prefix: str = "cm") -> list[dict[str, Any]]:
    return [server.create(CONFIGMAPS, cm(f"{prefix}-{i:03}")) for i in range(count)]


def keys_in(objs: list[dict[str, Any]], shards: ShardSet) -> set[str]:
    return {f"default/{o['metadata']['name']}" for o in objs if in_shards(o, shards)}


def sharded_requests(server: ApiServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.verb in ("list", "watch") and r.query != {"limit": "1"}]


def selector_of(r: RecordedRequest) -> ShardSet | None:
    text = r.query.get("shardSelector")
    return None if text is None else parse_selector(text).shard_set


@pytest.fixture(params=MODES)
async def server(request: pytest.FixtureRequest) -> Any:
    async with ApiServer(
        too_large_wait=0.01, bookmark_interval=0.2, shard_selectors=request.param
    ) as srv:
        yield srv


@pytest.mark.parametrize("strategy", ["list", "stream"])
async def test_the_store_holds_exactly_the_objects_of_its_ranges(
    server: ApiServer, strategy: str
) -> None:
    objs = seed(server, 40)
    async with running_informer(server, shards=LOW, list_strategy=strategy, page_size=7) as inf:
        assert set(inf.store.keys()) == keys_in(objs, LOW)
        more = seed(server, 20, "new")
        for o in objs[:10]:
            server.patch(CONFIGMAPS, o["metadata"]["name"], {"data": {"k": "2"}}, "default")
        for o in objs[10:20]:
            server.delete(CONFIGMAPS, o["metadata"]["name"], "default")
        await inf.wait_for_resource_version(str(server.revision), timeout=10)
        want = keys_in(objs[:10] + objs[20:] + more, LOW)
        assert set(inf.store.keys()) == want
        for o in objs[:10]:
            held = inf.store.get(o["metadata"]["name"], "default")
            assert held is None or held["data"] == {"k": "2"}
        stats = inf.statistics()
        # the server's filter or ours: never an object outside the ranges in the cache
        if server.options.shard_selectors.value == "on":
            assert stats.shard_filtered == 0
        else:
            assert stats.shard_filtered > 0
    for r in sharded_requests(server):
        assert selector_of(r) == LOW, r  # every page, streaming list and watch carries it


async def test_every_continue_page_carries_the_selector(server: ApiServer) -> None:
    seed(server, 30)
    async with running_informer(server, shards=HIGH, page_size=3):
        pass
    pages = [r for r in server.requests if r.verb == "list" and r.page and r.page > 1]
    assert pages
    assert all(selector_of(r) == HIGH for r in pages)


async def test_freshness_and_read_your_writes_keep_their_meaning(server: ApiServer) -> None:
    seed(server, 10)
    async with running_informer(server, shards=LOW) as inf:
        mine = [server.create(CONFIGMAPS, cm(f"w-{i}")) for i in range(12)]
        for o in mine:
            held = await inf.wait_for_write(o, timeout=10)
            if in_shards(o, LOW):
                assert held is not None and held.uid == o["metadata"]["uid"]
            else:  # outside the ranges: answered at once, the cache need not have reached it
                assert held is None
        await inf.wait_for_resource_version(mine[-1]["metadata"]["resourceVersion"], timeout=10)


async def test_taking_ranges_lists_and_watches_only_them(server: ApiServer) -> None:
    objs = seed(server, 40)
    quarter = ShardSet([ShardRange(HALF, HALF + (1 << 62))])
    async with running_informer(server, shards=LOW) as inf:
        await server.wait_for_requests(lambda r: r.verb == "watch")
        before = len(server.requests)
        inf.set_shards(LOW | quarter)
        await inf.wait_for_shards(timeout=10)
        assert inf.shards == LOW | quarter
        assert set(inf.store.keys()) == keys_in(objs, LOW | quarter)
        new = [r for r in server.requests[before:] if r.verb in ("list", "watch")]
        assert new and all(selector_of(r) == quarter for r in new)  # the kept range: not asked
        late = seed(server, 20, "late")
        await inf.wait_for_resource_version(str(server.revision), timeout=10)
        assert set(inf.store.keys()) == keys_in(objs + late, LOW | quarter)
        stats = inf.shard_statistics()
        assert stats is not None
        assert stats.lanes == 2 and stats.synced_lanes == 2
        assert stats.share == pytest.approx(0.75)
        assert stats.objects == len(inf.store)


async def test_giving_up_ranges_drops_them_and_relists_nothing(server: ApiServer) -> None:
    objs = seed(server, 40)
    keep = ShardSet([ShardRange(0, 1 << 62)])
    deleted: list[Any] = []
    async with running_informer(server, shards=LOW | HIGH) as inf:
        inf.add_handler(on_delete=deleted.append)
        await inf.wait_for_sync(timeout=10)
        await server.wait_for_requests(lambda r: r.verb == "watch")
        lists_before = sum(1 for r in server.requests if r.verb == "list")
        watch_count = sum(1 for r in server.requests if r.verb == "watch")
        inf.set_shards(keep)
        assert set(inf.store.keys()) == keys_in(objs, keep)
        # the one lane narrowed: its watch again from its RV with the narrower selector
        await wait_until(lambda: sum(1 for r in server.requests if r.verb == "watch") > watch_count)
        late = seed(server, 20, "late")
        await inf.wait_for_resource_version(str(server.revision), timeout=10)
        assert set(inf.store.keys()) == keys_in(objs + late, keep)
        assert sum(1 for r in server.requests if r.verb == "list") == lists_before
        assert selector_of([r for r in server.requests if r.verb == "watch"][-1]) == keep
        assert deleted == []  # given up, not deleted
        inf.set_shards(ShardSet())
        assert len(inf.store) == 0
        assert inf.shard_statistics() is not None


async def test_a_lane_relists_only_its_own_objects(server: ApiServer) -> None:
    objs = seed(server, 40)
    async with running_informer(server, shards=LOW) as inf:
        inf.set_shards(LOW | HIGH)
        await inf.wait_for_shards(timeout=10)
        await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
        assert set(inf.store.keys()) == keys_in(objs, LOW | HIGH)
        deleted: list[Any] = []
        inf.add_handler(on_delete=deleted.append)
        # one lane's next watch expires (410): it relists its range; the other keeps its own
        server.faults.add(
            Fault(verb="watch", status=410, reason="Expired", message="too old", times=1)
        )
        before = len(sharded_requests(server))
        server.watches.disrupt(Fault(close_after_events=0))
        late = seed(server, 6, "late")
        await wait_until(lambda: inf.statistics().relists == 1)
        await inf.wait_for_resource_version(str(server.revision), timeout=10)
        assert set(inf.store.keys()) == keys_in(objs + late, LOW | HIGH)
        relisted = [
            r for r in sharded_requests(server)[before:] if r.verb == "list" and r.page == 1
        ]
        assert len(relisted) == 1 and selector_of(relisted[0]) in (LOW, HIGH)
        assert deleted == []  # the other lane's objects were not touched by that list


async def test_a_refused_selector_is_not_retried_and_the_cache_filters_itself() -> None:
    rejected = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "invalid shard selector: CEL parse error: near 'pl4nted-s3cret'",
        "code": 500,
    }
    error = status_error(500, rejected)
    assert isinstance(error, ShardSelectorRejected)
    assert not retryable_page_error(error)
    async with ApiServer(too_large_wait=0.01) as server:
        objs = seed(server, 30)
        server.faults.add(Fault(verb="list", status=500, status_body=rejected, times=1))
        with capture_logs() as logs:
            async with running_informer(server, shards=LOW) as inf:
                assert set(inf.store.keys()) == keys_in(objs, LOW)
                late = seed(server, 10, "late")
                await inf.wait_for_resource_version(str(server.revision), timeout=10)
                assert set(inf.store.keys()) == keys_in(objs + late, LOW)
        refused = [e for e in logs if e["event"] == "reflector.shard_selector_rejected"]
        # what was sent and the answer's status, not the server's text (it may quote anything)
        assert refused and refused[0]["status"] == 500 and refused[0]["selector"]
        assert "pl4nted-s3cret" not in repr(logs)
        lists = [r for r in server.requests if r.verb in ("list", "watch")]
        assert "shardSelector" in lists[0].query
        assert all("shardSelector" not in r.query for r in lists[1:])  # never sent again


async def test_a_server_that_ignores_the_selector_is_logged_once() -> None:
    async with ApiServer(too_large_wait=0.01, shard_selectors="off") as server:
        seed(server, 30)
        with capture_logs() as logs:
            async with running_informer(server, shards=HIGH) as inf:
                seed(server, 30, "late")
                await inf.wait_for_resource_version(str(server.revision), timeout=10)
                stats = inf.statistics()
                assert stats.shard_unfiltered_lists > 0
                assert stats.shard_filtered > 0
    warned = [e for e in logs if e["event"] == "reflector.shard_selector_not_applied"]
    assert len(warned) == 1


async def test_namespaces_can_be_the_shard_field() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for ns in ("a", "b", "c", "d", "e", "f"):
            server.create(CONFIGMAPS, cm("x", namespace=ns))
        async with running_informer(
            server, shards=LOW, shard_field=ShardField.NAMESPACE, options=replace(FAST)
        ) as inf:
            want = {f"{ns}/x" for ns in "abcdef" if hash_value(ns) < HALF}
            assert set(inf.store.keys()) == want


async def test_list_progress_says_the_count_is_of_the_unfiltered_collection() -> None:
    from informer.cli._progress import ListProgress, ProgressTransport
    from informer.informer import Informer
    from informer.transport import ListPage

    seen: list[tuple[int, int | None, bool]] = []

    class Recording(ProgressTransport):
        async def list_page(self, resource: Any, **kwargs: Any) -> ListPage:
            page = await super().list_page(resource, **kwargs)
            p = self.progress_of(CONFIGMAPS, None)
            assert p is not None
            seen.append((p.listed, p.total, p.sharded))
            return page

    async with ApiServer(too_large_wait=0.01) as server:
        objs = seed(server, 40)
        api = server.api_client()
        try:
            inf = Informer(
                Recording(api), CONFIGMAPS, shards=LOW, options=replace(FAST, page_size=4)
            )
            async with inf:
                await inf.wait_for_sync(timeout=10)
        finally:
            await api.close()
    listed = len(keys_in(objs, LOW))
    assert seen[-1][0] == listed
    assert all(sharded for _, _, sharded in seen)
    # a page's remainingItemCount counts every object after it, of every range: an over-estimate
    assert any(total is not None and total > listed for _, total, _ in seen)
    assert ListProgress(listed=4, remaining=30, sharded=True).describe() == "4/<=34"
    assert ListProgress(listed=4, remaining=30).describe() == "4/34"


async def test_a_factory_shares_one_sharded_informer_per_scope_and_field() -> None:
    from informer.informer import SharedInformerFactory
    from tests.conftest import NoApi

    factory = SharedInformerFactory(NoApi())
    sharded = factory.informer(CONFIGMAPS, shards=ShardSet())
    assert sharded.shards == ShardSet()
    assert factory.informer(CONFIGMAPS, shards=LOW) is sharded  # shared, whatever it holds
    plain = factory.informer(CONFIGMAPS)
    assert plain is not sharded and plain.shards is None
    by_namespace = factory.informer(CONFIGMAPS, shards=LOW, shard_field=ShardField.NAMESPACE)
    assert by_namespace not in (sharded, plain) and by_namespace.shards == LOW


async def test_metrics_show_what_a_sharded_informer_holds() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from informer.metrics import register_metrics

    async with ApiServer(too_large_wait=0.01, shard_selectors="off") as server:
        objs = seed(server, 20)
        async with running_informer(server, shards=LOW) as inf:
            registry = CollectorRegistry()
            register_metrics(inf, registry=registry)
            text = generate_latest(registry).decode()
    lines = {line.split("{")[0]: line for line in text.splitlines() if not line.startswith("#")}
    assert lines["informer_shard_share"].endswith(" 0.5")
    assert lines["informer_shard_ranges"].endswith(" 1.0")
    assert lines["informer_shard_lanes"].endswith(" 1.0")
    dropped = len(objs) - len(keys_in(objs, LOW))
    assert lines["reflector_shard_filtered_total"].endswith(f" {float(dropped)}")


async def test_an_exact_snapshot_is_of_the_ranges_held(server: ApiServer) -> None:
    objs = seed(server, 30)
    async with running_informer(server, shards=HIGH) as inf:
        rv = inf.store.resource_version
        seed(server, 5, "later")
        snapshot = await inf.reflector.list_exact(rv)
        assert snapshot.resource_version == rv
        assert {o.key for o in snapshot.items} == keys_in(objs, HIGH)
        inf.set_shards(ShardSet())
        assert (await inf.reflector.list_exact(rv)).items == []


async def test_a_controllers_catch_up_lists_only_the_ranges_of_its_sharded_informer(
    api_server_factory: Any,
) -> None:
    from informer.controller import Controller, Request

    server = await api_server_factory(bookmark_interval=3600.0, shard_selectors="on")
    objs = seed(server, 12)
    async with running_informer(server, shards=LOW) as inf:
        # a change outside the ranges: the sharded watch does not deliver it (and no bookmark
        # comes), so the cache has not seen the server's RV and the catch-up lists
        outside = None
        for i in range(64):
            obj = server.create(CONFIGMAPS, cm(f"out-{i:02}"))
            if not in_shards(obj, LOW):
                outside = obj
                break
            objs.append(obj)
        assert outside is not None
        seen: list[str] = []

        async def reconcile(request: Request) -> None:
            seen.append(f"{request.namespace}/{request.name}")

        before = len(server.requests)
        with capture_logs() as logs:
            async with Controller(reconcile, for_=inf, freshness_timeout=60.0) as ctl:
                await ctl.wait_running(10)  # not waiting for an object outside the ranges
                await wait_until(lambda: set(seen) == keys_in(objs, LOW))
        assert not [e for e in logs if e["event"].startswith("controller.catch_up")]
        lists = [r for r in server.requests[before:] if r.verb == "list"]
        ranges = [r for r in lists if r.query.get("limit") != "1"]  # not the RV probe
        assert ranges, "the catch-up listed"
        assert all(selector_of(r) == LOW for r in ranges)


@pytest.mark.parametrize(
    "info",
    ['"x"', '{"selector": 5}', "{}", "null", "[1]", '{"selector": "shardRange("}', "1e999"],
)
def test_an_odd_shard_info_means_not_filtered_never_a_failed_list(info: str) -> None:
    from informer.pager import server_applied
    from informer.shards import ShardSelector
    from informer.transport._decode import _decode_list

    body = (
        '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5",'
        f'"shardInfo":{info}}},"items":[]}}'
    ).encode()
    page = _decode_list(body, CONFIGMAPS, "/api/v1/configmaps")
    assert not server_applied(page, ShardSelector.of(LOW))


def test_a_shard_info_is_compared_by_its_ranges_not_its_spelling() -> None:
    from informer.pager import server_applied
    from informer.shards import ShardSelector
    from informer.transport._decode import _decode_list

    def page(selector: str) -> Any:
        meta = json.dumps({"resourceVersion": "5", "shardInfo": {"selector": selector}})
        body = f'{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{meta},"items":[]}}'
        return _decode_list(body.encode(), CONFIGMAPS, "/api/v1/configmaps")

    low = ShardSelector.of(LOW)
    halves = " || ".join(str(ShardSelector.of([r])) for r in ShardRange.split(4)[:2])
    assert server_applied(page(halves), low)  # the same hashes, written as two ranges
    assert not server_applied(page(str(ShardSelector.of(HIGH))), low)
    namespaced = ShardSelector.of(LOW, ShardField.NAMESPACE)
    assert not server_applied(page(str(namespaced)), low)


def test_sharding_is_asked_for_at_construction() -> None:
    from informer.errors import ConfigurationError
    from informer.informer import Informer
    from tests.conftest import NoApi

    plain = Informer(NoApi(), CONFIGMAPS)
    assert plain.shards is None and plain.shard_statistics() is None
    with pytest.raises(ConfigurationError):
        plain.set_shards(LOW)
    with pytest.raises(ConfigurationError):
        Informer(NoApi(), CONFIGMAPS, shards=LOW, shard_field="uid")  # type: ignore[arg-type]
    sharded = Informer(NoApi(), CONFIGMAPS, shards=[ShardRange(0, HALF)])
    assert sharded.shards == LOW
    sharded.set_shards([ShardRange(HALF, HASH_SPACE)])  # not running: taken at the next start
    assert sharded.shards == HIGH
    assert sharded.has_synced is False


async def test_a_write_is_read_back_while_another_lane_is_quiet() -> None:
    # bookmarks as a real apiserver sends them (every minute): the lane of the other ranges,
    # which sees no change, stays at its list's RV, and with it the store's (the lowest)
    async with ApiServer(shard_selectors="on") as server:
        seed(server, 4)
        async with running_informer(server, shards=LOW) as inf:
            inf.set_shards(LOW | HIGH)  # a range taken later: a second lane
            await inf.reflector.lanes_synced.wait()  # type: ignore[attr-defined]
            for i in range(2):  # each lands in one lane's ranges; the other lane sees nothing
                written = server.create(CONFIGMAPS, cm(f"written-{i}"))
                held = await inf.store.wait_for_write(written, timeout=10)
                assert held is not None and held.uid == written["metadata"]["uid"]


async def test_a_controller_reconciles_again_after_its_write_while_another_lane_is_quiet() -> None:
    # as above: bookmarks every minute, a second lane of ranges that see no change
    from informer import Client, Controller
    from informer.controller import Request

    async with ApiServer(shard_selectors="on") as server:
        reconciled: list[str] = []
        async with running_informer(server, shards=LOW) as inf:
            inf.set_shards(LOW | HIGH)
            await inf.reflector.lanes_synced.wait()  # type: ignore[attr-defined]
            api = server.api_client()
            try:
                client = Client(api)

                async def mark(request: Request) -> None:
                    obj = inf.store.get(request.name, request.namespace)
                    assert obj is not None
                    reconciled.append(obj["data"]["step"])
                    if obj["data"]["step"] == "1":  # its own write: the next one must see it
                        patch = {"metadata": {"annotations": {"seen": "1"}}}
                        await client.patch(
                            CONFIGMAPS, request.name, patch, namespace=request.namespace
                        )

                ctl = Controller(mark, for_=inf, client=client, catch_up=False)
                async with ctl:
                    server.create(CONFIGMAPS, {**cm("target"), "data": {"step": "1"}})
                    await wait_until(lambda: ctl.statistics().writes_tracked == 1)
                    server.patch(CONFIGMAPS, "target", {"data": {"step": "2"}}, "default")
                    await wait_until(lambda: reconciled[-1:] == ["2"])
                    assert ctl.statistics().stale_skips == 0
            finally:
                await api.close()
