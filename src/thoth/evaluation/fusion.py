"""`tht eval tune-fusion`: tune a workspace's `[index]` fusion on its own reference questions,
keeping the baseline (seed §9.5: start from the engine's defaults, change them only when the
workspace's own evaluation shows a gain).

Every case of the answers evaluation file that names expected documents is searched once per
candidate of a small grid (RRF k × dense weight, the BM25 weight 1.0) through the answer
engine's own retrieval; a case's rank is the best rank an expected document reached among the
retrieval's sources (`thoth.answer.sources`, the aggregation the answer serves). The
baseline is the fusion in effect. A candidate is a gain only when it answers strictly more
cases with an expected document first (hit@1) and loses none at hit@k or hit@10; only then,
and with at least MIN_CASES cases, are its constants written to thoth.toml. The grid is also
what `benchmarks/fusion_grid.py` measures across corpora.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import TOMLKitError

from thoth.answer.retrieval import KnowledgeSearch
from thoth.answer.sources import RankedFragment, aggregate_sources
from thoth.config import CONFIG_FILE, IndexSettings, Settings
from thoth.errors import ConfigError
from thoth.evaluation.answers import AnswerCase
from thoth.evaluation.evidence import evaluate, load_evaluation
from thoth.evidence.corpus import load_corpus
from thoth.evidence.publish import materialize
from thoth.index.reader import Unreadable
from thoth.markup import read_yaml_file
from thoth.search.service import EvidenceSearch
from thoth.state import Generation
from thoth.storage.files import fsync_dir, write_durably

# Fewer cases than this cannot tell a gain from one lucky question: tuning is refused.
MIN_CASES = 10
DEPTH = 10  # hit@10: the deepest rank reported
BASELINE_FILE = "fusion-baseline.json"


@dataclass(frozen=True)
class FusionSetting:
    """One point of the grid: RRF with `k`, the dense branch at `dense_weight` and every BM25
    branch at `bm25_weight`."""

    k: int
    dense_weight: float
    bm25_weight: float = 1.0
    method: str = "rrf"

    @classmethod
    def of(cls, index: IndexSettings) -> FusionSetting:
        return cls(index.fusion_k, index.dense_weight, index.bm25_weight, index.fusion)

    def label(self) -> str:
        if self.method != "rrf":
            return f"{self.method} dense {self.dense_weight:g} bm25 {self.bm25_weight:g}"
        return f"rrf k={self.k} dense {self.dense_weight:g} bm25 {self.bm25_weight:g}"

    def applied(self, index: IndexSettings) -> IndexSettings:
        return index.model_copy(
            update={
                "fusion": self.method,
                "fusion_k": self.k,
                "dense_weight": self.dense_weight,
                "bm25_weight": self.bm25_weight,
            }
        )


# The engine's default first (Qdrant's RRF, k 60, equal weights): ties go to it.
ENGINE_DEFAULT = FusionSetting(60, 1.0)
GRID: tuple[FusionSetting, ...] = tuple(
    FusionSetting(k, w) for k in (60, 10, 1) for w in (1.0, 0.6, 0.4, 1.5)
)


class Searcher(Protocol):
    """The answer engine's retrieval under one fusion setting (`retrieval_searcher`)."""

    def fragments(self, question: str, request: Mapping[str, Any]) -> Sequence[RankedFragment]: ...

    def close(self) -> None: ...


@dataclass
class RetrievalSearcher:
    """A `KnowledgeSearch` as a Searcher: the request's fields are its keyword filters."""

    inner: KnowledgeSearch

    def fragments(self, question: str, request: Mapping[str, Any]) -> Sequence[RankedFragment]:
        retrieval = self.inner.search(question, **request)
        return list(retrieval.fragments)

    def close(self) -> None:
        self.inner.close()


@dataclass
class Measured:
    """One fusion setting on every retrieval case: the best rank of an expected document
    (None: none in the top DEPTH sources)."""

    setting: FusionSetting
    ranks: list[int | None]
    k: int

    def hits(self, at: int) -> int:
        return sum(1 for r in self.ranks if r is not None and r <= at)

    @property
    def mrr(self) -> float:
        return sum(1.0 / r for r in self.ranks if r is not None) / max(1, len(self.ranks))

    def key(self) -> tuple[int, int, int, float]:
        return (self.hits(1), self.hits(self.k), self.hits(DEPTH), round(self.mrr, 9))

    def as_dict(self) -> dict[str, Any]:
        return {
            "setting": asdict(self.setting),
            "label": self.setting.label(),
            "hit_at_1": self.hits(1),
            f"hit_at_{self.k}": self.hits(self.k),
            "hit_at_10": self.hits(DEPTH),
            "mrr": round(self.mrr, 4),
        }


