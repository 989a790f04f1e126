"""Calling systems: who sent a request (an API key checked against stored SHA-256 hashes in
constant time) and which labels it may declare (its ceiling).

The seed trusts the calling system with the labels it declares; the service does not: each
caller has a ceiling in `[service].callers`, and a request may only narrow it. Labels are
matched exactly — "PUBLIC" is not "public" — and a label outside the vocabulary is named as
such, never folded into a known one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence

from thoth.config import CallerSettings, Settings
from thoth.errors import Problem, RequestError
from thoth.service.errors import LabelAboveCeiling, Unauthorized

KEY_BYTES = 32  # secrets.token_urlsafe(32): 43 characters, 256 bits
SCHEME = "bearer"
# Query parameters that look like a key: refused by name (a key in a URL ends up in logs).
KEY_PARAMS = frozenset({"key", "api_key", "apikey", "access_token", "token", "authorization"})
AUTH_HINT = "send the caller's key as `Authorization: Bearer <key>` (tht service add-caller)"


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def authenticate(
    callers: Sequence[CallerSettings],
    authorization: Sequence[str],
    query_params: Sequence[str] = (),
) -> CallerSettings:
    """The caller whose key the one Authorization header carries. Every stored hash is
    compared (in constant time), so the time taken does not say which caller came close."""
    named = sorted(p for p in query_params if p.lower() in KEY_PARAMS)
    if named:
        raise _unauthorized(
            f"a key in the URL (query parameter {', '.join(named)}) is not accepted"
        )
    if not authorization:
        raise _unauthorized("no API key: the Authorization header is missing")
    if len(authorization) > 1:
        raise _unauthorized(f"{len(authorization)} Authorization headers: send exactly one")
    scheme, _, key = authorization[0].strip().partition(" ")
    if scheme.lower() != SCHEME or not key.strip() or " " in key.strip():
        raise _unauthorized("the Authorization header is not `Bearer <key>`")
    digest = hash_key(key.strip())
    found: CallerSettings | None = None
    for caller in callers:
        if hmac.compare_digest(digest, caller.key_sha256):
            found = caller
    if found is None:
        raise _unauthorized("the API key belongs to no caller of [service].callers")
    return found


def _unauthorized(message: str) -> Unauthorized:
    return Unauthorized(
        message,
        problems=[Problem("Authorization", message, hint=AUTH_HINT, code="unauthorized")],
    )


def ceiling_labels(
    settings: Settings, caller: CallerSettings | None, requested: Sequence[str] | None
) -> list[str] | None:
    """The labels the request runs with. Without a caller (a local, trusted transport) the
    request's own; with one: the requested labels, each exactly within the ceiling, or
    `[answers].default_labels` ∩ ceiling when none are requested (never empty)."""
    if requested is not None:
        repeated = sorted({label for label in requested if list(requested).count(label) > 1})
        if repeated:
            raise RequestError(
                f"label(s) given more than once: {', '.join(repeated)}",
                problems=[
                    Problem("", f"label {r!r} is given more than once", field="labels")
                    for r in repeated
                ],
            )
    if caller is None:
        return None if requested is None else list(requested)
    if requested is None:
        allowed = [label for label in settings.answers.default_labels if label in caller.labels]
        if not allowed:
            raise LabelAboveCeiling(
                f"caller {caller.name}: the default labels "
                f"({', '.join(settings.answers.default_labels) or 'none'}) are all above its "
                f"ceiling ({', '.join(caller.labels)})",
                problems=[
                    Problem(
                        "",
                        "no default label is within the caller's ceiling",
                        field="labels",
                        hint=f"pass labels from the ceiling: {', '.join(caller.labels)}",
                        code="label_above_ceiling",
                    )
                ],
            )
        return allowed
    vocabulary = settings.answers.labels
    unknown = [label for label in requested if label not in vocabulary]
    if unknown:
        raise RequestError(
            f"unknown label(s) {', '.join(map(repr, unknown))} -> labels are matched exactly; "
            f"the vocabulary is {', '.join(vocabulary)}",
            problems=[
                Problem(
                    "",
                    f"unknown label {label!r} (labels are matched exactly)",
                    field="labels",
                    hint=f"use one of {', '.join(vocabulary)}",
                    code="unknown_label",
                )
                for label in unknown
            ],
        )
    above = [label for label in requested if label not in caller.labels]
    if above:
        raise above_ceiling(caller, above)
    return list(requested)


def require_within_ceiling(caller: CallerSettings | None, labels: Sequence[str]) -> None:
    """Every label of `labels` within the caller's ceiling (what a search that serves
    records carrying `labels` needs)."""
    if caller is None:
        return
    above = [label for label in labels if label not in caller.labels]
    if above:
        raise above_ceiling(caller, above)


def above_ceiling(caller: CallerSettings, labels: Sequence[str]) -> LabelAboveCeiling:
    shown = ", ".join(labels)
    return LabelAboveCeiling(
        f"label(s) {shown} above the ceiling of caller {caller.name} ({', '.join(caller.labels)})",
        problems=[
            Problem(
                "",
                f"label {label!r} is above the ceiling of caller {caller.name}",
                field="labels",
                hint=f"ask with labels from {', '.join(caller.labels)}, or have an "
                "administrator widen the caller's ceiling in [service].callers",
                code="label_above_ceiling",
            )
            for label in labels
        ],
    )
