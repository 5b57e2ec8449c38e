"""A compressed cache (``ReflectorOptions(compression=Compression())``) answers exactly as a plain
one: every read, index lookup and delta, across relists and dictionary retraining; its size is
computed from its contents and is a fraction of the JSON it holds."""

from __future__ import annotations

import asyncio
import os
import pickle
import threading
import uuid
from typing import Any

import msgspec
import pytest
from conftest import running_informer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from informer import (
    CONFIGMAPS,
    Compression,
    ConfigurationError,
    Informer,
    KubeObject,
    ReflectorOptions,
    Store,
)
from informer._zstd import ZstdCodec
from informer.objects import set_decoded_cache_size
from informer.store import Delta, Tombstone
from informer.testing import ApiServer
from informer.transforms import DropFields

# small thresholds: a dictionary after a few objects, retrained often
_SMALL = Compression(min_objects=4, train_objects=16, batch=5, in_thread=False)
_NAMES = [f"pod-{i}" for i in range(14)]
_IMAGES = ["nginx:1.27", "redis:7.4", "registry.example.com/team/api:3.1.4", "busybox"]
_TRIM = DropFields("status")


def _pod(name: str, ns: str, rv: int, uid: int, app: str, image: str, item: bool) -> bytes:
    obj: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"0000-{uid:04d}",
            "resourceVersion": str(rv),
            "labels": {"app": app, "tier": "web"} if app else {},
            "ownerReferences": [{"kind": "ReplicaSet", "name": f"rs-{app}", "uid": "rs"}],
        },
        "spec": {"containers": [{"name": "c", "image": image, "args": ["--x"] * (rv % 7)}]},
        "status": {"podIP": f"10.0.{rv % 256}.{uid % 256}"},
    }
    if not item:
        obj = {"kind": "Pod", "apiVersion": "v1", **obj}
    return msgspec.json.encode(obj)


def _image(obj: KubeObject) -> list[str]:  # an index that reads past the hot fields
    return [c["image"] for c in obj["spec"]["containers"]]


def _app(obj: KubeObject) -> str | None:
    return obj.labels.get("app")


def _view(d: Delta) -> tuple[Any, ...]:
    obj = d.obj
    plain = ("tombstone", obj.key, obj.obj.to_dict()) if isinstance(obj, Tombstone) else obj
    new = plain if isinstance(plain, tuple) else plain.to_dict()
    return (d.type, new, None if d.old is None else d.old.to_dict(), d.is_initial, d.from_list)


def _same(plain: Store, packed: Store) -> None:
    assert plain.keys() == packed.keys()
    assert plain.resource_version == packed.resource_version
    for key in plain.keys():
        a, b = plain.get_by_key(key), packed.get_by_key(key)
        assert a is not None and b is not None
        assert (a.key, a.namespace, a.name, a.resource_version) == (
            b.key,
            b.namespace,
            b.name,
            b.resource_version,
        )
        assert (a.uid, dict(a.labels), a.kind, a.api_version) == (
            b.uid,
            dict(b.labels),
            b.kind,
            b.api_version,
        )
        assert a.to_dict() == b.to_dict() and a == b and a.raw == b.raw
        assert a["spec"] == b["spec"] and a.metadata_ == b.metadata_
        assert pickle.loads(pickle.dumps(b)) == a
    for index in ("namespace", "app", "image"):
        assert sorted(plain.index_values(index)) == sorted(packed.index_values(index))
        for value in plain.index_values(index):
            assert [o.key for o in plain.by_index(index, value)] == [
                o.key for o in packed.by_index(index, value)
            ]
    for ns in ("a", "b"):
        assert [o.key for o in plain.list(ns)] == [o.key for o in packed.list(ns)]


