"""connect(): a kubeconfig (written by the test server) gives a client that lists and watches."""

from __future__ import annotations

from pathlib import Path

from conftest import cm

from informer.connect import connect
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from informer.transport import Transport


async def test_connect_through_kubeconfig(tmp_path: Path) -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        path = server.write_kubeconfig(tmp_path / "kubeconfig")
        api = await connect(str(path))
        try:
            page = await Transport(api).list_page(CONFIGMAPS)
        finally:
            await api.close()
        assert [o.name for o in page.items] == ["a"]
        assert server.requests[-1].verb == "list"
