"""configure_logging: structlog events and stdlib records, as JSON or console lines."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from informer.log_config import configure_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.configure(**config)


def test_json_lines_carry_level_logger_event_and_fields() -> None:
    out = io.StringIO()
    configure_logging("info", "json", stream=out)
    structlog.get_logger("informer.reflector").bind(resource="configmaps").warning(
        "reflector.relist", reason="expired"
    )
    logging.getLogger("app").info("hello %s", "world")
    logging.getLogger("app").debug("below the level")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["level"], r["logger"], r["event"]) for r in lines] == [
        ("warning", "informer.reflector", "reflector.relist"),
        ("info", "app", "hello world"),
    ]
    assert lines[0]["resource"] == "configmaps" and lines[0]["reason"] == "expired"
    assert "timestamp" in lines[0]


def test_console_lines_and_reconfiguring_replaces_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("debug", "console", stream=first)
    configure_logging("debug", "console", stream=second)
    structlog.get_logger("informer.store").debug("store.replace", items=3)
    assert first.getvalue() == ""
    assert "store.replace" in second.getvalue() and "items=3" in second.getvalue()
    assert "\x1b[" not in second.getvalue()  # no colours when not a terminal


def test_unknown_format_or_level_is_refused() -> None:
    with pytest.raises(ValueError, match="log format"):
        configure_logging("info", "xml")
    with pytest.raises(ValueError, match="log level"):
        configure_logging("loud", "json")
