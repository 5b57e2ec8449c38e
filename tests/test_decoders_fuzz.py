"""Every decoder of server input returns a result or its documented typed error, for any input:
Status bodies (``status_error``), watch lines, list bodies and resource versions. A hostile or
broken server (or proxy) must never crash a loop with an exception nobody expects."""

from __future__ import annotations

import math
from typing import Any

import msgspec
from conftest import FAST, cm, running_informer
from hypothesis import example, given, settings
from hypothesis import strategies as st

from informer.backoff import BackoffPolicy
from informer.errors import (
    ApiError,
    MalformedResponse,
    TooLargeResourceVersion,
    TooManyRequests,
    WatchStreamError,
    status_error,
)
from informer.resource import CONFIGMAPS
from informer.resource_version import (
    InvalidResourceVersion,
    compare_resource_versions,
    is_comparable,
    rv_sort_key,
)
from informer.testing import ApiServer, Fault
from informer.transforms import DROP_MANAGED_FIELDS
from informer.transport import ListPage, WatchEvent
from informer.transport._decode import _decode_last_line, _decode_line, _decode_list

HUGE = 10**400  # an integer no float can hold
DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than msgspec's recursion limit

# JSON values, with the numbers and strings that break naive code: huge ints, floats at the edge,
# lone surrogates are not JSON, but control characters and non-ASCII digits are
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([HUGE, -HUGE, 2**63, 2**64, 1e308, -0.0, 5e-324])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["", "0", "01", "١٢", "Status", "ERROR", "BOOKMARK", "true", "Expired"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


def _anything(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts that use the keys a decoder looks for, with any JSON values."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=8), json_values, max_size=6)


status_details = _anything(["retryAfterSeconds", "causes", "name", "kind", "uid", "group"])
statuses = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["Status", "ConfigMap"]) | json_values,
        "apiVersion": json_values,
        "status": st.sampled_from(["Failure", "Success"]) | json_values,
        "code": st.sampled_from([410, 429, 504, 200, 0, 99, 600, HUGE, -1]) | json_values,
        "reason": st.sampled_from(["Expired", "Gone", "TooManyRequests", "Timeout"]) | json_values,
        "message": st.sampled_from(["Too large resource version"]) | json_values,
        "details": status_details
        | st.fixed_dictionaries(
            {"retryAfterSeconds": st.sampled_from([HUGE, -HUGE, 1e308, 2**1024 - 1, -1, 3])}
        ),
        "metadata": _anything(["continue", "resourceVersion"]),
    },
)


def _encode(value: Any) -> bytes:
    return msgspec.json.encode(value)


bodies = statuses.map(_encode) | st.binary(max_size=200) | json_values.map(_encode)
http_codes = st.none() | st.sampled_from([0, 200, 404, 410, 429, 500, 504, 999]) | st.integers()
headers = st.none() | st.text(max_size=30) | st.sampled_from(["1", "1" * 400, "1e999", "9" * 9])


# 50 examples a run keep the suite cheap; CI runs accumulate coverage across seeds
@settings(max_examples=50)
@given(http_codes, bodies, headers)
@example(
    429, _encode({"kind": "Status", "code": 429, "details": {"retryAfterSeconds": HUGE}}), None
)
@example(None, _encode({"kind": "Status", "code": 504, "message": "Too large resource version",
                        "details": {"retryAfterSeconds": -HUGE}}), "1" * 400)  # fmt: skip
@example(500, DEEP, None)
@example(None, b'{"kind":"Status","code":410,"details":' + DEEP + b"}", None)
def test_status_error_classifies_any_body(
    code: int | None, body: bytes, header: str | None
) -> None:
    err = status_error(code, body, retry_after_header=header)
    assert isinstance(err, ApiError)
    assert isinstance(err.code, int) and isinstance(err.reason, str)
    assert isinstance(err.message, str)
    str(err)
    if isinstance(err, TooManyRequests | TooLargeResourceVersion):
        r = err.retry_after
        assert r is None or (isinstance(r, float) and math.isfinite(r) and r >= 0)


