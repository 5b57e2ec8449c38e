"""Kubernetes Status bodies -> typed errors (``status_error``), for every variant."""

from __future__ import annotations

import json
from typing import Any

import pytest

import informer
from informer._requests import request_info
from informer.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Invalid,
    MalformedWatchLine,
    NotFound,
    ResourceExpired,
    TooLargeResourceVersion,
    TooManyRequests,
    status_error,
)


def status(code: int, reason: str = "", message: str = "", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "code": code,
    }
    if reason:
        body["reason"] = reason
    if message:
        body["message"] = message
    body.update(extra)
    return body


def as_bytes(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


# The exact body a real kube-apiserver v1.21 sent for a future RV (reference, last section).
REAL_504 = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: '
    b'Too large resource version: 999999, current: 100","reason":"Timeout","details":{"causes":'
    b'[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],'
    b'"retryAfterSeconds":1},"code":504}'
)
REAL_410_LIST = as_bytes(
    status(410, "Expired", "The resourceVersion for the provided list is too old.")
)
REAL_410_WATCH_OBJECT = status(
    410, "Expired", "The resourceVersion for the provided watch is too old."
)
INCONSISTENT_TOKEN = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiY20tMDVcdTAwMDAifQ"


def test_exports() -> None:
    assert informer.ApiError is ApiError
    assert informer.ResourceExpired is ResourceExpired
    assert informer.TooLargeResourceVersion is TooLargeResourceVersion
    assert informer.TooManyRequests is TooManyRequests
    for cls in (ResourceExpired, TooLargeResourceVersion, TooManyRequests):
        assert issubclass(cls, ApiError)
    assert issubclass(ApiError, Exception)


# ---- body forms: bytes, str, decoded mapping ----------------------------------------------


@pytest.mark.parametrize("form", ["bytes", "str", "mapping"])
def test_body_forms_are_equivalent(form: str) -> None:
    raw = status(410, "Expired", "too old")
    body: Any = {"bytes": as_bytes(raw), "str": json.dumps(raw), "mapping": raw}[form]
    err = status_error(410, body)
    assert type(err) is ResourceExpired
    assert (err.code, err.reason, err.message) == (410, "Expired", "too old")
    assert err.status["kind"] == "Status"


# ---- 410 ----------------------------------------------------------------------------------


def test_410_expired_real_body() -> None:
    err = status_error(410, REAL_410_LIST)
    assert type(err) is ResourceExpired
    assert err.code == 410
    assert err.reason == "Expired"
    assert err.message == "The resourceVersion for the provided list is too old."
    assert err.continue_token is None
    assert err.details == {}
    assert "410" in str(err) and "Expired" in str(err)


def test_410_gone_old_server() -> None:
    err = status_error(410, as_bytes(status(410, "Gone", "too old resource version: 98 (103)")))
    assert type(err) is ResourceExpired
    assert err.reason == "Gone"
    assert err.message == "too old resource version: 98 (103)"
    assert err.continue_token is None


@pytest.mark.parametrize("reason", ["Expired", "Gone"])
def test_410_with_inconsistent_continue_token(reason: str) -> None:
    body = status(
        410,
        reason,
        "The provided continue parameter is too old",
    )
    body["metadata"] = {"continue": INCONSISTENT_TOKEN}
    err = status_error(410, as_bytes(body))
    assert type(err) is ResourceExpired
    assert err.reason == reason
    assert err.continue_token == INCONSISTENT_TOKEN


@pytest.mark.parametrize(
    "metadata",
    [{}, {"continue": ""}, {"continue": None}, {"continue": 5}, None, "x", [], {"other": "y"}],
)
def test_410_without_usable_continue_token(metadata: Any) -> None:
    body = status(410, "Expired", "too old")
    body["metadata"] = metadata
    err = status_error(410, as_bytes(body))
    assert type(err) is ResourceExpired
    assert err.continue_token is None


def test_410_without_metadata_key() -> None:
    body = status(410, "Expired", "too old")
    del body["metadata"]
    err = status_error(410, body)
    assert type(err) is ResourceExpired
    assert err.continue_token is None


def test_410_with_non_status_body_is_still_expired() -> None:
    err = status_error(410, b"<html><body>Gone</body></html>")
    assert type(err) is ResourceExpired
    assert err.code == 410
    assert "Gone" in err.message
    assert err.continue_token is None


def test_watch_error_event_410() -> None:
    # A watch ERROR event: no HTTP status (the stream was 200), code from the body.
    err = status_error(None, REAL_410_WATCH_OBJECT)
    assert type(err) is ResourceExpired
    assert err.code == 410
    assert err.message == "The resourceVersion for the provided watch is too old."


