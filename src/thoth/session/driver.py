"""The LLM driver of a stage: a model proposes decisions, a person chooses.

`drive(workflow, stage, client)`:

1. consults Evidence for the stage (when the stage consults Evidence at all): the receipt is
   recorded like any consult, and `unavailable` blocks the stage before the model is asked;
2. asks the model (OpenAI-compatible or Anthropic tool calling, `thoth.llm.tool_client`)
   with the question, the session's effective decisions and the Evidence results, offering
   one tool, `propose_decision(type, subject, detail, rationale)`, whose `type` is limited to
   the decisions of that stage;
3. checks every call: the tool name, the arguments (a JSON object with exactly those four
   strings), the type allowed in the stage, a subject, a valid Formula proposal. One bad call
   refuses the whole reply (`DriverRefused`, one problem per call, naming it) and nothing is
   saved: a reviewer should not see half of what the model meant;
4. saves the proposals to `<session>/proposals.jsonl`. They are not decisions: nothing enters
   the ledger until a reviewer accepts one (`ProposalBook.accept`, `tht session accept`).

`memory` (F2) is not driven: its candidates are memories, proposed by `tht memory search`;
`memory_promotion` (F8) is a reviewer's gate by definition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from thoth.errors import Problem, ProblemsError, ThothError
from thoth.llm.client import LLMError, ToolCall, ToolClient, ToolSpec
from thoth.session.formulas import FORMULA_PROPOSED, formula_issues
from thoth.session.proposals import Proposal, ProposalBook, ProposalDraft
from thoth.session.stages import DISPLAY_CODES, STAGES, stage_index
from thoth.session.stages_service import (
    CONSULTING_STAGES,
    STAGE_DECISIONS,
    Consultation,
    SessionWorkflow,
)

TOOL_NAME: Final = "propose_decision"
DRIVABLE_STAGES: Final[tuple[str, ...]] = tuple(
    s for s in STAGES if STAGE_DECISIONS[s] and s != "memory"
)

# What each decision type means, for the model (and the reviewer reading the prompt).
TYPE_GUIDE: Final[dict[str, str]] = {
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
        "a NEW formula no published Evidence has: subject: the concept; detail: a JSON object "
        '{"columns": ["schema.table.column", ...], "sql": "<one PostgreSQL expression, no '
        'SELECT>"}'
    ),
    "synthesis_approved": "subject: a one-line summary; detail: the verified schema linking",
    "cte_plan_approved": "subject: a one-line summary; detail: the plan of CTEs, one per line",
    "final_sql_approved": "subject: a one-line summary; detail: the final SQL statement",
}

SYSTEM_PROMPT: Final = """You assist a reviewer who turns a question into SQL, one stage at a time.
Current stage: {stage} ({code}). {purpose}

Propose decisions ONLY by calling the tool `{tool}`, once per decision. Each call is a
proposal: a person accepts or rejects it; nothing you propose is applied on its own.
Decision types allowed in this stage:
{types}

Evidence results are candidates, not truths: cite the evidence ids you relied on in the
rationale, and say when the Evidence does not settle something instead of guessing.
The user message is a JSON object with the question, the decisions that stand so far, and
the Evidence found for this stage (null when the stage does not consult Evidence)."""

_STAGE_PURPOSE_TEXT: Final[dict[str, str]] = {
    "clarification": "Clarify the ambiguous concepts of the question.",
    "rewriting": "Rewrite the question using the clarified concepts.",
    "schema_linking": "Link the rewritten question to tables, columns and formulas.",
    "synthesis": "Verify and summarise the approved schema linking (no new Evidence).",
    "cte": "Plan the CTEs of the query from the rewritten question and the approved schema.",
    "final_sql": "Write the final SQL from the approved CTE plan.",
}


class DriverError(ThothError):
    """The stage could not be driven (the model failed, or the stage is not drivable)."""


class DriverRefused(ProblemsError):
    """The model's reply broke a rule; nothing was saved."""


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: str
    subject: str
    detail: str
    rationale: str


@dataclass(frozen=True)
class DriveResult:
    session_id: str
    stage: str
    model: str
    consultation: Consultation | None
    proposals: list[Proposal] = field(default_factory=list)
    note: str = ""  # the model's prose besides its calls

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "session": self.session_id,
            "stage": self.stage,
            "model": self.model,
            "receipt_seq": self.consultation.receipt.seq if self.consultation else None,
            "evidence_ids": [r.evidence_id for r in self.consultation.results]
            if self.consultation
            else [],
            "proposals": [json.loads(p.model_dump_json()) for p in self.proposals],
            "note": self.note,
        }


def propose_tool(stage: str) -> ToolSpec:
    allowed = list(STAGE_DECISIONS[stage])
    return ToolSpec(
        name=TOOL_NAME,
        description=(
            f"Propose one decision of stage {stage} for the reviewer to accept or reject."
        ),
        parameters={
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": allowed, "description": "decision type"},
                "subject": {"type": "string", "description": "what is decided"},
                "detail": {"type": "string", "description": "the decision's content"},
                "rationale": {"type": "string", "description": "why, citing evidence ids"},
            },
            "required": ["type", "subject", "detail", "rationale"],
            "additionalProperties": False,
        },
    )


