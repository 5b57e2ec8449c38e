"""Fault injection rules and the record of every request the test server answered."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Fault", "FaultSet", "RecordedRequest"]


@dataclass(eq=False)
class RecordedRequest:
    """One HTTP request as the server saw it; ``status`` is 0 until the answer (headers) is sent.

    ``verb`` is one of list, watch, get, create, update, patch, delete (or the lower-case method
    for non-resource paths such as discovery); ``page`` is 1 for a first list page, 2+ for
    continuations, None for other verbs.
    """

    method: str
    path: str
    query: dict[str, str]
    verb: str
    resource: str
    namespace: str | None
    name: str | None = None
    status: int = 0
    page: int | None = None
    fault: Fault | None = None


@dataclass(eq=False)
class Fault:
    """A programmable misbehaviour, matched on each request in order of ``FaultSet.add``.

    Matching: ``verb`` and ``resource`` (plural) when set, ``page`` for lists (1 = first page,
    2+ = continuations), ``namespace`` and ``predicate`` when set. Every matching request counts;
    the rule fires from the ``nth`` match on (1-based), at most ``times`` times (None = forever).
    Only the first rule that fires applies to a request; ``fired`` counts its uses.

    Actions (combine freely):
      - ``latency``: seconds to wait before answering.
      - ``answer_latency``: seconds to wait after the request was applied, before the answer
        goes out (a write whose answer is late or lost: a client that gives up meanwhile does
        not know the write happened). Not for watches.
      - ``status``: answer this HTTP code with a real-looking Status body (``message``, ``reason``
        and ``status_body`` override it), or with ``text_body`` as text/plain like the real 429
        limiter; ``retry_after`` sets ``Retry-After`` and ``details.retryAfterSeconds``.
      - ``list_lag``: serve this list as of revision current-N, whatever RV was asked (a broken
        replica); continue tokens then pin that revision.
      - ``cut_mid_line`` on a LIST or a GET: send the headers and half of the body, then drop
        the connection (a connection lost mid-answer).
      - watch streams, after ``after_events`` ADDED/MODIFIED/DELETED lines were sent (bookmarks are
        not counted): ``close_after_events`` K ends the stream cleanly after K events;
        ``cut_mid_line`` writes half of the next event line then drops the connection;
        ``stall`` goes silent for that many seconds, then resumes; ``malformed_line`` sends one
        line that is not JSON, then resumes; ``replay_stale`` re-sends the first event already
        delivered (at least one must have been), then resumes; ``duplicate_events`` sends every
        following event twice; ``error_event`` sends ``{"type":"ERROR","object":<it>}`` and ends;
        ``oversized_line`` N sends one line of N bytes (an event whose object is a long string),
        then resumes.
      - ``ApiServer.disrupt_watches(fault)`` applies these stream actions to watches already open.
    """

    verb: str | None = None
    resource: str | None = None
    nth: int = 1
    page: int | None = None
    times: int | None = 1
    namespace: str | None = None
    predicate: Callable[[RecordedRequest], bool] | None = None
    # actions
    status: int | None = None
    message: str | None = None
    reason: str | None = None
    status_body: dict[str, Any] | None = None
    text_body: str | None = None
    retry_after: int | None = None
    latency: float = 0.0
    answer_latency: float = 0.0
    list_lag: int | None = None
    after_events: int = 0
    close_after_events: int | None = None
    cut_mid_line: bool = False
    stall: float | None = None
    malformed_line: bool = False
    replay_stale: bool = False
    duplicate_events: bool = False
    error_event: dict[str, Any] | None = None
    oversized_line: int | None = None
    # bookkeeping
    matched: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)

    def _matches(self, request: RecordedRequest) -> bool:
        if self.verb is not None and self.verb != request.verb:
            return False
        if self.resource is not None and self.resource != request.resource:
            return False
        if self.namespace is not None and self.namespace != request.namespace:
            return False
        if self.page is not None and self.page != request.page:
            return False
        return self.predicate is None or self.predicate(request)

    @property
    def affects_stream(self) -> bool:
        """True when the rule changes a watch stream (not only its HTTP answer)."""
        return bool(
            self.close_after_events is not None
            or self.cut_mid_line
            or self.stall
            or self.malformed_line
            or self.replay_stale
            or self.duplicate_events
            or self.error_event is not None
            or self.oversized_line is not None
        )


class FaultSet:
    """The server's active rules: ``add`` returns the rule, ``clear`` removes them all."""

    def __init__(self) -> None:
        self._rules: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        self._rules.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        self._rules = [f for f in self._rules if f is not fault]

    def clear(self) -> None:
        self._rules.clear()

    def __iter__(self) -> Iterator[Fault]:
        return iter(list(self._rules))

    def __len__(self) -> int:
        return len(self._rules)

    def select(self, request: RecordedRequest) -> Fault | None:
        """Count ``request`` against every rule; fire and return the first eligible one."""
        chosen: Fault | None = None
        for rule in self._rules:
            if not rule._matches(request):
                continue
            rule.matched += 1
            if chosen is not None or rule.matched < rule.nth:
                continue
            if rule.times is not None and rule.fired >= rule.times:
                continue
            rule.fired += 1
            chosen = rule
        return chosen
