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

from pydantic import BaseModel

from thoth.evidence.document import unit_to_mapping
from thoth.evidence.model import (
    KINDS,
    PURPOSES,
    DomainData,
    EnumData,
    ExampleData,
    FormulaData,
    GlossaryData,
    MappingData,
    NormalizationData,
    ReferenceData,
    Unit,
)
from thoth.evidence.restructure.base import Draft, RestructureError, Restructuring, ReviewNote
from thoth.evidence.sources import SourceFile
from thoth.llm.client import ChatClient, LLMError

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


def build_user_message(source: SourceFile, prior: Sequence[Unit], language: str) -> str:
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
    return json.dumps(payload, ensure_ascii=False, indent=1)


def _str_list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RestructureError(f"malformed model reply: {what} must be a list of strings")
    return list(value)


def parse_reply(text: str, allowed: set[str]) -> Restructuring:
    try:
        reply = json.loads(text)
    except RecursionError as exc:
        raise RestructureError("the model reply is not valid JSON (nested too deeply)") from exc
    except json.JSONDecodeError as exc:
        raise RestructureError(
            f"the model reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    if not isinstance(reply, dict) or not isinstance(reply.get("units"), list):
        raise RestructureError('malformed model reply: expected an object with a "units" list')
    drafts: list[Draft] = []
    for n, raw in enumerate(reply["units"]):
        where = f"units[{n}]"
        if not isinstance(raw, dict):
            raise RestructureError(f"malformed model reply: {where} is not an object")
        unit_id = raw.get("id")
        if unit_id is not None and (not isinstance(unit_id, str) or unit_id not in allowed):
            raise RestructureError(
                f"the model returned unknown id {unit_id!r} in {where}: only the ids it was "
                f"given may be reused ({', '.join(sorted(allowed)) or 'none were given'})"
            )
        kind, title, data = raw.get("kind"), raw.get("title"), raw.get("data")
        if kind not in KINDS:
            raise RestructureError(
                f"malformed model reply: {where}.kind {kind!r} is not one of {', '.join(KINDS)}"
            )
        if not isinstance(title, str) or not isinstance(data, dict):
            raise RestructureError(
                f"malformed model reply: {where} needs a title string and a data object"
            )
        applies = raw.get("applies_to") or {}
        if not isinstance(applies, dict):
            raise RestructureError(f"malformed model reply: {where}.applies_to is not an object")
        items = raw.get("review_items") or []
        if not isinstance(items, list) or not all(
            isinstance(i, dict)
            and isinstance(i.get("code"), str)
            and isinstance(i.get("message"), str)
            for i in items
        ):
            raise RestructureError(
                f"malformed model reply: {where}.review_items must be objects with code and message"
            )
        body = raw.get("body") or ""
        if not isinstance(body, str):
            raise RestructureError(f"malformed model reply: {where}.body is not a string")
        drafts.append(
            Draft(
                title=title,
                kind=kind,
                data=data,
                excerpts=_str_list(raw.get("supporting_excerpts"), f"{where}.supporting_excerpts"),
                body=body,
                purposes=_str_list(raw.get("purposes"), f"{where}.purposes") or None,
                applies_to={
                    k: _str_list(applies.get(k), f"{where}.applies_to.{k}")
                    for k in ("concepts", "tables", "columns")
                },
                caveats=_str_list(raw.get("caveats"), f"{where}.caveats"),
                review_items=[ReviewNote(i["code"], i["message"], i.get("field")) for i in items],
                existing_id=unit_id,
            )
        )
    unsupported: dict[str, str] = {}
    candidates = reply.get("retirement_candidates") or []
    if not isinstance(candidates, list):
        raise RestructureError("malformed model reply: retirement_candidates must be a list")
    for raw in candidates:
        candidate_id = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(candidate_id, str) or candidate_id not in allowed:
            raise RestructureError(
                f"the model named unknown id {candidate_id!r} as a retirement candidate: only "
                "the ids it was given may be named"
            )
        reason = raw.get("reason") or "the model says the source no longer supports it"
        unsupported[candidate_id] = str(reason)
    return Restructuring(drafts=drafts, unsupported=unsupported)


class LLMRestructurer:
    def __init__(self, client: ChatClient) -> None:
        self._client = client
        self.name = f"llm:{client.name}"

    def restructure(
        self, source: SourceFile, prior: Sequence[Unit], language: str
    ) -> Restructuring:
        try:
            text = self._client.complete_json(
                SYSTEM_PROMPT, build_user_message(source, prior, language)
            )
        except LLMError as exc:
            raise RestructureError(f"model call failed: {exc}") from exc
        return parse_reply(text, {u.id for u in prior})
