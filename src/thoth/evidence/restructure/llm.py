"""LLM restructurer: one call per changed source to any OpenAI-compatible or Anthropic model.

The model gets the normalised text, the eight kind schemas, the rules (do not invent, flag
doubts), and the prior units with their IDs. It may reuse only those IDs; new units come back
without an ID and the preparer assigns one. Malformed JSON, an unknown ID or a failed call fail
the source with an attributed error; there is no retry.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from thoth.evidence.document import unit_to_mapping
from thoth.evidence.model import (
    KINDS,
    PURPOSES,
    DomainData,
    EnumData,
    ExampleData,
    FormulaData,
    GlossaryData,
    Kind,
    MappingData,
    NormalizationData,
    ReferenceData,
    Unit,
)
from thoth.evidence.restructure.base import Draft, RestructureError, Restructuring, ReviewNote
from thoth.evidence.sources import SourceFile
from thoth.llm.client import ChatClient, LLMError, ReplySchema
from thoth.privacy import Pseudonymizer, protect_tree, restore_tree

_KIND_MODELS: dict[str, type[BaseModel]] = {
    "formula": FormulaData,
    "enum": EnumData,
    "mapping": MappingData,
    "normalization": NormalizationData,
    "glossary": GlossaryData,
    "domain": DomainData,
    "example": ExampleData,
    "reference": ReferenceData,
}

SYSTEM_PROMPT = """You restructure one source document into typed Evidence Units for review by a
person in Git. Rules you must follow:
- Do not invent: every fact in a unit must be stated in the source. Never merge sources.
- Flag doubts: when the source is ambiguous, contradictory or incomplete, add a review item
  {"code": "<snake_case>", "message": "<what is unclear>", "field": "<optional field path>"}
  instead of resolving it silently.
- Each unit has exactly one kind, chosen from the most structured to the most general:
  formula, enum, mapping, normalization, glossary, domain, example, reference. `domain` is the
  fallback for a rule; `reference` only for a link that is itself the answer.
- A formula is ONE composable PostgreSQL expression (never SELECT/WITH/DDL/DML). A documented
  full query belongs in an `example`.
- Each unit quotes 1 to 5 supporting excerpts copied verbatim from the source text (at most
  1000 characters each).
- Prior units: keep the ID of a unit that still represents the same content (even if you
  reclassify it); propose minimal changes. A new unit has "id": null. You may only use IDs you
  were given. A prior unit the source no longer supports goes in "retirement_candidates" with a
  reason; never drop one silently. A real split gives new units (id null) and the old one
  becomes a retirement candidate.
Reply with ONE JSON object and nothing else:
{"units": [{"id": string|null, "title": string, "kind": string, "purposes": [string],
  "applies_to": {"concepts": [string], "tables": [string], "columns": [string]},
  "caveats": [string], "review_items": [object], "data": object,
  "supporting_excerpts": [string], "body": string}],
 "retirement_candidates": [{"id": string, "reason": string}]}