_op = st.one_of(
    st.tuples(
        st.just("event"),
        st.sampled_from(["ADDED", "MODIFIED", "DELETED"]),
        st.sampled_from(_NAMES),
        st.sampled_from(["a", "b"]),
        st.integers(0, 3),
        st.sampled_from(["", "web", "api", "db"]),
        st.sampled_from(_IMAGES),
    ),
    st.tuples(
        st.just("relist"),
        st.lists(st.sampled_from(_NAMES), unique=True, max_size=len(_NAMES)),
        st.integers(0, 3),
        st.sampled_from(_IMAGES),
        st.booleans(),
        st.booleans(),  # packed on the list's path (else: in the background)
        st.booleans(),  # trimmed (DropFields on the bytes)
    ),
    st.tuples(st.just("compact")),
    st.tuples(st.just("retrain")),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, min_size=1, max_size=25))
def test_a_compressed_cache_answers_exactly_as_a_plain_one(ops: list[tuple[Any, ...]]) -> None:
    asyncio.run(_replay(ops))


async def _replay(ops: list[tuple[Any, ...]]) -> None:
    plain, packed = Store(), Store(compression=_SMALL)
    for store in (plain, packed):
        store.add_index("app", _app)
        store.add_index("image", _image)
    packer = packed._packer
    assert packer is not None
    rv = 100
    previous = set_decoded_cache_size(2)  # decodes go through the memo, and leave it often
    try:
        for op in ops:
            rv += 1
            if op[0] == "event":
                _, type_, name, ns, uid, app, image = op
                line = b'{"type":"%s","object":%s}' % (
                    type_.encode(),
                    _pod(name, ns, rv, uid, app, image, item=False),
                )
                events = [KubeObject.from_event_line(line) for _ in (plain, packed)]
                if rv % 2 and type_ != "DELETED":  # packed on the event's path, before applying
                    await packer([events[1][1]])
                    await packer.drain()
                got = [s.apply_event(*e) for s, e in zip((plain, packed), events, strict=True)]
                assert (got[0] is None) == (got[1] is None)
                if got[0] is not None and got[1] is not None:
                    assert _view(got[0]) == _view(got[1])
            elif op[0] == "relist":
                _, names, uid, image, initial, on_path, trimmed = op
                items = [
                    _pod(n, "ab"[i % 2], rv + i, uid, "web", image, item=True)
                    for i, n in enumerate(names)
                ]
                body = b'{"items":[%s]}' % b",".join(items)
                raws = msgspec.json.decode(body, type=_Page).items  # slices of the page
                rv += len(items)
                trim = _TRIM if trimmed else None
                results = []
                for s in (plain, packed):
                    known = lambda k, r, s=s: _known(s, k, r)  # noqa: E731
                    if s is packed and on_path:
                        objs = KubeObject._to_pack_items(
                            raws, "Pod", "v1", known, trim, packer.labels
                        )
                        half = len(objs) // 2  # two pages: the second with the first gathered
                        await packer(objs[:half])
                        await packer(objs[half:], objs[:half])
                        await packer.drain()
                        assert all(type(o._raw) is bytes for o in objs)  # no slice kept
                    else:
                        objs = KubeObject._from_list_items(raws, "Pod", "v1", known, trim)
                    results.append(s.replace(objs, str(rv), is_initial=initial))
                assert [_view(d) for d in results[0]] == [_view(d) for d in results[1]]
            elif op[0] == "compact":
                await packed.compact()
            else:
                assert packed._packer is not None
                packed._packer.retrain()
                await packed.compact()
            _same(plain, packed)
        await packed.compact()
        _same(plain, packed)
        if len(packed) >= _SMALL.min_objects:
            assert packed.size().compressed_objects == len(packed)
    finally:
        set_decoded_cache_size(previous)
        packed.close()


class _Page(msgspec.Struct):
    items: list[msgspec.Raw]


def _known(store: Store, key: str, rv: str) -> KubeObject | None:
    cached = store.get_by_key(key)
    return cached if cached is not None and cached.resource_version == rv else None


@pytest.mark.asyncio
async def test_a_retrained_dictionary_reencodes_every_object_in_place() -> None:
    store = Store(compression=_SMALL)
    items = [_pod(n, "a", 10 + i, i, "web", _IMAGES[0], item=True) for i, n in enumerate(_NAMES)]
    store.replace(KubeObject._from_list_items(items, "Pod", "v1"), "99")
    await store.compact()
    packer = store._packer
    assert packer is not None and packer.trainings == 1
    first = store.get_by_key("a/pod-0")
    assert first is not None and first.compressed
    old_form, before = first._form, first.to_dict()
    packer.retrain()
    assert first.to_dict() == before  # until re-encoded: read with the codec that packed it
    await store.compact()
    assert packer.trainings == 2
    again = store.get_by_key("a/pod-0")
    assert again is first  # re-encoded in place: the same instance
    assert again.compressed and again._form is not old_form and again.to_dict() == before
    assert store.size().compressed_objects == len(_NAMES)