def test_watch_error_event_gone_as_bytes() -> None:
    err = status_error(None, as_bytes(status(410, "Gone", "too old resource version: 98 (103)")))
    assert type(err) is ResourceExpired
    assert err.code == 410


# ---- 504 too large resource version -------------------------------------------------------


def test_504_real_body() -> None:
    err = status_error(504, REAL_504)
    assert type(err) is TooLargeResourceVersion
    assert err.code == 504
    assert err.reason == "Timeout"
    assert err.message == "Timeout: Too large resource version: 999999, current: 100"
    assert err.retry_after == 1
    assert err.details["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_504_real_body_with_header_prefers_body() -> None:
    err = status_error(504, REAL_504, retry_after_header="1")
    assert type(err) is TooLargeResourceVersion
    assert err.retry_after == 1


def test_504_real_body_as_watch_error_event() -> None:
    err = status_error(None, json.loads(REAL_504))
    assert type(err) is TooLargeResourceVersion
    assert err.code == 504
    assert err.retry_after == 1


def _too_large_without_retry() -> dict[str, Any]:
    return status(
        504,
        "Timeout",
        "Timeout: Too large resource version: 999999, current: 100",
        details={"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large"}]},
    )


def test_504_without_retry_hint() -> None:
    # NotOlderThan + limit on v1.21: 504 at once, no retryAfterSeconds, no header.
    err = status_error(504, as_bytes(_too_large_without_retry()))
    assert type(err) is TooLargeResourceVersion
    assert err.retry_after is None


@pytest.mark.parametrize(("header", "expected"), [("1", 1.0), ("5", 5.0), (" 2 ", 2.0)])
def test_504_retry_after_from_header(header: str, expected: float) -> None:
    err = status_error(504, as_bytes(_too_large_without_retry()), retry_after_header=header)
    assert type(err) is TooLargeResourceVersion
    assert err.retry_after == expected


def test_504_old_server_cause_message_only() -> None:
    body = status(
        504,
        "Timeout",
        "Timeout: request did not complete",
        details={"causes": [{"message": "Too large resource version"}]},
    )
    err = status_error(504, as_bytes(body))
    assert type(err) is TooLargeResourceVersion
    assert err.retry_after is None


def test_504_old_server_status_message_only() -> None:
    body = status(504, "Timeout", "Too large resource version: 999999, current: 100")
    err = status_error(504, as_bytes(body), retry_after_header="3")
    assert type(err) is TooLargeResourceVersion
    assert err.retry_after == 3.0


def test_504_old_server_status_message_only_no_reason() -> None:
    err = status_error(
        504, {"kind": "Status", "code": 504, "message": "Too large resource version"}
    )
    assert type(err) is TooLargeResourceVersion


def test_504_causes_with_junk_entries() -> None:
    body = status(
        504,
        "Timeout",
        "Timeout",
        details={
            "causes": ["x", None, 5, {"reason": "Other"}, {"reason": "ResourceVersionTooLarge"}]
        },
    )
    assert type(status_error(504, as_bytes(body))) is TooLargeResourceVersion


@pytest.mark.parametrize(
    "body",
    [
        as_bytes(
            status(
                504,
                "Timeout",
                "Timeout: request did not complete within requested timeout - context deadline "
                "exceeded",
                details={},
            )
        ),
        as_bytes(status(504, "Timeout", "Timeout", details={"causes": [{"reason": "Other"}]})),
        as_bytes(status(504, "Timeout", "Timeout", details={"causes": "not a list"})),
        as_bytes(status(504, "Timeout", "Timeout", details={"retryAfterSeconds": 1})),
        b"<html><head><title>504 Gateway Time-out</title></head><body>nginx</body></html>",
        b"",
        b"upstream request timeout",
    ],
)
def test_504_not_too_large_is_plain_api_error(body: bytes) -> None:
    err = status_error(504, body, retry_after_header="1")
    assert type(err) is ApiError
    assert err.code == 504
    assert err.retry_after == 1.0  # a 5xx's Retry-After is the client's wait (client-go too)


@pytest.mark.parametrize("code", [400, 403, 404, 409, 422])
def test_a_retry_after_on_a_4xx_other_than_429_is_ignored(code: int) -> None:
    """client-go's checkWait honours Retry-After on a 429 or a 5xx only."""
    err = status_error(code, as_bytes(status(code, "X", "x")), retry_after_header="5")
    assert err.retry_after is None


def test_too_large_message_on_other_code_is_not_too_large() -> None:
    body = status(500, "InternalError", "Too large resource version: 9, current: 1")
    assert type(status_error(500, as_bytes(body))) is ApiError


