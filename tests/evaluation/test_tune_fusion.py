"""`tht eval tune-fusion`: a workspace's fusion tuned on its own reference questions, keeping the
baseline — written only on a real gain (strictly more cases whose first source is expected, none
lost at k or 10), refused otherwise with the reason and thoth.toml untouched. Real Git, Qdrant
Edge, SQLite, BM25 and embeddings over real HTTP (the fake server's vectors are a function of
the text: a dense branch that knows nothing, which a workspace can weigh too much)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator

import pytest
import yaml
from typer.testing import CliRunner

from tests.fake_embeddings import FakeEmbeddingServer
from tests.publishing import CLINICA_ANSWERS, prepared_workspace, synced_workspace
from thoth.cli.main import app
from thoth.evaluation.fusion import DEPTH, FusionSetting, Measured, decide
from thoth.workspace import Workspace

pytestmark = pytest.mark.e2e

MODELS = 12


def sheet(n: int) -> str:
    return (
        f"# Scheda tecnica del modello QX-{1000 + n}\n\n"
        f"Il modello QX-{1000 + n} della linea di pompe ha una garanzia di {n + 12} mesi, "
        "si installa a parete e richiede una revisione annuale del filtro.\n"
    )


def cases(count: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"qx-{n}",
            "question": f"Quanti mesi di garanzia ha il modello QX-{1000 + n}?",
            "expect": {"documents": [f"manuali:documents/manuali/scheda-{n:02d}.md"]},
        }
        for n in range(count)
    ]


@pytest.fixture
def embeddings() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def workspace(
    make_workspace: Callable[..., Workspace], url: str, index: str, count: int
) -> Workspace:
    ws = prepared_workspace(make_workspace, url)
    files = {f"documents/manuali/scheda-{n:02d}.md": sheet(n) for n in range(MODELS)}
    files["answers/evaluation.yaml"] = yaml.safe_dump(cases(count), allow_unicode=True)
    # `index` lands in [index] (write_config ends with it), before the answers' sections.
    return synced_workspace(ws, url, index + CLINICA_ANSWERS, files)


def run(ws: Workspace, *args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(app, ["eval", "tune-fusion", *args, "-w", str(ws.root), "--json"])
    return result.exit_code, json.loads(result.stdout)


def index_of(ws: Workspace) -> dict[str, object]:
    with (ws.root / "thoth.toml").open("rb") as fh:
        return dict(tomllib.load(fh)["index"])


def test_a_real_gain_is_written_and_the_first_baseline_kept(
    make_workspace: Callable[..., Workspace], embeddings: FakeEmbeddingServer
) -> None:
    # The workspace's fusion ignores BM25: only the dense branch, which here knows nothing.
    ws = workspace(make_workspace, embeddings.url, "bm25_weight = 0.0\n", MODELS)
    code, report = run(ws)
    assert code == 0, report
    baseline, best = report["baseline"], report["best"]
    assert isinstance(baseline, dict) and isinstance(best, dict)
    assert best["hit_at_1"] > baseline["hit_at_1"]
    assert best["hit_at_10"] >= baseline["hit_at_10"]
    assert best["hit_at_5"] >= baseline["hit_at_5"]
    assert report["gain"] is True and report["written"] is True
    assert report["evidence_gate"] == "passed"  # the published Evidence keeps its gate
    written = index_of(ws)
    setting = best["setting"]
    assert isinstance(setting, dict)
    assert written["fusion_k"] == setting["k"]
    assert written["dense_weight"] == setting["dense_weight"]
    assert written["bm25_weight"] == 1.0
    assert written["retain"] == 2  # the rest of [index] kept
    assert Workspace.open(ws.root).settings.index.bm25_weight == 1.0
    saved = json.loads((ws.root / ".thoth" / "fusion-baseline.json").read_text("utf-8"))
    assert saved["setting"]["bm25_weight"] == 0.0
    assert saved["hit_at_1"] == baseline["hit_at_1"]

    # Tuned again: the written setting is the baseline now, nothing beats it strictly.
    before = (ws.root / "thoth.toml").read_bytes()
    code, again = run(ws)
    assert code == 1
    assert again["gain"] is False and again["written"] is False
    assert "the baseline stays" in str(again["reason"])
    assert (ws.root / "thoth.toml").read_bytes() == before
    first = again["first_baseline"]
    assert isinstance(first, dict)
    assert first["setting"]["bm25_weight"] == 0.0  # the first baseline is never replaced


def test_too_few_cases_are_refused_and_dry_run_writes_nothing(
    make_workspace: Callable[..., Workspace], embeddings: FakeEmbeddingServer
) -> None:
    ws = workspace(make_workspace, embeddings.url, "bm25_weight = 0.0\n", 4)
    before = (ws.root / "thoth.toml").read_bytes()
    code, report = run(ws)
    assert code == 1
    assert report["gain"] is False and report["written"] is False
    assert "only 4 case(s)" in str(report["reason"]) and "at least 10" in str(report["reason"])
    assert report["candidates"] == []
    assert (ws.root / "thoth.toml").read_bytes() == before

    (ws.root / "answers/evaluation.yaml").write_text(
        yaml.safe_dump(cases(MODELS), allow_unicode=True), "utf-8"
    )
    code, report = run(ws, "--dry-run")
    assert code == 0 and report["gain"] is True and report["written"] is False
    assert (ws.root / "thoth.toml").read_bytes() == before


def _measured(setting: FusionSetting, ranks: list[int | None]) -> Measured:
    return Measured(setting, ranks, 5)


def test_a_gain_at_1_that_loses_a_case_at_10_is_refused() -> None:
    baseline = _measured(FusionSetting(60, 1.0), [2, 2, 2, 9, 9, 1, 1, 1, 1, 1])
    lucky = _measured(FusionSetting(1, 0.4), [1, 1, 1, 9, None, 1, 1, 1, 1, 1])
    best, gain, reason, _ = decide(baseline, [baseline, lucky], 5)
    assert best is lucky and not gain
    assert f"hit@{DEPTH} (9 against 10)" in reason

    fair = _measured(FusionSetting(1, 0.4), [1, 1, 2, 9, 9, 1, 1, 1, 1, 1])
    best, gain, reason, verdict = decide(baseline, [baseline, fair], 5, lambda s: "passed")
    assert best is fair and gain and verdict == "passed"
    assert "7/10 cases against the baseline's 5" in reason

    # The best gain would fail the Evidence gate: the next that gains and keeps it is written.
    second = _measured(FusionSetting(10, 1.0), [1, 1, 2, 9, 9, 2, 1, 1, 1, 1])
    keeps = {second.setting}

    def gate(setting: FusionSetting) -> str:
        return "passed" if setting in keeps else "failed: abbandono would find no unit"

    best, gain, reason, verdict = decide(baseline, [baseline, fair, second], 5, gate)
    assert best is second and gain and verdict == "passed"
    assert "passed over for the Evidence gate: rrf k=1 dense 0.4" in reason
    keeps.clear()
    best, gain, reason, verdict = decide(baseline, [baseline, fair, second], 5, gate)
    assert not gain and "would fail the Evidence evaluation gate" in reason

    same = _measured(FusionSetting(5, 1.0), [2, 2, 2, 9, 9, 1, 1, 1, 1, 1])
    best, gain, reason, _ = decide(baseline, [baseline, same], 5)
    assert best is baseline and not gain  # a tie keeps the grid's first: the baseline