@pytest.mark.asyncio
async def test_cache_size_is_computed_from_the_contents() -> None:
    plain, packed = Store(), Store(compression=_SMALL)
    assert plain.size().objects == 0 and plain.size().ratio == 0.0
    items = [_pod(n, "a", 10 + i, i, "web", _IMAGES[1], item=True) for i, n in enumerate(_NAMES)]
    for s in (plain, packed):
        s.replace(KubeObject._from_list_items(items, "Pod", "v1"), "99")
    await packed.compact()
    a, b = plain.size(), packed.size()
    assert a.objects == b.objects == len(_NAMES)
    assert a.json_bytes == b.json_bytes == sum(len(i) for i in items)
    assert a.bytes > a.json_bytes  # small objects: the fixed cost per object shows
    assert b.compressed_objects == len(_NAMES) and a.compressed_objects == 0
    assert plain.size() is a  # unchanged: not computed again


def test_compression_options_are_checked() -> None:
    with pytest.raises(ConfigurationError):
        Compression(level=0)
    with pytest.raises(ConfigurationError):
        Compression(retrain_ratio=1.0)
    with pytest.raises(ConfigurationError):
        ReflectorOptions(compression="zstd")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_an_informer_with_compression_holds_its_objects_compressed(
    api_server: ApiServer,
) -> None:
    for i in range(80):
        api_server.create(
            CONFIGMAPS,
            {
                "metadata": {"name": f"cm-{i}", "namespace": "ns", "labels": {"app": "x"}},
                "data": {"config.yaml": f"port: 8080\nlevel: info\nfeature: {i:08d}\n"},
            },
        )
    options = ReflectorOptions(compression=Compression(min_objects=32))
    seen: list[KubeObject] = []
    async with api_server.api_client() as api:
        inf = Informer(api, CONFIGMAPS, options=options)
        inf.add_handler(on_add=lambda obj, initial: seen.append(obj))
        async with inf:
            await inf.wait_for_sync(timeout=10)
            await inf.store.compact()
            stats = inf.statistics()
            assert stats.cache.objects == 80 and stats.cache.compressed_objects == 80
            assert 0 < stats.cache.bytes and stats.cache_bytes == stats.cache.bytes
            new = {"metadata": {"name": "new", "namespace": "ns"}}
            written = api_server.create(CONFIGMAPS, new)
            got = await inf.wait_for_write(written, timeout=10)
            assert got is not None and got["metadata"]["name"] == "new"
            cm = inf.store.get("cm-7", "ns")
            assert cm is not None and cm.compressed and cm["data"]["config.yaml"].endswith("07\n")
            assert dict(cm.labels) == {"app": "x"}
            await inf.store.compact()
            assert inf.statistics().cache.compressed_objects == 81
    assert all(o == inf.store.get_by_key(o.key) for o in seen)