@dataclass
class TuneReport:
    cases: list[str]  # the ids of the cases measured
    skipped: list[str]  # cases with no expected documents (numeric, nothing_found, ...)
    k: int
    baseline: Measured
    candidates: list[Measured] = field(default_factory=list)
    best: Measured | None = None
    gain: bool = False
    written: bool = False
    reason: str = ""
    first_baseline: dict[str, Any] | None = None  # the one saved before any tuning
    # The Evidence evaluation gate under the best candidate: "passed", "failed: ..." (the
    # candidate is then refused) or "not checked: ..." (no Evidence evaluation applies).
    evidence_gate: str = "not checked: no candidate to write"

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "cases": len(self.cases),
            "skipped": self.skipped,
            "rule": rule_text(self.k),
            "baseline": self.baseline.as_dict(),
            "best": self.best.as_dict() if self.best else None,
            "gain": self.gain,
            "written": self.written,
            "reason": self.reason,
            "first_baseline": self.first_baseline,
            "evidence_gate": self.evidence_gate,
            "candidates": [c.as_dict() for c in self.candidates],
            "case_ranks": {
                case: {
                    "baseline": self.baseline.ranks[i],
                    "best": self.best.ranks[i] if self.best else None,
                }
                for i, case in enumerate(self.cases)
            },
        }


def rule_text(k: int) -> str:
    return (
        f"a candidate replaces the baseline only with strictly more cases whose first source is "
        f"expected (hit@1) and no fewer at hit@{k} and hit@{DEPTH}, on at least {MIN_CASES} "
        "cases with expected documents"
    )


def best_rank(sources: Sequence[str], expected: Sequence[str]) -> int | None:
    """The rank (1-based) of the first expected document among `sources`, within DEPTH."""
    wanted = set(expected)
    return next((i for i, s in enumerate(sources[:DEPTH], 1) if s in wanted), None)


def measure(
    searcher: Searcher, cases: Sequence[AnswerCase], setting: FusionSetting, k: int
) -> Measured:
    ranks: list[int | None] = []
    for case in cases:
        fragments = searcher.fragments(case.question, case.request)
        # Documents, each once: a FAQ's rows are sources of their own, its file one document.
        sources = list(dict.fromkeys(s.doc_id for s in aggregate_sources(fragments)))
        ranks.append(best_rank(sources, case.expect.documents))
    return Measured(setting, ranks, k)


def tune(
    open_searcher: Callable[[IndexSettings], Searcher],
    index: IndexSettings,
    cases: Sequence[AnswerCase],
    k: int,
    gate: Gate | None = None,
    grid: Sequence[FusionSetting] = GRID,
) -> TuneReport:
    """Measure the baseline (`index` as configured) and every candidate of `grid`; decide
    (`gate`: the Evidence evaluation gate under a candidate, `evidence_gate`). Writes
    nothing: `write_fusion` does, when the caller accepts the report's verdict."""
    measured = [c for c in cases if c.expect.documents]
    skipped = [c.id for c in cases if not c.expect.documents]

    def run(setting: FusionSetting) -> Measured:
        searcher = open_searcher(setting.applied(index))
        try:
            return measure(searcher, measured, setting, k)
        finally:
            searcher.close()

    baseline_setting = FusionSetting.of(index)
    baseline = run(baseline_setting)
    report = TuneReport([c.id for c in measured], skipped, k, baseline)
    if len(measured) < MIN_CASES:
        report.reason = (
            f"only {len(measured)} case(s) name expected documents: at least {MIN_CASES} are "
            "needed to tell a gain from one lucky question -> add reference questions "
            "(`tht eval add-from-answer`) and tune again"
        )
        return report
    report.candidates = [baseline if s == baseline_setting else run(s) for s in grid]
    report.best, report.gain, report.reason, report.evidence_gate = decide(
        baseline, report.candidates, k, gate
    )
    return report


Gate = Callable[[FusionSetting], str]  # "passed", "failed: ..." or "not checked: ..."


