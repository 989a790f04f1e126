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


class UnsupportedMediaType(RequestError):
    """The request body is not `application/json`."""

    code = "unsupported_media_type"


class Busy(ThothError):
    """The process already holds `[service].max_concurrent` requests."""

    code = "busy"


class AgentNotConfigured(ThothError):
    """A deep-analysis job needs the model of `[llm]`, which cannot be used here."""

    code = "agent_not_configured"
