"""Question→SQL sessions: stages, the append-only ledger of each session and its effective
view (which recorded decisions still stand), the decisions each stage takes and the proposals
a model made for a reviewer.

Sessions know nothing of memories, search services or the runtime: the workflow layer
(thoth.workflow) joins them to Evidence search and the memory stores."""

from thoth.session.decisions import STAGE_DECISIONS, DecisionNotAllowed, decide
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
    REUSABLE_TYPES,
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
from thoth.session.stages import (
    CONSULTING_STAGES,
    DISPLAY_CODES,
    STAGE_PURPOSE,
    STAGES,
    stage_index,
)

__all__ = [
    "CONSULTING_STAGES",
    "CONTROL_TYPES",
    "DECISION_TYPES",
    "DISPLAY_CODES",
    "ENTRY_TYPES",
    "MEMORY_MARKER_TYPES",
    "RECEIPT_TYPE",
    "REUSABLE_TYPES",
    "STAGES",
    "STAGE_DECISIONS",
    "STAGE_PURPOSE",
    "DecisionNotAllowed",
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
    "decide",
    "effective_decisions",
    "effective_entries",
    "memory_markers",
    "stage_index",
    "withdrawals",
]
