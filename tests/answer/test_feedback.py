"""A reader's report on an answer (thoth.answer.feedback, `tht answers feedback`): stored
whole with the caller, the answer and what it was served from, or refused with a code and
nothing stored; the curator's queue; a report turned into a reference question that
`tht eval run` runs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.answer.test_answer import QUESTION, Corpus, ask
from tests.fake_embeddings import FakeEmbeddingServer
from thoth.answer.feedback import MAX_NOTE_CHARS, check_report, report
from thoth.cli import feedback as feedback_cli
from thoth.cli.main import app
from thoth.errors import RequestError
from thoth.runtime import open_state, state_dir
from thoth.state import FEEDBACK_KINDS, AnswerNotFound, StateStore
from thoth.workspace import Workspace

runner = CliRunner()


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Corpus]:
    """The answer tests' published corpus."""
    with FakeEmbeddingServer(dim=8) as embeddings:
        root = tmp_path / "ws"
        root.mkdir()
        published = Corpus(root, embeddings)
        published.publish()
        yield published


def cli(corpus: Corpus, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "-w", str(corpus.root)], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout


def stored(corpus: Corpus) -> int:
    ws = Workspace.open(corpus.root)
    with open_state(ws) as state:
        return len(state.list_feedback(ws.settings.workspace))


def test_the_cli_knows_the_kinds_the_store_knows() -> None:
    assert feedback_cli.FEEDBACK_KINDS == FEEDBACK_KINDS


@pytest.mark.parametrize(
    ("kind", "note", "code"),
    [
        ("bad", "", "feedback_kind_unknown"),
        ("wrong", "x" * (MAX_NOTE_CHARS + 1), "feedback_note_too_long"),
        ("wrong", "x" * 1_000_000, "feedback_note_too_long"),
        ("wrong", "see <script>alert(1)</script>", "feedback_note_markup"),
        ("wrong", "the figure is <b>wrong</b>", "feedback_note_markup"),
        ("wrong", "<!-- hidden -->", "feedback_note_markup"),
        ("wrong", "bell \x07 here", "feedback_note_control"),
    ],
)
def test_a_report_that_cannot_be_stored_whole_is_refused_with_its_code(
    kind: str, note: str, code: str
) -> None:
    with pytest.raises(RequestError) as caught:
        check_report(kind, note)
    assert [p.code for p in caught.value.problems] == [code]


def test_plain_text_with_comparisons_and_line_breaks_is_a_note() -> None:
    check_report("incomplete", "a < b and c > d\n\tthe 2023 figure is missing")


def test_a_report_is_stored_with_caller_answer_and_what_it_was_served_from(
    corpus: Corpus,
) -> None:
    answer = ask(corpus)
    ws = Workspace.open(corpus.root)
    with open_state(ws) as state:
        saved = report(state, ws.settings.workspace, answer.id, "wrong", "  the 2023 rise is 12%  ")
        [listed] = state.list_feedback(ws.settings.workspace)
    assert listed == saved
    assert (saved.answer_id, saved.kind, saved.note, saved.caller) == (
        answer.id,
        "wrong",
        "the 2023 rise is 12%",
        None,
    )
    assert saved.revision == f"generation:{corpus.generation}"
    assert saved.masked == []


def test_an_answer_not_logged_or_of_another_caller_does_not_exist_for_the_report(
    corpus: Corpus,
) -> None:
    ws = Workspace.open(corpus.root)
    answer = ask(corpus)  # asked from the CLI: no caller
    with open_state(ws) as state:
        for answer_id, caller in (
            ("ans-000000000000", None),
            ("not an id", None),
            (answer.id, "portal"),  # the portal was not given this answer
        ):
            with pytest.raises(AnswerNotFound) as caught:
                report(state, ws.settings.workspace, answer_id, "wrong", caller=caller)
            assert caught.value.code == "answer_not_found"
        with pytest.raises(AnswerNotFound):
            report(state, "another-workspace", answer.id, "wrong")
        assert state.list_feedback(ws.settings.workspace) == []


def test_an_over_masked_report_names_the_column_and_the_rule(corpus: Corpus) -> None:
    """The masked columns come from the answer as served; only an over_masked report keeps
    them (a "wrong" report on the same answer is not about masking)."""
    answer = ask(corpus)
    masked = [{"column": "beneficiario_note", "values": 3, "rule": "no word of the name ..."}]
    ws = Workspace.open(corpus.root)
    with open_state(ws) as state:
        _rewrite_diagnostics(state, answer.id, {"masked": masked})
        over = report(state, ws.settings.workspace, answer.id, "over_masked", "the note is useful")
        wrong = report(state, ws.settings.workspace, answer.id, "wrong")
    assert over.masked == masked and wrong.masked == []
    code, out = cli(corpus, "answers", "feedback", "list", "--kind", "over_masked")
    assert code == 0 and "beneficiario_note" in out and "no word of the name" in out, out