@pytest.mark.asyncio
async def test_the_hot_paths_never_decompress(monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(compression=_SMALL)
    store.add_index("app", _app)
    items = [_pod(n, "a", 10 + i, i, "web", _IMAGES[2], item=True) for i, n in enumerate(_NAMES)]
    store.replace(KubeObject._from_list_items(items, "Pod", "v1"), "99")
    await store.compact()
    assert store._packer is not None and store._packer.codec is not None
    calls: list[bytes] = []
    decompress = ZstdCodec.decompress
    monkeypatch.setattr(
        ZstdCodec, "decompress", lambda codec, data: calls.append(data) or decompress(codec, data)
    )
    obj = store.get("pod-3", "a")
    assert obj is not None and obj.compressed
    assert (obj.key, obj.name, obj.namespace, obj.resource_version) == (
        "a/pod-3",
        "pod-3",
        "a",
        "13",
    )
    assert obj.uid == "0000-0003" and dict(obj.labels) == {"app": "web", "tier": "web"}
    assert len(store.by_index("app", "web")) == len(_NAMES) and len(store.list("a")) == len(_NAMES)
    assert store.is_fresh("99") and store.size().compressed_objects == len(_NAMES)
    event = _pod("pod-3", "a", 200, 3, "web", _IMAGES[2], item=False)
    delta = store.apply_event("MODIFIED", KubeObject.from_raw(event))
    assert delta is not None and delta.old is obj
    assert calls == []
    assert obj["spec"]["containers"][0]["image"] == _IMAGES[2]  # the full object: decompressed
    assert len(calls) == 1


@pytest.mark.asyncio
async def test_a_compressed_object_holds_a_uuid_uid_as_an_int_and_reads_it_back_exactly() -> None:
    """48 bytes where its text took 96; any other uid (the API does not require a UUID) stays
    text. Every read of the uid (and the shard hash of it) is the plain object's."""
    import uuid

    from informer.shards import ShardField

    uids = [
        str(uuid.UUID(int=(i * 0x9E3779B97F4A7C15F39CC0605CEDC835) % 2**128))
        for i in range(len(_NAMES))
    ]
    uids[1] = uids[1].upper()  # not canonical: kept as text
    uids[2] = "0000-0002"
    uids[3] = "00000000-0000-0000-0000-000000000000"
    uids[4] = "g" * 36
    plain, packed = Store(), Store(compression=_SMALL)
    items = [
        _pod(n, "a", 10 + i, i, "web", _IMAGES[0], item=True).replace(
            f'"uid":"0000-{i:04d}"'.encode(), f'"uid":"{uids[i]}"'.encode()
        )
        for i, n in enumerate(_NAMES)
    ]
    for s in (plain, packed):
        s.replace(KubeObject._from_list_items(items, "Pod", "v1"), "99")
    await packed.compact()
    for i, name in enumerate(_NAMES):
        a, b = plain.get(name, "a"), packed.get(name, "a")
        assert a is not None and b is not None and b.compressed
        assert b.uid == a.uid == uids[i] == b.metadata_.uid == b["metadata"]["uid"]
        assert b.shard_hash(ShardField.UID) == a.shard_hash(ShardField.UID)
        assert b._lazy is not None
        assert type(b._lazy.uid) is (str if i in (1, 2, 4) else int)
    assert plain.size().bytes - packed.size().bytes > 0


def _cm(i: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"cm-{i:03d}",
            "namespace": "ns",
            "labels": {"app": "x"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
        },
        "data": {"config.yaml": f"port: 8080\nlevel: info\nfeature: {i:08d}\n"},
    }


@pytest.mark.parametrize("strategy", ["list", "stream"])
@pytest.mark.parametrize("transform", [None, DropFields("metadata.managedFields")])
async def test_a_list_packs_objects_as_they_arrive_and_the_watch_soon_after(
    strategy: str, transform: DropFields | None
) -> None:
    compression = Compression(min_objects=8, train_objects=16)
    async with ApiServer() as server:
        for i in range(40):
            server.create(CONFIGMAPS, _cm(i))
        async with running_informer(
            server,
            list_strategy=strategy,
            transform=transform,
            page_size=5,
            compression=compression,
            sync=False,
        ) as inf:
            seen: list[KubeObject] = []
            inf.add_handler(on_add=lambda obj, initial: seen.append(obj))
            await inf.wait_for_sync(timeout=10)
            packer = inf.store._packer
            assert packer is not None and packer.trainings == 1
            # packed before they reached the cache (the first ones once the dictionary was
            # trained on them), not by the background task
            assert all(o.compressed for o in inf.store.list())
            assert all(type(o._raw) is bytes for o in inf.store.list())
            cm = inf.store.get("cm-007", "ns")
            assert cm is not None and dict(cm.labels) == {"app": "x"}
            assert cm["data"]["config.yaml"].endswith("07\n")
            assert ("managedFields" in cm["metadata"]) == (transform is None)
            written = server.create(CONFIGMAPS, _cm(99))
            got = await inf.wait_for_write(written, timeout=10)
            # applied as it came (its own bytes, not a view of the network read), then packed
            # in place by the store's background task
            assert got is not None and type(got._raw) is bytes
            await inf.store.compact()
            assert got.compressed and inf.store.get_by_key(got.key) is got
            assert got["data"] == written["data"]
            before = {o.key: o for o in inf.store.list()}
            await inf.stop()  # started again, it relists an unchanged set: the same instances
            inf.start()
            await inf.wait_for_sync(timeout=10)
            from conftest import wait_until

            await wait_until(lambda: inf.statistics().relists == 1)
            assert all(inf.store.get_by_key(k) is o for k, o in before.items())
    assert len(seen) == 41 and all(o == inf.store.get_by_key(o.key) for o in seen)


async def test_objects_packed_in_place_read_the_same_from_another_thread() -> None:
    """A thread reads while the loop packs and re-encodes the same instances in place."""
    store = Store(compression=Compression(min_objects=4, train_objects=16, batch=3))
    items = [_pod(f"p{i}", "a", 10 + i, i, "web", _IMAGES[i % 4], item=True) for i in range(60)]
    store.replace(KubeObject._from_list_items(items, "Pod", "v1"), "99")
    objs = store.list()
    expected = [o.to_dict() for o in objs]
    stop = threading.Event()
    failures: list[BaseException] = []
    reads = 0

    def reader() -> None:
        nonlocal reads
        set_decoded_cache_size(0)  # every read decodes (from whatever the object holds now)
        while not stop.is_set():
            for obj, want in zip(objs, expected, strict=True):
                try:
                    assert obj.to_dict() == want and obj.raw and obj.uid
                except BaseException as exc:
                    failures.append(exc)
                    return
                reads += 1

    previous = set_decoded_cache_size(0)
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        packer = store._packer
        assert packer is not None
        for _ in range(4):
            await store.compact()
            packer.retrain()
        await store.compact()
    finally:
        stop.set()
        thread.join()
        set_decoded_cache_size(previous)
        store.close()
    assert failures == [] and reads > 0
    assert all(o.compressed for o in objs) and [o.to_dict() for o in objs] == expected


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"ADDED","object":%s}\n',  # the apiserver's shape: cut from the line
        b'{"type":"MODIFIED","object":%s}',
        b'{"type": "ADDED", "object": %s}',  # any other shape: decoded as without packing
        b'{"object":%s,"type":"ADDED"}',
        b'{"type":"ADDED","object":%s,"extra":{"a":1}}',
        b'{"type":"ADDED","object":{"metadata":{"name":"x"}},"object":%s}',
        b'{"type":"ADDED","object":%s,"type":"ADDED"}',
        b'{"type":"ADDED","object":{"metadata":{"name":"x"}},"object" :%s}',  # JSON allows it
        b'{"type":"ADDED","object":{"metadata":{"name":"x"}},"object"\n:%s}',
        b'{"type":"ADDED","object":{"metadata":{"name":"x"}},"type":"ADDED","object":%s}',
        b'{"type":"ADDED","object":{"object":{"kind":"x"},"metadata":{"name":"x"}},"object":%s}',
    ],
)
def test_a_watch_line_for_a_packing_store_decodes_as_any_other(line: bytes) -> None:
    from informer.transport._decode import _decode_line

    obj = _pod("p", "a", 7, 1, "web", '"object": in an image', item=False)
    full = line % obj
    plain = _decode_line(full, 0)
    assert plain is not None
    # as bytes, and as the watch stream hands a packing store's lines: a view of the read
    for line_given in (full, memoryview(b"xx" + full + b"\n")[2:-1]):
        packable = _decode_line(line_given, 0, None, True)
        assert packable is not None
        assert (packable.type, packable.object.key) == (plain.type, plain.object.key)
        got = packable.object
        assert type(got._raw) is bytes  # its own bytes: applied to the store as it is
        assert got.to_dict() == plain.object.to_dict() == msgspec.json.decode(obj)
        assert got.raw == plain.object.raw and got.uid == plain.object.uid
        assert dict(got.labels) == dict(plain.object.labels)