objects = st.fixed_dictionaries(
    {},
    optional={
        "kind": json_values,
        "apiVersion": json_values,
        "metadata": _anything(
            ["name", "namespace", "uid", "resourceVersion", "labels", "annotations"]
        )
        | json_values,
        "data": json_values,
    },
)
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "X"])
        | json_values,
        "object": objects | statuses | json_values,
    },
)
lines = envelopes.map(_encode) | st.binary(max_size=200) | json_values.map(_encode)


@settings(max_examples=50)
@given(lines, st.integers(min_value=0, max_value=2**40))
@example(b'{"type":"ADDED","object":{"metadata":{"resourceVersion":"1"},"d":' + DEEP + b"}}", 0)
@example(b'{"type":"ERROR","object":{"kind":"Status","details":' + DEEP + b"}}", 0)
@example(b'{"type":"BOOKMARK","object":{"metadata":{"annotations":' + DEEP + b"}}}", 0)
def test_watch_line_decodes_or_raises_typed(line: bytes, offset: int) -> None:
    for decode in (
        lambda: _decode_line(line, offset),
        lambda: _decode_line(line, offset, DROP_MANAGED_FIELDS),  # the cut in the same decode
        lambda: _decode_last_line(line, offset, "/api/v1/configmaps"),
        lambda: _decode_last_line(line, offset, "/api/v1/configmaps", DROP_MANAGED_FIELDS),
    ):
        try:
            event = decode()
        except (WatchStreamError, ApiError):
            continue
        assert event is None or isinstance(event, WatchEvent)
        if event is not None:
            assert isinstance(event.object.resource_version, str)
            event.object.key  # noqa: B018 - decoded up front, must not raise


list_bodies = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["ConfigMapList", "Status"]) | json_values,
        "apiVersion": json_values,
        "metadata": _anything(["resourceVersion", "continue", "remainingItemCount"]),
        "items": st.lists(objects | json_values, max_size=4) | json_values,
        "code": json_values,
        "status": json_values,
    },
)


@settings(max_examples=50)
@given(list_bodies.map(_encode) | st.binary(max_size=200) | json_values.map(_encode))
@example(b'{"items":[{"metadata":{"name":"a"},"x":' + DEEP + b"}]}")
@example(b'{"kind":"Status","x":' + DEEP + b"}")
def test_list_body_decodes_or_raises_typed(body: bytes) -> None:
    try:
        page = _decode_list(body, CONFIGMAPS, "/api/v1/configmaps")
        assert isinstance(page, ListPage) and isinstance(page.resource_version, str)
        items = page.items  # built when read
    except (MalformedResponse, ApiError):
        return
    for item in items:
        item.key  # noqa: B018


rvs = st.text(max_size=12) | st.sampled_from(["", "0", "01", "1", "١٢", "²", "9" * 50, " 1"])


@given(rvs, rvs)
def test_resource_versions_compare_or_raise_typed(a: str, b: str) -> None:
    comparable = is_comparable(a) and is_comparable(b)
    try:
        result = compare_resource_versions(a, b)
    except InvalidResourceVersion:
        assert not comparable
        return
    assert comparable and result in (-1, 0, 1)
    assert result == (rv_sort_key(a) > rv_sort_key(b)) - (rv_sort_key(a) < rv_sort_key(b))


async def test_429_with_a_huge_retry_after_is_honoured_not_an_unexpected_error() -> None:
    # status_error raised OverflowError for retryAfterSeconds=10**400: the reflector logged an
    # unexpected error and listed again instead of waiting as the server asked
    options = FAST.__class__(
        **{
            **{f: getattr(FAST, f) for f in FAST.__dataclass_fields__},
            "backoff": BackoffPolicy(initial=0.001, maximum=0.02, max_retry_after=0.01),
        }
    )
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        huge = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "TooManyRequests",
            "code": 429,
            "details": {"retryAfterSeconds": HUGE},
        }
        server.faults.add(Fault(verb="list", status=429, status_body=huge))
        async with running_informer(server, options=options) as inf:
            stats = inf.statistics()
        assert len(inf.store) == 1
        assert stats.errors == 0 and stats.page_retries == 1