# ---- 429 ----------------------------------------------------------------------------------


def test_429_status_json_with_retry_after_seconds() -> None:
    body = status(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        details={"retryAfterSeconds": 7},
    )
    err = status_error(429, as_bytes(body))
    assert type(err) is TooManyRequests
    assert err.code == 429
    assert err.reason == "TooManyRequests"
    assert err.message == "Too many requests, please try again later."
    assert err.retry_after == 7.0


def test_429_body_retry_after_seconds_wins_over_header() -> None:
    body = status(429, "TooManyRequests", "slow down", details={"retryAfterSeconds": 7})
    err = status_error(429, as_bytes(body), retry_after_header="2")
    assert type(err) is TooManyRequests
    assert err.retry_after == 7.0


def test_429_status_json_header_only() -> None:
    err = status_error(
        429, as_bytes(status(429, "TooManyRequests", "slow")), retry_after_header="4"
    )
    assert type(err) is TooManyRequests
    assert err.retry_after == 4.0


def test_429_text_plain_with_retry_after_header() -> None:
    # A real v1.21 rate limiter: text/plain body, not a Status.
    err = status_error(429, b"Too many requests, please try again later.\n", retry_after_header="1")
    assert type(err) is TooManyRequests
    assert err.code == 429
    assert err.reason == ""
    assert err.message == "Too many requests, please try again later."
    assert err.retry_after == 1.0
    assert err.details == {}


def test_429_text_plain_without_header() -> None:
    err = status_error(429, "Too many requests, please try again later.")
    assert type(err) is TooManyRequests
    assert err.retry_after is None


def test_429_empty_body() -> None:
    err = status_error(429, b"", retry_after_header="3")
    assert type(err) is TooManyRequests
    assert err.retry_after == 3.0
    assert err.message == ""


def test_429_watch_error_event() -> None:
    err = status_error(None, status(429, "TooManyRequests", "x", details={"retryAfterSeconds": 2}))
    assert type(err) is TooManyRequests
    assert err.retry_after == 2.0


def test_http_status_is_classified_first() -> None:
    # The HTTP status decides, even when the body's code disagrees.
    assert type(status_error(429, as_bytes(status(500, "InternalError", "x")))) is TooManyRequests
    assert type(status_error(500, as_bytes(status(410, "Expired", "x")))) is ApiError
    err = status_error(503, REAL_504)
    assert type(err) is ApiError
    assert err.code == 503


@pytest.mark.parametrize(
    "header",
    [
        "abc",
        "",
        "   ",
        "-5",
        "-0.5",
        "nan",
        "NaN",
        "inf",
        "Infinity",
        "-inf",
        "1e400",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "1 2",
    ],
)
def test_bad_retry_after_header_is_ignored(header: str) -> None:
    err = status_error(429, b"Too many requests", retry_after_header=header)
    assert type(err) is TooManyRequests
    assert err.retry_after is None


@pytest.mark.parametrize(
    ("header", "expected"), [("0", 0.0), ("1", 1.0), ("2.5", 2.5), (" 3 ", 3.0)]
)
def test_good_retry_after_header(header: str, expected: float) -> None:
    err = status_error(429, b"Too many requests", retry_after_header=header)
    assert err.retry_after == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("seconds", ["5", -1, True, None, [1], {"s": 1}])
def test_bad_retry_after_seconds_falls_back_to_header(seconds: Any) -> None:
    body = status(429, "TooManyRequests", "x", details={"retryAfterSeconds": seconds})
    err = status_error(429, as_bytes(body))
    assert type(err) is TooManyRequests
    assert err.retry_after is None
    err = status_error(429, as_bytes(body), retry_after_header="2")
    assert err.retry_after == 2.0  # type: ignore[attr-defined]


# ---- other Status errors ------------------------------------------------------------------


def test_500_future_revision_without_reason() -> None:
    # Future RV with Exact on v1.21: a 500 with no reason.
    body = status(500, message="etcdserver: mvcc: required revision is a future revision")
    err = status_error(500, as_bytes(body))
    assert type(err) is ApiError
    assert err.code == 500
    assert err.reason == ""
    assert err.message == "etcdserver: mvcc: required revision is a future revision"
    assert str(err) == "500"  # the message is the server's text: an attribute, not in str()