async def test_a_watch_waits_for_the_packing_once_its_backlog_of_plain_objects_is_full() -> None:
    """Objects applied plain (a watch's) are packed by the background task; past a bound of
    waiting objects ``room`` packs batches itself (on the loop) until the backlog is under it."""
    from informer.store._compression import _BACKLOG_BATCHES

    store = Store(compression=Compression(min_objects=4, train_objects=16, batch=5))
    packer = store._packer
    assert packer is not None
    for i in range(8):
        obj = KubeObject.from_raw(_pod(f"p{i}", "a", 10 + i, i, "web", "x", False))
        store.apply_event("ADDED", obj)
    await store.compact()  # trained, every object packed
    assert packer.codec is not None and not packer.backlogged
    for i in range(8, 200):
        obj = KubeObject.from_raw(_pod(f"p{i}", "a", 10 + i, i, "web", "y", False))
        store.apply_event("ADDED", obj)
    assert packer.backlogged  # 192 plain objects wait: more than the bound
    await packer.room()
    assert not packer.backlogged
    plain = sum(not o.compressed for o in store.list())
    assert plain <= (_BACKLOG_BATCHES + 1) * 5  # those waiting, and a batch in the thread
    await store.compact()
    assert all(o.compressed for o in store.list())
    store.close()


