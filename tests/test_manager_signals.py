"""A Manager in its own process, stopped by signals as Kubernetes and a terminal stop it: SIGTERM
(or SIGINT) lets the reconcile in flight finish, takes no new key, releases the Lease and exits 0;
a second signal exits at once (1). The processes talk to a test API server in this process, and
``examples/configmap_mirror.py --cluster --metrics-port`` to ``python -m informer serve``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from informer import CONFIGMAPS, LEASES, NAMESPACES
from informer.testing import ApiServer

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[1]

APP = """
import asyncio, sys
from informer import CONFIGMAPS, Manager, Request, connect

async def main(port: int) -> None:
    manager = Manager(await connect(), leader_election="slow", port=port, host="127.0.0.1")
    work = manager.informer(CONFIGMAPS, namespace="work")
    go = asyncio.Event()
    work.add_handler(on_add=lambda obj, _: go.set() if obj.name == "go" else None)

    async def mark(name: str) -> None:
        await manager.client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "marks"}})

    async def reconcile(request: Request) -> None:
        await mark(f"started-{request.name}")
        await go.wait()  # in flight until the test creates work/go
        await mark(f"finished-{request.name}")

    manager.controller(reconcile, for_=work, shutdown_timeout=60)
    await manager.run()

asyncio.run(main(int(sys.argv[1])))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_for_endpoint(port: int, path: str, status: int, text: str = "") -> str:
    """Until ``GET path`` answers ``status`` with ``text`` in its body (polled: another process)."""
    async with aiohttp.ClientSession() as http, asyncio.timeout(30):
        while True:
            try:
                async with http.get(f"http://127.0.0.1:{port}{path}") as response:
                    body = await response.text()
                    if response.status == status and text in body:
                        return body
            except aiohttp.ClientConnectionError:
                pass  # not listening yet
            await asyncio.sleep(0.02)


