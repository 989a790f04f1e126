"""A reader's report on an answer: wrong, incomplete, over_masked or good, with a note.

The design counts on it to catch over-masking ("whoever gets an answer with a useful figure
covered reports it"), so an over_masked report carries the columns the answer's figures lost
to the pseudonymiser and the rule that masked each: the reviewer can declare one harmless
without reading code. Every transport (CLI, HTTP, MCP, the page) records through `report`.

A note is plain text: at most `MAX_NOTE_CHARS` characters, no markup (a tag or a script is
refused, never stored to be rendered later), no control characters but line breaks and tabs.
A calling system reports only the answers it was given: another caller's answer, like an id
that was never logged, is `answer_not_found`.
"""

from __future__ import annotations

import re
from typing import Any, Final

from thoth.errors import Problem, RequestError
from thoth.state import (
    FEEDBACK_KINDS,
    AnswerNotFound,
    Feedback,
    LoggedAnswer,
    StateStore,
)

MAX_NOTE_CHARS: Final = 2000
_ANSWER_ID: Final = re.compile(r"^ans-[0-9a-f]{12}$")
# A tag, a comment or a declaration as a browser reads one: "<b", "</p", "<!--", "<?xml".
# "a < b" is not one (a tag name follows "<" at once).
_MARKUP: Final = re.compile(r"<[/?]?[A-Za-z]|<!")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_report(kind: str, note: str) -> None:
    """Refuse a report that cannot be stored whole, naming each fault."""
    problems: list[Problem] = []
    if kind not in FEEDBACK_KINDS:
        problems.append(
            Problem(
                "",
                f"unknown feedback kind {kind[:40]!r}",
                field="kind",
                hint=f"use one of {', '.join(FEEDBACK_KINDS)}",
                code="feedback_kind_unknown",
            )
        )
    if len(note) > MAX_NOTE_CHARS:
        problems.append(
            Problem(
                "",
                f"the note has {len(note)} characters, more than {MAX_NOTE_CHARS}",
                field="note",
                hint="say what is wrong in a few lines",
                code="feedback_note_too_long",
            )
        )
    elif _MARKUP.search(note):
        problems.append(
            Problem(
                "",
                "the note holds markup (an HTML tag, a comment or a script)",
                field="note",
                hint="write the note as plain text",
                code="feedback_note_markup",
            )
        )
    elif _CONTROL.search(note):
        problems.append(
            Problem(
                "",
                "the note holds control characters",
                field="note",
                hint="write the note as plain text (line breaks and tabs are fine)",
                code="feedback_note_control",
            )
        )
    if problems:
        raise RequestError(
            "feedback refused: " + "; ".join(p.message for p in problems), problems=problems
        )


def report(
    state: StateStore,
    workspace: str,
    answer_id: str,
    kind: str,
    note: str = "",
    *,
    caller: str | None = None,
) -> Feedback:
    """Record a reader's report on a logged answer. `caller`: the calling system reporting
    (None from the CLI, which may report any answer of the workspace)."""
    check_report(kind, note)
    logged = _answer(state, workspace, answer_id, caller)
    masked = list(logged.answer.get("diagnostics", {}).get("masked") or [])
    return state.add_feedback(
        answer_id,
        workspace,
        kind,
        note.strip(),
        caller=caller,
        revision=served_from(logged.answer),
        masked=masked if kind == "over_masked" else [],
    )


def served_from(answer: dict[str, Any]) -> str | None:
    """What an answer was served from: the catalog revision of its figures, or the index
    generation its text was found in (None for an answer that never searched)."""
    provenance = answer.get("provenance") or {}
    if provenance.get("catalog_revision"):
        return f"catalog@{provenance['catalog_revision']}"
    generation = (answer.get("diagnostics") or {}).get("generation")
    return f"generation:{generation}" if generation else None


def _answer(state: StateStore, workspace: str, answer_id: str, caller: str | None) -> LoggedAnswer:
    missing = AnswerNotFound(
        f"answer {answer_id[:40]!r} not found in workspace {workspace} -> report an answer you "
        "were given, by the id it came with (`tht answers log` lists them)"
    )
    if not _ANSWER_ID.match(answer_id):
        raise missing
    try:
        logged = state.get_answer(answer_id)
    except AnswerNotFound as exc:
        raise missing from exc
    if logged.workspace != workspace or (caller is not None and logged.caller != caller):
        raise missing
    return logged
