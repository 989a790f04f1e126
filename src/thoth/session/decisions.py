"""What a person or a driver may decide in each stage, and the one way to record a decision.

The ledger checks everything about an entry on its own (known names, subject, the stage-bound
types, formulas); this module adds the rule that a decision type belongs to its stages.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from thoth.errors import Problem, ProblemsError
from thoth.session.ledger import Entry
from thoth.session.session import Session
from thoth.session.stages import stage_index

# What a person or a driver may decide in each stage. Memory markers are written by the
# memory commands, control entries by retract/reopen/rollback, receipts by `consult`; none of
# them is a decision. `memory` records a chosen memory as a concept_clarified citing it.
STAGE_DECISIONS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "clarification": ("concept_clarified",),
        "memory": ("concept_clarified",),
        "rewriting": ("question_rewritten",),
        "schema_linking": (
            "table_promoted",
            "table_excluded",
            "column_promoted",
            "concept_formula_approved",
            "concept_formula_rejected",
            "formula_proposed",
        ),
        "synthesis": ("synthesis_approved",),
        "cte": ("cte_plan_approved",),
        "final_sql": ("final_sql_approved",),
        "memory_promotion": (),
    }
)


class DecisionNotAllowed(ProblemsError):
    """A decision type that its stage does not take; nothing was written."""

    code = "decision_not_allowed"


def decide(
    session: Session,
    stage: str,
    type: str,
    *,
    subject: str,
    detail: str = "",
    rationale: str = "",
    base: int | None = None,
) -> Entry:
    """Record a decision of `stage`, refusing a type that stage does not decide (the ledger
    checks everything else: known names, subject, the stage-bound types, formulas)."""
    stage_index(stage)  # an unknown name is refused, naming the valid ones
    allowed = STAGE_DECISIONS[stage]
    if type not in allowed:
        hint = (
            f"decide one of {', '.join(allowed)}"
            if allowed
            else "this stage is settled by `tht memory` commands, not by decisions"
        )
        where = next((s for s, types in STAGE_DECISIONS.items() if type in types), None)
        if where is not None and where != stage:
            hint += f" (a {type} is decided in stage {where})"
        raise DecisionNotAllowed(
            f"session {session.id}: {type} refused in stage {stage}; nothing was written to "
            f"{session.ledger.path}",
            [
                Problem(
                    f"session {session.id}",
                    f"{type} is not decided in stage {stage}",
                    field="type",
                    hint=hint,
                )
            ],
        )
    return session.append(
        stage, type, subject=subject, detail=detail, rationale=rationale, base=base
    )