def _rewrite_diagnostics(state: StateStore, answer_id: str, extra: dict[str, object]) -> None:
    """Give a logged answer the diagnostics a model-worded computed answer carries."""
    from sqlalchemy import update

    from thoth.state.schema import answer_log

    logged = state.get_answer(answer_id)
    answer = {**logged.answer, "diagnostics": {**logged.answer["diagnostics"], **extra}}
    with state._write("test") as conn:
        conn.execute(
            update(answer_log).where(answer_log.c.id == answer_id).values(answer=json.dumps(answer))
        )


def test_cli_add_list_and_refusals(corpus: Corpus) -> None:
    answer = ask(corpus)
    code, out = cli(corpus, "answers", "feedback", "add", answer.id, "incomplete", "--note", "n")
    assert code == 0 and "incomplete" in out, out
    code, out = cli(corpus, "answers", "feedback", "add", answer.id, "good", "--json")
    assert code == 0 and json.loads(out)["feedback"]["kind"] == "good"
    for args, exit_code, error in (
        (("add", answer.id, "bogus"), 2, "feedback_kind_unknown"),
        (("add", answer.id, "wrong", "--note", "<img src=x onerror=alert(1)>"), 2, "markup"),
        (("add", "ans-000000000000", "wrong"), 1, "answer_not_found"),
    ):
        result = runner.invoke(
            app, ["answers", "feedback", *args, "--json", "-w", str(corpus.root)]
        )
        assert result.exit_code == exit_code, result.output
        assert error in result.stdout, result.stdout
    assert stored(corpus) == 2  # nothing of the refused reports
    code, out = cli(corpus, "answers", "feedback", "list", "--json")
    listed = json.loads(out)["feedback"]
    assert [f["kind"] for f in listed] == ["good", "incomplete"]
    assert listed[1]["question"] == QUESTION and listed[1]["note"] == "n"
    assert runner.invoke(app, ["answers", "feedback", "list", "--kind", "nope"]).exit_code == 2


def test_a_reported_question_becomes_a_reference_question_that_eval_runs(
    corpus: Corpus,
) -> None:
    """A wrong `found` on a question the corpus cannot answer -> expect nothing_found; a
    report naming the right document -> expect that document. `tht eval run` runs both."""
    unanswerable = ask(corpus, year=1990)
    answered = ask(corpus)
    ws = Workspace.open(corpus.root)
    with open_state(ws) as state:
        none = report(state, ws.settings.workspace, unanswerable.id, "wrong", "nothing in 1990")
        right = report(state, ws.settings.workspace, answered.id, "incomplete")
    code, out = cli(corpus, "answers", "feedback", "to-eval", str(none.id), "--nothing-found")
    assert code == 0, out
    code, out = cli(
        corpus,
        "answers",
        "feedback",
        "to-eval",
        str(right.id),
        "--source",
        "wiki:ps/pediatria.md",
        "--json",
    )
    assert code == 0, out
    entry = json.loads(out)["entry"]
    assert "Reported by a reader:\n#   incomplete" in entry
    again = runner.invoke(
        app, ["answers", "feedback", "to-eval", str(right.id), "-w", str(corpus.root)]
    )
    assert again.exit_code == 4  # already a case: edit it there
    code, out = cli(corpus, "answers", "feedback", "to-eval", "999", "--json")
    assert code == 1 and json.loads(out)["code"] == "feedback_not_found", out
    result = runner.invoke(app, ["eval", "run", "--json", "-w", str(corpus.root)])
    cases = {c["id"]: c for c in json.loads(result.stdout)["cases"]}
    assert cases[f"from-{unanswerable.id}"]["status"] == "nothing_found"
    assert cases[f"from-{unanswerable.id}"]["verdict"] == "pass", cases
    assert cases[f"from-{answered.id}"]["retrieval_passed"], cases
    evaluation = Path(corpus.root, ws.settings.answers.evaluation).read_text("utf-8")
    assert "nothing_found: true" in evaluation


def test_a_rise_of_failed_answers_above_its_threshold_warns_in_verify(corpus: Corpus) -> None:
    """`[answers.alerts]`: below `min_answers` nothing; three failures in four answers are
    above a failed_rate of 0.3, and `tht verify` says so, as a warning (this corpus is no Git
    checkout: verify has errors of its own, which the alert does not add to)."""
    ask(corpus)  # (rewrites thoth.toml: the alerts go in after it)
    config = corpus.root / "thoth.toml"
    text = config.read_text("utf-8")
    config.write_text(text + "\n[answers.alerts]\nmin_answers = 4\nfailed_rate = 0.3\n", "utf-8")

    def warnings() -> list[dict[str, str]]:
        result = runner.invoke(app, ["verify", "--json", "-w", str(corpus.root)])
        assert result.exit_code == 1, result.output
        return [
            f for f in json.loads(result.stdout)["findings"] if f["code"].startswith("answers_")
        ]

    assert warnings() == []
    ws = Workspace.open(corpus.root)
    shutil.rmtree(state_dir(ws) / "index" / ws.settings.workspace / corpus.generation)
    for _ in range(3):
        assert runner.invoke(app, ["ask", QUESTION, "-w", str(corpus.root)]).exit_code == 1
    [warning] = warnings()
    assert warning["code"] == "answers_failed_rate" and warning["level"] == "warning"
    assert "caller (local): failed_rate 75.0% over 4 answers" in warning["message"]
