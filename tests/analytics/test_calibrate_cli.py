"""Issue 46, point 3, on the command line: `tht analytics calibrate` reports the share of new
wordings of a covered question it expects computed (leave-one-out), and a set that cannot
calibrate — only covered questions, too few covered ones — is refused with what to add."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.analytics.conftest import make_analytics_workspace
from thoth.cli.main import app

COVERED = """\
- {question: "Quanti ricoveri ha avuto la Pediatria nel 2024?", query: ricoveri-reparto}
- {question: "Numero di ricoveri della Cardiologia nel 2023", query: ricoveri-reparto}
- {question: "Ricoveri della Ortopedia nel 2024", query: ricoveri-reparto}
- {question: "Qual è la degenza media dei ricoveri nel 2024?", query: degenza-media}
- {question: "Quanti giorni dura in media una degenza nel 2023?", query: degenza-media}
"""
UNCOVERED = """\
- {question: "Quanti parti cesarei nel 2024?", query: null, figure: true}
- {question: "Come si prenota una visita?", query: null, figure: false}
"""


def _calibrate(root: Path, text: str, *extra: str) -> tuple[int, str]:
    path = root / "calibration.yaml"
    path.write_text(text, "utf-8")
    result = CliRunner().invoke(
        app, ["analytics", "calibrate", "--set", str(path), "-w", str(root), *extra]
    )
    return result.exit_code, result.stdout


def test_calibrate_reports_the_expected_share_of_new_wordings_computed(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    code, out = _calibrate(aw.root, COVERED + UNCOVERED, "--json")
    assert code == 0, out
    data = json.loads(out)
    estimate = data["expected_computed"]
    assert estimate["method"] == "leave-one-out" and estimate["of"] == 5
    assert data["expected_wrong_numbers"]["of"] == 2
    assert data["threshold"] < data["covered"]["min"]
    code, out = _calibrate(aw.root, COVERED + UNCOVERED)
    assert code == 0 and "Expected on new wordings (leave-one-out):" in out, out


def test_a_set_that_cannot_calibrate_is_refused_with_what_to_add(tmp_path: Path) -> None:
    aw = make_analytics_workspace(tmp_path / "ws")
    code, out = _calibrate(aw.root, COVERED, "--json")
    assert code == 1 and "no query covers" in json.loads(out)["error"], out
    two = "\n".join(COVERED.splitlines()[:2]) + "\n"
    code, out = _calibrate(aw.root, two + UNCOVERED, "--json")
    assert code == 1 and "at least 3 covered questions" in json.loads(out)["error"], out


def test_the_score_table_does_not_call_a_larger_row_a_part_of_a_smaller_one(
    tmp_path: Path,
) -> None:
    """The "not covered" row holds the uncovered questions some query was eligible for; the
    figure row every uncovered figure question, refused or not. It was labelled "of which
    asking a figure", and printed 7 under a "not covered" row of 0 on a trial's set."""
    aw = make_analytics_workspace(tmp_path / "ws")
    code, out = _calibrate(aw.root, COVERED + UNCOVERED)
    assert code == 0, out
    assert "of which" not in out
    flat = " ".join(out.replace("│", " ").split())
    assert "eligible" in flat and "asking a figure" in flat, out