@given(
    st.one_of(
        st.uuids().map(str),
        st.uuids().map(lambda u: str(u).upper()),
        st.uuids().map(lambda u: u.hex),
        st.uuids().map(lambda u: " " + str(u)[1:]),
        st.uuids().map(lambda u: "0x" + str(u)[2:]),
        st.uuids().map(lambda u: str(u)[:8] + "_" + str(u)[9:]),
        st.text(max_size=40),
    )
)
def test_a_packed_uid_reads_back_exactly_whatever_its_text(uid: str) -> None:
    from informer.objects._uid import uid_text, uid_value

    held = uid_value(uid)
    assert uid_text(held) == uid
    assert isinstance(held, int) == (str(uuid.UUID(uid)) == uid if _is_uuid(uid) else False)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


async def test_a_lists_pages_are_packed_while_the_next_ones_arrive_a_few_at_most() -> None:
    """``packer(page)`` returns with the page's compression under way (in the worker thread);
    past ``_PAGES_AHEAD`` pages under way it waits for the oldest; ``drain`` waits for all."""
    from informer.store import _compression

    store = Store(compression=Compression(min_objects=4, train_objects=16))
    packer = store._packer
    assert packer is not None
    big = "x" * 12_000  # pages of 1 MB and more: compressed in the worker thread
    pages = [
        KubeObject._from_list_items(
            [_pod(f"p{p}-{i}", "a", 10 + i, i, "web", big, True) for i in range(100)], "Pod", "v1"
        )
        for p in range(_compression._PAGES_AHEAD + 2)
    ]
    await packer(pages[0])  # trains, then the page is under way
    await packer.drain()
    assert all(o.compressed for o in pages[0])
    release = threading.Event()
    blocker = _compression._in_thread(release.wait)  # the compression thread is busy
    for page in pages[1 : _compression._PAGES_AHEAD + 1]:
        await packer(page)  # under way: returns
    late = asyncio.ensure_future(packer(pages[-1]))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not late.done()  # one page too many under way: it waits
    assert not any(o.compressed for page in pages[1:] for o in page)
    release.set()
    await blocker
    await late
    await packer.drain()
    assert all(o.compressed and type(o._raw) is bytes for page in pages for o in page)
    store.close()


def test_a_forked_child_compresses_in_a_thread_of_its_own() -> None:
    """The compression thread is the process's: a child forked after it started (a server's
    workers forked after a preload) starts its own instead of queueing work for none."""
    from informer.store import _compression

    async def job() -> int:
        return int(await asyncio.wait_for(_compression._in_thread(lambda: 7), 10))

    assert asyncio.run(job()) == 7  # the parent's thread exists now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports by its exit status
        code = 1
        try:
            code = 0 if asyncio.run(job()) == 7 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
