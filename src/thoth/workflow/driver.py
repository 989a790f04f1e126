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

The memory stages never consult Evidence. In `memory` (F2) the model is shown the memories
`recall.search_memories` proposes for the session and may propose adopting one: a
`concept_clarified` whose rationale cites exactly one of the proposed `mem-XXXX` ids (the
proposal's subject and detail are that memory's). In `memory_promotion` (F8) it is shown the
promotion `preview` candidates and proposes `memory_promoted` or `memory_promotion_declined`
with `detail` = `seq:N` of a candidate. With nothing to offer the model is not asked.
`accept_proposal` applies such proposals through `recall.choose`, `promotion.save_one` or
`promotion.decline`, so the registry, the index and the markers are written as the memory
commands write them.

This is the workflow layer: it spans a session, Evidence search (through `consult`) and the
memory stores (`thoth.workflow.stores`); neither sessions nor memories import it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from thoth.errors import Problem, ProblemsError, ThothError
from thoth.llm.client import LLMError, ToolCall, ToolClient, ToolReply, ToolSpec
from thoth.memory.markers import (
    PROMOTED,
    PROMOTION_STAGE,
    RECALL_STAGE,
    cited_memory_ids,
)
from thoth.memory.promotion import decline, preview, save_one
from thoth.memory.recall import choose, search_memories
from thoth.privacy import Pseudonymizer, protect_tree, restore_tree
from thoth.runtime import Runtime
from thoth.session.decisions import decide
from thoth.session.formulas import FORMULA_PROPOSED, formula_issues
from thoth.session.ledger import Entry
from thoth.session.proposals import Proposal, ProposalBook, ProposalDraft
from thoth.session.session import Session
from thoth.session.stages import CONSULTING_STAGES, DISPLAY_CODES, STAGES, stage_index
from thoth.workflow import guide
from thoth.workflow.consult import Consultation, SessionWorkflow
from thoth.workflow.guide import DRIVEN_TYPES
from thoth.workflow.sql import check_decision, read_catalog
from thoth.workflow.stores import MemoryStores

TOOL_NAME: Final = "propose_decision"
DRIVABLE_STAGES: Final[tuple[str, ...]] = tuple(s for s in STAGES if DRIVEN_TYPES[s])
_SEQ_DETAIL: Final = re.compile(r"seq:(\d+)")

SYSTEM_PROMPT: Final = """You assist a reviewer who turns a question into SQL, one stage at a time.
Current stage: {stage} ({code}). {purpose}

Propose decisions ONLY by calling the tool `{tool}`, once per decision. Each call is a
proposal: a person accepts or rejects it; nothing you propose is applied on its own.
Decision types allowed in this stage:
{types}

{sources}"""

# What the user message holds, after the stage's rules (thoth.workflow.guide).
_EVIDENCE_PAYLOAD: Final = """\
The user message is a JSON object with the question, the decisions that stand so far, the
Evidence found for this stage (null when the stage does not consult Evidence) and, when a
database is declared, `database`: its dialect and the tables and columns proposed (schema
linking) or promoted (cte, final_sql). Name only tables and columns listed there, exactly as
written."""

_MEMORY_PAYLOAD: Final[dict[str, str]] = {
    RECALL_STAGE: """\
The user message is a JSON object with the question, the decisions that stand so far, and
`memories`: the memories proposed for this session.""",
    PROMOTION_STAGE: """\
The user message is a JSON object with the question, the decisions that stand so far, and
`candidates`: the promotion candidates.""",
}


def system_prompt(stage: str) -> str:
    """The model's instructions for `stage`: the stage's guide (thoth.workflow.guide, which the
    MCP prompt projects too) and what the user message holds."""
    return SYSTEM_PROMPT.format(
        stage=stage,
        code=DISPLAY_CODES[stage],
        purpose=guide.purpose(stage),
        tool=TOOL_NAME,
        types=guide.decisions_text(stage),
        sources=guide.rules(stage) + "\n" + _MEMORY_PAYLOAD.get(stage, _EVIDENCE_PAYLOAD),
    )


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
    offered: tuple[str, ...] = ()  # memory stages: the mem ids / seq:N the model was shown

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
            "offered": list(self.offered),
        }


@dataclass(frozen=True)
class _Offer:
    """What a memory stage shows the model, and what its calls may name."""

    payload: dict[str, Any]  # the user message's extra key
    subjects: dict[str, str]  # mem id or seq:N -> the subject it stands for
    details: dict[str, str]  # mem id -> the memory's detail (F2 only)


