"""What each stage of a question→SQL session decides, when it consults, what it leaves in the
ledger: the one source of the stage instructions.

The built-in driver (`thoth.workflow.driver`) writes its system prompt for a stage from
`purpose`, `decisions_text` and `rules`; the MCP prompt an outside agent reads
(`agent_guide`, `thoth.service.mcp_server`) is projected from the same functions, so the two
never say different things about a stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from thoth.memory.markers import DECLINED, PROMOTED, PROMOTION_STAGE, RECALL_STAGE
from thoth.session.decisions import STAGE_DECISIONS
from thoth.session.formulas import FORMULA_PROPOSED
from thoth.session.stages import CONSULTING_STAGES, DISPLAY_CODES, STAGES

# What may be decided in each stage: the stage's decisions, and in memory_promotion (which has
# no decision) the reviewer's two promotion verdicts.
DRIVEN_TYPES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {**STAGE_DECISIONS, PROMOTION_STAGE: (PROMOTED, DECLINED)}
)

# What each decision type means (for the model, the agent and the reviewer reading them).
TYPE_GUIDE: Final[Mapping[str, str]] = MappingProxyType(
    {
        "concept_clarified": "subject: a concept named in the question; detail: what it means here",
        "question_rewritten": (
            "subject: the question rewritten to be self-contained and unambiguous, using the "
            "clarified concepts; detail: optional notes"
        ),
        "table_promoted": "subject: a table the SQL needs, as schema.table; detail: why",
        "table_excluded": "subject: a tempting table the SQL must not use, as schema.table",
        "column_promoted": "subject: a column the SQL needs, as schema.table.column",
        "concept_formula_approved": (
            "subject: a concept; detail: the evidence id of the published formula to use for it"
        ),
        "concept_formula_rejected": (
            "subject: a concept; detail: the evidence id of a published formula that does not fit"
        ),
        FORMULA_PROPOSED: (
            "a NEW formula no published Evidence has: subject: the concept; detail: a JSON "
            'object {"columns": ["schema.table.column", ...], "sql": "<one PostgreSQL '
            'expression, no SELECT>"}'
        ),
        "synthesis_approved": "subject: a one-line summary; detail: the verified schema linking",
        "cte_plan_approved": "subject: a one-line summary; detail: the plan of CTEs, one per line",
        "final_sql_approved": (
            "subject: a one-line summary; detail: the final SQL: exactly one SELECT (or WITH ... "
            "SELECT) statement in the database's dialect, without comments"
        ),
        PROMOTED: (
            "the candidate is worth reusing in other sessions: subject: the candidate's "
            "subject; detail: seq:N, the candidate's seq"
        ),
        DECLINED: (
            "the candidate is not a memory (specific to this question, or a near-duplicate of "
            "an existing memory): subject: the candidate's subject; detail: seq:N, the "
            "candidate's seq"
        ),
    }
)
# Where a type means something else in one stage.
STAGE_TYPE_GUIDE: Final[Mapping[tuple[str, str], str]] = MappingProxyType(
    {
        (RECALL_STAGE, "concept_clarified"): (
            "adopt one proposed memory: subject: the memory's subject; detail: the memory's "
            "detail; rationale: cite exactly one memory id (mem-XXXX) and why it fits this "
            "question"
        ),
    }
)

STAGE_PURPOSE_TEXT: Final[Mapping[str, str]] = MappingProxyType(
    {
        "clarification": "Clarify the ambiguous concepts of the question.",
        "rewriting": "Rewrite the question using the clarified concepts.",
        "schema_linking": "Link the rewritten question to tables, columns and formulas.",
        "synthesis": "Verify and summarise the approved schema linking (no new Evidence).",
        "cte": "Plan the CTEs of the query from the rewritten question and the approved schema.",
        "final_sql": "Write the final SQL from the approved CTE plan.",
        "memory": "Choose which memories of other sessions clarify a concept of this question.",
        "memory_promotion": "Decide which clarified concepts of this session become memories.",
    }
)

EVIDENCE_RULE: Final = """\
Evidence results are candidates, not truths: cite the evidence ids you relied on in the
rationale, and say when the Evidence does not settle something instead of guessing."""

MEMORY_RULES: Final[Mapping[str, str]] = MappingProxyType(
    {
        RECALL_STAGE: """\
The memories are concepts that reviewers clarified and promoted in OTHER sessions. Propose
adopting one only when it means the same thing in this question; one call per memory, its
rationale citing exactly that memory's id. Propose nothing when none fits.""",
        PROMOTION_STAGE: """\
The candidates are concepts clarified in THIS session. For each one propose either
memory_promoted or memory_promotion_declined, with detail seq:N naming the candidate. A
candidate with near_duplicates repeats an existing memory: prefer declining it.""",
    }
)

# What a stage leaves in the ledger besides its decisions (the receipts a reviewer audits).
RECEIPTS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "clarification": "an evidence_receipt per consultation (the evidence ids it found, "
        "at the generation and revision searched)",
        "memory": "a concept_clarified per memory chosen, its rationale citing the mem id",
        "rewriting": "an evidence_receipt per consultation",
        "schema_linking": "an evidence_receipt per consultation, with the schema "
        "tables and columns proposed",
        "synthesis": "none: it consults nothing",
        "cte": "an evidence_receipt per consultation",
        "final_sql": "an evidence_receipt per consultation; the run of the approved "
        "SQL records an sql_run receipt (status, row count, duration; never the rows)",
        "memory_promotion": "memory_promoted / memory_promotion_declined markers per candidate; "
        "a session_closed entry once no candidate is left",
    }
)


def purpose(stage: str) -> str:
    return STAGE_PURPOSE_TEXT[stage]


def decisions_text(stage: str) -> str:
    """The decision types of `stage`, one `- type: meaning` line each."""
    return "\n".join(
        f"- {t}: {STAGE_TYPE_GUIDE.get((stage, t), TYPE_GUIDE[t])}" for t in DRIVEN_TYPES[stage]
    )


def rules(stage: str) -> str:
    """How to read what the stage is shown: Evidence, or memories / promotion candidates."""
    return MEMORY_RULES.get(stage, EVIDENCE_RULE)


def consults(stage: str) -> str | None:
    """The Evidence purpose `stage` consults with, or None when it consults nothing."""
    return CONSULTING_STAGES.get(stage)


def stage_section(stage: str) -> str:
    """One stage as the agent's prompt teaches it."""
    purpose_ = consults(stage)
    consult = (
        f"Consult first (session_consult, stage {stage}; Evidence purpose {purpose_}): a "
        "decision must rest on what the consultation found."
        if purpose_ is not None
        else "It consults no Evidence."
    )
    return "\n".join(
        (
            f"## {DISPLAY_CODES[stage]} {stage}",
            purpose(stage),
            consult,
            "Decisions:",
            decisions_text(stage),
            rules(stage),
            f"Receipts: {RECEIPTS[stage]}.",
        )
    )


def agent_guide(intro: str) -> str:
    """Every stage, in order, after `intro` (how the caller's own tools apply them)."""
    return "\n\n".join((intro, *(stage_section(s) for s in STAGES)))


__all__ = [
    "DRIVEN_TYPES",
    "RECEIPTS",
    "STAGE_PURPOSE_TEXT",
    "TYPE_GUIDE",
    "agent_guide",
    "consults",
    "decisions_text",
    "purpose",
    "rules",
    "stage_section",
]
