"""The CLI's logs: under ``--log-format json`` every record, the library's and the others, is one
JSON object with a timestamp; ``--log-level debug`` shows each request and each watch."""

from __future__ import annotations

import json
import subprocess

from .conftest import REPO_ROOT, Served, cli, cli_env


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
