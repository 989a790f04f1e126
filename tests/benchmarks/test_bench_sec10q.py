"""benchmarks/sec10q.py measures the tuning and the validation filings in one run and prints
them side by side; a filing the sync refuses is reported as refused, the other filings are
still measured and its questions still asked (tiny PDFs, the bundled embedder, real sync)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.documents.test_documents import build_pdf, text_lines

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sec10q

pytestmark = pytest.mark.e2e


def filing_set(
    root: Path, filings: dict[str, list[str]], questions: list[tuple[str, str, str]]
) -> Path:
    (root / "docs").mkdir(parents=True)
    for name, lines in filings.items():
        (root / "docs" / f"{name}.pdf").write_bytes(build_pdf([text_lines(lines)]))
    with (root / "qna.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer"])
        for question, doc, answer in questions:
            writer.writerow([question, f"*{doc}*", "Single-Doc", "Text", answer])
    return root


def test_both_sets_are_printed_and_a_refused_filing_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuning = filing_set(
        tmp_path / "tuning",
        {
            "2023 Q2 ACME": ["ACME Corp quarterly report.", "Total revenue was $1,234 million."],
            "2023 Q2 BOLT": ["BOLT Inc quarterly report.", "Net income was $56.7 million."],
        },
        [("What was ACME's total revenue in Q2 2023?", "2023 Q2 ACME", "$1,234 million")],
    )
    validation = filing_set(
        tmp_path / "validation",
        {
            "2023 Q1 ACME": ["ACME Corp quarterly report.", "Total revenue was $1,111 million."],
            "2023 Q1 BOLT": ["BOLT Inc quarterly report.", "export PGPASSWORD=Dwh#Prod_77"],
        },
        [
            ("What was ACME's total revenue in Q1 2023?", "2023 Q1 ACME", "$1,111 million"),
            ("What was BOLT's net income in Q1 2023?", "2023 Q1 BOLT", "$9.9 million"),
        ],
    )
    code = sec10q.main([str(tuning), str(validation), "--json", "--bare-sample", "1"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    first, second = result["sets"]
    assert first["data"] == str(tuning) and second["data"] == str(validation)
    assert first["sync"]["refused"] == []
    assert first["en"]["questions"] == 1 and first["it"]["questions"] == 0
    [refused] = second["sync"]["refused"]
    assert refused["filing"] == "2023 Q1 BOLT.pdf" and refused["code"] == "credential"
    assert set(second["sync"]["fragments_per_filing"]) == {"filings:docs/2023 Q1 ACME.pdf"}
    assert second["en"]["questions"] == 2  # the refused filing's question is still asked
    bolt = next(q for q in second["questions"] if "BOLT" in q["question"])
    assert bolt["right_first"] is False

    # The table: one section per set, the refusal named.
    sec10q.report(result)
    table = capsys.readouterr().out
    assert "tuning" in table and "validation" in table
    assert "2023 Q1 BOLT.pdf" in table


def test_asking_again_on_a_kept_workspace_does_not_embed_every_fragment_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--workspace` re-asks without syncing; without `--bare-sample` it used to time the bare
    embedder on every fragment of every set (about 1,400 fragments for the two 10-Q sets:
    over ten minutes on two shared cores, where the questions take half a minute). A kept
    workspace's sync is not measured again, so neither is the embedder, unless asked for."""
    tuning = filing_set(
        tmp_path / "tuning",
        {"2023 Q2 ACME": ["ACME Corp quarterly report.", "Total revenue was $1,234 million."]},
        [("What was ACME's total revenue in Q2 2023?", "2023 Q2 ACME", "$1,234 million")],
    )
    kept = tmp_path / "kept"
    assert sec10q.main([str(tuning), "--json", "--keep", str(kept), "--bare-sample", "1"]) == 0
    capsys.readouterr()
    assert sec10q.main([str(tuning), "--json", "--workspace", str(kept)]) == 0
    result = json.loads(capsys.readouterr().out)
    [again] = result["sets"]
    assert again["sync"]["fragments"] >= 1
    assert again["sync"]["bare_texts"] == 0 and again["sync"]["bare_embed_s"] is None
    assert again["en"]["figures_in_context"] == 1  # the questions were still asked
    sec10q.report(result)
    assert "bare embedder: not timed" in capsys.readouterr().out

    # Asked for, the bare embedder is timed on the kept workspace too.
    assert sec10q.main([str(tuning), "--json", "--workspace", str(kept), "--bare-sample", "1"]) == 0
    [timed] = json.loads(capsys.readouterr().out)["sets"]
    assert timed["sync"]["bare_texts"] == 1 and timed["sync"]["bare_embed_s"] is not None


def _asked(question: str, answer: str, figures: list[str], in_context: list[str]) -> dict[str, Any]:
    in_answer = [f for f in figures if f in answer]
    return {
        "question": question,
        "language": "en",
        "kind": "answerable",
        "filing": "2023 Q2 ACME",
        "right_first": True,
        "status": "found",
        "figures": figures,
        "figures_in_context": in_context,
        "figures_in_answer": in_answer,
        "figures_lost": [f for f in in_context if f not in in_answer],
        "answer": answer,
        "answer_chars": len(answer),
        "answer_quotes": sum(line.startswith("- «") for line in answer.splitlines()),
    }


def test_the_answers_length_and_the_figures_lost_on_the_way_are_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A gain in figures bought by quoting everything must show: the median answer length
    (characters, quotes) is summarised per language, and `--show` lists, per question, the
    figures that reached the context and not the answer."""
    rows = [
        _asked("Revenue?", "- «Revenue $1,234» [1]\n- «Cost $500» [1]", ["$1,234"], ["$1,234"]),
        _asked("Income?", "- «Net income $9» [2]", ["$56.7", "$8.1"], ["$56.7", "$8.1"]),
        _asked("Cash?", "- «Cash $1» [1]\n- «a» [1]\n- «b» [1]", ["$2.5"], []),
    ]
    summary = sec10q.summarise(rows, "en")
    assert summary["answer_chars_p50"] == len(rows[2]["answer"])  # 21, 35, 40 characters
    assert summary["answer_quotes_p50"] == 2
    result = {"data": "tuning", "questions": rows, "show": True}
    sec10q.report_lost(Console(width=200), result)
    shown = capsys.readouterr().out
    assert "$56.7, $8.1" in shown and "Income?" in shown
    assert "Revenue?" not in shown and "Cash?" not in shown  # nothing lost between the two
