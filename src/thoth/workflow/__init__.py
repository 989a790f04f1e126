"""What spans sessions, memories and search: the Evidence consultation of each stage
(`consult`), the LLM driver of a stage and the acceptance of its proposals (`driver`), the
import of a session's Formula proposals into the workspace (`formulas`), and the one place
that opens a workspace's memory stores (`stores`).

Layers: cli -> workflow -> memory -> session -> storage; workflow also uses the runtime
(search, embedder, index backend). Nothing below imports this package."""

from thoth.workflow.consult import (
    Consultation,
    NotAnEvidenceStage,
    SessionWorkflow,
    StageBlocked,
    StageNotReady,
)
from thoth.workflow.driver import (
    DRIVABLE_STAGES,
    TOOL_NAME,
    DriverError,
    DriveResult,
    DriverRefused,
    accept_proposal,
    drive,
)
from thoth.workflow.formulas import ProposalImport, import_proposals
from thoth.workflow.stores import MemoryStores

__all__ = [
    "DRIVABLE_STAGES",
    "TOOL_NAME",
    "Consultation",
    "DriveResult",
    "DriverError",
    "DriverRefused",
    "MemoryStores",
    "NotAnEvidenceStage",
    "ProposalImport",
    "SessionWorkflow",
    "StageBlocked",
    "StageNotReady",
    "accept_proposal",
    "drive",
    "import_proposals",
]
