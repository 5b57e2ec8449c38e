"""The cache's compact object representation returns exactly what a plain JSON decode returns.

Objects come from a JSON object (``from_raw``), a list item lacking kind/apiVersion
(``from_list_item``) or a watch line (``from_event_line``); each may be trimmed by a byte-level
``DropFields``. Whatever the path, the mapping, ``to_dict()``, ``raw`` and the metadata attributes
equal a plain decode of the object (with the list's kind/apiVersion, without the dropped fields).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Mapping
from typing import Any

import msgspec
import pytest
import rich.pretty
from hypothesis import given, settings
from hypothesis import strategies as st

from informer import objects
from informer.objects import KubeObject, set_decoded_cache_size
from informer.resource import PODS
from informer.transforms import DROP_MANAGED_FIELDS, DropFields
from informer.transport._decode import _decode_list

text = st.text(max_size=12)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=20)
scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def kube_objects(draw: st.DrawFn) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": draw(names), "resourceVersion": str(draw(st.integers(1)))}
    if draw(st.booleans()):
        meta["namespace"] = draw(names)
    if draw(st.booleans()):
        meta["uid"] = draw(text)
    if draw(st.booleans()):
        meta["labels"] = draw(st.dictionaries(text, text, max_size=4))
    if draw(st.booleans()):
        meta["managedFields"] = draw(st.lists(json_values, max_size=3))
    if draw(st.booleans()):
        meta["annotations"] = draw(st.dictionaries(text, text, max_size=3))
    obj: dict[str, Any] = {}
    for key in draw(st.permutations(["kind", "apiVersion", "metadata", "spec", "status"])):
        if key == "metadata":
            obj[key] = meta
        elif key in ("kind", "apiVersion"):
            value = draw(st.none() | st.sampled_from(["", "ConfigMap", "v1", "x.io/v2"]))
            if value is not None:
                obj[key] = value
        elif draw(st.booleans()):
            obj[key] = draw(json_values)
    extra = st.text(min_size=1, max_size=8).filter(lambda k: k not in ("kind", "apiVersion"))
    obj.update(draw(st.dictionaries(extra, json_values, max_size=3)))  # kind is a string or absent
    obj["metadata"] = meta  # an extra key must not replace it
    return obj


def with_list_head(obj: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    """What a list item is: the object, with the list's kind/apiVersion where it has none."""
    return {
        **obj,
        "kind": obj.get("kind") or kind,
        "apiVersion": obj.get("apiVersion") or api_version,
    }


def all_forms(obj: dict[str, Any]) -> list[tuple[KubeObject, dict[str, Any]]]:
    """(object built each way, the plain decode it must equal)."""
    raw = msgspec.json.encode(obj)
    line = msgspec.json.encode({"type": "ADDED", "object": obj})
    item = msgspec.json.decode(
        msgspec.json.encode({"items": [obj]}), type=dict[str, list[msgspec.Raw]]
    )
    return [
        (KubeObject.from_raw(raw), obj),
        (
            KubeObject.from_list_item(item["items"][0], "Pod", "v1"),
            with_list_head(obj, "Pod", "v1"),
        ),
        (KubeObject.from_event_line(line)[1], obj),
    ]


def check(o: KubeObject, plain: dict[str, Any]) -> None:
    meta = plain["metadata"]
    assert o.to_dict() == plain
    assert o == plain and plain == o
    assert dict(o) == {k: o[k] for k in plain}
    assert sorted(o) == sorted(plain)
    assert msgspec.json.decode(o.raw) == plain
    assert o.name == meta["name"]
    assert o.namespace == meta.get("namespace", "")
    assert o.key == (
        f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    )
    assert o.uid == meta.get("uid", "")
    assert o.resource_version == meta["resourceVersion"]
    assert dict(o.labels) == meta.get("labels", {})
    assert (o.kind, o.api_version) == (plain.get("kind", ""), plain.get("apiVersion", ""))


@settings(max_examples=40)
@given(kube_objects())
def test_every_form_decodes_to_the_plain_object(obj: dict[str, Any]) -> None:
    for o, plain in all_forms(obj):
        check(o, plain)


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


