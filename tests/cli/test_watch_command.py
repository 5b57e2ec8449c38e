"""``informer watch``: sync progress and events, JSON lines, --wait-for-rv, one-line errors, and
debug logs as JSON lines with timestamps, requests and watches."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
from pathlib import Path

import pytest

from informer.testing import ApiServer, Fault

from .conftest import REPO_ROOT, Served, cli, cli_env


def watch(served: Served, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cli("watch", *args, "--kubeconfig", str(served.kubeconfig)),
        cwd=REPO_ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(process: subprocess.Popen[str], marker: str) -> list[str]:
    """Lines of stdout up to the first containing ``marker`` (EOF first fails the test)."""
    assert process.stdout is not None
    lines = []
    while True:
        line = process.stdout.readline()
        assert line, f"stdout ended before {marker!r}: {lines}"
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines


def stop(process: subprocess.Popen[str]) -> None:
    """End the command (killed if SIGTERM is not enough): none outlives its test, which a
    watch would otherwise do, retrying its server forever without printing a line."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_watch_prints_sync_progress_then_each_change(served: Served) -> None:
    for name in ("a", "b", "c"):
        served.create_configmap(name, "progress")
    process = watch(served, "cm", "-n", "progress")
    try:
        lines = read_until(process, "synced 3 objects")
        assert lines[0].startswith("configmaps in progress: sync ")
        assert [line.split()[1] for line in lines if line.startswith("ADDED")] == [
            "progress/a",
            "progress/b",
            "progress/c",
        ]
        created = served.create_configmap("d", "progress")
        line = read_until(process, "progress/d")[-1]
        assert line == f"ADDED    progress/d rv={created['metadata']['resourceVersion']}"
    finally:
        stop(process)


def test_output_json_prints_one_object_per_change(served: Served) -> None:
    served.create_configmap("a", "json")
    process = watch(served, "configmaps", "-n", "json", "-o", "json")
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        served.create_configmap("b", "json")
        second = json.loads(process.stdout.readline())
    finally:
        stop(process)
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "a"
    assert first["object"]["kind"] == "ConfigMap"
    assert second["type"] == "ADDED" and second["object"]["metadata"]["name"] == "b"


def test_wait_for_rv_exits_zero_once_the_cache_has_seen_it(served: Served) -> None:
    rv = int(served.create_configmap("a", "wait")["metadata"]["resourceVersion"])
    process = watch(served, "cm", "-n", "wait", "--wait-for-rv", str(rv + 2))
    try:
        read_until(process, "synced 1 objects")
        assert process.poll() is None  # RV not there yet: still waiting
        served.create_configmap("b", "wait")
        served.create_configmap("c", "wait")
        out, err = process.communicate(timeout=30)
    finally:
        stop(process)
    assert process.returncode == 0, err
    assert f"cache has seen RV {rv + 2}" in out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _run(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *cli("watch", *args),
        cwd=REPO_ROOT,
        env=cli_env(KUBECONFIG="/nonexistent/kubeconfig"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:  # timed out or cancelled: not left running
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, err.decode()


@pytest.mark.asyncio
async def test_failures_are_one_line_errors(api_server: ApiServer, tmp_path: Path) -> None:
    good = api_server.write_kubeconfig(tmp_path / "good")
    text = good.read_text()
    (tmp_path / "down").write_text(
        text.replace(api_server.url, f"http://127.0.0.1:{_closed_port()}")
    )
    (tmp_path / "tls").write_text(text.replace("http://", "https://"))
    (tmp_path / "empty").write_text("")
    (tmp_path / "malformed").write_text("apiVersion: v1\nclusters: [\n")
    (tmp_path / "scalar").write_text("just words\n")
    (tmp_path / "no context").write_text(text.replace('"current-context"', '"old-context"'))
    api_server.faults.add(Fault(verb="list", namespace="locked", status=403, times=None))
    cases = {
        "no kubeconfig": ("cm",),
        "unknown resource": ("gizmos", "--kubeconfig", str(good)),
        "forbidden": ("cm", "-n", "locked", "--kubeconfig", str(good)),
        "unreachable": ("cm", "--kubeconfig", str(tmp_path / "down")),
        "TLS failure": ("cm", "--kubeconfig", str(tmp_path / "tls")),
        "empty kubeconfig": ("cm", "--kubeconfig", str(tmp_path / "empty")),
        "malformed kubeconfig": ("cm", "--kubeconfig", str(tmp_path / "malformed")),
        "scalar kubeconfig": ("cm", "--kubeconfig", str(tmp_path / "scalar")),
        "no current context": ("cm", "--kubeconfig", str(tmp_path / "no context")),
        "RV not reached": (
            "cm",
            "--wait-for-rv",
            "999",
            "--timeout",
            "0.2",
            "--kubeconfig",
            str(good),
        ),
    }
    runs = [asyncio.ensure_future(_run(*args)) for args in cases.values()]
    try:
        results = await asyncio.gather(*runs)
    finally:  # one failed: the others' commands are ended too, not left to the loop's close
        for run in runs:
            run.cancel()
        await asyncio.wait(runs)
    outcomes = dict(zip(cases, results, strict=True))
    for case, (code, err) in outcomes.items():
        assert code == 1, (case, err)
        assert len(err.splitlines()) == 1 and "Traceback" not in err, (case, err)
        assert err.startswith("informer watch: error: "), (case, err)
    assert "no kubeconfig: /nonexistent/kubeconfig not found" in outcomes["no kubeconfig"][1]
    assert 'doesn\'t have a resource type "gizmos"' in outcomes["unknown resource"][1]
    assert "forbidden at http://127.0.0.1:" in outcomes["forbidden"][1]
    assert "cannot reach the API server at http://127.0.0.1:" in outcomes["unreachable"][1]
    assert "TLS failure talking to the API server at https://" in outcomes["TLS failure"][1]
    assert f"kubeconfig {tmp_path / 'empty'} is empty" in outcomes["empty kubeconfig"][1]
    assert (
        f"kubeconfig {tmp_path / 'malformed'} is not valid YAML: "
        in outcomes["malformed kubeconfig"][1]
    )
    assert "line 3, column 1" in outcomes["malformed kubeconfig"][1]
    assert "is not a kubeconfig: a YAML mapping" in outcomes["scalar kubeconfig"][1]
    assert "current-context" in outcomes["no current context"][1]
    assert outcomes["RV not reached"][1] == (
        "informer watch: error: timed out: cache at resource version '1' has not reached "
        "'999' within 0.2s\n"
    )


def test_debug_json_logs_carry_timestamps_requests_and_watches(served: Served) -> None:
    rv = served.create_configmap("a", "logs")["metadata"]["resourceVersion"]
    done = subprocess.run(
        cli(
            "watch", "cm", "-n", "logs", "--wait-for-rv", rv, "--timeout", "30",
            "--log-level", "debug", "--log-format", "json",
            "--kubeconfig", str(served.kubeconfig),
        ),
        cwd=REPO_ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert records and all("timestamp" in r for r in records), done.stderr
    events = {r["event"] for r in records}
    assert {"transport.request", "reflector.synced"} <= events, events
    requests = [r for r in records if r["event"] == "transport.request"]
    assert any(r["path"].startswith("/api/v1/namespaces/logs/configmaps?") for r in requests)
    assert all(r["level"] == "debug" and "status" in r for r in requests)
