"""Issue 23, point 2: labels on numbers. A figure carries the labels of its store ([analytics]
labels) and of its catalog query; a request without all of them gets no number (and no hint
of the query), exactly as a document it may not see; a store without labels serves none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.analytics.conftest import (
    CATALOG,
    AnalyticsWorkspace,
    make_analytics_workspace,
)
from tests.conftest import commit_all
from thoth.answer.wording import ITALIAN

QUESTION = "Quanti ricoveri ha avuto la Pediatria nel 2024?"
ONE_WARD = "analytics/queries/ricoveri-reparto.yaml"


def labelled_workspace(tmp_path: Path, store: str, query: str | None) -> AnalyticsWorkspace:
    aw = make_analytics_workspace(tmp_path / "ws")
    toml = (aw.root / "thoth.toml").read_text("utf-8")
    aw.write("thoth.toml", toml.replace('labels = ["public"]\nthreshold', f"{store}threshold"))
    if query is not None:
        aw.write(
            ONE_WARD, CATALOG[ONE_WARD].replace("measure: count\n", f"measure: count\n{query}")
        )
    commit_all(aw.root, "labels")
    aw.activate()
    aw.publish_text()
    return aw


def ask(aw: AnalyticsWorkspace, **filters: Any) -> dict[str, Any]:
    service = aw.service()
    try:
        return service.ask(QUESTION, **filters).as_dict()
    finally:
        service.close()


def test_a_figure_is_served_only_with_all_of_its_labels(tmp_path: Path) -> None:
    aw = labelled_workspace(tmp_path, 'labels = ["public"]\n', "labels: [internal]\n")
    public = ask(aw)  # default labels: public
    assert public["status"] != "computed" and "figures" not in public
    # Not in the text, nor anywhere in what the caller receives (the diagnostics included).
    assert "provenance" not in public and "ricoveri-reparto" not in json.dumps(public)
    assert public["text"].startswith(ITALIAN.figure_not_available)
    assert "labels" in public["diagnostics"]["analytics"]["reason"]
    analyst = ask(aw, labels=["public", "internal"])
    assert analyst["status"] == "computed"
    assert analyst["provenance"]["labels"] == ["internal", "public"]


def test_a_store_without_labels_serves_no_number_and_check_says_so(tmp_path: Path) -> None:
    from tests.analytics.test_data_date import tht

    aw = labelled_workspace(tmp_path, "", None)
    answer = ask(aw, labels=["public", "internal", "confidential"])
    assert answer["status"] != "computed" and "figures" not in answer
    code, checked = tht("analytics", "check", "-w", str(aw.root))
    assert code == 1
    [problem] = [p for p in checked["problems"] if p["field"] == "analytics.labels"]
    assert problem["code"] == "analytics_unlabelled"
    code, verified = tht("verify", "-w", str(aw.root))
    assert "analytics_unlabelled" in json.dumps(verified)


def test_the_cli_refuses_the_number_as_it_refuses_a_document(tmp_path: Path) -> None:
    from tests.analytics.test_data_date import tht

    aw = labelled_workspace(tmp_path, 'labels = ["internal"]\n', None)
    code, public = tht("ask", QUESTION, "-w", str(aw.root))
    assert public["status"] != "computed" and "figures" not in public
    code, analyst = tht("ask", QUESTION, "--label", "internal", "-w", str(aw.root))
    assert code == 0 and analyst["status"] == "computed"
    assert analyst["provenance"]["labels"] == ["internal"]


def test_check_names_a_query_label_outside_the_vocabulary(tmp_path: Path) -> None:
    from tests.analytics.test_data_date import tht

    aw = make_analytics_workspace(tmp_path / "ws")
    aw.write(
        ONE_WARD,
        CATALOG[ONE_WARD].replace("measure: count\n", "measure: count\nlabels: [secret]\n"),
    )
    code, checked = tht("analytics", "check", "-w", str(aw.root))
    assert code == 1
    [problem] = [p for p in checked["problems"] if p["field"] == "labels"]
    assert problem["code"] == "unknown_label" and "secret" in problem["message"]