def propose_tool(stage: str) -> ToolSpec:
    allowed = list(DRIVEN_TYPES[stage])
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
        raise DriverError(f"session {session.id}: stage {stage} is not driven by a model")
    # Evidence first: an unavailable search blocks the stage before any model call. The memory
    # stages never search Evidence: they offer memories (F2) or promotion candidates (F8).
    consultation = workflow.consult(stage) if stage in CONSULTING_STAGES else None
    offer = _offer(workflow, stage)
    if offer is not None and not offer.subjects:
        what = "no memory is proposed" if stage == RECALL_STAGE else "no candidate is left"
        return DriveResult(
            session.id, stage, client.name, None, note=f"{what}: the model was not asked"
        )
    decisions = session.effective()
    system = system_prompt(stage)
    # Identities leave only as placeholders ([privacy]; the identity when it is off): the
    # payload is protected before it is serialised, the reply restored before it is checked.
    pseudonymizer = workflow.runtime.pseudonymizer
    user = json.dumps(
        protect_tree(
            pseudonymizer,
            {
                "question": session.question,
                "stage": stage,
                **(offer.payload if offer is not None else {}),
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
                **_database(workflow, stage, consultation),
            },
        ),
        ensure_ascii=False,
        indent=2,
    )
    try:
        reply = _restored(client.call_tools(system, user, [propose_tool(stage)]), pseudonymizer)
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
    named: set[str] = set()  # memory stages: the mem ids / seqs already proposed in this reply
    for n, call in enumerate(reply.calls, start=1):
        where = f"tool call {n} ({call.id})"
        draft = _check(stage, call, problems, where)
        if draft is not None and offer is not None:
            draft = _check_offered(stage, draft, offer, named, problems, where)
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
    return DriveResult(
        session.id,
        stage,
        client.name,
        consultation,
        saved,
        reply.text.strip(),
        tuple(offer.subjects) if offer is not None else (),
    )


def _restored(reply: ToolReply, pseudonymizer: Pseudonymizer) -> ToolReply:
    """The reply with the placeholders turned back: the reviewer reads, and the ledger
    records, the real names."""
    return ToolReply(
        pseudonymizer.restore(reply.text),
        tuple(replace(c, arguments=restore_tree(pseudonymizer, c.arguments)) for c in reply.calls),
    )


def _offer(workflow: SessionWorkflow, stage: str) -> _Offer | None:
    """What a memory stage shows the model (None for the other stages)."""
    session = workflow.session
    if stage not in (RECALL_STAGE, PROMOTION_STAGE):
        return None
    with MemoryStores.for_runtime(workflow.runtime) as stores:
        if stage == RECALL_STAGE:
            found = search_memories(
                session.question,
                session,
                registry=stores.registry,
                index=stores.index,
                embedder=stores.embedder,
            )
            return _Offer(
                {"memories": [asdict(p) for p in found.proposals]},
                {p.memory_id: p.subject for p in found.proposals},
                {p.memory_id: p.detail for p in found.proposals},
            )
        shown = preview(session, stores.registry, index=stores.index, embedder=stores.embedder)
    return _Offer(
        {"candidates": [asdict(c) for c in shown.candidates]},
        {f"seq:{c.seq}": c.subject for c in shown.candidates},
        {},
    )


def _check_offered(
    stage: str,
    draft: ProposalDraft,
    offer: _Offer,
    named: set[str],
    problems: list[Problem],
    where: str,
) -> ProposalDraft | None:
    """A memory-stage proposal names exactly one offered memory (F2) or candidate (F8), once
    per reply; its subject (and F2 detail) become that memory's or candidate's own, so the
    reviewer sees what accepting it records."""
    offered = ", ".join(offer.subjects)
    if stage == RECALL_STAGE:
        cited = sorted(cited_memory_ids(draft.rationale))
        unknown = [m for m in cited if m not in offer.subjects]
        if len(cited) != 1 or unknown:
            if not cited:
                message = "the rationale cites no memory id"
            elif unknown:
                verb = "was" if len(unknown) == 1 else "were"
                message = f"{', '.join(unknown)} {verb} not proposed for this session"
            else:
                message = (
                    f"the rationale cites {len(cited)} memories ({', '.join(cited)}): one call "
                    "adopts one memory"
                )
            problems.append(
                Problem(
                    where,
                    message,
                    field="rationale",
                    hint=f"cite exactly one of the proposed memories: {offered}",
                    code="refused",
                )
            )
            return None
        key = cited[0]
        detail = offer.details[key]
    else:
        match = _SEQ_DETAIL.fullmatch(draft.detail.strip())
        key = f"seq:{match.group(1)}" if match else ""
        if key not in offer.subjects:
            problems.append(
                Problem(
                    where,
                    f"{draft.detail.strip()!r} is not a candidate of the promotion preview"
                    if match
                    else f"detail must be seq:N naming a candidate, not {draft.detail!r}",
                    field="detail",
                    hint=f"the candidates are {offered}",
                    code="refused",
                )
            )
            return None
        detail = key
    if key in named:
        problems.append(
            Problem(
                where,
                f"{key} is already proposed by an earlier call of this reply",
                hint="one proposal per memory or candidate",
                code="refused",
            )
        )
        return None
    named.add(key)
    return ProposalDraft(
        stage=draft.stage,
        type=draft.type,
        subject=offer.subjects[key],
        detail=detail,
        rationale=draft.rationale,
        call_id=draft.call_id,
    )