def decide(
    baseline: Measured, candidates: Sequence[Measured], k: int, gate: Gate | None = None
) -> tuple[Measured, bool, str, str]:
    """The candidate to write, whether it is a gain over the baseline, why, and the Evidence
    gate's verdict on it. Candidates rank by hit@1, then hit@k, hit@10, MRR (ties keep the
    grid's order, the engine's default first); the first that gains (strictly more at 1, no
    fewer at k and 10) and keeps `gate` wins."""
    ranked = sorted(candidates, key=lambda m: m.key(), reverse=True)  # stable: grid order
    best = ranked[0]
    n = len(baseline.ranks)
    b1, bk, b10 = baseline.hits(1), baseline.hits(k), baseline.hits(DEPTH)
    c1, ck, c10 = best.hits(1), best.hits(k), best.hits(DEPTH)
    unchecked = "not checked: no candidate to write"
    if c1 <= b1:
        why = (
            f"no candidate puts an expected document first in more cases than the baseline "
            f"({b1}/{n} with {baseline.setting.label()}): the baseline stays"
        )
        return best, False, why, unchecked
    gains = [m for m in ranked if m.hits(1) > b1 and m.hits(k) >= bk and m.hits(DEPTH) >= b10]
    if not gains:
        why = (
            f"the best candidate at hit@1 ({best.setting.label()}: {c1}/{n} against {b1}) "
            f"loses cases at hit@{k} ({ck} against {bk}) or hit@{DEPTH} ({c10} against {b10}), "
            "as every other that gains at 1: the baseline stays"
        )
        return best, False, why, unchecked
    refused: list[str] = []
    for m in gains:
        verdict = gate(m.setting) if gate is not None else "not checked: no gate given"
        if verdict.startswith("failed"):
            refused.append(f"{m.setting.label()}: {verdict}")
            continue
        why = (
            f"{m.setting.label()} puts an expected document first in {m.hits(1)}/{n} cases "
            f"against the baseline's {b1}, with hit@{k} {m.hits(k)} (baseline {bk}) and "
            f"hit@{DEPTH} {m.hits(DEPTH)} (baseline {b10})"
            + (f"; passed over for the Evidence gate: {'; '.join(refused)}" if refused else "")
        )
        return m, True, why, verdict
    why = (
        "every candidate that gains at hit@1 would fail the Evidence evaluation gate ("
        + "; ".join(refused)
        + "): the baseline stays"
    )
    return gains[0], False, why, f"failed for every gaining candidate ({len(refused)})"


def evidence_gate(search: EvidenceSearch, root: Path, generation: Generation | None) -> str:
    """The Evidence evaluation gate (every question of evaluation.yaml finds an expected unit
    in the fused top 10) under `search`'s fusion, on the active generation as published:
    "passed", "failed: <questions>", or "not checked: <why>" when no Evidence evaluation
    applies (no active generation, no questions, no Evidence published)."""
    if generation is None:
        return "not checked: no active generation"
    with materialize(root, generation.revision) as tree:
        path = tree / "evidence" / "evaluation.yaml"
        raw = read_yaml_file(path, "evidence/evaluation.yaml", "") if path.is_file() else None
        if not raw or not raw.get("questions"):
            return "not checked: evidence/evaluation.yaml has no questions"
        questions = load_evaluation(path)
        files, _ = load_corpus(tree / "evidence")
    try:
        report = evaluate(search, questions, generation, {f.unit.id: f.unit.kind for f in files})
    except Unreadable as exc:
        return f"not checked: {exc.code} ({exc})"
    if report.gate_passed:
        return "passed"
    missed = [q.id for q in report.questions if not q.hit_at_10]
    return f"failed: {', '.join(missed)} would find no expected unit in the fused top 10"


def save_first_baseline(report: TuneReport, directory: Path) -> dict[str, Any]:
    """The first tuning's baseline is saved before anything is changed and never replaced
    (the seed: the first baseline is kept before weights are tuned). Returns the saved one."""
    path = directory / BASELINE_FILE
    if path.exists():
        try:
            saved: dict[str, Any] = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{path}: unreadable ({exc}) -> restore it from a backup; delete it only to "
                "start the baseline over"
            ) from exc
        return saved
    first = {"cases": report.cases, "k": report.k, **report.baseline.as_dict()}
    first["ranks"] = dict(zip(report.cases, report.baseline.ranks, strict=True))
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    write_durably(tmp, json.dumps(first, ensure_ascii=False, indent=2))
    os.replace(tmp, path)
    return first


def write_fusion(root: Path, setting: FusionSetting) -> None:
    """Set `[index]` fusion, fusion_k, dense_weight and bm25_weight in thoth.toml with tomlkit
    (the rest of the file — comments, order — is kept), validated as settings before the file
    is replaced atomically."""
    path = root / CONFIG_FILE
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}) -> fix the syntax") from exc
    index = doc.get("index")
    if index is None:
        index = tomlkit.table()
        doc["index"] = index
    index["fusion"] = setting.method
    index["fusion_k"] = setting.k
    index["dense_weight"] = setting.dense_weight
    index["bm25_weight"] = setting.bm25_weight
    text = tomlkit.dumps(doc)
    try:
        Settings.model_validate(tomlkit.parse(text).unwrap())
    except ValidationError as exc:
        raise ConfigError(f"{path}: the tuned [index] would not be valid settings ({exc})") from exc
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_durably(tmp, text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
