"""The effective view of a ledger: which recorded entries still stand.

The ledger never changes; this view is computed on every read. Entries are taken in seq
order. A *control* entry (retraction, reopen, rollback) withdraws earlier non-control
entries; an entry withdrawn once stays withdrawn, and only the first control that withdrew
it is reported (`withdrawals`). The rules, where `stage order` is the workflow order of
`thoth.session.stages.STAGES` (clarification first, memory_promotion last):

1. Retraction. A `retraction` with `refs = N` withdraws entry N. Only decisions, declined and
   legacy-rejected memory markers can be retracted; the ledger refuses a retraction of a
   retraction, of a reopen or rollback, of an evidence receipt, of a memory_promoted marker,
   and of an entry already retracted. A retraction is permanent: no later rollback or reopen
   brings the entry back.
2. Rollback to stage S, recorded at seq R. Every entry with seq < R whose stage comes
   *after* S in stage order becomes stale. Entries of S itself and of earlier stages stand:
   a rollback keeps the stage it returns to and redoes what follows it.
3. Reopen of stage S, recorded at seq R. Every entry with seq < R whose stage is S *or*
   comes after S becomes stale: the stage itself is being redone, and what later stages
   built on it with it.
4. Entries recorded after a rollback or reopen (seq > R) are not touched by it; a later
   rollback or reopen applies the same rules to them again. So reopening a stage twice
   leaves only the decisions made after the second reopen.
5. `memory_promoted` markers never go stale. Promotion wrote a record into the global
   registry, which no rollback or reopen undoes; forgetting the marker would make promotion
   offer the same clarification again. Declined and legacy-rejected markers follow rules 1–3
   like decisions: redoing the stage means deciding again.

`effective_decisions` returns the standing decisions (DECISION_TYPES only); control entries,
memory markers and evidence receipts are not decisions. `memory_markers` returns the standing
memory markers, which promotion needs. `effective_entries` returns every standing non-control
entry (decisions, markers, receipts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from thoth.session.ledger import CONTROL_TYPES, DECISION_TYPES, MEMORY_MARKER_TYPES, Entry
from thoth.session.stages import stage_index

Reason = Literal["retracted", "rollback", "reopen"]

# Rule 5: records of writes outside the session, which stage changes cannot undo.
_OUTLIVES_STAGE_CHANGES: Final = frozenset({"memory_promoted"})


@dataclass(frozen=True)
class Withdrawal:
    """Entry `seq` no longer stands because of control entry `by`."""

    seq: int
    by: int
    reason: Reason


def withdrawals(entries: Iterable[Entry]) -> dict[int, Withdrawal]:
    """Every withdrawn non-control entry, by seq, with the first control that withdrew it."""
    ordered = sorted(entries, key=lambda e: e.seq)
    found: dict[int, Withdrawal] = {}
    for control in ordered:
        if control.type not in CONTROL_TYPES:
            continue
        for entry in ordered:
            if entry.seq >= control.seq:
                break
            if entry.type in CONTROL_TYPES or entry.seq in found:
                continue
            reason = _withdraws(control, entry)
            if reason is not None:
                found[entry.seq] = Withdrawal(seq=entry.seq, by=control.seq, reason=reason)
    return dict(sorted(found.items()))


def _withdraws(control: Entry, entry: Entry) -> Reason | None:
    if control.type == "retraction":
        return "retracted" if control.refs == entry.seq else None
    if entry.type in _OUTLIVES_STAGE_CHANGES:
        return None
    target, own = stage_index(control.stage), stage_index(entry.stage)
    if control.type == "rollback" and own > target:
        return "rollback"
    if control.type == "reopen" and own >= target:
        return "reopen"
    return None


def effective_entries(entries: Iterable[Entry]) -> list[Entry]:
    """Standing non-control entries (decisions, memory markers, receipts) in seq order."""
    ordered = sorted(entries, key=lambda e: e.seq)
    gone = withdrawals(ordered)
    return [e for e in ordered if e.type not in CONTROL_TYPES and e.seq not in gone]


def effective_decisions(entries: Iterable[Entry]) -> list[Entry]:
    """Standing decisions in seq order: what the session has settled."""
    return [e for e in effective_entries(entries) if e.type in DECISION_TYPES]


def memory_markers(entries: Iterable[Entry]) -> list[Entry]:
    """Standing memory markers in seq order (promoted ones always stand, see rule 5)."""
    return [e for e in effective_entries(entries) if e.type in MEMORY_MARKER_TYPES]