def drive(workflow: SessionWorkflow, stage: str, client: ToolClient) -> DriveResult:
    session = workflow.session
    stage_index(stage)  # an unknown name is refused, naming the valid ones
    if stage not in DRIVABLE_STAGES:
        raise DriverError(
            f"session {session.id}: stage {stage} is not driven by a model: "
            + (
                "its candidates are memories -> use `tht memory search` and decide"
                if stage == "memory"
                else "promotion is a reviewer's gate -> use `tht memory promote`"
            )
        )
    # Evidence first: an unavailable search blocks the stage before any model call.
    consultation = workflow.consult(stage) if stage in CONSULTING_STAGES else None
    decisions = session.effective()
    system = SYSTEM_PROMPT.format(
        stage=stage,
        code=DISPLAY_CODES[stage],
        purpose=_STAGE_PURPOSE_TEXT[stage],
        tool=TOOL_NAME,
        types="\n".join(f"- {t}: {TYPE_GUIDE[t]}" for t in STAGE_DECISIONS[stage]),
    )
    user = json.dumps(
        {
            "question": session.question,
            "stage": stage,
            "decisions": [
                {
                    "seq": e.seq,
                    "stage": e.stage,
                    "type": e.type,
                    "subject": e.subject,
                    "detail": e.detail,
                    "rationale": e.rationale,
                }
                for e in decisions
            ],
            "evidence": _evidence(consultation),
        },
        ensure_ascii=False,
        indent=2,
    )
    try:
        reply = client.call_tools(system, user, [propose_tool(stage)])
    except LLMError as exc:
        receipt = (
            f" (the Evidence receipt, seq {consultation.receipt.seq}, stays: that search happened)"
            if consultation
            else ""
        )
        raise DriverError(
            f"session {session.id}, stage {stage}: model {client.name} failed: {exc}; no "
            f"proposal was saved{receipt} -> check [llm] in thoth.toml and the model server, "
            f"then retry `tht session drive {session.id} --stage {stage}`"
        ) from exc
    drafts: list[ProposalDraft] = []
    problems: list[Problem] = []
    for n, call in enumerate(reply.calls, start=1):
        draft = _check(stage, call, problems, f"tool call {n} ({call.id})")
        if draft is not None:
            drafts.append(draft)
    if problems:
        raise DriverRefused(
            f"session {session.id}, stage {stage}: the reply of {client.name} was refused; "
            "nothing was saved -> drive the stage again, or decide it by hand",
            problems,
        )
    saved = ProposalBook(session).add(
        drafts,
        model=client.name,
        receipt_seq=consultation.receipt.seq if consultation else None,
    )
    return DriveResult(session.id, stage, client.name, consultation, saved, reply.text.strip())


def _evidence(consultation: Consultation | None) -> dict[str, Any] | None:
    if consultation is None:
        return None
    return {
        "purpose": consultation.purpose,
        "generation": consultation.generation,
        "results": [
            {
                "evidence_id": r.evidence_id,
                "kind": r.kind,
                "title": r.title,
                "excerpts": list(r.excerpts),
                "caveats": list(r.caveats),
                "citation": r.citation,
            }
            for r in consultation.results
        ],
    }


def _check(stage: str, call: ToolCall, problems: list[Problem], where: str) -> ProposalDraft | None:
    """The call as a proposal, or None with its problems added (code `refused`)."""
    before = len(problems)

    def refuse(message: str, field: str | None = None, hint: str | None = None) -> None:
        problems.append(Problem(where, message, field=field, hint=hint, code="refused"))

    if call.name != TOOL_NAME:
        refuse(f"unknown tool {call.name!r}; the only tool offered is {TOOL_NAME}")
        return None
    if call.arguments is None:
        refuse(f"malformed call: {call.error}")
        return None
    try:
        args = _Arguments.model_validate(call.arguments)
    except ValidationError as exc:
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or None
            message = str(err["msg"])
            if err["type"] == "missing":
                message = "field is missing"
            elif err["type"] == "extra_forbidden":
                message = "unknown field"
            refuse(f"malformed call: {message}", field=loc)
        return None
    allowed = STAGE_DECISIONS[stage]
    if args.type not in allowed:
        refuse(
            f"{args.type} is not allowed in stage {stage}",
            field="type",
            hint=f"allowed here: {', '.join(allowed)}",
        )
    if not args.subject.strip():
        refuse("a proposal needs a subject", field="subject")
    if args.type == FORMULA_PROPOSED:
        for loc, message in formula_issues(args.subject, args.detail):
            refuse(message, field=loc)
    if len(problems) > before:
        return None
    return ProposalDraft(
        stage=stage,
        type=args.type,
        subject=args.subject.strip(),
        detail=args.detail,
        rationale=args.rationale,
        call_id=call.id,
    )
