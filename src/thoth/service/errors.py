"""The errors only the service raises; their HTTP statuses are mapped in `thoth.service.http`."""

from __future__ import annotations

from thoth.errors import RequestError, ThothError


class Unauthorized(ThothError):
    """No API key, a malformed Authorization header, or a key no caller holds."""

    code = "unauthorized"


class LabelAboveCeiling(ThothError):
    """The request declares a label above its caller's ceiling."""

    code = "label_above_ceiling"


class BodyTooLarge(RequestError):
    """The request body is larger than `[service].max_body_bytes`."""

    code = "body_too_large"


class RequestTimeout(RequestError):
    """The body did not arrive within `[service].body_timeout_seconds`: the connection is
    closed, and the request never held an admission slot."""

    code = "request_timeout"


class BodyNotUtf8(RequestError):
    """The body is not UTF-8 (a UTF-16 body, a byte-order mark, another charset): JSON
    exchanged between systems is UTF-8 (RFC 8259, section 8.1), and Thoth does not guess."""

    code = "body_not_utf8"


class UnsupportedMediaType(RequestError):
    """The request body is not `application/json`."""

    code = "unsupported_media_type"


class Busy(ThothError):
    """The process already holds `[service].max_concurrent` requests."""

    code = "busy"
