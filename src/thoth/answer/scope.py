"""The scope of a request: the ONE condition the index applies before similarity.

Every request field becomes part of it, labels included, and nothing downstream can bring back
what it excludes. Labels fail closed: a point is served only if it holds at least one allowed
label and none outside the allowed set — a label removed from the vocabulary since the
generation was built included; a point without labels matches nothing, so it is never served.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from thoth.answer.request import SearchRequestError
from thoth.config import Settings
from thoth.index.base import Match
from thoth.index.records import ANSWER_KINDS


@dataclass(frozen=True)
class Scope:
    where: dict[str, Any]  # the condition, as the index takes it
    readable: dict[str, Any]  # the same condition, for people and the answer log

    def with_channel(self, channel: str | Sequence[str] | None) -> Scope:
        """Only these channels' fragments: one channel, several (searched together), or
        None (every channel)."""
        if channel is None:
            return self
        return Scope({**self.where, "channel": channel}, {**self.readable, "channel": channel})

    def with_entities(self, entities: Sequence[str]) -> Scope:
        """Only the documents of these entities (thoth.entities): what a question naming them
        may be answered from. A fragment without an entity (a wiki page, an Evidence Unit, a
        document whose entity is unknown) is outside."""
        if not entities:
            return self
        ids = list(entities)
        return Scope({**self.where, "entity": ids}, {**self.readable, "entity": ids})


def check_names(settings: Settings, request: Mapping[str, Any]) -> None:
    """Labels, channel and source must be declared: an unknown one is an error, never an
    empty result."""
    vocabulary = list(settings.answers.labels)
    labels = request.get("labels")
    if labels is not None:
        if not labels:
            raise SearchRequestError(
                "request field labels is an empty list -> omit it to use "
                "answers.default_labels, or list labels from the vocabulary "
                f"({', '.join(vocabulary)})"
            )
        unknown = sorted(set(labels) - set(vocabulary))
        if unknown:
            raise SearchRequestError(
                f"unknown label(s) {', '.join(unknown)} -> the label vocabulary "
                f"(answers.labels) is: {', '.join(vocabulary)}"
            )
    declared = {
        "channel": [c.name for c in settings.channels],
        "source": [s.name for s in settings.sources],
    }
    for name, names in declared.items():
        value = request.get(name)
        if value is not None and value not in names:
            raise SearchRequestError(
                f"unknown {name} {value!r} -> declared {name}s: "
                f"{', '.join(names) or 'none (declare them in thoth.toml)'}"
            )


def allowed_labels(settings: Settings, request: Mapping[str, Any]) -> list[str]:
    """The caller's labels (or the default ones): never empty."""
    answers = settings.answers
    requested = request.get("labels")
    allowed = sorted(set(answers.default_labels if requested is None else requested))
    if not allowed:
        raise SearchRequestError(
            "no labels requested and answers.default_labels is empty: nothing may be "
            f"served -> pass labels (vocabulary: {', '.join(answers.labels)})"
        )
    return allowed


def readable(carried: Collection[str], allowed: Collection[str]) -> bool:
    """Whether a thing carrying `carried` labels (a figure, a wiki page) may be shown to a
    request allowed `allowed`: every one of its labels allowed, and at least one (nothing
    unlabelled is ever served: labels fail closed)."""
    return bool(carried) and set(carried) <= set(allowed)


def scope(
    settings: Settings,
    request: Mapping[str, Any],
    allowed: list[str],
    present: Collection[str],
) -> Scope:
    """The condition (without a routed channel). `present`: the labels the generation holds;
    every label that is not allowed is excluded, whichever list names it."""
    excluded = sorted((set(settings.answers.labels) | set(present)) - set(allowed))
    where: dict[str, Any] = {
        "workspace_id": settings.workspace,
        "record_kind": list(ANSWER_KINDS),
        "labels": Match(any_of=tuple(allowed), none_of=tuple(excluded)),
    }
    readable: dict[str, Any] = {
        "workspace_id": settings.workspace,
        "record_kind": list(ANSWER_KINDS),
        "labels": {"allowed": allowed, "excluded": excluded, "unlabelled": "never served"},
        "channel": None,
    }
    for name in ("channel", "source", "year", "doc_format"):
        value = request.get(name)
        if value is not None:
            where[name] = value
            readable[name] = value
    return Scope(where, readable)
