"""The first fork, text or numbers (seed 004, "il percorso di una domanda").

- Offline (`OfflineRouter`, the default): the question is compared with each catalog query's
  description and example questions with the workspace's embedder (query mode on both sides,
  as channel routing does); thoth.analytics.decide reads the question against each query
  (measure, grouping, parameters, words) and chooses when the combined score reaches
  `[analytics] threshold`, calibrated by `tht analytics calibrate`. Below it the question goes
  to the text path: a text question is never refused as numeric.
- With a model (`ModelRouter`): one function call whose tools are the catalog queries (a JSON
  schema from the typed parameters, strict where the provider supports it) plus one fallback
  tool, "not a question for the store". The model chooses; the values it proposes are
  validated by `extract.validate`, never trusted as they come.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np

from thoth.analytics.catalog import CatalogQuery, Parameter
from thoth.analytics.decide import Decision
from thoth.analytics.extract import without_values
from thoth.answer.routing import (
    MIN_POSITIVES,
    Estimate,
    distribution,
    leave_one_out,
    prediction_floor,
    split_threshold,
)
from thoth.answer.seams import NoPseudonymizer, Pseudonymizer
from thoth.embed.base import Embedder, Vectors
from thoth.errors import ThothError
from thoth.llm.client import ToolClient, ToolReply, ToolSpec
from thoth.privacy.base import protect_tree, restore_tree

FALLBACK_TOOL: Final = "not_a_store_question"


@dataclass(frozen=True)
class Choice:
    """What the router decided: a query (with the model's proposed values) or none."""

    query_id: str | None
    by: str  # "similarity" | "model"
    scores: dict[str, float] = field(default_factory=dict)  # similarity per query
    proposed: dict[str, Any] | None = None  # the model's arguments
    figure_requested: bool = False  # a figure no query computes
    model_reason: str | None = None

    def as_dict(self, visible: Collection[str] | None = None) -> dict[str, Any]:
        """`visible`: the query ids the caller may see (None: all); no other is named."""
        shown = visible is None or self.query_id in visible
        return {
            "query_id": self.query_id if shown else None,
            "by": self.by,
            "scores": {
                k: round(v, 4)
                for k, v in sorted(self.scores.items())
                if visible is None or k in visible
            },
            "proposed": self.proposed if shown else None,
            "figure_requested": self.figure_requested,
            "model_reason": self.model_reason if shown else None,
        }


class OfflineRouter:
    """The similarity of a question with each catalog query (its description and examples);
    what is decided from it is thoth.analytics.decide's."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._vectors: dict[str, Vectors] = {}
        self._fingerprint: str | None = None

    def _example_vectors(self, queries: Mapping[str, CatalogQuery]) -> dict[str, Vectors]:
        texts = [[qid, q.routing_texts(), "without-values"] for qid, q in sorted(queries.items())]
        framed = json.dumps([self._embedder.identity, texts], ensure_ascii=True)
        fingerprint = hashlib.sha256(framed.encode("ascii")).hexdigest()
        if fingerprint != self._fingerprint:
            # Built aside and swapped in whole: a failure half-way caches nothing.
            fresh = {
                qid: np.vstack(
                    [self._embedder.embed_query(without_values(t)) for t in q.routing_texts()]
                )
                for qid, q in queries.items()
            }
            self._vectors, self._fingerprint = fresh, fingerprint
        return self._vectors

    def scores(self, question: str, queries: Mapping[str, CatalogQuery]) -> dict[str, float]:
        """Query id -> highest cosine between the question and its description or examples.
        Raises EmbedderError when the embedder does not answer."""
        if not queries:
            return {}
        vectors = self._example_vectors(queries)
        # Both sides without their years, dates and numbers: "nel 2024" is the parameters'
        # business, and a question lacking it would otherwise score below its query.
        row = np.asarray(
            self._embedder.embed_query(without_values(question)), dtype=np.float32
        ).reshape(-1)
        return {qid: float(np.max(m @ row)) for qid, m in vectors.items()}


# -- the model's one function call ---------------------------------------------------------


def parameter_schema(
    param: Parameter, values: Sequence[str] | None, *, nullable: bool
) -> dict[str, Any]:
    """The JSON schema of one parameter. Bounds are stated in the description too: strict
    providers do not all enforce `minimum`/`maximum`, and Thoth validates them anyway."""
    bounds = [f"{k} {v}" for k, v in (("min", param.min), ("max", param.max)) if v is not None]
    description = param.description + (f" ({', '.join(bounds)})" if bounds else "")
    schema: dict[str, Any]
    if param.type == "enum":
        schema = {"type": "string", "enum": list(values or [])}
    elif param.type in ("integer", "year"):
        schema = {"type": "integer"}
    elif param.type == "month":
        schema = {"type": "integer", "minimum": 1, "maximum": 12}
        description += " (1-12)"
    elif param.type == "quarter":
        schema = {"type": "integer", "minimum": 1, "maximum": 4}
        description += " (1-4)"
    elif param.type == "decimal":
        schema = {"type": "number"}
    elif param.type == "date":
        schema = {"type": "string", "format": "date"}
        description += " (YYYY-MM-DD)"
    else:
        schema = {"type": "string"}
    if param.default is not None:
        description += f"; default {param.default}"
    schema["description"] = description
    if nullable:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


def tool_specs(
    queries: Mapping[str, CatalogQuery], enum_values: Mapping[str, Mapping[str, Sequence[str]]]
) -> list[ToolSpec]:
    """One tool per catalog query, strict (every property listed as required, the optional
    ones nullable, no other property), plus the fallback tool."""
    tools = []
    for qid, query in sorted(queries.items()):
        properties = {
            name: parameter_schema(
                p, list(enum_values.get(qid, {}).get(name, [])), nullable=not p.is_required
            )
            for name, p in query.parameters.items()
        }
        examples = "; ".join(query.examples[:3])
        tools.append(
            ToolSpec(
                name=qid,
                description=f"{query.description}. Esempi: {examples}",
                parameters={
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                    "additionalProperties": False,
                },
                strict=True,
            )
        )
    tools.append(
        ToolSpec(
            name=FALLBACK_TOOL,
            description=(
                "Not a question for the analytics store: no catalog query computes what it asks "
                "(a question about procedures or documents, or a figure no query computes)."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "asks_for_a_figure": {
                        "type": "boolean",
                        "description": "true when the question asks for a number, a count or "
                        "an amount that none of the other tools computes",
                    },
                    "reason": {"type": "string", "description": "why, in a few words"},
                },
                "required": ["asks_for_a_figure", "reason"],
                "additionalProperties": False,
            },
            strict=True,
        )
    )
    return tools


SYSTEM_PROMPT: Final = (
    "You route one question. Call exactly one function. If one of the catalog queries computes "
    "what the question asks, call it with the parameter values the question states (null for "
    "an optional value it does not state; never invent a required value: when the question "
    "does not state it, still call the query with your best reading and Thoth will ask). "
    f"Otherwise call {FALLBACK_TOOL}. Never answer in prose."
)


class RoutingFailed(ThothError):
    """The model's function call cannot be used (none, several, unknown or malformed)."""

    code = "analytics_routing_failed"


class ModelRouter:
    """The question reaches the model as it is (the seed's declared limit: masking it would
    break routing); the allowed values of enumerations, which may be names read from a view,
    reach it protected, and the values it chooses are restored before validation."""

    def __init__(self, client: ToolClient, pseudonymizer: Pseudonymizer | None = None) -> None:
        self._client = client
        self._pseudonymizer: Pseudonymizer = pseudonymizer or NoPseudonymizer()
        self.name = client.name

    def route(
        self,
        question: str,
        queries: Mapping[str, CatalogQuery],
        enum_values: Mapping[str, Mapping[str, Sequence[str]]],
    ) -> Choice:
        p = self._pseudonymizer
        # Every text of the tools reaches the model protected: enumerated values (names read
        # from a view) and the reviewers' descriptions and example questions alike ("...la
        # Pediatria nel 2024?"). The values the model chooses are restored before validation.
        specs = [
            replace(
                spec,
                description=p.protect(spec.description),
                parameters=protect_tree(p, spec.parameters),
            )
            for spec in tool_specs(queries, enum_values)
        ]
        reply = self._client.call_tools(SYSTEM_PROMPT, question, specs)
        choice = self._read(reply, queries)
        if choice.proposed is None:
            return choice
        return Choice(choice.query_id, choice.by, proposed=restore_tree(p, choice.proposed))

    def _read(self, reply: ToolReply, queries: Mapping[str, CatalogQuery]) -> Choice:
        if len(reply.calls) != 1:
            raise RoutingFailed(
                f"the model ({self.name}) made {len(reply.calls)} function calls, not one -> "
                "check that [llm] names a model with tool calling"
            )
        call = reply.calls[0]
        if call.arguments is None:
            raise RoutingFailed(f"the model's call of {call.name} is unusable: {call.error}")
        if call.name == FALLBACK_TOOL:
            return Choice(
                None,
                "model",
                figure_requested=call.arguments.get("asks_for_a_figure") is True,
                model_reason=str(call.arguments.get("reason") or "") or None,
            )
        if call.name not in queries:
            raise RoutingFailed(
                f"the model ({self.name}) called {call.name!r}, which is not a catalog query"
            )
        return Choice(call.name, "model", proposed=dict(call.arguments))


# -- calibration ---------------------------------------------------------------------------


# A number computed for a question no query covers is the worst answer Thoth can give: in
# calibration it weighs this many times a covered question sent to the text path (or an
# uncovered one that would only be asked for a parameter).
WRONG_NUMBER_COST: Final = 3


@dataclass(frozen=True)
class Split:
    threshold: float
    separated: bool


def cautious_split(positives: Sequence[float], negatives: Sequence[tuple[float, int]]) -> Split:
    """The cut with the lowest cost: each positive below it costs 1, each negative at or
    above it its weight; among equal costs the highest cut (when in doubt, no number). With
    no negative (every uncovered question refused by the gates) the cut is where a new wording
    of a covered question still lands, estimated from their spread (`prediction_floor`):
    never the lowest covered score shown, which the next wording easily falls below."""
    if not negatives:
        return Split(prediction_floor(positives), True)
    highest_negative = max(v for v, _ in negatives)
    if min(positives) > highest_negative:
        return Split((min(positives) + highest_negative) / 2, True)
    values = sorted({*positives, *(v for v, _ in negatives)})
    cuts = [values[0] - 0.01, *((a + b) / 2 for a, b in itertools.pairwise(values))]
    cuts.append(values[-1] + 0.001)

    def cost(cut: float) -> int:
        return sum(v < cut for v in positives) + sum(w for v, w in negatives if v >= cut)

    return Split(min(cuts, key=lambda cut: (cost(cut), -cut)), False)


@dataclass
class QueryCalibration:
    covered: list[float]  # score of questions a query covers, when the decision is right
    not_covered: list[float]  # best eligible score of questions no query covers
    uncovered_figures: list[float]  # of those, the ones asking a figure
    threshold: float
    separated: bool
    accuracy: float
    uncovered_threshold: float | None
    per_question: list[dict[str, Any]]
    wrong_query: list[dict[str, Any]]
    # Leave-one-out over the covered questions: the share of new wordings computed.
    expected_computed: Estimate
    # ... and over the uncovered ones the gates let by: the share that would be computed.
    expected_wrong: Estimate
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": round(self.threshold, 4),
            "separated": self.separated,
            "expected_computed": self.expected_computed.as_dict(),
            "expected_wrong_numbers": self.expected_wrong.as_dict(),
            "warnings": self.warnings,
            "accuracy": round(self.accuracy, 4),
            "uncovered_threshold": None
            if self.uncovered_threshold is None
            else round(self.uncovered_threshold, 4),
            "covered": distribution(self.covered),
            "not_covered": distribution(self.not_covered),
            "uncovered_figures": distribution(self.uncovered_figures),
            "wrong_query": self.wrong_query,
            "per_question": self.per_question,
        }


