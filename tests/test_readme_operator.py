"""The operator of the README's "An operator" section runs as printed (on the test API server): it
mirrors, updates and deletes mirrors, releases its Lease when stopped, and fits in under 35
lines."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from informer import CONFIGMAPS, LEASES, NAMESPACES, Manager
from informer.testing import ApiServer

README = Path(__file__).resolve().parent.parent / "README.md"


def operator_code() -> str:
    text = README.read_text()
    section = text.split("## An operator", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


@pytest.mark.asyncio
async def test_readme_operator_runs(api_server: ApiServer) -> None:
    code = operator_code()
    assert len(code.strip().splitlines()) < 35
    for ns in ("mirror", "a"):
        api_server.create(NAMESPACES, {"metadata": {"name": ns}})
    source = {"name": "x", "namespace": "a", "labels": {"mirror": "true"}}
    api_server.create(CONFIGMAPS, {"metadata": source, "data": {"k": "1"}})
    api = api_server.api_client()

    async def connect() -> Any:
        return api

    def manager(*args: Any, **kwargs: Any) -> Manager:  # probes on a free port, not 8080
        return Manager(*args, **kwargs, host="127.0.0.1", port=0)

    namespace: dict[str, Any] = {}
    exec(code.replace("asyncio.run(main())", ""), namespace)  # our own README
    namespace["connect"] = connect
    namespace["Manager"] = manager
    operator = asyncio.create_task(namespace["main"]())

    def mirrors() -> dict[str, Any]:
        return {
            m["metadata"]["name"]: m.get("data")
            for m in api_server.list_objects(CONFIGMAPS, "mirror")
        }

    try:  # each wait: until a request the server answers leaves the mirrors as wanted
        await api_server.wait_for_requests(lambda _: mirrors() == {"a.x": {"k": "1"}})
        api_server.patch(CONFIGMAPS, "x", {"data": {"k": "2"}}, "a")
        await api_server.wait_for_requests(lambda _: mirrors() == {"a.x": {"k": "2"}})
        api_server.delete(CONFIGMAPS, "x", "a")
        await api_server.wait_for_requests(lambda _: mirrors() == {})
    finally:
        operator.cancel()  # as a SIGTERM would: a graceful stop, the Lease released
        await asyncio.gather(operator, return_exceptions=True)
        await api.close()
    lease = api_server.get(LEASES, "configmap-mirror", "default")
    assert lease is not None and not lease["spec"].get("holderIdentity")
