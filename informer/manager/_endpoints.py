"""One HTTP port for what Kubernetes and Prometheus ask a controller process: ``/healthz``
(liveness), ``/readyz`` (readiness) and ``/metrics``, on aiohttp's server.

The probes answer as kube-apiserver's and controller-runtime's do: ``200 ok`` when every check
passes; else ``500`` with one line per check (``[+]name ok`` / ``[-]name failed: why``) and
``healthz check failed``; ``?verbose`` lists the checks when they pass too. A check's reason
says which part is unhealthy and never quotes an object. A check that raises fails with the
exception's type (``check raised ValueError``), and is logged once per outage
(``manager.check_raised``: its name, the probe, the type and where it was raised, never the
message), not at every probe; one that returns something else than None or a string fails
saying so. ``/metrics`` is the Prometheus text (or
OpenMetrics, as the scraper's ``Accept`` asks) of a registry; without ``prometheus-client``
installed it answers ``501`` saying what to install.
"""

from __future__ import annotations

import inspect
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from informer._log import describe_error, get_logger

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["Check", "CheckResult", "Endpoints", "MetricsRenderer", "run_checks"]

_log = get_logger("informer.manager")

METRICS_MISSING = (
    "metrics need prometheus-client: pip install 'kube-informer[metrics]' "
    "(or pip install prometheus-client)\n"
)


@dataclass(frozen=True, slots=True)
class Check:
    """A named probe check: ``check()`` returns None when healthy, else why not."""

    name: str
    check: Callable[[], str | None]


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    ok: bool
    reason: str | None = None


def run_checks(
    checks: Sequence[Check], raised: Callable[[Check, Exception], None] | None = None
) -> list[CheckResult]:
    """Run every check; a check that raises fails with the exception's type (never its message)
    and is passed to ``raised``; a result other than None or a string fails saying so."""
    results = []
    for c in checks:
        try:
            outcome: object = c.check()
        except Exception as exc:
            if raised is not None:
                raised(c, exc)
            outcome = f"check raised {type(exc).__name__}"
        if inspect.iscoroutine(outcome):
            outcome.close()  # never awaited: no "coroutine was never awaited" warning
        if outcome is not None and not isinstance(outcome, str):
            outcome = f"check returned {type(outcome).__name__}, not None or a reason"
        results.append(CheckResult(c.name, outcome is None, outcome))
    return results


MetricsRenderer = Callable[[str], tuple[bytes, str] | None]  # Accept header -> (body, type)


class Endpoints:
    """The aiohttp server of ``/healthz``, ``/readyz`` and ``/metrics`` on ``host:port`` (host
    None: every interface, IPv4 and IPv6)."""

    def __init__(
        self,
        *,
        host: str | None,
        port: int,
        health: Callable[[], Sequence[Check]],
        readiness: Callable[[], Sequence[Check]],
        metrics: MetricsRenderer,
    ) -> None:
        self.host = host
        self.port = port
        self._health = health
        self._readiness = readiness
        self._metrics = metrics
        self._runner: web.AppRunner | None = None
        self._raising: set[tuple[str, str]] = set()  # (probe, check) raising since last logged

    async def start(self) -> int:
        """Listen; returns the bound port (``port=0`` picks a free one)."""
        from aiohttp import web  # the server is needed only by processes that serve probes

        app = web.Application()
        app.router.add_get("/healthz", self._probe(self._health, "healthz"))
        app.router.add_get("/readyz", self._probe(self._readiness, "readyz"))
        app.router.add_get("/metrics", self._serve_metrics)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            if self.host is None:  # every interface, IPv4 and IPv6, on one port (Go's ":8080")
                await web.SockSite(runner, _dual_stack_socket(self.port)).start()
            else:
                await web.TCPSite(runner, self.host, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        _log.info("manager.serving", host=self.host, port=self.port)
        return self.port

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    def _probe(
        self, checks: Callable[[], Sequence[Check]], name: str
    ) -> Callable[[web.Request], Any]:
        def raised(check: Check, exc: Exception) -> None:
            if (name, check.name) not in self._raising:  # once per outage, not every probe
                self._raising.add((name, check.name))
                _log.error(
                    "manager.check_raised", check=check.name, probe=name, error=describe_error(exc)
                )

        async def handle(request: web.Request) -> web.Response:
            from aiohttp import web

            results = run_checks(checks(), raised)
            for r in results:
                if r.ok:
                    self._raising.discard((name, r.name))
            healthy = all(r.ok for r in results)
            if healthy and "verbose" not in request.query:
                return web.Response(text="ok")
            lines = [
                f"[+]{r.name} ok" if r.ok else f"[-]{r.name} failed: {r.reason}" for r in results
            ]
            lines.append(f"{name} check {'passed' if healthy else 'failed'}")
            return web.Response(text="\n".join(lines) + "\n", status=200 if healthy else 500)

        return handle

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        from aiohttp import web

        try:
            rendered = self._metrics(request.headers.get("Accept", ""))
        except Exception as exc:  # a collector failed: say so, never with its locals
            _log.error("manager.metrics_failed", error=describe_error(exc))
            return web.Response(
                text=f"collecting metrics failed: {type(exc).__name__}\n", status=500
            )
        if rendered is None:
            return web.Response(text=METRICS_MISSING, status=501)
        body, content_type = rendered
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            response.enable_compression(web.ContentCoding.gzip)  # as Prometheus scrapes
        return response


def _dual_stack_socket(port: int) -> socket.socket:
    """A listening socket on every interface: IPv6 accepting IPv4 too where the host has IPv6
    (an IPv6-only pod's kubelet probes its IPv6 address), else IPv4."""
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        address: tuple[str, int] = ("0.0.0.0", port)
    else:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        address = ("::", port)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
