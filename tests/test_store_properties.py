"""Property tests of the store against a model of a server's change history.

A model server applies random creates, updates and deletes with increasing resource versions; the
store is synced from a list taken part-way and then fed the watch stream after it, with random
replays (a re-watch from an older RV), bookmarks and exact re-deliveries mixed in.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from informer.objects import KubeObject
from informer.resource_version import rv_sort_key
from informer.store import Delta, Store, Tombstone

KEYS = ["default/a", "default/b", "other/c", "other/d", "node-x"]
APPS = ["web", "db", "cache"]


def mk(key: str, rv: str, uid: str, app: str | None = None) -> KubeObject:
    ns, _, name = key.rpartition("/")
    meta: dict[str, Any] = {"name": name, "uid": uid, "resourceVersion": rv}
    if ns:
        meta["namespace"] = ns
    if app:
        meta["labels"] = {"app": app}
    return KubeObject.from_raw(msgspec.json.encode({"kind": "Pod", "metadata": meta}))


@dataclass
class History:
    """A server's history: the states after each change and the events."""

    events: list[tuple[str, KubeObject]]
    states: list[dict[str, KubeObject]]  # states[i]: after i events


ops = st.lists(
    st.tuples(
        st.sampled_from(KEYS),
        st.sampled_from(["put", "put", "delete"]),
        st.none() | st.sampled_from(APPS),
    ),
    min_size=1,
    max_size=40,
)


def run_history(operations: list[tuple[str, str, str | None]], rv_of: Any) -> History:
    state: dict[str, KubeObject] = {}
    events: list[tuple[str, KubeObject]] = []
    states = [dict(state)]
    uid_counter = 0
    for key, op, app in operations:
        rv = rv_of(len(events))
        current = state.get(key)
        if op == "put":
            if current is None:
                uid_counter += 1
                obj = mk(key, rv, f"uid-{uid_counter}", app)
                events.append(("ADDED", obj))
            else:
                obj = mk(key, rv, current.uid, app)
                events.append(("MODIFIED", obj))
            state[key] = obj
        elif current is not None:
            obj = mk(key, rv, current.uid, current.labels.get("app"))
            events.append(("DELETED", obj))
            del state[key]
        else:
            continue
        states.append(dict(state))
    return History(events, states)


def numeric_rv(i: int) -> str:
    return str(1000 + i * 3)  # gaps, as other resources share the counter; crosses no length


def contents(store: Store) -> dict[str, tuple[str, str]]:
    return {o.key: (o.uid, o.resource_version) for o in store.list()}


def model_contents(state: dict[str, KubeObject]) -> dict[str, tuple[str, str]]:
    return {k: (o.uid, o.resource_version) for k, o in state.items()}


def apply_deltas(model: dict[str, tuple[str, str]], deltas: list[Delta]) -> None:
    for d in deltas:
        if d.type == "deleted":
            key = d.obj.key
            assert d.old is not None
            assert model.pop(key) == (d.old.uid, d.old.resource_version)
            if isinstance(d.obj, Tombstone):
                assert d.obj.obj is d.old
        elif d.type == "added":
            assert isinstance(d.obj, KubeObject) and d.old is None
            assert d.obj.key not in model
            model[d.obj.key] = (d.obj.uid, d.obj.resource_version)
        else:
            assert isinstance(d.obj, KubeObject) and d.old is not None
            assert model[d.obj.key] == (d.old.uid, d.old.resource_version)
            model[d.obj.key] = (d.obj.uid, d.obj.resource_version)


def check_indexes(store: Store) -> None:
    objs = store.list()
    for ns in {o.namespace for o in objs if o.namespace} | set(store.index_values("namespace")):
        want = sorted(o.key for o in objs if o.namespace == ns)
        assert sorted(o.key for o in store.by_index("namespace", ns)) == want
        assert sorted(o.key for o in store.list(ns)) == want
    values = set(store.index_values("app"))
    assert values == {o.labels["app"] for o in objs if "app" in o.labels}
    for app in APPS:
        want = sorted(o.key for o in objs if o.labels.get("app") == app)
        assert sorted(o.key for o in store.by_index("app", app)) == want


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(operations=ops, data=st.data())
def test_watch_with_replays_converges_to_the_server_state(
    operations: list[tuple[str, str, str | None]], data: st.DataObject
) -> None:
    history = run_history(operations, numeric_rv)
    n = len(history.events)
    list_pos = data.draw(st.integers(0, n), label="list at")
    list_rv = numeric_rv(list_pos - 1) if list_pos else "999"
    store = Store()
    store.add_index("app", lambda o: [o.labels["app"]] if "app" in o.labels else [])
    model: dict[str, tuple[str, str]] = {}
    apply_deltas(model, store.replace(history.states[list_pos].values(), list_rv, is_initial=True))
    assert model == model_contents(history.states[list_pos])
    replayed = 0
    last_rv = rv_sort_key(store.resource_version)

    def deliver(i: int) -> None:
        nonlocal last_rv
        type_, obj = history.events[i]
        delta = store.apply_event(type_, obj)
        if delta is not None:
            apply_deltas(model, [delta])
        now = rv_sort_key(store.resource_version)
        assert now >= last_rv, "the cache RV went back"
        last_rv = now

    for i in range(list_pos, n):
        action = data.draw(st.sampled_from(["event", "event", "replay", "bookmark"]))
        if action == "replay" and i > 0:  # a re-watch from an older RV replays what we had
            start = data.draw(st.integers(0, i - 1), label="replay from")
            before = store.stats
            for j in range(start, i):
                deliver(j)
            after = store.stats
            dropped = (after.stale_dropped - before.stale_dropped) + (
                after.duplicates_dropped - before.duplicates_dropped
            )
            assert dropped == i - start, "a replayed event was applied"
            replayed += i - start
        elif action == "bookmark":
            back = data.draw(st.integers(0, i), label="bookmark back")
            store.advance(numeric_rv(i - 1 - back) if i - 1 - back >= 0 else list_rv)
            now = rv_sort_key(store.resource_version)
            assert now >= last_rv
            last_rv = now
        deliver(i)
        assert contents(store) == model_contents(history.states[i + 1])
        check_indexes(store)
    assert model == contents(store) == model_contents(history.states[n])
    stats = store.stats
    assert stats.stale_dropped + stats.duplicates_dropped == replayed
    assert stats.events_applied == n - list_pos
    assert store.resource_version == (numeric_rv(n - 1) if n > list_pos else list_rv)


