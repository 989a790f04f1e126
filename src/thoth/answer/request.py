"""The answer request: which fields a caller may send, and their types.

`SearchRequest` is the single list: `request_fields()`, the CLI options, the evaluation cases
and the search itself all follow it, so a new filter cannot be silently dropped by a caller
(the seed's lesson: a filter parameter that was never forwarded widened every search). Unknown
fields and wrong types are errors that name the field, never ignored.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from types import NoneType, UnionType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from thoth.documents.records import MAX_YEAR, MIN_YEAR
from thoth.errors import Problem, RequestError


class SearchRequestError(RequestError):
    """The request is malformed: unknown field, label, channel or source, or a wrong type."""


class SearchRequest(BaseModel):
    """Every field only narrows the search: each becomes one more condition in the index."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str | None = None
    labels: Sequence[str] | None = None
    source: str | None = None
    # Only the years a document can carry: anything else could never match, and a number
    # past the engine's integer range failed inside it.
    year: int | None = Field(default=None, ge=MIN_YEAR, le=MAX_YEAR)
    doc_format: str | None = None


def request_fields() -> tuple[str, ...]:
    """The accepted request fields, in declaration order."""
    return tuple(SearchRequest.model_fields)


def parse_request(data: Mapping[str, Any]) -> dict[str, Any]:
    """Check names and types against SearchRequest; None means "not given". Returns the fields
    given, normalised (strings stripped, lists of strings as lists). Raises SearchRequestError
    naming the field: the messages say what was expected, in words a caller can act on."""
    accepted = request_fields()
    unknown = sorted(str(k) for k in data if k not in accepted)
    if unknown:
        raise SearchRequestError(
            f"unknown request field(s) {', '.join(unknown)} -> accepted: {', '.join(accepted)}"
        )
    hints = typing.get_type_hints(SearchRequest)
    parsed: dict[str, Any] = {}
    for name, value in data.items():
        if value is None:
            continue
        parsed[name] = _in_range(name, _typed(name, value, hints[name]))
    return parsed


def _in_range(name: str, value: Any) -> Any:
    """The bounds SearchRequest declares for a number (`ge`, `le`), checked before anything is
    read; the error names the field and the accepted range."""
    low = high = None
    for bound in SearchRequest.model_fields[name].metadata:  # annotated-types' Ge and Le
        low = getattr(bound, "ge", low)
        high = getattr(bound, "le", high)
    if (low is None or value >= low) and (high is None or value <= high):
        return value
    accepted = f"{low} to {high}" if low is not None and high is not None else f"{low or high}"
    message = f"{name} {value} is out of range: accepted {accepted}"
    raise SearchRequestError(
        message,
        problems=[
            Problem(
                "",
                message,
                field=name,
                hint=f"give a {name} from {accepted}, or leave the filter out",
                code="out_of_range",
            )
        ],
    )


def _typed(name: str, value: Any, annotation: Any) -> Any:
    options = (
        [a for a in typing.get_args(annotation) if a is not NoneType]
        if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union
        else [annotation]
    )
    for option in options:
        origin = typing.get_origin(option)
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if option is str and isinstance(value, str):
            if not value.strip():
                raise SearchRequestError(f"request field {name} is empty -> omit it or fill it")
            return value.strip()
        # A bare string is a Sequence[str] too: refused, it would split into characters.
        if (
            origin is Sequence
            and typing.get_args(option) == (str,)
            and isinstance(value, list | tuple)
            and all(isinstance(v, str) for v in value)
        ):
            return [v.strip() for v in value]
    expected = " or ".join(_type_name(o) for o in options)
    raise SearchRequestError(
        f"request field {name}: expected {expected}, got {type(value).__name__} {value!r}"
    )


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is Sequence:
        return "a list of strings"
    return getattr(annotation, "__name__", str(annotation))
