"""How memory code reads a session's ledger: which clarification a marker is about, which
memories a text cites, when two clarifications say the same thing, and the per-session lock
that makes "check the markers, then append one" a single step.

Shared by promotion, recall, reconcile and the projection, so the four agree on what a marker
means.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from thoth.session import Entry, Session
from thoth.storage import file_lock

PROMOTION_STAGE: Final = "memory_promotion"
RECALL_STAGE: Final = "memory"
PROMOTED: Final = "memory_promoted"
DECLINED: Final = "memory_promotion_declined"
LEGACY_REJECTED: Final = "memory_rejected"
DECLINED_TYPES: Final = frozenset({DECLINED, LEGACY_REJECTED})

# Next to the ledger, not the ledger's own lock: Ledger.append takes that one itself, and a
# second flock on it from this process would wait for ever.
DECISION_LOCK: Final = "memory_decisions.lock"

_SEQ_DETAIL: Final = re.compile(r"seq:(\d+)")
# Cited anywhere in a text ("from memory mem-0003: …"); ids are mem- and at least 4 digits.
_CITED: Final = re.compile(r"(?<![\w-])mem-\d{4,}(?![\w-])")


def marker_target(marker: Entry) -> int | None:
    """The seq of the clarification a memory marker is about: `refs`, else a `seq:N` detail
    (legacy markers carry only the detail)."""
    if marker.refs is not None:
        return marker.refs
    match = _SEQ_DETAIL.fullmatch(marker.detail.strip())
    return int(match.group(1)) if match else None


def cited_memory_ids(*texts: str) -> set[str]:
    return {m for text in texts for m in _CITED.findall(text)}


def adopted_memory(entry: Entry) -> str | None:
    """The memory a clarification was adopted from in F2 (recorded in stage `memory`, citing
    `mem-XXXX` in its rationale), or None for a clarification a reviewer made."""
    if entry.type != "concept_clarified" or entry.stage != RECALL_STAGE:
        return None
    cited = _CITED.findall(entry.rationale)
    return cited[0] if cited else None  # recall writes the adopted id first


def normalised(text: str) -> str:
    """Case, runs of white space and closing punctuation do not change what a text says."""
    return " ".join(text.casefold().split()).rstrip(" .;:")


def content_key(entry: Entry) -> tuple[str, str]:
    return normalised(entry.subject), normalised(entry.detail)


@contextmanager
def decision_lock(session: Session) -> Iterator[None]:
    """Serialise the memory decisions of one session (promote, decline, choose, reconcile's
    markers) across processes: without it two processes could both read "no marker yet" and
    both append one."""
    with file_lock(session.directory / DECISION_LOCK, exclusive=True):
        yield
