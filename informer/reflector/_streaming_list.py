"""The streaming list sync: a WATCH with ``sendInitialEvents``, and whether the server supports it.

The initial ADDED events are gathered aside until the ``k8s.io/initial-events-end`` bookmark,
then replace the store at once; the same stream goes on as the watch. A server that rejects or
ignores the parameters is remembered (``StreamingState.UNSUPPORTED``); transient failures retry,
and a run of them pauses streaming for a while (``StreamingState.PAUSED``: lists by pages).
"""

from __future__ import annotations

import asyncio
import time

from informer.errors import ApiError, WatchIdleTimeout, WatchStreamError
from informer.objects import KubeObject
from informer.reflector._core import _brief, _ReflectorCore
from informer.reflector._stats import StreamingState
from informer.transport import WatchStream


class _StreamUnsupported(Exception):
    """The server does not implement streaming lists (rejected or ignored sendInitialEvents)."""


class _StreamFailed(WatchStreamError):
    """A streaming list failed in a way that may not happen again (a stall, a duplicate)."""


class _StaleStream(Exception):
    """A streaming list answered with a state older than the cache (a lagging replica)."""


class _StreamingList(_ReflectorCore):
    """The reflector's streaming list (``Reflector`` combines it with the other phases)."""

    def _should_stream(self) -> bool:
        state = self._stream_state
        if self._force_consistent or state in (StreamingState.OFF, StreamingState.UNSUPPORTED):
            return False
        if state is StreamingState.PAUSED:
            if self._stream_paused_lists == 0 or time.monotonic() < self._stream_paused_until:
                return False
            self._stream_state = StreamingState.RETRYING
            self._stream_failures_in_a_row = self.options.stream_failures_before_pause - 1
        return True

    def _stream_failed(self, exc: Exception) -> None:
        """A transient streaming-list failure: retry on the next sync, or pause after a run."""
        self._counters.stream_failures += 1
        if self.options.list_strategy == "stream":
            return
        self._stream_failures_in_a_row += 1
        error = _brief(exc)  # the fields: the type, status, reason, request
        if self._stream_failures_in_a_row < self.options.stream_failures_before_pause:
            self._stream_state = StreamingState.RETRYING
            self.log.info(
                "reflector.streaming_list_failed", **error, times=self._stream_failures_in_a_row
            )
            return
        self._stream_state = StreamingState.PAUSED
        self._stream_failures_in_a_row = 0
        self._stream_paused_lists = 0
        self._stream_paused_until = time.monotonic() + self.options.stream_pause
        self.log.warning(
            "reflector.streaming_list_paused", **error, seconds=self.options.stream_pause
        )

    async def _stream_sync(self) -> WatchStream:
        listed = self.store.resource_version
        last = self._not_older_than()
        self._stream_timeout = self._watch_timeout()
        stream = self.transport.watch(
            self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            resource_version=last or ("0" if self.options.initial_list == "any" else None),
            resource_version_match="NotOlderThan",
            send_initial_events=True,
            allow_watch_bookmarks=True,
            timeout_seconds=self._stream_timeout,
            idle_timeout=self.options.idle_timeout,
            on_open=self._watch_opened,
            trim=self._trim(),
            shard_selector=self._sent_shards(),
            pack=self._packing() is not None,
        )
        initial: dict[str, KubeObject] = {}
        unfiltered = False
        ok = False
        # silence is detected per network chunk by the stream itself, the total by one deadline
        normal_idle = stream.idle_timeout
        idle = self.options.stream_idle_limit
        stream.idle_timeout = idle if normal_idle is None else min(idle, normal_idle)
        try:
            async with asyncio.timeout(self.options.stream_initial_limit):
                known_at = self._known if len(self.store) else None
                kind = self.resource.kind
                packer = self._packing()
                fresh: list[KubeObject] = []  # the batch's new objects, packed as they came
                async for batch in stream.batches():
                    for i, event in enumerate(batch):
                        obj = event.object
                        if event.type == "BOOKMARK":
                            if packer is not None:
                                if fresh:
                                    await packer(fresh, initial.values())
                                    fresh = []
                                await packer.drain()
                            if not event.initial_events_end:
                                raise _StreamUnsupported(
                                    "a bookmark without the initial-events mark"
                                )
                            rv = obj.resource_version
                            if self._is_older(rv, last):
                                self._counters.stale_lists += 1
                                raise _StaleStream(f"streamed state at {rv} is older than {last}")
                            self._counters.lists += 1
                            self._counters.stream_lists += 1
                            if unfiltered:
                                self._shards_unfiltered("streaming list")
                            self._apply_list(
                                list(initial.values()), rv, bool(listed) or self.has_synced, True
                            )
                            stream.idle_timeout = normal_idle
                            stream.unread(batch[i + 1 :])  # the watch goes on with them
                            ok = True
                            return stream
                        k = obj._form.kind
                        if k and k != kind and not self._kind_ok(obj):
                            continue
                        if self._shard_set is not None and self._out_of_shards(obj):
                            unfiltered = True  # a streaming list has no shardInfo: this tells
                            continue
                        key = obj.key
                        if event.type != "ADDED":
                            # a change before the end: a plain watch, the server ignores it
                            raise _StreamUnsupported(f"{event.type} {key} before the end bookmark")
                        if key in initial:  # a replayed line (a proxy, a reconnect): transient
                            raise _StreamFailed(f"initial ADDED {key} twice")
                        cached = None if known_at is None else known_at(key, obj.resource_version)
                        if cached is None:
                            cached = self._prepare(obj)
                            fresh.append(cached)
                        initial[key] = cached
                    if packer is not None and fresh:
                        await packer(fresh, initial.values())
                        fresh = []
            raise WatchStreamError("streaming list ended before its end bookmark")
        except (TimeoutError, WatchIdleTimeout) as exc:
            # a server ignoring sendInitialEvents without RV looks the same, but so does a stall
            raise _StreamFailed(
                f"no initial-events-end bookmark within {idle:g}s of silence or "
                f"{self.options.stream_initial_limit:g}s in all"
            ) from exc
        except ApiError as exc:
            if exc.code in (400, 422):  # the parameters are refused: definitive
                raise _StreamUnsupported(str(exc)) from exc  # code, reason, request: no message
            raise  # 403/404 (RBAC, an aggregated API starting), 5xx, ERROR events: transient
        finally:
            if not ok:
                await stream.aclose()
