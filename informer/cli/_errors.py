"""One-line messages for the failures a CLI user can act on (no traceback unless ``--debug``)."""

from __future__ import annotations

import ssl

from informer.discovery import DiscoveryError
from informer.errors import ApiError, StaleCacheError, TransportError

__all__ = ["CliError", "describe"]


class CliError(Exception):
    """A failure already worded for the user."""


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it wraps (``__cause__``, ``__context__``, aiohttp's ``os_error``)."""
    out: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        cause = todo.pop()
        if cause is None or any(cause is seen for seen in out):
            continue
        out.append(cause)
        todo += [cause.__cause__, cause.__context__, getattr(cause, "os_error", None)]
    return out


def _transport_message(exc: TransportError, at: str) -> str:
    import aiohttp  # (imported by the request that failed already)

    causes = _causes(exc)
    tls = [c for c in causes if isinstance(c, ssl.SSLError | aiohttp.ClientSSLError)]
    if tls:
        reasons = [getattr(c, "reason", None) or getattr(c, "verify_message", None) for c in tls]
        reason = next((str(r) for r in reasons if r), type(tls[0]).__name__)
        return f"TLS failure talking to the API server{at}: {reason}"
    oserrors = [c for c in causes if isinstance(c, OSError) and c.strerror]
    if oserrors:
        return f"cannot reach the API server{at}: {oserrors[-1].strerror}"
    return f"cannot reach the API server{at}: {exc}"


def _config_exception() -> type[BaseException]:
    from kubernetes_asyncio.config import ConfigException

    exc: type[BaseException] = ConfigException
    return exc


def describe(exc: BaseException, server: str | None = None) -> str | None:
    """The one-line message for ``exc``, or None when it is a bug (show the traceback)."""
    at = f" at {server}" if server else ""
    if isinstance(exc, CliError):
        return str(exc)
    if isinstance(exc, _config_exception()):
        return f"no usable kubeconfig ({exc}); set KUBECONFIG or pass --kubeconfig"
    if isinstance(exc, FileNotFoundError):
        return f"no kubeconfig: {exc.filename or exc} does not exist"
    if isinstance(exc, DiscoveryError):
        return str(exc)
    if isinstance(exc, ApiError):
        message = exc.message or exc.reason or "no message"
        if exc.code == 401:
            return f"unauthorized{at}: the credentials were refused ({message})"
        if exc.code == 403:
            return f"forbidden{at}: {message}"
        return f"the API server{at} answered {exc.code} {exc.reason}: {message}"
    if isinstance(exc, TransportError):
        return _transport_message(exc, at)
    if isinstance(exc, StaleCacheError):
        return f"timed out: {exc}"
    if isinstance(exc, TimeoutError):
        return f"timed out{at}"
    return None