"""


def _schemas() -> dict[str, Any]:
    return {kind: model.model_json_schema() for kind, model in _KIND_MODELS.items()}


def build_user_message(
    source: SourceFile,
    prior: Sequence[Unit],
    language: str,
    pseudonymizer: Pseudonymizer,
) -> str:
    """The payload, its strings protected before it is serialised (a name is found whatever
    JSON would escape in it)."""
    prior_units = []
    for unit in prior:
        data = unit_to_mapping(unit)
        prior_units.append(
            {
                "id": unit.id,
                "title": unit.title,
                "kind": unit.kind,
                "purposes": unit.purposes,
                "applies_to": data["applies_to"],
                "caveats": unit.caveats,
                "review_items": data["review_items"],
                "data": data[unit.kind],
                "supporting_excerpts": unit.provenance.supporting_excerpts,
                "body": unit.body,
            }
        )
    payload = {
        "source_file": source.rel,
        "language": language,
        "purposes": list(PURPOSES),
        "kinds": list(KINDS),
        "kind_schemas": _schemas(),
        "prior_units": prior_units,
        "allowed_ids": [u.id for u in prior],
        "source_text": source.normalized,
    }
    return json.dumps(protect_tree(pseudonymizer, payload), ensure_ascii=False, indent=1)


# -- the reply contract ------------------------------------------------------------------------
# One set of models is the contract three times over: its JSON schema goes to the provider as
# structured output (REPLY_SCHEMA), it checks the reply (strict types, no key outside the
# contract), and a failure names the unit and field. Optional keys may be absent or null.


class _Contract(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


def _known_id(value: object, info: ValidationInfo) -> object:
    """An id the model may use: one of the prior ids it was given (`allowed` in the context)."""
    allowed: set[str] = (info.context or {}).get("allowed", set())
    if not isinstance(value, str) or value not in allowed:
        raise PydanticCustomError(
            "unknown_id",
            "unknown id {value}",
            {"value": repr(value), "allowed": ", ".join(sorted(allowed)) or "none were given"},
        )
    return value


class ReplyAppliesTo(_Contract):
    concepts: list[str] | None = None
    tables: list[str] | None = None
    columns: list[str] | None = None


class ReplyReviewItem(_Contract):
    code: str
    message: str
    field: str | None = None


class ReplyUnit(_Contract):
    id: str | None = Field(default=None, description="A prior unit's id, or null for a new unit")
    title: str
    kind: Kind
    purposes: list[str] | None = None
    applies_to: ReplyAppliesTo | None = None
    caveats: list[str] | None = None
    review_items: list[ReplyReviewItem] | None = None
    data: dict[str, Any] = Field(description="The kind's data, as in kind_schemas")
    supporting_excerpts: list[str] | None = None
    body: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _prior_id(cls, value: object, info: ValidationInfo) -> object:
        return value if value is None else _known_id(value, info)


class ReplyCandidate(_Contract):
    id: str
    reason: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _prior_id(cls, value: object, info: ValidationInfo) -> object:
        return _known_id(value, info)


class RestructureReply(_Contract):
    """What the model answers for one source."""

    units: list[ReplyUnit]
    retirement_candidates: list[ReplyCandidate] | None = None


REPLY_SCHEMA = ReplySchema(
    "evidence_units",
    "The Evidence Units restructured from the source, and the prior units it no longer supports.",
    RestructureReply.model_json_schema(),
)

# Pydantic's wording for the failures a model reply can have, said the way this module's
# errors say them. Any other failure keeps pydantic's own message.
_SAID = {
    "missing": "is missing",
    "extra_forbidden": "is not part of the reply contract",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
}


def _where(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _say(error: ErrorDetails) -> str:
    where = _where(error["loc"])
    kind = error["type"]
    if kind == "unknown_id":
        ctx = error.get("ctx", {})
        return (
            f"the model returned {error['msg']} in {where}: only the ids it was given may be "
            f"used ({ctx.get('allowed')})"
        )
    if kind == "literal_error" and where.endswith(".kind"):
        return f"{where} {error['input']!r} is not one of {', '.join(KINDS)}"
    if not where:
        return 'the reply must be an object with a "units" list'
    return f"{where}: {_SAID.get(kind, error['msg'])}"


def parse_reply(text: str, allowed: set[str]) -> Restructuring:
    """The model's reply as drafts and retirement candidates; RestructureError names every
    unit and field that breaks the contract."""
    try:
        raw = json.loads(text)
    except RecursionError as exc:
        raise RestructureError("the model reply is not valid JSON (nested too deeply)") from exc
    except json.JSONDecodeError as exc:
        raise RestructureError(
            f"the model reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    try:
        reply = RestructureReply.model_validate(raw, context={"allowed": allowed})
    except ValidationError as exc:
        said = "; ".join(_say(e) for e in exc.errors(include_url=False))
        raise RestructureError(f"malformed model reply: {said}") from exc
    drafts = [_draft(u) for u in reply.units]
    unsupported = {
        c.id: c.reason or "the model says the source no longer supports it"
        for c in reply.retirement_candidates or []
    }
    return Restructuring(drafts=drafts, unsupported=unsupported)


def _draft(unit: ReplyUnit) -> Draft:
    applies = unit.applies_to or ReplyAppliesTo()
    return Draft(
        title=unit.title,
        kind=unit.kind,
        data=unit.data,
        excerpts=unit.supporting_excerpts or [],
        body=unit.body or "",
        purposes=unit.purposes or None,
        applies_to={
            "concepts": applies.concepts or [],
            "tables": applies.tables or [],
            "columns": applies.columns or [],
        },
        caveats=unit.caveats or [],
        review_items=[ReviewNote(i.code, i.message, i.field) for i in unit.review_items or []],
        existing_id=unit.id,
    )


def _restore_reply(text: str, pseudonymizer: Pseudonymizer) -> str:
    """The reply with the placeholders turned back, string by string (a restored name may
    hold a quote JSON must escape); a reply that is not JSON is left for parse_reply to
    refuse, restored as text."""
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return pseudonymizer.restore(text)
    return json.dumps(restore_tree(pseudonymizer, raw), ensure_ascii=False)


class LLMRestructurer:
    def __init__(self, client: ChatClient, pseudonymizer: Pseudonymizer) -> None:
        self._client = client
        self._pseudonymizer = pseudonymizer
        self.name = f"llm:{client.name}"

    def restructure(
        self, source: SourceFile, prior: Sequence[Unit], language: str
    ) -> Restructuring:
        try:
            text = self._client.complete_json(
                SYSTEM_PROMPT,
                build_user_message(source, prior, language, self._pseudonymizer),
                REPLY_SCHEMA,
            )
        except LLMError as exc:
            raise RestructureError(f"model call failed: {exc}") from exc
        return parse_reply(_restore_reply(text, self._pseudonymizer), {u.id for u in prior})
