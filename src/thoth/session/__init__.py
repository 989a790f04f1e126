"""Question→SQL sessions: stages, the append-only ledger of each session and its effective
view (which recorded decisions still stand)."""

from thoth.session.effective import (
    Withdrawal,
    effective_decisions,
    effective_entries,
    memory_markers,
    withdrawals,
)
from thoth.session.ledger import (
    CONTROL_TYPES,
    DECISION_TYPES,
    ENTRY_TYPES,
    MEMORY_MARKER_TYPES,
    RECEIPT_TYPE,
    Entry,
    EntryRefused,
    EvidenceReceipt,
    Ledger,
    LedgerCorrupted,
)
from thoth.session.session import (
    Session,
    SessionDamaged,
    SessionInfo,
    SessionNotFound,
    SessionStore,
)
from thoth.session.stages import DISPLAY_CODES, STAGE_PURPOSE, STAGES, stage_index

__all__ = [
    "CONTROL_TYPES",
    "DECISION_TYPES",
    "DISPLAY_CODES",
    "ENTRY_TYPES",
    "MEMORY_MARKER_TYPES",
    "RECEIPT_TYPE",
    "STAGES",
    "STAGE_PURPOSE",
    "Entry",
    "EntryRefused",
    "EvidenceReceipt",
    "Ledger",
    "LedgerCorrupted",
    "Session",
    "SessionDamaged",
    "SessionInfo",
    "SessionNotFound",
    "SessionStore",
    "Withdrawal",
    "effective_decisions",
    "effective_entries",
    "memory_markers",
    "stage_index",
    "withdrawals",
]