@settings(max_examples=40)
@given(kube_objects())
def test_drop_managed_fields_on_bytes_equals_dropping_from_the_dict(obj: dict[str, Any]) -> None:
    expected = without_managed_fields(obj)
    assert msgspec.json.decode(DROP_MANAGED_FIELDS.apply(msgspec.json.encode(obj))) == expected
    assert DROP_MANAGED_FIELDS(obj) == expected
    for o, plain in all_forms(obj):
        check(o._trimmed(DROP_MANAGED_FIELDS), without_managed_fields(plain))
        trimmed_item = KubeObject.from_list_item(
            msgspec.json.encode(obj), "Pod", "v1", trim=DROP_MANAGED_FIELDS
        )
        check(trimmed_item, without_managed_fields(with_list_head(obj, "Pod", "v1")))


@settings(max_examples=30)
@given(kube_objects(), st.lists(json_values, max_size=3))
def test_drop_fields_nested_paths(obj: dict[str, Any], status: list[Any]) -> None:
    obj = {**obj, "status": {"conditions": status, "phase": "x"}}
    drop = DropFields("status.conditions", "metadata.annotations", "spec")
    expected = {k: v for k, v in obj.items() if k != "spec"}
    expected["status"] = {"phase": "x"}
    expected["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "annotations"}
    assert msgspec.json.decode(drop.apply(msgspec.json.encode(obj))) == expected
    assert drop(obj) == expected


@pytest.mark.parametrize(
    "path", ["kind", "apiVersion", "metadata", "metadata.name", "metadata.resourceVersion", "a..b"]
)
def test_drop_fields_refuses_identity_paths(path: str) -> None:
    with pytest.raises(ValueError):
        DropFields(path)


def test_drop_fields_leaves_non_objects_alone() -> None:
    assert DropFields("spec.x").apply(b'{"spec":[1,2]}') == b'{"spec":[1,2]}'
    assert DROP_MANAGED_FIELDS.apply(b'{"metadata":{"name":"a"}}') == b'{"metadata":{"name":"a"}}'


def test_reading_every_object_keeps_at_most_the_memo_bound() -> None:
    """Reading objects does not grow the cache: only the last N full decodes are kept."""
    previous = set_decoded_cache_size(8)
    try:
        cms = [
            KubeObject.from_raw(
                msgspec.json.encode(
                    {
                        "metadata": {"name": f"cm-{i}", "resourceVersion": str(i + 1)},
                        "data": {f"k{j}": "v" * 20 for j in range(20)},
                    }
                )
            )
            for i in range(500)
        ]
        json_size = sum(len(o.raw) for o in cms)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for o in cms:
            assert o["data"]["k0"] == "v" * 20
            assert o["metadata"]["name"] == o.name  # a second read hits the memo
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert len(objects._memo) <= 8
        # 8 decodes of ~700 B objects are alive, not 500: far below one JSON copy of the set
        assert grown < json_size / 10
    finally:
        set_decoded_cache_size(previous)


def test_memo_size_zero_decodes_on_each_access() -> None:
    previous = set_decoded_cache_size(0)
    try:
        o = KubeObject.from_raw(b'{"metadata":{"name":"a"},"data":{"k":"v"}}')
        assert o["data"] == {"k": "v"}
        assert id(o) not in objects._memo
    finally:
        set_decoded_cache_size(previous)


SECRET = (
    b'{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns",'
    b'"resourceVersion":"7"},"data":{"password":"czNjcjN0"}}'
)


def every_form(raw: bytes) -> list[KubeObject]:
    item = raw.replace(b'"kind":"Secret","apiVersion":"v1",', b"")
    line = b'{"type":"ADDED","object":' + raw + b"}"
    return [
        KubeObject.from_raw(raw),
        KubeObject.from_list_item(item, "Secret", "v1"),
        KubeObject._from_list_items([item], "Secret", "v1")[0],
        KubeObject.from_list_item(item, "Secret", "v1", trim=DROP_MANAGED_FIELDS),
        KubeObject.from_event_line(line)[1],
    ]


def test_cached_objects_are_not_tracked_by_the_garbage_collector() -> None:
    """A cache of 100,000 objects must not add to every collection's work."""
    for o in every_form(SECRET):
        assert not gc.is_tracked(o)
        o.labels  # noqa: B018 - the lazily decoded metadata does not change that
        assert not gc.is_tracked(o)


def test_a_cached_object_is_a_read_only_mapping_like_its_dict() -> None:
    plain = msgspec.json.decode(SECRET)
    for o in every_form(SECRET):
        assert isinstance(o, Mapping)
        assert o == plain and plain == o and not (o != plain)
        assert o.get("data") == plain["data"] and o.get("nope", 1) == 1
        assert list(o.keys()) == list(plain) and len(o.values()) == len(plain)
        assert dict(o.items())["metadata"] == plain["metadata"]
        with pytest.raises(TypeError):
            hash(o)


def test_no_renderer_shows_an_objects_data() -> None:
    """Logged or pretty-printed, an object shows its kind, key and RV, never its contents."""
    for o in every_form(SECRET):
        shown = [repr(o), str(o), rich.pretty.pretty_repr(o), rich.pretty.pretty_repr({"o": o})]
        for text_ in shown:
            assert "ns/s" in text_ and "czNjcjN0" not in text_ and "password" not in text_
        with pytest.raises(TypeError):  # not encoded as a struct of private fields
            msgspec.json.encode(o)


def _key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def _page(objs: list[dict[str, Any]], rv: str) -> bytes:
    return msgspec.json.encode(
        {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": objs}
    )


@settings(max_examples=40)
@given(
    st.lists(kube_objects(), max_size=6, unique_by=_key_of),
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.sampled_from([None, DROP_MANAGED_FIELDS]),
)
def test_a_relisted_page_reuses_unchanged_objects_and_decodes_changed_ones_plainly(
    objs: list[dict[str, Any]], changed: list[bool], trim: DropFields | None
) -> None:
    cached = {o.key: o for o in _decode_list(_page(objs, "10"), PODS, "/p", None, trim).items}

    def known(key: str, rv: str) -> KubeObject | None:
        o = cached.get(key)
        return o if o is not None and o.resource_version == rv else None

    relisted = []
    for obj, change in zip(objs, changed, strict=False):
        if change:  # a new write: a new RV and new contents
            rv = str(int(obj["metadata"]["resourceVersion"]) + 1)
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}, "spec": [rv]}
        relisted.append(obj)
    items = _decode_list(_page(relisted, "20"), PODS, "/p", known, trim).items
    assert len(items) == len(relisted)
    for o, obj, change in zip(items, relisted, changed, strict=False):
        plain = with_list_head(obj, "Pod", "v1")
        check(o, without_managed_fields(plain) if trim else plain)
        if change:
            assert o is not cached[o.key]
        else:  # the cached instance itself: the page's bytes of it are dropped at once
            assert o is cached[o.key]


@settings(max_examples=40)
@given(
    kube_objects(),
    st.lists(st.sampled_from(["kind", "apiVersion", "metadata", "spec", "status", "#"]) | text),
    st.sampled_from([0, 1, 256]),
)
def test_members_read_one_at_a_time_equal_the_plain_decode(
    obj: dict[str, Any], reads: list[str], memo: int
) -> None:
    """Whatever is read first (one member, the keys, equality), in whatever order and with
    whatever memo size, each access returns what the full decode returns."""
    previous = set_decoded_cache_size(memo)
    try:
        for o, plain in all_forms(obj):
            order = list(o.to_dict())  # a fresh full decode (a list item: kind, apiVersion first)
            objects._memo.clear()
            for read in reads:
                if read == "#":
                    assert list(o) == order and len(o) == len(plain)
                elif read in plain:
                    assert read in o and o[read] == plain[read]
                else:
                    assert read not in o and o.get(read, 1) == 1
                    with pytest.raises(KeyError):
                        o[read]
            assert list(o) == order and o == plain
            check(o, plain)
    finally:
        set_decoded_cache_size(previous)