def calibrate(
    labelled: Sequence[tuple[str, str | None, bool]],
    queries: Mapping[str, CatalogQuery],
    decide_one: Callable[[str], Decision],
) -> QueryCalibration:
    """`labelled`: (question, expected query id or None, asks for a figure); `decide_one`:
    the product's decision with no threshold (thoth.analytics.decide), so what is calibrated
    is the combined decision (measure, grouping, parameters, words and similarity), not the
    similarity alone. The threshold separates covered questions (decision right) from the
    ones no query covers; when uncovered figure questions are labelled, a second cut
    separates them from text ones. Each question's margin says how far it is from the
    threshold on its right side (negative: on the wrong side) and, when covered, its lead
    over the runner-up query."""
    for question, expected, _ in labelled:
        if expected is not None and expected not in queries:
            raise ThothError(
                f"calibration: {question!r} expects query {expected!r}, not in the catalog "
                f"({', '.join(sorted(queries)) or 'empty'})"
            )
    rows: list[dict[str, Any]] = []
    for question, expected, figure in labelled:
        decision = decide_one(question)
        eligible = [f for f in decision.fits if f.refused is None]
        closest = decision.query_id or (decision.candidates[0] if decision.candidates else None)
        score = eligible[0].score if eligible else -math.inf
        runner = next((f.score for f in eligible[1:]), None)
        rows.append(
            {
                "question": question,
                "expected": expected,
                "figure": figure,
                "closest": closest,
                "outcome": decision.outcome,
                "score": None if score == -math.inf else round(score, 4),
                "lead": None if runner is None else round(score - runner, 4),
                "refused": {f.query_id: f.refused for f in decision.fits if f.refused},
                "_score": score,
                # the best score of any query, refused or not: what the figure band reads
                "_best": decision.fits[0].score if decision.fits else -math.inf,
            }
        )
    covered = [r["_score"] for r in rows if r["expected"] and r["closest"] == r["expected"]]
    # A question no query can take (every query refused by a gate) is right at any threshold.
    taken = [r for r in rows if r["expected"] is None and r["closest"]]
    if not [r for r in rows if r["expected"] is None]:
        raise ThothError(
            "calibration needs questions no query covers (query: null) beside the covered "
            "ones: without them nothing says the gates and the threshold keep numbers from "
            "questions the catalog does not compute -> add figures it does not hold and text "
            "questions of the same domain"
        )
    if len(covered) < MIN_POSITIVES:
        raise ThothError(
            f"calibration needs at least {MIN_POSITIVES} covered questions (query: <id>) decided "
            f"right to estimate where a new wording lands; {len(covered)} of "
            f"{sum(1 for r in rows if r['expected'])} are -> add covered questions, and see "
            "`wrong_query` for the ones the gates refused"
        )
    negatives = [
        (r["_score"], WRONG_NUMBER_COST if r["outcome"] == "compute" else 1) for r in taken
    ]
    split = cautious_split(covered, negatives)
    expected_computed = leave_one_out(
        [
            r["_score"] if r["closest"] == r["expected"] else None
            for r in rows
            if r["expected"] is not None
        ],
        lambda others: cautious_split(others, negatives).threshold,
    )
    expected_wrong = Estimate(
        sum(
            r["_score"] >= cautious_split(covered, negatives[:i] + negatives[i + 1 :]).threshold
            for i, r in enumerate(taken)
        ),
        sum(1 for r in rows if r["expected"] is None),
    )
    warnings = []
    per_query = Counter(r["expected"] for r in rows if r["expected"])
    if per_query and max(per_query.values()) == 1:
        warnings.append(
            "one covered question per query: the estimate says how one query's question "
            "scores against the others' cut, not how new wordings of the same question vary "
            "-> add a second wording per query"
        )
    if not taken:
        warnings.append(
            "every uncovered question was refused by the gates: the threshold comes from the "
            "covered questions' spread alone (a 97.5% prediction bound), so the gates are what "
            "keeps numbers from uncovered questions -> add uncovered questions close to the "
            "catalog's to test them"
        )
    not_covered = [r["_score"] for r in taken]
    figures = [r["_best"] for r in rows if r["expected"] is None and r["figure"]]
    texts = [r["_best"] for r in rows if r["expected"] is None and not r["figure"]]
    uncovered = (
        min(split_threshold(figures, texts).threshold, split.threshold)
        if figures and texts
        else None
    )
    right = 0
    for row in rows:
        routed = row["closest"] if row["_score"] >= split.threshold else None
        row["routed"] = routed
        row["correct"] = routed == row["expected"]
        right += row["correct"]
        gap = row["_score"] - split.threshold
        row["margin"] = round(gap if row["expected"] else -gap, 4) if row["closest"] else None
        del row["_score"], row["_best"]
    wrong = [
        {k: r[k] for k in ("question", "expected", "closest", "score", "refused")}
        for r in rows
        if r["expected"] is not None and r["closest"] != r["expected"]
    ]
    return QueryCalibration(
        covered=covered,
        not_covered=not_covered,
        uncovered_figures=figures,
        threshold=split.threshold,
        separated=split.separated,
        accuracy=right / len(rows),
        uncovered_threshold=uncovered,
        per_question=rows,
        wrong_query=wrong,
        expected_computed=expected_computed,
        expected_wrong=expected_wrong,
        warnings=warnings,
    )
