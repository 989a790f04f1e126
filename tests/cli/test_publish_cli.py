"""`tht workspace activate`, `tht workspace preprocess evidence`, `tht evidence search`,
`evaluate`, `activate --generation`, `generations`: JSON for agents, meaningful exit codes."""

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import commit_all
from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import EVALUATION, FAILING_QUESTION, prepared_workspace
from thoth.cli import exitcodes
from thoth.cli.main import app
from thoth.runtime import open_runtime
from thoth.workspace import Workspace

pytestmark = pytest.mark.e2e

Make = Callable[..., Workspace]
runner = CliRunner()


def tht(*args: str) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def test_publish_search_evaluate_rollback(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    ws = prepared_workspace(make_workspace, fake.url)
    root = str(ws.root)
    code, data = tht("evidence", "search", "ricovero", "--purpose", "disambiguation", "-w", root)
    assert code == exitcodes.FAILED and data["code"] == "revision_not_activated"

    code, data = tht("workspace", "activate", root)
    assert code == exitcodes.OK
    code, data = tht("workspace", "preprocess", "evidence", root)
    assert code == exitcodes.OK and data["outcome"] == "activated"
    first = data["generation"]
    assert data["evaluation"]["gate"]["passed"] is True  # type: ignore[index]

    code, data = tht(
        "evidence",
        "search",
        "ricovero con pernottamento",
        "--purpose",
        "disambiguation",
        "-w",
        root,
    )
    assert code == exitcodes.OK and data["status"] == "available"
    assert "evidence:ricovero" in [r["evidence_id"] for r in data["results"]]  # type: ignore[attr-defined]
    assert data["receipt"]["generation"] == first  # type: ignore[index]

    code, data = tht(
        "evidence",
        "search",
        "ricovero",
        "--purpose",
        "disambiguation",
        "--table",
        "adt.admission",
        "--binding",
        "-w",
        root,
    )
    assert [r["evidence_id"] for r in data["results"]] == ["evidence:day-hospital"]  # type: ignore[attr-defined]

    code, data = tht("evidence", "evaluate", "-w", root)
    assert code == exitcodes.OK and data["generation"] == first
    assert data["baseline_saved"]  # the first evaluation is kept as the baseline
    assert {"fused", "dense", "bm25"} <= set(data["questions"][0]["ranks"]["evidence:ricovero"])  # type: ignore[index]
    code, data = tht("evidence", "evaluate", "-w", root)
    assert data["baseline_saved"] is None  # never replaced

    # A second revision whose gate fails: exit 1, the first generation stays active.
    (ws.evidence / "evaluation.yaml").write_text(EVALUATION + FAILING_QUESTION)
    commit_all(ws.root)
    tht("workspace", "activate", root)
    code, data = tht("workspace", "preprocess", "evidence", root)
    assert code == exitcodes.FAILED and data["outcome"] == "gate_failed"
    code, data = tht("evidence", "search", "ricovero", "--purpose", "disambiguation", "-w", root)
    assert code == exitcodes.FAILED and data["code"] == "revision_mismatch"

    code, data = tht("evidence", "generations", "-w", root)
    statuses = {g["id"]: g["status"] for g in data["generations"]}  # type: ignore[attr-defined]
    assert statuses[first] == "active" and "failed" in statuses.values()
    assert [b["outcome"] for b in data["builds"]] == ["gate_failed", "activated"]  # type: ignore[attr-defined]

    code, data = tht("evidence", "activate", "--generation", "g-nope", "-w", root)
    assert code == exitcodes.PRECONDITION


def test_activate_refuses_uncommitted_evidence(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    ws = prepared_workspace(make_workspace, fake.url)
    (ws.evidence / "evaluation.yaml").write_text(EVALUATION + "\n# draft\n")
    code, data = tht("workspace", "activate", str(ws.root))
    assert code == exitcodes.PRECONDITION and "uncommitted" in str(data["error"])


def test_empty_question_is_a_usage_error(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    ws = prepared_workspace(make_workspace, fake.url)
    result = runner.invoke(
        app, ["evidence", "search", "  ", "--purpose", "disambiguation", "-w", str(ws.root)]
    )
    assert result.exit_code == exitcodes.USAGE


def _published_with_a_killed_candidate(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> tuple[str, str, str]:
    """A workspace with an active published generation and the candidate a build killed
    before its gate left: (root, active generation, candidate)."""
    ws = prepared_workspace(make_workspace, fake.url)
    root = str(ws.root)
    tht("workspace", "activate", root)
    code, data = tht("workspace", "preprocess", "evidence", root)
    assert code == exitcodes.OK
    return root, str(data["generation"]), _killed_before_its_gate(ws)


def _killed_before_its_gate(ws: Workspace) -> str:
    """What a build killed between sealing and evaluation leaves: sealed data, a candidate
    row, no evaluation. Returns the generation id."""
    with open_runtime(Workspace.open(ws.root)) as rt:
        name = rt.ws.settings.workspace
        revision = rt.state.active_revision(name)
        assert revision is not None
        orphan = rt.state.create_generation(name, revision, {"embedder": rt.embedder.identity})
        rt.backend.seal(orphan, rt.backend.create(orphan, rt.embedder.dim))
        rt.state.mark_generation(orphan, "candidate", {"labels": []})
    return orphan


def test_a_candidate_whose_build_was_killed_before_its_gate_cannot_be_activated(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    """A build killed between sealing and evaluation leaves a sealed 'candidate': it never
    passed its gate, so `tht evidence activate` refuses it, and the next build abandons it."""
    root, first, orphan = _published_with_a_killed_candidate(make_workspace, fake)

    code, data = tht("evidence", "activate", "--generation", orphan, "-w", root)
    assert code == exitcodes.PRECONDITION
    assert "never passed its evaluation gate" in str(data["error"])
    code, data = tht("evidence", "generations", "-w", root)
    statuses = {g["id"]: g["status"] for g in data["generations"]}  # type: ignore[attr-defined]
    assert statuses[first] == "active" and statuses[orphan] == "candidate"

    code, data = tht("workspace", "preprocess", "evidence", root)
    assert code == exitcodes.OK and orphan in str(data["discarded_partial"])
    code, data = tht("evidence", "generations", "-w", root)
    statuses = {g["id"]: g["status"] for g in data["generations"]}  # type: ignore[attr-defined]
    assert statuses[orphan] == "abandoned"
    with open_runtime(Workspace.open(Path(root))) as rt:
        assert orphan not in rt.backend.sealed(), "its data is dropped"


def test_generations_cleanup_abandons_a_candidate_never_evaluated(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    root, first, orphan = _published_with_a_killed_candidate(make_workspace, fake)

    code, data = tht("evidence", "generations", "--cleanup", "-w", root)
    assert code == exitcodes.OK and data["cleaned_up"] == [orphan]
    statuses = {g["id"]: g["status"] for g in data["generations"]}  # type: ignore[attr-defined]
    assert statuses == {first: "active", orphan: "abandoned"}
    code, data = tht("evidence", "generations", "--cleanup", "-w", root)
    assert data["cleaned_up"] == []  # nothing left: the active generation is untouched
    code, data = tht("evidence", "activate", "--generation", orphan, "-w", root)
    assert code == exitcodes.PRECONDITION
