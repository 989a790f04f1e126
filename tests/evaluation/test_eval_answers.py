"""The two-level answer evaluation: a failure says whether retrieval or the answer broke."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from thoth.answer.answerers import AnswerModelError
from thoth.answer.retrieval import SearchRequestError
from thoth.errors import ProblemsError
from thoth.evaluation.answers import (
    AnswerCase,
    case_from_answer,
    judge,
    load_answer_cases,
    run_answer_evaluation,
)


@dataclass(frozen=True)
class Src:
    doc_id: str
    title: str = ""


@dataclass
class Ans:
    text: str
    sources: list[Src] | None
    status: str = "found"
    provenance: dict[str, Any] | None = None
    figures: dict[str, Any] | None = None


CAVEAT_CASE = {
    "id": "growth",
    "question": "Di quanto sono cresciuti gli accessi pediatrici nel 2023?",
    "labels": ["public"],
    "expect": {
        "documents": ["wiki:ps/pediatria.md"],
        "facts": ["3,5%"],
        "caveats": ["doppio conteggio"],
        "unreliable": ["53%"],
    },
}


def case(data: dict[str, Any]) -> AnswerCase:
    return AnswerCase.model_validate(data)


def test_a_correct_answer_passes_both_levels() -> None:
    answer = Ans(
        "Crescita del 53% [1]. Avvertenza: doppio conteggio dei trasferimenti; realistica 3,5%.",
        [Src("wiki:ps/pediatria.md"), Src("docs:ps.pdf")],
    )
    result = judge(case(CAVEAT_CASE), answer)
    assert result.verdict == "pass" and result.retrieval_passed and result.answer_passed


def test_missing_document_is_a_retrieval_failure() -> None:
    answer = Ans("Realistica 3,5%, doppio conteggio.", [Src("docs:other.md")])
    result = judge(case(CAVEAT_CASE), answer)
    assert result.verdict == "retrieval"
    assert result.missing_documents == ["wiki:ps/pediatria.md"]
    assert result.answer_passed  # the answer side is judged separately


def test_unreliable_number_without_its_caveat_fails_the_answer() -> None:
    answer = Ans("Gli accessi sono cresciuti del 53% [1].", [Src("wiki:ps/pediatria.md")])
    result = judge(case(CAVEAT_CASE), answer)
    assert result.verdict == "answer"
    assert result.unreliable_stated == ["53%"]
    assert result.missing_caveats == ["doppio conteggio"] and result.missing_facts == ["3,5%"]


def test_unreliable_number_is_matched_as_a_whole_number() -> None:
    data = {**CAVEAT_CASE, "expect": {"unreliable": ["53%"]}}
    assert judge(case(data), Ans("cresciuti del 153%", [])).answer_passed
    assert not judge(case(data), Ans("cresciuti del 53% annuo", [])).answer_passed


def test_leaked_document_fails_retrieval() -> None:
    data = {
        "id": "secret",
        "question": "Esito dell'audit?",
        "expect": {"absent": ["riservati:audit.pdf"]},
    }
    assert judge(case(data), Ans("...", [Src("riservati:audit.pdf")])).leaked_documents == [
        "riservati:audit.pdf"
    ]
    assert judge(case(data), Ans("...", [Src("docs:x.md")])).verdict == "pass"


def test_nothing_found_expectation_needs_the_nothing_found_status() -> None:
    data = {"id": "ood", "question": "Ricetta della carbonara?", "expect": {"nothing_found": True}}
    assert judge(case(data), Ans("Nessun risultato", [], "nothing_found")).verdict == "pass"
    assert judge(case(data), Ans("...", [Src("docs:x.md")], "found")).verdict == "retrieval"


def test_a_failed_search_is_never_judged_as_an_answer() -> None:
    data = {"id": "ood", "question": "q", "expect": {"nothing_found": True}}
    result = judge(case(data), Ans("search failed: index_unavailable", [], "failed"))
    assert result.verdict == "failed" and not result.retrieval_passed


def test_request_filters_are_the_extra_keys_and_reach_the_asker(tmp_path: Path) -> None:
    path = tmp_path / "evaluation.yaml"
    path.write_text(yaml.safe_dump([CAVEAT_CASE], allow_unicode=True), "utf-8")
    cases = load_answer_cases(path)
    seen: list[dict[str, Any]] = []

    @dataclass
    class Asker:
        reply: Ans = field(default_factory=lambda: Ans("3,5% doppio conteggio", []))

        def ask(self, question: str, *, instructions: str | None = None, **filters: Any) -> Ans:
            seen.append(filters)
            return self.reply

    report = run_answer_evaluation(Asker(), cases)
    assert seen == [{"labels": ["public"]}]
    assert report.summary()["failed_at_retrieval"] == 1 and not report.passed


def test_a_typo_in_a_request_filter_is_refused_at_load_naming_the_case(tmp_path: Path) -> None:
    path = tmp_path / "evaluation.yaml"
    typo = {"id": "typo", "question": "q", "chanel": "clinica", "expect": {}}
    wrong_type = {"id": "anno", "question": "q", "year": "2022", "expect": {}}
    path.write_text(yaml.safe_dump([CAVEAT_CASE, typo, wrong_type]), "utf-8")
    with pytest.raises(ProblemsError) as info:
        load_answer_cases(path, "answers/evaluation.yaml")
    rendered = [p.render() for p in info.value.problems]
    assert len(rendered) == 2
    assert rendered[0].startswith("answers/evaluation.yaml[1]: case 'typo': ")
    assert "unknown request field(s) chanel -> accepted: channel" in rendered[0]
    assert rendered[1].startswith("answers/evaluation.yaml[2]: case 'anno': ")
    assert "year: expected int" in rendered[1]


def test_a_case_that_errors_is_failed_and_the_run_goes_on() -> None:
    cases = [
        case({**CAVEAT_CASE, "id": "refused", "labels": ["segreto"]}),
        case({**CAVEAT_CASE, "id": "model", "question": "Il modello risponde?"}),
        case(CAVEAT_CASE),
    ]

    class Asker:
        def ask(self, question: str, *, instructions: str | None = None, **filters: Any) -> Ans:
            if filters.get("labels") == ["segreto"]:
                raise SearchRequestError("unknown label(s) segreto -> the vocabulary is: public")
            if question == "Il modello risponde?":
                raise AnswerModelError("answer model openai:m failed: HTTP 500 -> check [llm]")
            return Ans("53% con doppio conteggio: realistica 3,5%", [Src("wiki:ps/pediatria.md")])

    report = run_answer_evaluation(Asker(), cases)
    results = {c.id: c for c in report.cases}
    assert [c.verdict for c in report.cases] == ["failed", "failed", "pass"]
    assert results["refused"].error is not None and "segreto" in results["refused"].error
    assert results["model"].error is not None and "HTTP 500" in results["model"].error
    assert results["refused"].status == "failed" and results["refused"].sources == []
    assert not report.passed and report.summary()["errors"] == 2


def test_malformed_file_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "evaluation.yaml"
    path.write_text(
        yaml.safe_dump([{"id": "a", "question": "q", "expect": {"fact": ["x"]}}]), "utf-8"
    )
    with pytest.raises(ProblemsError) as info:
        load_answer_cases(path, "answers/evaluation.yaml")
    assert info.value.problems[0].where == "answers/evaluation.yaml[0]"


def test_case_from_answer_is_a_loadable_entry(tmp_path: Path) -> None:
    text = case_from_answer(
        "ans-0123456789ab",
        "Quanto cresce?",
        {"labels": ["public"], "channel": None},
        ["wiki:ps/pediatria.md"],
        "Cresce del 53%.",
    )
    path = tmp_path / "e.yaml"
    path.write_text(text, "utf-8")
    (loaded,) = load_answer_cases(path)
    assert loaded.id == "from-ans-0123456789ab" and loaded.request == {"labels": ["public"]}
    assert loaded.expect.documents == ["wiki:ps/pediatria.md"]
    assert loaded.origin == "answer:ans-0123456789ab"
    assert "#   Cresce del 53%." in text