@pytest.fixture
async def kubeconfig(api_server: ApiServer, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env["KUBECONFIG"] = str(api_server.write_kubeconfig(tmp_path / "kubeconfig"))
    env["PYTHONPATH"] = str(ROOT)
    yield env


async def start(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def exit_status(process: asyncio.subprocess.Process) -> tuple[int, str]:
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, err.decode()


def holder(server: ApiServer, name: str) -> Any:
    lease = server.get(LEASES, name, "default")
    assert lease is not None
    return lease["spec"].get("holderIdentity")


def marks(server: ApiServer) -> set[str]:
    return {m["metadata"]["name"] for m in server.list_objects(CONFIGMAPS, "marks")}


async def in_flight_app(server: ApiServer, env: dict[str, str], port: int) -> Any:
    for ns in ("work", "marks"):
        server.create(NAMESPACES, {"metadata": {"name": ns}})
    server.create(CONFIGMAPS, {"metadata": {"name": "slow", "namespace": "work"}})
    process = await start(env, "-c", APP, str(port))
    try:  # until its reconcile of work/slow is in flight
        await server.wait_for_requests(lambda _: "started-slow" in marks(server), timeout=30)
    except BaseException:
        process.kill()
        await process.wait()
        raise
    return process


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
async def test_a_signal_finishes_the_reconcile_in_flight_releases_the_lease_and_exits_0(
    api_server: ApiServer, kubeconfig: dict[str, str], sig: signal.Signals
) -> None:
    port = free_port()
    process = await in_flight_app(api_server, kubeconfig, port)
    assert holder(api_server, "slow")
    process.send_signal(sig)
    await wait_for_endpoint(port, "/readyz", 500, "[-]shutdown failed: shutting down")
    # work/go releases the reconcile in flight; as a new key it must not be taken any more
    api_server.create(CONFIGMAPS, {"metadata": {"name": "go", "namespace": "work"}})
    status, err = await exit_status(process)
    assert status == 0, err
    assert marks(api_server) == {"started-slow", "finished-slow"}
    assert not holder(api_server, "slow")  # released, not left to expire
    # and released only after the reconcile in flight had written its last write
    lease = api_server.get(LEASES, "slow", "default")
    finished = api_server.get(CONFIGMAPS, "finished-slow", "marks")
    assert lease is not None and finished is not None
    rv = api_server.parse_resource_version
    assert rv(finished["metadata"]["resourceVersion"]) < rv(lease["metadata"]["resourceVersion"])
    assert "Traceback" not in err


async def test_a_second_signal_exits_at_once(
    api_server: ApiServer, kubeconfig: dict[str, str]
) -> None:
    port = free_port()
    process = await in_flight_app(api_server, kubeconfig, port)
    process.send_signal(signal.SIGTERM)
    await wait_for_endpoint(port, "/readyz", 500, "[-]shutdown failed: shutting down")
    process.send_signal(signal.SIGINT)  # the reconcile in flight would wait 60 s for work/go
    status, err = await exit_status(process)
    assert status == 1, err
    assert marks(api_server) == {"started-slow"}  # cut, not finished
    assert holder(api_server, "slow")  # no graceful stop: not released


RUNNABLE_APP = """
import asyncio, sys
from informer.log_config import configure_logging
from informer import CONFIGMAPS, Manager, connect

async def main(port: int, mode: str) -> None:
    configure_logging("info")
    manager = Manager(
        await connect(), leader_election="background", port=port, host="127.0.0.1",
        shutdown_timeout=float(sys.argv[3]),
    )

    async def background() -> None:
        running = {"metadata": {"name": "background-running", "namespace": "default"}}
        await manager.client.create(CONFIGMAPS, running)  # the test waits for it
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if mode == "fails":
                raise RuntimeError("failed while stopping") from None
            while True:  # mode "ignores": every cancellation
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    pass

    manager.add_runnable(background, needs_leader=True, name="background")
    await manager.run()

asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
"""


@contextlib.asynccontextmanager
async def background_app(
    server: ApiServer, env: dict[str, str], mode: str, shutdown_timeout: float
) -> AsyncIterator[asyncio.subprocess.Process]:
    """RUNNABLE_APP, once it leads with its runnable running; killed if a test leaves it alive."""
    port = free_port()
    process = await start(env, "-c", RUNNABLE_APP, str(port), mode, str(shutdown_timeout))
    try:
        await server.wait_for_requests(
            lambda _: server.get(CONFIGMAPS, "background-running", "default") is not None,
            timeout=30,
        )
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_runnable_failing_while_stopped_by_a_signal_exits_1_naming_it(
    api_server: ApiServer, kubeconfig: dict[str, str]
) -> None:
    async with background_app(api_server, kubeconfig, "fails", 25) as process:
        process.send_signal(signal.SIGTERM)
        status, err = await exit_status(process)
    assert status == 1, err
    failed = [line for line in err.splitlines() if "manager.part_failed" in line]
    assert len(failed) == 1 and "runnable:background" in failed[0], err
    assert "RuntimeError" in failed[0]
    assert not holder(api_server, "background")  # released once it had stopped


async def test_a_runnable_ignoring_its_cancellation_is_cut_at_the_deadline_exit_1_lease_released(
    api_server: ApiServer, kubeconfig: dict[str, str]
) -> None:
    async with background_app(api_server, kubeconfig, "ignores", 0.5) as process:
        process.send_signal(signal.SIGTERM)
        status, err = await exit_status(process)  # it would hang in asyncio.run's cleanup
    assert status == 1, err
    cut = [line for line in err.splitlines() if "manager.shutdown_deadline" in line]
    assert len(cut) == 1 and "runnable:background" in cut[0], err
    assert "manager.exit_with_parts_running" in err
    assert not holder(api_server, "background")  # released before it exited


SEED = """
apiVersion: v1
kind: Namespace
metadata: {name: mirror}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: team-a, labels: {mirror: "true"}}
data: {k: v}
"""


async def get_json(http: aiohttp.ClientSession, url: str) -> Any:
    async with http.get(url) as response:
        return await response.json() if response.status == 200 else None


async def wait_for_object(http: aiohttp.ClientSession, url: str) -> Any:
    """Until the server has the object at ``url`` (polled: the writer is another process)."""
    async with asyncio.timeout(30):
        while True:
            found = await get_json(http, url)
            if found is not None:
                return found
            await asyncio.sleep(0.02)


async def test_configmap_mirror_example_against_informer_serve(tmp_path: Path) -> None:
    """The operator as a user runs it, against ``python -m informer serve``: probes and metrics
    (histograms, request and leader metrics) on --metrics-port, then SIGTERM: exit 0, the Lease
    released."""
    (tmp_path / "seed.yaml").write_text(SEED)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update(KUBECONFIG=str(tmp_path / "kubeconfig"), PYTHONPATH=str(ROOT))
    serve = ["-m", "informer", "serve", "--port", "0", "--kubeconfig", env["KUBECONFIG"]]
    server = await start(env, *serve, "--seed", str(tmp_path / "seed.yaml"))
    operator: asyncio.subprocess.Process | None = None
    try:
        assert server.stdout is not None
        url = (await asyncio.wait_for(server.stdout.readline(), 30)).decode().strip()
        port = free_port()
        example = str(ROOT / "examples" / "configmap_mirror.py")
        operator = await start(env, example, "--cluster", "--metrics-port", str(port))
        lease_url = f"{url}/apis/coordination.k8s.io/v1/namespaces/default/leases/configmap-mirror"
        async with aiohttp.ClientSession() as http:
            await wait_for_object(http, f"{url}/api/v1/namespaces/mirror/configmaps/team-a.a")
            await wait_for_endpoint(port, "/readyz", 200, "ok")
            await wait_for_endpoint(port, "/healthz", 200, "ok")
            metrics = await wait_for_endpoint(port, "/metrics", 200, "controller_runtime_reconcile")
            for sample in (
                "controller_runtime_reconcile_time_seconds_bucket{",  # histograms
                "workqueue_work_duration_seconds_bucket{",
                'rest_client_requests_total{code="201",',  # the requests (its create)
                "rest_client_request_duration_seconds_bucket{",
                'leader_election_master_status{name="configmap-mirror"} 1.0',
            ):
                assert sample in metrics
            assert (await get_json(http, lease_url))["spec"]["holderIdentity"]

            operator.send_signal(signal.SIGTERM)
            status, err = await exit_status(operator)
            assert status == 0, err
            assert not (await get_json(http, lease_url))["spec"].get("holderIdentity")
            assert "manager.stopped" in err  # it logs (configure_logging)
    finally:
        for process in (operator, server):
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGINT)
                await exit_status(process)
