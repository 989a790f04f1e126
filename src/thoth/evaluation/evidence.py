"""`tht evidence evaluate` (seed §14): run every question of evaluation.yaml against one
generation — fused as the runtime does, and each branch alone for diagnosis. Never modifies
the index. The gate: every question finds at least one expected unit in the fused top 10."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from thoth.errors import Problem, ProblemsError
from thoth.evidence.model import Purpose
from thoth.markup import read_yaml_file
from thoth.search.outcome import EvidenceSearchContext
from thoth.search.service import EvidenceSearch

GATE_K = 10
DEPTH = 50


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QuestionContext(_Strict):
    concepts: list[str] = []
    tables: list[str] = []
    columns: list[str] = []


class EvalQuestion(_Strict):
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    purpose: Purpose
    profile: Literal["lexical", "semantic", "mixed"]
    expected: list[str] = Field(min_length=1)
    context: QuestionContext = QuestionContext()


class EvaluationFile(_Strict):
    questions: list[EvalQuestion] = []


def load_evaluation(path: Path) -> EvaluationFile:
    rel = "evidence/evaluation.yaml"
    raw = read_yaml_file(path, rel, "write the evaluation questions") or {}
    try:
        data = EvaluationFile.model_validate(raw)
    except ValidationError as exc:
        raise ProblemsError(
            f"{rel} is malformed",
            [
                Problem(rel, e["msg"], field=".".join(str(p) for p in e["loc"]))
                for e in exc.errors()
            ],
        ) from exc
    problems = []
    ids = Counter(q.id for q in data.questions)
    problems += [
        Problem(rel, f"question id {i!r} used twice", field="questions")
        for i, n in ids.items()
        if n > 1
    ]
    missing = {"lexical", "semantic", "mixed"} - {q.profile for q in data.questions}
    if data.questions and missing:
        problems.append(
            Problem(
                rel,
                f"no question with profile {', '.join(sorted(missing))}: "
                "each of lexical, semantic and mixed needs at least one",
                field="questions",
            )
        )
    if not data.questions:
        problems.append(
            Problem(rel, "no questions: the gate cannot pass on nothing", field="questions")
        )
    if problems:
        raise ProblemsError(f"{rel} cannot be used", problems)
    return data


@dataclass
class QuestionResult:
    id: str
    question: str
    profile: str
    purpose: str
    expected: list[str]
    returned: list[str]  # fused top 10, unit ids
    hit_at_5: bool
    hit_at_10: bool
    ranks: dict[str, dict[str, int | None]]  # expected id -> {"fused","dense","bm25"}
    missed_kinds: list[str]


@dataclass
class EvaluationReport:
    workspace: str
    revision: str
    generation: str
    search_config: dict[str, Any]
    questions: list[QuestionResult] = field(default_factory=list)

    @property
    def hit_at_5(self) -> float:
        return sum(q.hit_at_5 for q in self.questions) / max(1, len(self.questions))

    @property
    def hit_at_10(self) -> float:
        return sum(q.hit_at_10 for q in self.questions) / max(1, len(self.questions))

    @property
    def gate_passed(self) -> bool:
        return bool(self.questions) and all(q.hit_at_10 for q in self.questions)

    @property
    def no_results(self) -> list[str]:
        return [q.id for q in self.questions if not q.returned]

    @property
    def kinds_missed(self) -> dict[str, int]:
        return dict(Counter(k for q in self.questions for k in q.missed_kinds))

    def as_dict(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "revision": self.revision,
            "generation": self.generation,
            "search_config": self.search_config,
            "hit_at_5": round(self.hit_at_5, 4),
            "hit_at_10": round(self.hit_at_10, 4),
            "gate": {
                "rule": f"every question finds an expected unit in the fused top {GATE_K}",
                "passed": self.gate_passed,
            },
            "kinds_missed": self.kinds_missed,
            "no_results": self.no_results,
            "questions": [asdict(q) for q in self.questions],
        }


def evaluate(
    search: EvidenceSearch,
    evaluation: EvaluationFile,
    generation: Any,
    kinds_of: dict[str, str],
) -> EvaluationReport:
    """`kinds_of`: unit id -> kind, to report which kinds were missed."""
    report = EvaluationReport(
        workspace=search.workspace,
        revision=generation.revision,
        generation=generation.id,
        search_config={
            "fusion": search.fusion.method,
            "fusion_k": search.fusion.k,
            "fusion_weights": list(search.fusion.weights),
            "prefetch_limit": search.prefetch_limit,
            "gate_k": GATE_K,
            **(generation.config or {}),
        },
    )
    for q in evaluation.questions:
        context = EvidenceSearchContext(
            concepts=tuple(q.context.concepts),
            tables=tuple(q.context.tables),
            columns=tuple(q.context.columns),
        )
        ranks = search.branch_ranks(q.question, q.purpose, context, generation.id, DEPTH)
        returned = [
            eid for eid, r in sorted(ranks.fused.items(), key=lambda x: x[1]) if r <= GATE_K
        ]
        per_unit = {
            eid: {
                "fused": ranks.fused.get(eid),
                "dense": ranks.dense.get(eid),
                "bm25": ranks.bm25.get(eid),
            }
            for eid in q.expected
        }
        best = min((r["fused"] for r in per_unit.values() if r["fused"] is not None), default=None)
        missed = sorted(
            {
                kinds_of.get(eid, "unknown")
                for eid, r in per_unit.items()
                if r["fused"] is None or r["fused"] > GATE_K
            }
        )
        report.questions.append(
            QuestionResult(
                id=q.id,
                question=q.question,
                profile=q.profile,
                purpose=q.purpose,
                expected=list(q.expected),
                returned=returned,
                hit_at_5=best is not None and best <= 5,
                hit_at_10=best is not None and best <= 10,
                ranks=per_unit,
                missed_kinds=missed,
            )
        )
    return report


def save_first_baseline(report: EvaluationReport, directory: Path) -> Path | None:
    """The first evaluation is saved before anyone tunes anything; later ones never replace
    it. Returns the path when this call wrote it."""
    path = directory / "evaluation-baseline.json"
    if path.exists():
        return None
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report.as_dict(), ensure_ascii=False, indent=2), "utf-8")
    tmp.replace(path)
    return path