@pytest.mark.parametrize(
    "message",
    [
        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        "resourceVersionMatch is forbidden unless resourceVersion is provided",
        "resourceVersionMatch is forbidden for watch",
    ],
)
def test_422_invalid(message: str) -> None:
    body = status(
        422,
        "Invalid",
        message,
        details={"causes": [{"reason": "FieldValueForbidden", "message": message}]},
    )
    err = status_error(422, as_bytes(body))
    assert type(err) is Invalid
    assert err.code == 422
    assert err.reason == "Invalid"
    assert err.message == message
    assert err.details["causes"][0]["reason"] == "FieldValueForbidden"
    assert err.status["code"] == 422


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (400, "BadRequest"),
        (401, "Unauthorized"),
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
    ],
)
def test_other_codes_are_plain_api_errors(code: int, reason: str) -> None:
    err = status_error(code, as_bytes(status(code, reason, "m")))
    assert type(err) is ApiError
    assert (err.code, err.reason, err.message) == (code, reason, "m")


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (409, "", Conflict),
        (422, "Invalid", Invalid),
    ],
)
def test_codes_a_writer_acts_on_are_typed(code: int, reason: str, cls: type[ApiError]) -> None:
    err = status_error(code, as_bytes(status(code, reason, "m")))
    assert type(err) is cls and isinstance(err, ApiError)
    assert (err.code, err.reason, err.message) == (code, reason, "m")


def test_watch_error_event_other_code() -> None:
    err = status_error(None, status(500, "InternalError", "boom"))
    assert type(err) is ApiError
    assert err.code == 500
    assert err.reason == "InternalError"


@pytest.mark.parametrize(
    "body", [{"kind": "Status", "message": "no code"}, {"kind": "Status", "code": "410"}]
)
def test_watch_error_event_without_usable_code(body: dict[str, Any]) -> None:
    err = status_error(None, body)
    assert isinstance(err, ApiError)
    assert err.code == 500
    assert type(err) is ApiError


def test_watch_error_event_non_status_object() -> None:
    err = status_error(None, b"garbage")
    assert type(err) is ApiError
    assert err.code == 500
    assert err.message == "garbage"


def test_status_with_junk_field_types() -> None:
    body = {"kind": "Status", "code": 500, "reason": 5, "message": ["x"], "details": "nope"}
    err = status_error(500, as_bytes(body))
    assert type(err) is ApiError
    assert isinstance(err.reason, str)
    assert isinstance(err.message, str)
    assert err.details == {}


def test_details_default_to_empty_mapping() -> None:
    err = status_error(500, as_bytes(status(500, "InternalError", "x")))
    assert err.details == {}
    assert err.status["reason"] == "InternalError"


def test_api_error_direct_construction() -> None:
    err = ApiError(418, "Teapot", "short and stout")
    assert str(err) == "418 Teapot" and err.message == "short and stout"
    assert ApiError(500, message="m").details == {}
    assert str(ApiError(500, message="m")) == "500"


# ---- bodies that are not a Status ---------------------------------------------------------

HTML = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


def test_html_page_from_proxy() -> None:
    err = status_error(502, HTML)
    assert type(err) is ApiError
    assert err.code == 502
    assert err.reason == ""
    assert "502 Bad Gateway" in err.message
    assert err.message == err.message.strip()
    assert err.status == {}
    assert err.details == {}


@pytest.mark.parametrize("body", [b"", "", None, b"   \n"])
def test_empty_body(body: Any) -> None:
    err = status_error(503, body)
    assert type(err) is ApiError
    assert err.code == 503
    assert err.message == ""


def test_non_utf8_bytes() -> None:
    body = b"\xff\xfe\x00\x80 broken \xc3\x28"
    err = status_error(500, body)
    assert type(err) is ApiError
    assert err.code == 500
    assert "broken" in err.message
    assert "\ufffd" in err.message


@pytest.mark.parametrize(
    "body",
    [
        b'{"kind":"Status","code":500,"message":"\xff\xfe"}',  # invalid UTF-8 inside a string
        b'["\xff"]',
        b'"\xc3\x28"',
        '{"kind":"Status","code":500,"message":"\ud800"}',  # lone surrogate in a str body
    ],
)
@pytest.mark.parametrize("code", [500, 429, None])
def test_invalid_unicode_inside_json_never_crashes(body: bytes | str, code: int | None) -> None:
    err = status_error(code, body)
    assert isinstance(err, ApiError)
    assert err.code == (code or 500)


@pytest.mark.parametrize(
    "body",
    [b"[1, 2, 3]", b'["kind", "Status"]', b"null", b"42", b'"a string"', b"true", b"{", b"{}}"],
)
def test_json_that_is_not_an_object(body: bytes) -> None:
    err = status_error(500, body)
    assert type(err) is ApiError
    assert err.code == 500
    assert err.message == body.decode()
    assert err.status == {}