def accept_proposal(
    session: Session,
    no: int,
    *,
    note: str = "",
    stores: MemoryStores,
    runtime: Runtime | None = None,
) -> Entry:
    """The reviewer accepts proposal `no`. A memory-stage proposal is applied by the memory
    code: F2 by `recall.choose` (the clarification recorded is the memory's, citing it), F8 by
    `promotion.save_one` or `promotion.decline` (registry, index, marker in their order). Any
    other is decided like a reviewer's own decision: with `runtime`, after the database had
    its say (`thoth.workflow.sql.check_decision`: names in the schema, SQL explained)."""

    def apply(proposal: Proposal, rationale: str) -> Entry:
        if proposal.stage == RECALL_STAGE:
            cited = sorted(cited_memory_ids(proposal.rationale))
            if len(cited) != 1:  # checked when proposed: the file was edited by hand
                raise ThothError(
                    f"session {session.id}: proposal {no} cites {len(cited)} memories, not "
                    "one; nothing was written -> reject it and drive the stage again"
                )
            return choose(session, cited[0], registry=stores.registry).entry
        if proposal.stage == PROMOTION_STAGE:
            match = _SEQ_DETAIL.fullmatch(proposal.detail)
            if match is None:  # checked when proposed: the file was edited by hand
                raise ThothError(
                    f"session {session.id}: proposal {no} has detail {proposal.detail!r}, not "
                    "seq:N; nothing was written -> reject it and drive the stage again"
                )
            seq = int(match.group(1))
            if proposal.type == PROMOTED:
                return save_one(
                    session,
                    seq,
                    registry=stores.registry,
                    index=stores.index,
                    embedder=stores.embedder,
                    rationale=rationale,
                ).marker
            return decline(session, seq, registry=stores.registry, rationale=rationale).marker
        if runtime is not None:
            check_decision(
                runtime, session, proposal.stage, proposal.type, proposal.subject, proposal.detail
            )
        return decide(
            session,
            proposal.stage,
            proposal.type,
            subject=proposal.subject,
            detail=proposal.detail,
            rationale=rationale,
        )

    return ProposalBook(session).accept(no, note=note, apply=apply)


def _database(
    workflow: SessionWorkflow, stage: str, consultation: Consultation | None
) -> dict[str, Any]:
    """What the model sees of the database: at schema_linking the proposed tables and
    columns; at cte and final_sql the promoted tables with every column. Nothing without a
    [database]."""
    settings = workflow.runtime.ws.settings.database
    if settings is None:
        return {}
    if consultation is not None and consultation.schema is not None:
        return {"database": {"dialect": settings.dialect, **consultation.schema.as_dict()}}
    if stage not in ("cte", "final_sql"):
        return {}
    where = f"session {workflow.session.id}, stage {stage}"
    catalog = read_catalog(workflow.runtime, where)
    promoted = [e.subject for e in workflow.session.effective() if e.type == "table_promoted"]
    tables = []
    for name in promoted:
        table = catalog.table(name)
        if table is None:
            continue
        columns = [c for c in catalog.columns.values() if c.table == table.table]
        tables.append(
            {
                "table": table.table,
                "description": table.description,
                "primary_key": list(table.primary_key),
                "foreign_keys": list(table.foreign_keys),
                "columns": [
                    {
                        "column": c.column,
                        "type": c.type,
                        "description": c.description,
                        "values": c.values,
                        "samples": list(c.samples),
                    }
                    for c in sorted(columns, key=lambda c: c.ordinal)
                ],
            }
        )
    return {"database": {"dialect": settings.dialect, "tables": tables}}


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
    allowed = DRIVEN_TYPES[stage]
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
