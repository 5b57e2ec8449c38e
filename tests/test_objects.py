"""KubeObject: read-only mappings over raw JSON, metadata without a full decode."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import informer
from informer.objects import KubeObject, freeze

POD: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {
        "name": "web-0",
        "namespace": "prod",
        "uid": "0b7c1f2e-1111-2222-3333-444455556666",
        "resourceVersion": "12345",
        "labels": {"app": "web", "tier": "frontend"},
        "annotations": {"note": "hello"},
        "creationTimestamp": "2026-01-01T00:00:00Z",
    },
    "spec": {
        "containers": [
            {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
            {"name": "sidecar", "image": "envoy", "args": ["--a", "--b"]},
        ],
        "nodeName": None,
        "priority": 0,
        "hostNetwork": False,
    },
    "status": {"phase": "Running"},
}

NAMESPACE: dict[str, Any] = {
    "kind": "Namespace",
    "apiVersion": "v1",
    "metadata": {"name": "prod", "uid": "u-ns", "resourceVersion": "7"},
}


def pod() -> KubeObject:
    return KubeObject.from_raw(json.dumps(POD).encode())


def test_exported() -> None:
    assert informer.KubeObject is KubeObject


# ---- construction -------------------------------------------------------------------------


def test_from_raw_envelope_and_metadata() -> None:
    o = pod()
    assert o.kind == "Pod"
    assert o.api_version == "v1"
    assert o.name == "web-0"
    assert o.namespace == "prod"
    assert o.uid == "0b7c1f2e-1111-2222-3333-444455556666"
    assert o.resource_version == "12345"
    assert dict(o.labels) == {"app": "web", "tier": "frontend"}
    assert o.metadata_.deletion_timestamp is None
    assert isinstance(o.raw, bytes)
    assert isinstance(o, Mapping)


def test_from_raw_pretty_printed() -> None:
    # The server pretty-prints for curl-like user agents: parse, never compare bytes.
    o = KubeObject.from_raw(json.dumps(POD, indent=4).encode())
    assert o.name == "web-0"
    assert o == pod()
    assert o.raw != pod().raw


def test_from_raw_copies_a_bytearray() -> None:
    buf = bytearray(json.dumps(NAMESPACE).encode())
    o = KubeObject.from_raw(buf)  # type: ignore[arg-type]
    assert isinstance(o.raw, bytes)
    buf[:] = b"x" * len(buf)
    assert o.name == "prod"
    assert o["metadata"]["name"] == "prod"


def test_from_raw_deletion_timestamp() -> None:
    body = copy.deepcopy(POD)
    body["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    o = KubeObject.from_raw(json.dumps(body).encode())
    assert o.metadata_.deletion_timestamp == "2026-01-02T00:00:00Z"


def test_from_raw_minimal_and_bookmark() -> None:
    bookmark = (
        b'{"kind":"ConfigMap","apiVersion":"v1",'
        b'"metadata":{"resourceVersion":"103","creationTimestamp":null}}'
    )
    o = KubeObject.from_raw(bookmark)
    assert o.resource_version == "103"
    assert o.name == ""
    assert o.namespace == ""
    assert o.key == ""
    assert dict(o.labels) == {}
    empty = KubeObject.from_raw(b"{}")
    assert (empty.kind, empty.api_version, empty.name, empty.resource_version) == ("", "", "", "")
    assert len(empty) == 0


def test_from_raw_unknown_metadata_fields_are_ignored_but_kept() -> None:
    o = pod()
    assert o["metadata"]["annotations"] == {"note": "hello"}
    assert o["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"


def test_from_dict() -> None:
    o = KubeObject.from_dict(POD)
    assert o == POD
    assert o.name == "web-0"
    assert o.key == "prod/web-0"
    assert o.kind == "Pod"
    assert json.loads(o.raw) == POD


def test_from_dict_of_kubeobject_is_identity() -> None:
    o = pod()
    assert KubeObject.from_dict(o) is o


def test_from_dict_accepts_frozen_views_and_tuples() -> None:
    o = pod()
    spec_holder = {"kind": "X", "metadata": {"name": "n"}, "spec": o["spec"], "t": (1, 2)}
    x = KubeObject.from_dict(spec_holder)
    assert x["spec"] == POD["spec"]
    assert x["t"] == [1, 2]
    assert x.to_dict()["t"] == [1, 2]


def test_from_dict_does_not_alias_the_input() -> None:
    src = copy.deepcopy(POD)
    o = KubeObject.from_dict(src)
    src["metadata"]["labels"]["app"] = "changed"
    src["spec"]["containers"].append({"name": "late"})
    assert o["metadata"]["labels"]["app"] == "web"
    assert o.labels["app"] == "web"
    assert len(o["spec"]["containers"]) == 2


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b"not json",
        b'{"kind": "Pod",}',
        b"{'kind': 'Pod'}",
        b'{"kind":"Pod"} trailing',
        b"[1, 2]",  # not an object
        b"null",
        b"42",
        b'{"metadata": "x"}',  # metadata not an object
        b'{"metadata": {"name": 5}}',  # name not a string
        b'{"kind": 5}',
    ],
)
def test_malformed_json_raises_decode_error(raw: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        KubeObject.from_raw(raw)


# ---- metadata without the full decode -----------------------------------------------------


def no_full_decode(monkeypatch: pytest.MonkeyPatch) -> list[KubeObject]:
    """Make every full decode fail the test; returns the objects that were decoded."""
    decoded: list[KubeObject] = []

    def refuse(self: KubeObject) -> dict[str, Any]:
        decoded.append(self)
        raise AssertionError(f"{self!r} was fully decoded")

    monkeypatch.setattr(KubeObject, "_decode", refuse)
    return decoded


def test_metadata_properties_do_not_decode_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    o = KubeObject.from_list_item(
        json.dumps({"metadata": POD["metadata"], "spec": POD["spec"]}).encode(), "Pod", "v1"
    )
    decoded = no_full_decode(monkeypatch)
    assert o.name == "web-0"
    assert o.namespace == "prod"
    assert o.uid == "0b7c1f2e-1111-2222-3333-444455556666"
    assert o.resource_version == "12345"
    assert o.labels["app"] == "web"
    assert o.key == "prod/web-0"
    assert (o.kind, o.api_version) == ("Pod", "v1")
    assert "Pod" in repr(o) and "prod/web-0" in repr(o) and "12345" in repr(o)
    assert decoded == []


def test_labels_are_validated_when_read() -> None:
    o = KubeObject.from_raw(b'{"metadata": {"name": "a", "labels": {"a": 1}}}')
    assert o.name == "a"
    with pytest.raises(msgspec.ValidationError):
        _ = o.labels


def test_from_raw_is_lazy(monkeypatch: pytest.MonkeyPatch) -> None:
    o = pod()
    decoded = no_full_decode(monkeypatch)
    _ = (o.name, o.namespace, o.uid, o.resource_version, o.labels, o.key, repr(o))
    assert decoded == []
    monkeypatch.undo()
    assert o["status"]["phase"] == "Running"


# ---- key ----------------------------------------------------------------------------------


def test_key_namespaced() -> None:
    assert pod().key == "prod/web-0"


def test_key_cluster_scoped() -> None:
    o = KubeObject.from_dict(NAMESPACE)
    assert o.key == "prod"
    assert o.namespace == ""


def test_key_with_unusual_names() -> None:
    o = KubeObject.from_dict({"metadata": {"name": "a.b-c", "namespace": "kube-system"}})
    assert o.key == "kube-system/a.b-c"


# ---- read-only ----------------------------------------------------------------------------


def test_top_level_cannot_be_mutated() -> None:
    o = pod()
    with pytest.raises(TypeError):
        o["kind"] = "Other"  # type: ignore[index]
    with pytest.raises(TypeError):
        del o["kind"]  # type: ignore[attr-defined]
    for method in ("update", "pop", "popitem", "clear", "setdefault"):
        assert not hasattr(o, method)
    with pytest.raises(AttributeError):
        o.name = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        o.something_new = 1  # type: ignore[attr-defined]
    assert o == POD


def test_nested_dicts_cannot_be_mutated() -> None:
    o = pod()
    meta = o["metadata"]
    assert isinstance(meta, Mapping)
    assert not isinstance(meta, dict)
    with pytest.raises(TypeError):
        meta["name"] = "x"
    with pytest.raises(TypeError):
        del meta["name"]
    with pytest.raises(TypeError):
        o["metadata"]["labels"]["app"] = "x"
    with pytest.raises(AttributeError):
        o["metadata"]["labels"].update({"app": "x"})
    with pytest.raises(AttributeError):
        o["spec"].pop("containers")
    with pytest.raises(AttributeError):
        o["spec"].clear()
    with pytest.raises(AttributeError):
        o["spec"].setdefault("x", 1)
    assert o == POD


def test_nested_lists_cannot_be_mutated() -> None:
    o = pod()
    containers = o["spec"]["containers"]
    assert isinstance(containers, Sequence)
    assert not isinstance(containers, list)
    with pytest.raises(TypeError):
        containers[0] = {}
    with pytest.raises(TypeError):
        del containers[0]
    for method in ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"):
        with pytest.raises(AttributeError):
            getattr(containers, method)
    with pytest.raises(TypeError):
        containers += [{}]
    assert len(o["spec"]["containers"]) == 2


def test_dicts_inside_lists_cannot_be_mutated() -> None:
    o = pod()
    with pytest.raises(TypeError):
        o["spec"]["containers"][0]["image"] = "evil"
    with pytest.raises(TypeError):
        o["spec"]["containers"][0]["ports"][0]["containerPort"] = 8080
    with pytest.raises(AttributeError):
        o["spec"]["containers"][1]["args"].append("--c")
    with pytest.raises(TypeError):
        o["spec"]["containers"][-1]["args"][0] = "x"
    assert o == POD


def test_slices_are_read_only() -> None:
    o = pod()
    first = o["spec"]["containers"][0:1]
    assert first == [POD["spec"]["containers"][0]]
    with pytest.raises(TypeError):
        first[0]["image"] = "evil"
    with pytest.raises(AttributeError):
        first.append({})  # type: ignore[attr-defined]
    assert o == POD


def test_labels_property_is_read_only() -> None:
    o = pod()
    with pytest.raises((TypeError, AttributeError)):
        o.labels["app"] = "evil"  # type: ignore[index]
    assert o.labels["app"] == "web"


def test_labels_of_objects_without_metadata_are_not_shared() -> None:
    # Objects without "metadata" must not share one labels dict: a write through one
    # (if it is not refused) must never show up in another object.
    a = KubeObject.from_raw(b'{"kind":"ConfigMap"}')
    try:
        a.labels["leak"] = "1"  # type: ignore[index]
    except (TypeError, AttributeError):
        pass
    try:
        assert "leak" not in KubeObject.from_raw(b"{}").labels
        assert "leak" not in KubeObject.from_raw(b'{"kind":"Secret"}').labels
    finally:
        # Undo the write if it went through, so no other test sees a polluted shared default.
        labels = a.labels
        if isinstance(labels, dict):
            labels.pop("leak", None)


def test_metadata_struct_is_frozen() -> None:
    o = pod()
    with pytest.raises(AttributeError):
        o.metadata_.name = "x"  # type: ignore[misc]


def test_freeze_of_scalars_is_identity() -> None:
    for v in (None, 1, 1.5, "s", True):
        assert freeze(v) is v


def test_views_are_unhashable_like_dicts() -> None:
    o = pod()
    with pytest.raises(TypeError):
        hash(o)
    with pytest.raises(TypeError):
        hash(o["spec"]["containers"])


# ---- reading ------------------------------------------------------------------------------


def test_reads_like_a_dict() -> None:
    o = pod()
    assert list(o) == list(POD)
    assert len(o) == len(POD)
    assert "spec" in o
    assert "nope" not in o
    assert o.get("nope") is None
    assert o.get("nope", 5) == 5
    assert o["spec"]["nodeName"] is None
    assert o["spec"]["priority"] == 0
    assert o["spec"]["hostNetwork"] is False
    assert o["spec"]["containers"][1]["args"][-1] == "--b"
    assert [c["name"] for c in o["spec"]["containers"]] == ["app", "sidecar"]
    assert dict(o["status"]) == {"phase": "Running"}
    assert set(o.keys()) == set(POD)
    with pytest.raises(KeyError):
        o["nope"]
    with pytest.raises(IndexError):
        o["spec"]["containers"][5]


def test_json_round_trip_of_to_dict() -> None:
    assert json.loads(json.dumps(pod().to_dict())) == POD


# ---- to_dict ------------------------------------------------------------------------------


def test_to_dict_is_a_mutable_deep_copy() -> None:
    o = pod()
    d = o.to_dict()
    assert type(d) is dict
    assert d == POD
    assert type(d["spec"]["containers"]) is list
    assert type(d["spec"]["containers"][0]) is dict
    d["kind"] = "Changed"
    d["metadata"]["labels"]["app"] = "changed"
    d["spec"]["containers"][0]["image"] = "changed"
    d["spec"]["containers"].append({"name": "new"})
    del d["status"]
    assert o == POD
    assert o["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert o.labels["app"] == "web"
    assert o.to_dict() == POD


def test_to_dict_copies_are_independent() -> None:
    o = pod()
    a, b = o.to_dict(), o.to_dict()
    assert a is not b
    a["spec"]["containers"][0]["name"] = "x"
    assert b["spec"]["containers"][0]["name"] == "app"


def test_to_dict_after_full_decode_is_still_a_copy() -> None:
    o = pod()
    _ = o["spec"]  # triggers the cached full decode
    d = o.to_dict()
    d["spec"]["containers"].clear()
    assert len(o["spec"]["containers"]) == 2


# ---- equality -----------------------------------------------------------------------------


def test_equality_with_dicts() -> None:
    o = pod()
    assert o == POD
    assert POD == o
    assert not (o != POD)
    other = copy.deepcopy(POD)
    other["status"]["phase"] = "Failed"
    assert o != other
    assert other != o
    assert o != {}
    assert o != {**POD, "extra": 1}


def test_equality_with_kubeobjects() -> None:
    a = pod()
    b = KubeObject.from_raw(json.dumps(POD, separators=(",", ":")).encode())
    assert a.raw != b.raw
    assert a == b
    assert a == KubeObject.from_dict(POD)
    assert a != KubeObject.from_dict(NAMESPACE)


def test_equality_with_other_types() -> None:
    o = pod()
    assert o != 5
    assert o != "x"
    assert o != [POD]
    assert o != None  # noqa: E711


def test_nested_views_equal_plain_values() -> None:
    o = pod()
    assert o["metadata"] == POD["metadata"]
    assert POD["metadata"] == o["metadata"]
    assert o["spec"]["containers"] == POD["spec"]["containers"]
    assert POD["spec"]["containers"] == o["spec"]["containers"]
    assert o["spec"]["containers"][1]["args"] == ("--a", "--b")
    assert o["spec"]["containers"] != POD["spec"]["containers"][:1]
    assert o["spec"] != {"containers": []}
    assert o["spec"]["containers"] == pod()["spec"]["containers"]


def test_equality_with_a_mapping_containing_views() -> None:
    o = pod()
    mixed = {**POD, "spec": o["spec"], "metadata": o["metadata"]}
    assert o == mixed


@pytest.mark.parametrize(
    ("head", "kind", "api_version"),
    [
        pytest.param({}, "ConfigMap", "v1", id="both-absent"),
        pytest.param({"kind": ""}, "ConfigMap", "v1", id="empty-kind"),
        pytest.param({"apiVersion": "v1"}, "ConfigMap", "v1", id="api-version-only"),
        pytest.param({"kind": "ConfigMap"}, "ConfigMap", "v1", id="kind-only"),
        pytest.param({"kind": "Other", "apiVersion": "x/v2"}, "Other", "x/v2", id="both-present"),
    ],
)
def test_from_list_item_never_duplicates_kind_or_api_version(
    head: dict[str, str], kind: str, api_version: str
) -> None:
    item = {**head, "metadata": {"name": "a", "resourceVersion": "1"}, "data": {"k": "v"}}
    obj = KubeObject.from_list_item(json.dumps(item).encode(), "ConfigMap", "v1")
    assert (obj.kind, obj.api_version) == (kind, api_version)
    assert (obj["kind"], obj["apiVersion"]) == (kind, api_version)
    assert obj.raw.count(b'"kind"') == 1
    assert obj.raw.count(b'"apiVersion"') == 1
    assert obj["data"] == {"k": "v"}
    assert obj.resource_version == "1"


def test_pickle_and_copy_keep_value_and_stay_read_only() -> None:
    meta = {"name": "a", "namespace": "ns", "resourceVersion": "7", "labels": {"x": "y"}}
    obj = KubeObject.from_dict({"kind": "ConfigMap", "metadata": meta, "d": [{"k": 1}]})
    assert obj["d"][0]["k"] == 1  # decoded before copying, too
    for copied in (
        pickle.loads(pickle.dumps(obj)),
        copy.copy(obj),
        copy.deepcopy(obj),
    ):
        assert type(copied) is KubeObject
        assert copied == obj
        assert (copied.key, copied.resource_version, copied.kind) == (
            obj.key,
            obj.resource_version,
            obj.kind,
        )
        with pytest.raises(TypeError):
            copied["kind"] = "x"  # type: ignore[index]
        with pytest.raises(TypeError):
            hash(copied)


def _cm(name: str, ns: str, rv: str = "1") -> bytes:
    meta = {"name": name, "namespace": ns, "resourceVersion": rv}
    return json.dumps({"metadata": meta, "data": {"k": name}}).encode()


def test_objects_share_their_kind_api_version_and_namespace() -> None:
    """Kind, apiVersion and namespace are held once per distinct triple, not per object: a
    cached object is 48 bytes (a struct of 4 pointers), whatever its kind and namespace."""
    a, b = KubeObject._from_list_items([_cm("a", "prod"), _cm("b", "prod")], "ConfigMap", "v1")
    c = KubeObject.from_list_item(_cm("c", "prod"), "ConfigMap", "v1")
    assert (a.kind, a.api_version, a.namespace, a.name, a.key) == (
        "ConfigMap",
        "v1",
        "prod",
        "a",
        "prod/a",
    )
    assert a._form is b._form is c._form
    other = KubeObject.from_list_item(_cm("a", "dev"), "ConfigMap", "v1")
    assert other.namespace == "dev" and other._form is not a._form
    assert KubeObject.from_raw(json.dumps(POD).encode())._form is not a._form
    import sys

    assert sys.getsizeof(a) <= 48


def test_forms_no_object_uses_are_forgotten() -> None:
    """Namespaces come and go in a long-running process: what they leave behind stays bounded."""
    from informer.objects import _forms

    kept = [KubeObject.from_list_item(_cm("x", f"kept-{i}"), "ConfigMap", "v1") for i in range(10)]
    for i in range(20_000):  # each object dropped at once: its namespace is gone
        KubeObject.from_list_item(_cm("x", f"gone-{i}"), "ConfigMap", "v1")
    assert len(_forms._plain) < 10_000
    again = [KubeObject.from_list_item(_cm("y", f"kept-{i}"), "ConfigMap", "v1") for i in range(10)]
    assert all(x._form is y._form for x, y in zip(kept, again, strict=True))


_RV_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    rv=st.one_of(st.integers(0, 2**64).map(str), _RV_TEXT),
    before=st.lists(
        st.tuples(
            st.sampled_from(["aa", "binding", "ref"]),
            st.one_of(
                st.just({"resourceVersion": "999"}),
                st.just({"x": {"resourceVersion": "998"}}),
                st.text(max_size=5),
            ),
        ),
        max_size=3,
    ),
    meta_first=st.booleans(),
    annotated=st.booleans(),
    pad=st.sampled_from([0, 2000]),
    spaced=st.booleans(),
)
def test_a_list_item_reads_the_resource_version_its_metadata_holds(
    rv: str,
    before: list[tuple[str, Any]],
    meta_first: bool,
    annotated: bool,
    pad: int,
    spaced: bool,
) -> None:
    """A list's items do not hold their RV (the struct's 4th field stays empty): it is read from
    their bytes when asked, the head alone first for a large object. Whatever precedes it
    (members holding a ``resourceVersion`` of their own, an annotation named so, spaces,
    escapes), the answer is what decoding ``metadata.resourceVersion`` gives."""
    meta: dict[str, Any] = {"name": "a", "namespace": "ns"}
    if annotated:
        meta["annotations"] = {"resourceVersion": "997"}
    if meta_first:
        meta = {"resourceVersion": rv, **meta}
    else:
        meta["resourceVersion"] = rv
    body: dict[str, Any] = dict(before)
    body["metadata"] = meta
    body["data"] = {"pad": "x" * pad}
    sep = (", ", ": ") if spaced else (",", ":")
    raw = json.dumps(body, separators=sep, ensure_ascii=False).encode()
    want = json.loads(raw)["metadata"]["resourceVersion"]
    for obj in (
        KubeObject.from_list_item(raw, "ConfigMap", "v1"),
        *KubeObject._from_list_items([raw], "ConfigMap", "v1"),
    ):
        assert obj._lazy is None  # nothing held beside the bytes, the form and the key
        assert obj.resource_version == want
        assert obj.metadata_.resource_version == want  # the metadata decoded: held from then
        assert obj._lazy is not None and obj.resource_version == want


def test_a_list_item_is_a_struct_of_4_pointers() -> None:
    """A list's item holds its bytes, its form and its key: 48 bytes (a ConfigMap of 464
    bytes of JSON held in 692 bytes of RSS where it took 773, ``benchmarks/object_bytes.py``)."""
    import sys

    obj = KubeObject.from_list_item(_cm("a", "prod", "17"), "ConfigMap", "v1")
    assert sys.getsizeof(obj) == 48 and obj._lazy is None
    assert obj.resource_version == "17"


def test_a_relist_keeps_an_unchanged_item_by_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached list's item does not hold its RV: a relist that lists it again with the same
    bytes keeps the cached instance without reading its RV; other bytes at the same RV (another
    server's spacing) keep it after reading it; a newer version is a new object."""
    cached = {
        o.key: o
        for o in KubeObject._from_list_items(
            [_cm("a", "ns", "5"), _cm("b", "ns", "6"), _cm("c", "ns", "7")], "ConfigMap", "v1"
        )
    }

    def known(key: str, rv: str) -> KubeObject | None:  # what the reflector's pages use
        return cached.get(key)

    spaced = json.dumps(json.loads(_cm("b", "ns", "6")), indent=1).encode()
    relisted = [_cm("a", "ns", "5"), spaced, _cm("c", "ns", "8")]
    reads: list[str] = []
    read_rv = KubeObject._read_rv
    monkeypatch.setattr(KubeObject, "_read_rv", lambda o: reads.append(o.key) or read_rv(o))
    a, b, c = KubeObject._from_list_items(relisted, "ConfigMap", "v1", known)
    assert a is cached["ns/a"] and b is cached["ns/b"] and c is not cached["ns/c"]
    assert reads == ["ns/b", "ns/c"]  # not a's: its bytes answered
    assert KubeObject.from_list_item(relisted[0], "ConfigMap", "v1", known=known) is a
    assert c.resource_version == "8"


@pytest.mark.parametrize("rv", [b"5", b"null", b"{}", b"[]"])
def test_a_list_item_whose_rv_is_not_a_string_is_refused_when_built(rv: bytes) -> None:
    """A list's items do not hold their RV, yet it is checked as the item is built (a page
    with a malformed item is refused then, never an error later where the RV is read)."""
    raw = b'{"metadata":{"name":"a","resourceVersion":%s}}' % rv
    with pytest.raises(msgspec.ValidationError):
        KubeObject._from_list_items([raw], "ConfigMap", "v1")
    with pytest.raises(msgspec.ValidationError):
        KubeObject.from_list_item(raw, "ConfigMap", "v1")
