"""`tht eval run`: the answer engine's reference questions, judged at two levels (seed 004, "come
si misura"), so that a regression points at the corpus or at the curation:

- retrieval: were the expected documents or pages among the answer's sources (top k), and did no
  document that must stay hidden (a confidential one for a public caller) appear?
- answer: are the expected facts in the text, are the declared caveats reported, and is no number
  the sources flag as unreliable stated without its caveat?

The sources judged are the answer's own `sources` field — the same aggregation the service
returns (`thoth.answer.sources`), never a second copy that could drift.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from thoth.answer.retrieval import SearchRequestError, parse_request
from thoth.errors import PreconditionError, Problem, ProblemsError, ThothError
from thoth.markup import read_yaml_file

DEFAULT_K = 5
Verdict = Literal["pass", "retrieval", "answer", "failed"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NumericExpect(_Strict):
    """A question the analytics store answers: the catalog query, the parameters as bound
    (those listed; values compared as text), and the value (the first figure of the result)."""

    query: str = Field(min_length=1)
    parameters: dict[str, Any] = {}
    value: float | int | str | None = None


class AnswerExpect(_Strict):
    numeric: NumericExpect | None = None  # computed by this catalog query
    text_path: bool = False  # must not be answered by the store (a text question)
    documents: list[str] = []  # doc ids that must be among the top-k sources
    absent: list[str] = []  # doc ids that must never be among the sources
    facts: list[str] = []  # strings the answer text must contain
    absent_facts: list[str] = []  # strings it must not contain (e.g. a confidential figure)
    caveats: list[str] = []  # caveat text the answer must report
    unreliable: list[str] = []  # flagged numbers: allowed only together with `caveats`
    nothing_found: bool = False  # the search must run and find nothing


class AnswerCase(BaseModel):
    """One reference question. Every key other than these is a request filter (channel, labels,
    ...), validated by the answer engine's own request parser — the list lives there only."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    question: str = Field(min_length=1)
    instructions: str | None = None
    expect: AnswerExpect
    origin: str | None = None  # e.g. "answer:ans-…" when added from a logged answer

    @property
    def request(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class SourceLike(Protocol):
    @property
    def doc_id(self) -> str: ...


class AnswerLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def sources(self) -> Sequence[SourceLike] | None: ...

    @property
    def status(self) -> str: ...

    @property
    def provenance(self) -> dict[str, Any] | None: ...

    @property
    def figures(self) -> dict[str, Any] | None: ...


class Asker(Protocol):
    def ask(
        self, question: str, *, instructions: str | None = None, **filters: Any
    ) -> AnswerLike: ...


def load_answer_cases(path: Path, label: str | None = None) -> list[AnswerCase]:
    """Read the evaluation file (a YAML list of cases); every problem names the entry."""
    rel = label or str(path)
    raw = read_yaml_file(path, rel, "write reference questions (docs/answers.md)")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ProblemsError(
            f"{rel} is malformed",
            [Problem(rel, "expected a list of cases", hint="start each case with `- id: ...`")],
        )
    cases: list[AnswerCase] = []
    problems: list[Problem] = []
    for index, entry in enumerate(raw):
        where = f"{rel}[{index}]"
        try:
            case = AnswerCase.model_validate(entry)
        except ValidationError as exc:
            problems += [
                Problem(where, e["msg"], field=".".join(str(p) for p in e["loc"]))
                for e in exc.errors()
            ]
            continue
        try:
            # The filters' names and types, by the engine's own parser: a typo'd filter would
            # otherwise abort the run halfway (labels, channels and sources are checked against
            # the configuration when the case runs).
            parse_request(case.request)
        except SearchRequestError as exc:
            problems.append(Problem(where, f"case {case.id!r}: {exc}"))
            continue
        cases.append(case)
    ids = Counter(c.id for c in cases)
    problems += [
        Problem(rel, f"case id {i!r} used twice", field="id") for i, n in ids.items() if n > 1
    ]
    if problems:
        raise ProblemsError(f"{rel} is malformed", problems)
    return cases


def _norm(text: str) -> str:
    return " ".join(text.replace("\u00a0", " ").split()).casefold()


@dataclass
class CaseResult:
    id: str
    question: str
    status: str
    sources: list[str]
    verdict: Verdict
    retrieval_passed: bool
    answer_passed: bool
    missing_documents: list[str] = field(default_factory=list)
    leaked_documents: list[str] = field(default_factory=list)
    missing_facts: list[str] = field(default_factory=list)
    leaked_facts: list[str] = field(default_factory=list)
    missing_caveats: list[str] = field(default_factory=list)
    unreliable_stated: list[str] = field(default_factory=list)
    expected_nothing_found: bool = False  # ... and the search found something
    numeric_problems: list[str] = field(default_factory=list)  # query, parameters, value
    error: str | None = None


@dataclass
class AnswerEvalReport:
    k: int
    cases: list[CaseResult]

    @property
    def passed(self) -> bool:
        return all(c.verdict == "pass" for c in self.cases)

    def summary(self) -> dict[str, Any]:
        total = len(self.cases)
        counts = Counter(c.verdict for c in self.cases)
        return {
            "cases": total,
            "retrieval_passed": sum(c.retrieval_passed for c in self.cases),
            "answer_passed": sum(c.answer_passed for c in self.cases),
            "passed": counts["pass"],
            "failed_at_retrieval": counts["retrieval"],
            "failed_at_answer": counts["answer"],
            "errors": counts["failed"],
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "passed": self.passed,
            "summary": self.summary(),
            "cases": [asdict(c) for c in self.cases],
        }


# (query id, parameters) -> the first figure the store computes for them: what a numeric case
# without a written `value` is checked against (the data are refreshed: a written value ages).
Reference = Callable[[str, Mapping[str, Any]], object]


def judge(
    case: AnswerCase, answer: AnswerLike, k: int = DEFAULT_K, reference: Reference | None = None
) -> CaseResult:
    """Both levels for one case. The retrieval level looks only at sources; the answer level
    only at the text — a failure says which side to fix."""
    expect = case.expect
    # Documents, each once: a FAQ's rows are sources of their own, its file one document.
    sources = list(dict.fromkeys(s.doc_id for s in answer.sources or []))
    result = CaseResult(
        id=case.id,
        question=case.question,
        status=answer.status,
        sources=sources,
        verdict="pass",
        retrieval_passed=True,
        answer_passed=True,
    )
    if answer.status == "failed":
        result.verdict, result.retrieval_passed, result.answer_passed = "failed", False, False
        result.error = answer.text
        return result
    top = set(sources[:k])
    result.missing_documents = [d for d in expect.documents if d not in top]
    result.leaked_documents = [d for d in expect.absent if d in sources]
    result.expected_nothing_found = expect.nothing_found and answer.status != "nothing_found"
    nothing_ok = not result.expected_nothing_found
    result.retrieval_passed = (
        not result.missing_documents and not result.leaked_documents and nothing_ok
    )
    text = _norm(answer.text)
    result.missing_facts = [f for f in expect.facts if _norm(f) not in text]
    result.leaked_facts = [f for f in expect.absent_facts if _norm(f) in text]
    result.missing_caveats = [c for c in expect.caveats if _norm(c) not in text]
    # A flagged number may be quoted only where its caveats are reported too; with no caveat
    # declared in the case it must not appear at all.
    caveats_reported = bool(expect.caveats) and not result.missing_caveats
    result.unreliable_stated = [
        n for n in expect.unreliable if _contains_number(text, n) and not caveats_reported
    ]
    result.numeric_problems = _numeric_problems(expect, answer, reference)
    result.answer_passed = not (
        result.numeric_problems
        or result.missing_facts
        or result.leaked_facts
        or result.missing_caveats
        or result.unreliable_stated
    )
    if not result.retrieval_passed:
        result.verdict = "retrieval"
    elif not result.answer_passed:
        result.verdict = "answer"
    return result


def _numeric_problems(
    expect: AnswerExpect, answer: AnswerLike, reference: Reference | None
) -> list[str]:
    """What a numeric case got wrong: not computed, another query, other parameters, another
    value; or, for a text case, computed by the store."""
    if expect.text_path:
        computed = answer.status in ("computed", "needs_parameter")
        return [f"answered by the analytics store (status {answer.status})"] if computed else []
    want = expect.numeric
    if want is None:
        return []
    if answer.status != "computed" or answer.provenance is None:
        return [f"not computed (status {answer.status})"]
    problems: list[str] = []
    got = answer.provenance
    if got.get("query_id") != want.query:
        problems.append(f"query {got.get('query_id')} instead of {want.query}")
    bound = got.get("parameters") or {}
    for name, wanted in want.parameters.items():
        if str(bound.get(name)) != str(wanted):
            problems.append(f"parameter {name} = {bound.get(name)!r} instead of {wanted!r}")
    value: object = want.value
    if value is None and reference is not None:
        try:
            value = reference(want.query, want.parameters)
        except ThothError as exc:
            return [*problems, f"the store could not compute the reference value: {exc}"]
    if value is not None:
        first = first_figure((answer.figures or {}).get("rows") or [])
        if not _same_value(first, value):
            problems.append(f"value {first!r} instead of {value!r}")
    return problems


def first_figure(rows: Sequence[Sequence[object]]) -> object:
    """The first figure of a result: the first number of its first row (a table's first
    cell is often the label, a ward or a month), else its first cell."""
    if not rows or not rows[0]:
        return None
    numbers = [v for v in rows[0] if isinstance(v, int | float) and not isinstance(v, bool)]
    return numbers[0] if numbers else rows[0][0]


def _same_value(got: object, want: object) -> bool:
    if isinstance(want, str) or isinstance(got, str) or got is None:
        return str(got) == str(want)
    try:
        a, b = float(str(got)), float(str(want))
        return abs(a - b) <= 1e-9 * max(1.0, abs(b))
    except ValueError:
        return False


def _contains_number(text: str, number: str) -> bool:
    """`53%` is in "al 53% annuo" but not in "153%"."""
    return re.search(r"(?<![\d.,])" + re.escape(_norm(number)) + r"(?![\d])", text) is not None


def run_answer_evaluation(
    asker: Asker,
    cases: Sequence[AnswerCase],
    k: int = DEFAULT_K,
    reference: Reference | None = None,
) -> AnswerEvalReport:
    """Ask and judge every case. A case whose ask raises (a refused request, a failed answer
    model) is `failed` with the error: the other cases still run. `reference` computes the
    expected figure of a numeric case that writes no `value`, from the store itself."""
    return AnswerEvalReport(k=k, cases=[_run_case(asker, case, k, reference) for case in cases])


def _run_case(asker: Asker, case: AnswerCase, k: int, reference: Reference | None) -> CaseResult:
    try:
        answer = asker.ask(case.question, instructions=case.instructions, **case.request)
    except ThothError as exc:
        return CaseResult(
            id=case.id,
            question=case.question,
            status="failed",
            sources=[],
            verdict="failed",
            retrieval_passed=False,
            answer_passed=False,
            error=f"{type(exc).__name__}: {exc}",
        )
    return judge(case, answer, k, reference)


def case_from_answer(
    answer_id: str,
    question: str,
    request: Mapping[str, Any],
    sources: Sequence[str],
    answer_text: str,
    *,
    nothing_found: bool = False,
    reported: str = "",
) -> str:
    """A ready-to-run evaluation entry (YAML text, with review comments) from a logged answer.

    The expected documents start as the answer's own sources, unless the caller names the
    right ones or says the corpus holds nothing for it (`nothing_found`): the reviewer
    corrects them and writes the facts the right answer must contain. Until then the case
    runs and records what the engine does today, so the regression is no longer an anecdote.
    `reported`: what a reader said of the answer (`tht answers feedback`), kept as a comment."""
    entry: dict[str, Any] = {"id": f"from-{answer_id}", "question": question}
    entry.update({k: v for k, v in request.items() if v not in (None, [], ())})
    entry["origin"] = f"answer:{answer_id}"
    entry["expect"] = (
        {"nothing_found": True} if nothing_found else {"documents": list(sources), "facts": []}
    )
    body = yaml.safe_dump([entry], allow_unicode=True, sort_keys=False, width=100)
    observed = "\n".join(f"#   {line}" for line in answer_text.strip().splitlines()[:12])
    said = "".join(f"#   {line}\n" for line in reported.strip().splitlines()[:12])
    review = (
        "# Expected: nothing_found (the corpus holds no answer to it).\n"
        if nothing_found
        else "# Review `expect.documents` and write the facts the right answer must contain.\n"
    )
    return (
        f"# Added from logged answer {answer_id}.\n{review}"
        + (f"# Reported by a reader:\n{said}" if said else "")
        + f"# Observed answer:\n{observed}\n{body}"
    )


def append_case(path: Path, label: str, answer_id: str, entry: str) -> None:
    """Append `entry` (from `case_from_answer`) to the evaluation file; refused when the answer
    is already a case, and undone when the file would no longer load."""
    existing = load_answer_cases(path, label) if path.is_file() else []
    if any(c.origin == f"answer:{answer_id}" for c in existing):
        raise PreconditionError(
            f"{label}: answer {answer_id} is already an evaluation entry -> edit it there"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.is_file()
    previous = path.read_text("utf-8") if existed else ""
    separator = "" if not previous or previous.endswith("\n") else "\n"
    path.write_text(previous + separator + entry, "utf-8")
    try:
        load_answer_cases(path, label)
    except ThothError:
        # The file must still load: put it back as it was, nothing half-written.
        if existed:
            path.write_text(previous, "utf-8")
        else:
            path.unlink()
        raise