@settings(max_examples=200, deadline=None)
@given(operations=ops, data=st.data())
def test_opaque_rvs_drop_exact_duplicates_only(
    operations: list[tuple[str, str, str | None]], data: st.DataObject
) -> None:
    def opaque(i: int) -> str:
        return f"rv-{(i * 7919) % 10007:x}"  # unique, not ordered

    history = run_history(operations, opaque)
    store = Store()
    store.add_index("app", lambda o: [o.labels["app"]] if "app" in o.labels else [])
    store.replace([], "opaque-list", is_initial=True)
    redelivered = 0
    for i, (type_, obj) in enumerate(history.events):
        assert store.apply_event(type_, obj) is not None
        for _ in range(data.draw(st.integers(0, 2))):
            assert store.apply_event(type_, obj) is None
            redelivered += 1
        assert contents(store) == model_contents(history.states[i + 1])
        assert store.resource_version == obj.resource_version
        check_indexes(store)
    assert not store.comparable
    assert store.stats.duplicates_dropped == redelivered
    assert store.stats.stale_dropped == 0


entries = st.dictionaries(
    st.sampled_from(KEYS),
    st.tuples(st.sampled_from(["u1", "u2"]), st.integers(1, 5), st.none() | st.sampled_from(APPS)),
)


@settings(max_examples=300, deadline=None)
@given(old=entries, new=entries)
def test_replace_deltas_transform_old_contents_into_new(
    old: dict[str, tuple[str, int, str | None]], new: dict[str, tuple[str, int, str | None]]
) -> None:
    store = Store()
    store.add_index("app", lambda o: [o.labels["app"]] if "app" in o.labels else [])
    old_objs = [mk(k, str(rv), uid, app) for k, (uid, rv, app) in old.items()]
    new_objs = [mk(k, str(rv + 10), uid, app) for k, (uid, rv, app) in new.items()]
    model: dict[str, tuple[str, str]] = {}
    apply_deltas(model, store.replace(old_objs, "100", is_initial=True))
    if old_objs and old_objs[0].name < "m":  # the namespace index built (by a read) or not yet
        check_indexes(store)
    deltas = store.replace(new_objs, "200")
    apply_deltas(model, deltas)
    want = {o.key: (o.uid, o.resource_version) for o in new_objs}
    assert model == contents(store) == want
    check_indexes(store)
    for d in deltas:
        if d.type == "added":
            assert not d.is_initial
        if d.type == "deleted":
            assert isinstance(d.obj, Tombstone)
    # a second identical relist changes nothing
    assert store.replace(new_objs, "201") == []


@settings(max_examples=100, deadline=None)
@given(
    wanted=st.lists(st.integers(1, 60), min_size=1, max_size=30),
    steps=st.lists(st.tuples(st.sampled_from(["bookmark", "event", "list"]), st.integers(1, 60))),
)
def test_waiters_resolve_exactly_when_their_rv_is_reached(
    wanted: list[int], steps: list[tuple[str, int]]
) -> None:
    async def scenario() -> None:
        store = Store()
        store.replace([], "100")
        tasks = [asyncio.create_task(store.wait_for_resource_version(str(100 + w))) for w in wanted]
        await asyncio.sleep(0)
        high = 100
        for n, (kind, rv) in enumerate(steps):
            value = 100 + rv
            if kind == "bookmark":
                store.advance(str(value))
                high = max(high, value)
            elif kind == "event":  # an event not newer than the cache RV is dropped
                store.apply_event("ADDED", mk(f"default/o{n}", str(value), f"u{n}"))
                high = max(high, value)
            elif value >= high:  # the reflector applies only lists that are not older
                store.replace([], str(value))
                high = value
            assert store.resource_version == str(high)
            await asyncio.sleep(0)  # one loop iteration: resolved waiters have finished
            for w, t in zip(wanted, tasks, strict=True):
                assert t.done() == (100 + w <= high), (w, high)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(scenario())
