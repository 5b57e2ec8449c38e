"""``informer demo``: runs, checks every cache against the server, and says so in its exit status.

The runs start together when the module's first test asks for them (they take seconds each) and
run concurrently; each test then reads its own.
"""

from __future__ import annotations

import re
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .conftest import REPO_ROOT, cli, cli_env

SUMMARY = re.compile(
    r"^  (?P<name>[^:]+): (?P<lists>\d+) lists? \((?P<relists>\d+) relists?\), "
    r"(?P<watches>\d+) watch(?:es)?, (?P<expired>\d+) 410s, "
    r"(?P<stale_lists>\d+) stale lists? refused, (?P<stale>\d+) stale events? dropped, "
    r"(?P<applied>\d+) events? applied, (?P<errors>\d+) errors?$"
)
FIRED = re.compile(r"\((?P<fired>\d+) fired\)")


@dataclass
class Runs:
    ok: subprocess.Popen[str]
    diverged: subprocess.Popen[str]
    metrics: subprocess.Popen[str]


def _start(*args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cli("demo", *args),
        cwd=REPO_ROOT,
        env=cli_env(),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def runs() -> Iterator[Runs]:
    started = Runs(
        ok=_start("--duration", "5"),
        diverged=_start("--duration", "3", "--diverge"),
        metrics=_start(
            "--duration",
            "4",
            "--fault-interval",
            "0.3",
            "--metrics-port",
            "0",
            "--hold",
            stdin=subprocess.PIPE,
        ),
    )
    try:
        yield started
    finally:
        for process in (started.ok, started.diverged, started.metrics):
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)


def test_demo_ends_with_every_cache_equal_to_the_server(runs: Runs) -> None:
    out, err = runs.ok.communicate(timeout=120)
    assert runs.ok.returncode == 0, out + err
    lines = out.splitlines()
    checks = [line for line in lines if line.startswith(("OK ", "DIVERGED "))]
    assert [c.split(":")[0].split(None, 1)[1] for c in checks] == [
        "configmaps (all namespaces)",
        "configmaps team-a app=web",
        "leases nodes",
        "secrets (mirrors)",
    ]
    assert all(c.startswith("OK ") for c in checks), checks
    assert lines[-1] == "every cache equals the server's state"
    # not a terminal: periodic plain lines, one per informer
    assert any(line.startswith("  configmaps (all namespaces): sync=") for line in lines)
    # the summary says what its figures mean
    assert [m["name"] for m in map(SUMMARY.match, lines) if m is not None] == [
        c.split(":")[0].split(None, 1)[1] for c in checks
    ]
    assert any(
        line.startswith("  errors: requests and watch streams that failed") for line in lines
    )
    freshness = lines.index("freshness, measured two ways:")
    assert lines[freshness + 1].startswith("  write to cache: ")
    assert lines[freshness + 2].startswith("  read-your-own-writes: ")
    # a healthy server's faults (lagging lists among them) are no etcd restore
    for text in (out, err):
        assert "went_backwards" not in text and "restore" not in text, text


def test_demo_exits_non_zero_when_a_cache_diverges(runs: Runs) -> None:
    out, err = runs.diverged.communicate(timeout=120)
    assert runs.diverged.returncode == 1, out + err
    assert "DIVERGED configmaps team-a app=web:" in out
    assert out.splitlines()[-1] == "MISMATCH: a cache differs from the server's state"


def test_metrics_are_scraped_after_a_run_with_faults(runs: Runs) -> None:
    process = runs.metrics
    assert process.stdout is not None and process.stdin is not None
    url = None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("metrics: "):
            url = line.split()[1]
        if line.startswith("holding"):
            break
    assert url is not None, lines
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    process.stdin.close()
    out = process.stdout.read()
    process.wait(timeout=30)
    assert process.returncode == 0, "".join(lines) + out
    values: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            values.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    all_cms = (
        ("field_selector", ""),
        ("informer", ""),
        ("namespace", ""),
        ("resource", "configmaps"),
        ("selector", ""),
    )
    assert values["reflector_lists_total"][all_cms] >= 1
    assert values["informer_synced"][all_cms] == 1
    assert values["informer_cache_objects"][all_cms] >= 200
    assert values["reflector_events_applied_total"][all_cms] > 0
    assert values["reflector_last_resource_version"][all_cms] > 200
    # the values are the run's: those its summary printed for each informer
    printed = {
        m["name"]: m
        for m in (SUMMARY.match(line) for line in (*lines, *out.splitlines()))
        if m is not None
    }
    scopes = {
        "configmaps (all namespaces)": all_cms,
        "configmaps team-a app=web": (
            ("field_selector", ""),
            ("informer", ""),
            ("namespace", "team-a"),
            ("resource", "configmaps"),
            ("selector", "app=web"),
        ),
        "leases nodes": (
            ("field_selector", ""),
            ("informer", ""),
            ("namespace", "nodes"),
            ("resource", "leases.coordination.k8s.io"),
            ("selector", ""),
        ),
    }
    for name, labels in scopes.items():
        for metric, group in (
            ("reflector_lists_total", "lists"),
            ("reflector_relists_total", "relists"),
            ("reflector_watches_total", "watches"),
            ("reflector_watch_expired_total", "expired"),
            ("reflector_stale_lists_total", "stale_lists"),
            ("reflector_stale_events_dropped_total", "stale"),
            ("reflector_errors_total", "errors"),
            ("reflector_events_applied_total", "applied"),
        ):
            assert values[metric][labels] == int(printed[name][group]), (name, metric)
    fired = FIRED.search("".join(lines) + out)
    assert fired is not None and int(fired["fired"]) >= 1
    assert any(dict(k).get("handler") == "demo" for k in values["informer_handler_queue_depth"])
    mirror = (("controller", "mirror"), ("result", "success"))
    assert values["controller_runtime_reconcile_total"][mirror] > 0
    queue = (("controller", "mirror"), ("name", "mirror"))
    assert values["workqueue_adds_total"][queue] > 0
    assert (*queue, ("priority", "0")) in values["workqueue_depth"]
    assert (
        values["controller_runtime_reconcile_time_seconds_count"][(("controller", "mirror"),)] > 0
    )