def test_json_that_is_not_a_status() -> None:
    body = b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"code":410,"reason":"Expired"}'
    err = status_error(500, body)
    assert type(err) is ApiError
    assert err.code == 500
    assert err.reason == ""
    assert '"kind":"Pod"' in err.message
    assert err.status == {}


def test_json_not_a_status_on_410_is_still_expired_by_http_status() -> None:
    err = status_error(410, b'{"kind":"Pod"}')
    assert type(err) is ResourceExpired
    assert err.continue_token is None


def test_json_object_without_kind_or_status_fields_keeps_its_text() -> None:
    # A JSON error from a proxy (not a Status): the text must survive for diagnosis.
    err = status_error(503, b'{"error":"upstream connect error or disconnect/reset"}')
    assert type(err) is ApiError
    assert err.code == 503
    assert "upstream connect error" in err.message


@pytest.mark.parametrize("as_str", [False, True])
def test_huge_html_body_is_truncated(as_str: bool) -> None:
    page = "<html><body>" + "x" * 5_000_000 + "</body></html>"
    body: Any = page if as_str else page.encode()
    err = status_error(502, body)
    assert type(err) is ApiError
    assert err.message.startswith("<html><body>xxx")
    assert 0 < len(err.message) <= 1024
    assert str(err) == "502"


def test_huge_text_429_is_truncated() -> None:
    err = status_error(429, b"y" * 100_000, retry_after_header="1")
    assert type(err) is TooManyRequests
    assert len(err.message) <= 1024
    assert err.retry_after == 1.0


def test_short_text_is_not_truncated() -> None:
    text = "z" * 400
    assert status_error(500, text).message == text


def test_never_crashes_on_random_bytes() -> None:
    import random

    rng = random.Random(5504)
    for code in (None, 400, 410, 429, 500, 504):
        for _ in range(200):
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
            err = status_error(code, body, retry_after_header=body[:4].decode("latin-1"))
            assert isinstance(err, ApiError)
            assert isinstance(err.code, int)


@pytest.mark.parametrize("reason", ["Expired", "Gone"])
@pytest.mark.parametrize("code", [None, 0, "410", -1])
def test_watch_error_event_expired_by_reason_without_usable_code(reason: str, code: Any) -> None:
    # client-go classifies by reason (IsResourceExpired / IsGone): without a usable code, an
    # Expired/Gone Status is still a 410, or a reflector would re-watch the same RV forever.
    body: dict[str, Any] = {"kind": "Status", "status": "Failure", "reason": reason}
    if code is not None:
        body["code"] = code
    err = status_error(None, body)
    assert type(err) is ResourceExpired
    assert (err.code, err.reason) == (410, reason)


@pytest.mark.parametrize("code", [0, -1, 99, 600, 10**9])
def test_watch_error_event_code_outside_http_range_is_not_used(code: int) -> None:
    err = status_error(None, status(code, "InternalError", "x"))
    assert type(err) is ApiError
    assert err.code == 500


def test_reason_does_not_override_the_http_status() -> None:
    err = status_error(500, as_bytes(status(500, "Expired", "x")))
    assert type(err) is ApiError
    assert err.code == 500


def test_watch_error_event_too_many_requests_by_reason_without_code() -> None:
    body = {"kind": "Status", "reason": "TooManyRequests", "details": {"retryAfterSeconds": 3}}
    err = status_error(None, body)
    assert type(err) is TooManyRequests
    assert (err.code, err.retry_after) == (429, 3.0)


def test_str_of_an_api_error_names_the_request_never_the_servers_message() -> None:
    # str() is what a traceback and a log print: a Status message can quote object data (a
    # validation error quotes the value, a webhook answers any text); the caller reads .message
    planted = 'Secret "s" is invalid: data[password]: Invalid value: "aHVudGVy"'
    body = status(422, "Invalid", planted, details={"kind": "secrets", "name": "s"})
    err = status_error(422, as_bytes(body))
    err.request = request_info("POST", "/api/v1/namespaces/d/secrets")
    assert str(err) == "422 Invalid: create secrets in namespace d"
    assert repr(err) == "Invalid('422 Invalid')"
    assert err.message == planted
    webhook = status_error(403, as_bytes(status(403, reason="denied: aHVudGVy", message="x")))
    assert str(webhook) == "403"  # a reason that is text, not an identifier, is not printed
    line = MalformedWatchLine(7, "unknown event type 'aHVudGVy'", b'{"type":"aHVudGVy"}')
    assert str(line) == "malformed watch line at byte 7: unknown event type"
    assert line.why == "unknown event type 'aHVudGVy'" and b"aHVudGVy" in line.line
