"""LIST: one test per cell of the resourceVersion x resourceVersionMatch x limit/continue table."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm, names

pytestmark = pytest.mark.asyncio

FACTORY_ARGS: dict[str, Any] = {"too_large_wait": 0.01}


async def seeded(factory: Any, count: int = 7, **kwargs: Any) -> ApiServer:
    server: ApiServer = await factory(**{**FACTORY_ARGS, **kwargs})
    for i in range(count):
        server.create(CONFIGMAPS, cm(f"cm-{i:02d}", app="a" if i % 2 else "b"))
    return server


def token_json(token: str) -> dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def cont(reply: Any) -> dict[str, str]:
    """The ``continue`` query parameter taken from a list reply."""
    return {"continue": reply.body["metadata"]["continue"]}


def invalid_message(*errors: str) -> str:
    body = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f'ListOptions.meta.k8s.io "" is invalid: {body}'


# -- resourceVersionMatch unset ----------------------------------------------------------------


async def test_unset_nolimit_rv_unset_is_most_recent(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH)
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMapList" and reply.body["apiVersion"] == "v1"
    assert reply.body["metadata"] == {"resourceVersion": str(server.revision)}
    assert names(reply.body) == [f"cm-{i:02d}" for i in range(7)]
    assert "kind" not in reply.body["items"][0]  # typed lists carry no TypeMeta per item


async def test_unset_nolimit_rv0_is_any_and_unsorted_with_quirks(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, count=20)
    reply = await client.get(server, CM_PATH, resourceVersion="0")
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == str(server.revision)
    got = names(reply.body)
    assert sorted(got) == [f"cm-{i:02d}" for i in range(20)]
    assert got != sorted(got)


async def test_unset_nolimit_rvN_is_not_older_than(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    old = server.revision - 3
    reply = await client.get(server, CM_PATH, resourceVersion=old)
    assert reply.status == 200
    assert int(reply.body["metadata"]["resourceVersion"]) >= old
    assert len(reply.body["items"]) == 7


async def test_unset_nolimit_future_rv_waits_then_504_with_retry(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, resourceVersion=999999)
    assert reply.status == 504
    assert reply.headers["Retry-After"] == "1"
    assert reply.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: '
        f'Too large resource version: 999999, current: {server.revision}","reason":"Timeout",'
        '"details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource '
        'version"}],"retryAfterSeconds":1},"code":504}\n'
    )


async def test_future_rv_is_served_when_the_revision_arrives_in_time(
    api_server_factory: Any, client: Client
) -> None:
    import asyncio

    server = await seeded(api_server_factory, too_large_wait=5.0)
    wanted = server.revision + 1
    task = asyncio.create_task(client.get(server, CM_PATH, resourceVersion=wanted))
    await server.wait_for_requests(lambda r: r.query.get("resourceVersion") == str(wanted))
    server.create(CONFIGMAPS, cm("late"))
    reply = await task
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == str(wanted)


async def test_unset_limit_rv_unset_paginates_at_first_page_rv(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    first = await client.get(server, CM_PATH, limit=5)
    meta = first.body["metadata"]
    rv = meta["resourceVersion"]
    assert names(first.body) == [f"cm-{i:02d}" for i in range(5)]
    assert meta["remainingItemCount"] == 2
    assert token_json(meta["continue"]) == {
        "v": "meta.k8s.io/v1",
        "rv": int(rv),
        "start": "cm-04\x00",
    }
    server.create(CONFIGMAPS, cm("cm-99"))
    server.delete(CONFIGMAPS, "cm-06", "default")
    second = await client.get(server, CM_PATH, limit=5, **{"continue": meta["continue"]})
    assert second.status == 200
    assert second.body["metadata"] == {"resourceVersion": rv}
    assert names(second.body) == ["cm-05", "cm-06"]


async def test_unset_limit_rv0_ignores_limit_with_quirks(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, resourceVersion="0", limit=5)
    assert reply.status == 200
    assert len(reply.body["items"]) == 7
    assert "continue" not in reply.body["metadata"]


async def test_unset_limit_rv0_paginates_without_quirks(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, watch_cache_quirks=False)
    reply = await client.get(server, CM_PATH, resourceVersion="0", limit=5)
    assert names(reply.body) == [f"cm-{i:02d}" for i in range(5)]
    assert reply.body["metadata"]["continue"]


async def test_unset_limit_rvN_is_exact(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    exact = server.revision
    server.patch(CONFIGMAPS, "cm-00", {"data": {"k": "changed"}}, "default")
    server.create(CONFIGMAPS, cm("cm-50"))
    server.delete(CONFIGMAPS, "cm-01", "default")
    reply = await client.get(server, CM_PATH, resourceVersion=exact, limit=3)
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == str(exact)
    assert names(reply.body) == ["cm-00", "cm-01", "cm-02"]
    assert reply.body["items"][0]["data"] == {"k": "cm-00"}
    rest = await client.get(server, CM_PATH, limit=10, **cont(reply))
    assert names(rest.body) == ["cm-03", "cm-04", "cm-05", "cm-06"]
    assert rest.body["metadata"]["resourceVersion"] == str(exact)


async def test_unset_limit_rvN_compacted_is_410(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    old = server.revision - 2
    server.compact()
    reply = await client.get(server, CM_PATH, resourceVersion=old, limit=3)
    assert reply.status == 410
    assert reply.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The '
        'resourceVersion for the provided list is too old.","reason":"Expired","code":410}\n'
    )


async def test_unset_limit_rvN_future_is_500(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, resourceVersion=server.revision + 10, limit=3)
    assert reply.status == 500
    assert reply.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        '"etcdserver: mvcc: required revision is a future revision","code":500}\n'
    )


async def test_unset_continue_rv_unset_is_continue_exact(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    first = await client.get(server, CM_PATH, limit=2)
    second = await client.get(server, CM_PATH, limit=2, **cont(first))
    assert names(second.body) == ["cm-02", "cm-03"]
    assert second.body["metadata"]["resourceVersion"] == first.body["metadata"]["resourceVersion"]
    assert second.body["metadata"]["remainingItemCount"] == 3


async def test_unset_continue_rv0_is_treated_as_continue(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    first = await client.get(server, CM_PATH, limit=2)
    token = first.body["metadata"]["continue"]
    second = await client.get(server, CM_PATH, limit=2, resourceVersion="0", **{"continue": token})
    assert second.status == 200
    assert names(second.body) == ["cm-02", "cm-03"]


async def test_unset_continue_rvN_is_400(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    first = await client.get(server, CM_PATH, limit=2)
    token = first.body["metadata"]["continue"]
    reply = await client.get(
        server, CM_PATH, limit=2, resourceVersion=server.revision, **{"continue": token}
    )
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"] == "specifying resource version is not allowed when using continue"


# -- resourceVersionMatch=Exact ----------------------------------------------------------------


async def test_exact_rv_unset_is_422(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    for params in ({}, {"limit": 2}):
        reply = await client.get(server, CM_PATH, resourceVersionMatch="Exact", **params)
        assert reply.status == 422
        assert reply.text == (
            '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
            '"ListOptions.meta.k8s.io \\"\\" is invalid: resourceVersionMatch: Forbidden: '
            'resourceVersionMatch is forbidden unless resourceVersion is provided","reason":'
            '"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":'
            '"FieldValueForbidden","message":"Forbidden: resourceVersionMatch is forbidden unless '
            'resourceVersion is provided","field":"resourceVersionMatch"}]},"code":422}\n'
        )


async def test_exact_rv0_is_422(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    for params in ({}, {"limit": 2}):
        reply = await client.get(
            server, CM_PATH, resourceVersion="0", resourceVersionMatch="Exact", **params
        )
        assert reply.status == 422
        assert reply.body["message"] == invalid_message(
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
            'resourceVersion "0"'
        )


async def test_exact_nolimit_rvN_is_exact(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    exact = server.revision - 2
    reply = await client.get(server, CM_PATH, resourceVersion=exact, resourceVersionMatch="Exact")
    assert reply.body["metadata"] == {"resourceVersion": str(exact)}
    assert names(reply.body) == [f"cm-{i:02d}" for i in range(5)]


async def test_exact_limit_rvN_is_exact_paginated(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    exact = server.revision - 1
    reply = await client.get(
        server, CM_PATH, resourceVersion=exact, resourceVersionMatch="Exact", limit=4
    )
    assert reply.body["metadata"]["resourceVersion"] == str(exact)
    assert reply.body["metadata"]["remainingItemCount"] == 2
    assert names(reply.body) == [f"cm-{i:02d}" for i in range(4)]


async def test_exact_compacted_is_410_and_future_is_500(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, compaction_window=2)
    old = server.revision - 3
    reply = await client.get(server, CM_PATH, resourceVersion=old, resourceVersionMatch="Exact")
    assert reply.status == 410
    assert reply.body["message"] == "The resourceVersion for the provided list is too old."
    future = await client.get(
        server, CM_PATH, resourceVersion=server.revision + 1, resourceVersionMatch="Exact"
    )
    assert future.status == 500
    assert future.body["message"] == "etcdserver: mvcc: required revision is a future revision"
    assert "reason" not in future.body


# -- resourceVersionMatch=NotOlderThan ---------------------------------------------------------


async def test_not_older_than_rv_unset_is_422(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    for params in ({}, {"limit": 2}):
        reply = await client.get(server, CM_PATH, resourceVersionMatch="NotOlderThan", **params)
        assert reply.status == 422
        assert reply.body["details"]["causes"][0]["field"] == "resourceVersionMatch"


async def test_not_older_than_rv0_is_any(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    for params in ({}, {"limit": 2}):
        reply = await client.get(
            server, CM_PATH, resourceVersion="0", resourceVersionMatch="NotOlderThan", **params
        )
        assert reply.status == 200
        assert len(reply.body["items"]) == 7  # limit ignored by the watch cache


async def test_not_older_than_nolimit_rvN_is_unsorted_cache_read(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, count=20)
    old = server.revision - 5
    reply = await client.get(
        server, CM_PATH, resourceVersion=old, resourceVersionMatch="NotOlderThan"
    )
    assert int(reply.body["metadata"]["resourceVersion"]) >= old
    got = names(reply.body)
    assert sorted(got) == [f"cm-{i:02d}" for i in range(20)] and got != sorted(got)


async def test_not_older_than_nolimit_compacted_rv_is_still_200(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    old = server.revision - 3
    server.compact()
    reply = await client.get(
        server, CM_PATH, resourceVersion=old, resourceVersionMatch="NotOlderThan"
    )
    assert reply.status == 200


async def test_not_older_than_limit_rvN_is_newest_paginated(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    old = server.revision - 5
    reply = await client.get(
        server, CM_PATH, resourceVersion=old, resourceVersionMatch="NotOlderThan", limit=5
    )
    assert reply.body["metadata"]["resourceVersion"] == str(server.revision)
    assert names(reply.body) == [f"cm-{i:02d}" for i in range(5)]
    assert reply.body["metadata"]["continue"]


async def test_not_older_than_limit_future_is_504_at_once_without_retry(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, too_large_wait=60.0)  # would hang if it waited
    reply = await client.get(
        server, CM_PATH, resourceVersion=999999, resourceVersionMatch="NotOlderThan", limit=5
    )
    assert reply.status == 504
    assert "Retry-After" not in reply.headers
    assert reply.body["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
    }


async def test_not_older_than_future_without_quirks_is_504_at_once(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, too_large_wait=60.0, watch_cache_quirks=False)
    reply = await client.get(server, CM_PATH, resourceVersion=999999)
    assert reply.status == 504
    assert "retryAfterSeconds" not in reply.body["details"]


# -- invalid combinations and tokens -----------------------------------------------------------


async def test_unknown_match_is_422_not_supported(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, resourceVersion="5", resourceVersionMatch="Newest")
    assert reply.status == 422
    assert reply.body["message"] == invalid_message(
        'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", '
        '"NotOlderThan", ""'
    )
    assert reply.body["details"]["causes"][0]["reason"] == "FieldValueNotSupported"


async def test_match_with_continue_is_422(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    first = await client.get(server, CM_PATH, limit=2)
    reply = await client.get(
        server, CM_PATH, resourceVersionMatch="NotOlderThan", limit=2, **cont(first)
    )
    assert reply.status == 422
    assert reply.body["message"] == invalid_message(
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
        "resourceVersion is provided",
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is "
        "provided",
    )


async def test_send_initial_events_on_list_is_422(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, sendInitialEvents="true")
    assert reply.status == 422
    assert reply.body["message"] == invalid_message(
        "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"
    )


async def test_expired_continue_is_410_with_working_inconsistent_token(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    first = await client.get(server, CM_PATH, limit=3)
    server.create(CONFIGMAPS, cm("cm-03a"))
    server.compact()
    reply = await client.get(server, CM_PATH, limit=3, **cont(first))
    assert reply.status == 410
    assert reply.body["reason"] == "Expired"
    assert reply.body["message"].startswith("The provided continue parameter is too old")
    fresh = reply.body["metadata"]["continue"]
    assert token_json(fresh) == {"v": "meta.k8s.io/v1", "rv": -1, "start": "cm-02\x00"}
    rest = await client.get(server, CM_PATH, limit=3, **{"continue": fresh})
    assert rest.status == 200
    assert rest.body["metadata"]["resourceVersion"] == str(server.revision)
    assert names(rest.body) == ["cm-03", "cm-03a", "cm-04"]
    last = await client.get(server, CM_PATH, limit=3, **cont(rest))
    assert names(last.body) == ["cm-05", "cm-06"]


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("!!!", "continue key is not valid: illegal base64 data at input byte 0"),
        (
            base64.urlsafe_b64encode(b'{"v":"v2","rv":3,"start":"a"}').decode(),
            'continue key is not valid: server does not recognize this encoded version "v2"',
        ),
        (
            base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":0,"start":"a"}').decode(),
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)",
        ),
        (
            base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":3,"start":""}').decode(),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
        ),
        (
            base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":3,"start":"../x"}').decode(),
            "continue key is not valid: ../x",
        ),
    ],
)
async def test_malformed_continue_is_400(
    api_server_factory: Any, client: Client, token: str, why: str
) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, limit=2, **{"continue": token})
    assert reply.status == 400
    assert reply.body["message"] == f"invalid continue token: {why}"


async def test_malformed_resource_version_is_400(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, resourceVersion="abc")
    assert reply.status == 400
    assert reply.body["message"] == (
        'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: '
        'parsing "abc": invalid syntax'
    )


# -- selectors and scopes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=a", ["cm-01", "cm-03", "cm-05"]),
        ("app==b", ["cm-00", "cm-02", "cm-04", "cm-06"]),
        ("app!=a", ["cm-00", "cm-02", "cm-04", "cm-06", "plain"]),
        ("app in (a, c)", ["cm-01", "cm-03", "cm-05"]),
        ("app notin (a)", ["cm-00", "cm-02", "cm-04", "cm-06", "plain"]),
        ("app", [f"cm-{i:02d}" for i in range(7)]),
        ("!app", ["plain"]),
        ("app=a,tier", []),
    ],
)
async def test_label_selectors(
    api_server_factory: Any, client: Client, selector: str, expected: list[str]
) -> None:
    server = await seeded(api_server_factory)
    server.create(CONFIGMAPS, cm("plain"))
    reply = await client.get(server, CM_PATH, labelSelector=selector)
    assert reply.status == 200
    assert names(reply.body) == expected


async def test_selector_pages_have_no_remaining_count(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, labelSelector="app=b", limit=2)
    assert names(reply.body) == ["cm-00", "cm-02"]
    assert reply.body["metadata"]["continue"]
    assert "remainingItemCount" not in reply.body["metadata"]


async def test_field_selectors_and_all_namespaces(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=2)
    server.create(CONFIGMAPS, cm("cm-00", namespace="other"))
    everywhere = await client.get(server, "/api/v1/configmaps")
    keys = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere.body["items"]]
    assert keys == [("default", "cm-00"), ("default", "cm-01"), ("other", "cm-00")]
    by_name = await client.get(server, "/api/v1/configmaps", fieldSelector="metadata.name=cm-00")
    assert len(by_name.body["items"]) == 2
    by_ns = await client.get(
        server, "/api/v1/configmaps", fieldSelector="metadata.namespace!=default"
    )
    assert [i["metadata"]["namespace"] for i in by_ns.body["items"]] == ["other"]
    paged = await client.get(server, "/api/v1/configmaps", limit=2)
    assert token_json(paged.body["metadata"]["continue"])["start"] == "default/cm-01\x00"


async def test_bad_selectors_are_400(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    bad_label = await client.get(server, CM_PATH, labelSelector="a b c")
    assert bad_label.status == 400 and bad_label.body["reason"] == "BadRequest"
    bad_field = await client.get(server, CM_PATH, fieldSelector="spec.x=1")
    assert bad_field.status == 400
    # ConfigMaps have no field label conversion: runtime.DefaultMetaV1FieldSelectorConversion
    assert bad_field.body["message"] == (
        '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


async def test_pretty_json_for_curl(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=1)
    async with client.http.get(server.url + CM_PATH, headers={"User-Agent": "curl/8.0"}) as r:
        text = await r.text()
    assert "\n" in text.strip()
    assert json.loads(text)["items"][0]["metadata"]["name"] == "cm-00"
