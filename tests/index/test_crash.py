"""A process killed (SIGKILL) at random points of `preprocess` or of `tht docs sync` never
damages the active generation and never makes candidate data visible (seed §13.2); the next
build cleans up and succeeds. Each repeated 20 times."""

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import commit_all, write_source
from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge.test_sync import FILES, docs_workspace
from tests.publishing import activate_head, published
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.index.bm25 import Bm25Encoder
from thoth.knowledge.sync import DocsSync, SyncReport
from thoth.runtime import Runtime, open_runtime
from thoth.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

Make = Callable[..., Workspace]
KILLS = 20
QUERIES = [
    ("ricovero con pernottamento", "disambiguation"),
    ("età sotto i 18 anni", "sql_generation"),
    ("esito dimissione", "schema_linking"),
]
PUBLISH_CHILD = """
import sys, time
from pathlib import Path
from thoth.workflow.publish import Publisher
from thoth.runtime import open_runtime
from thoth.workspace import Workspace
rt = open_runtime(Workspace.open(Path(sys.argv[1])))
print("ready", flush=True)
started = time.perf_counter()
report = Publisher(rt.ws, rt.state, rt.backend, rt.embedder, retain=50).preprocess()
print(report.outcome, round(time.perf_counter() - started, 3), flush=True)
"""


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def _grow(rt: Runtime) -> None:
    """More units, so a build lasts long enough to be interrupted at many points."""
    for n in range(30):
        write_source(
            rt.ws.root,
            f"extra/regola-{n:02d}.md",
            f"# Regole {n}\n\n## Regola {n} sui reparti\n\nIl reparto {n} registra "
            f"i trasferimenti interni entro {n + 1} ore dalla dimissione.\n",
        )
    commit_all(rt.ws.root)
    prepare(rt.ws, RuleBasedRestructurer())
    commit_all(rt.ws.root)


def _start(child_script: str, *args: str) -> subprocess.Popen[str]:
    """A child running `child_script` with `args`; returns once it printed "ready" (its imports
    done), so that a kill lands in the build, not in the interpreter's start."""
    child = subprocess.Popen(
        [sys.executable, "-c", child_script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == "ready", child.stderr.read() if child.stderr else line
    return child


def _timed(child_script: str, *args: str) -> float:
    """Seconds an uninterrupted build takes once the child is ready (its last line says
    "activated <seconds>")."""
    child = _start(child_script, *args)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    outcome, seconds = out.splitlines()[-1].split()
    assert outcome == "activated", out
    return float(seconds)


def _kill_at_random(rng: random.Random, duration: float, child_script: str, *args: str) -> None:
    """SIGKILL a build at a random moment of its expected `duration` (or just after it)."""
    child = _start(child_script, *args)
    time.sleep(rng.uniform(0, duration * 1.1))
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)


def _answers(rt: Runtime, gen_id: str) -> list[list[tuple[str, float]]]:
    search = rt.search()
    try:
        out = []
        for query, purpose in QUERIES:
            outcome = search.search(query, purpose, generation=gen_id)
            assert outcome.available, outcome
            # Ids with their fused scores; sorted so that RRF ties cannot reorder them.
            out.append(sorted((r.evidence_id, round(r.score, 6)) for r in outcome.results))
        return out
    finally:
        search.close()


def test_sigkill_during_preprocess_never_damages_the_active_generation(
    make_workspace: Make, fake: FakeEmbeddingServer
) -> None:
    rt = published(make_workspace, fake.url)
    name = rt.ws.settings.workspace
    _grow(rt)
    activate_head(rt)
    rt.close()

    # How long does an uninterrupted build take (after the child is ready)?
    duration = _timed(PUBLISH_CHILD, str(rt.ws.root))

    rng = random.Random(1234)
    states: set[str] = set()
    for _ in range(KILLS):
        check = open_runtime(Workspace.open(rt.ws.root))
        before = check.state.active_generation(name)
        assert before is not None
        expected = _answers(check, before.id)
        check.close()
        # A new revision to publish, so every run really builds.
        (rt.ws.root / "touch.txt").write_text(str(rng.random()))
        commit_all(rt.ws.root)
        check = open_runtime(Workspace.open(rt.ws.root))
        activate_head(check)
        check.close()

        _kill_at_random(rng, duration, PUBLISH_CHILD, str(rt.ws.root))

        after = open_runtime(Workspace.open(rt.ws.root))
        active = after.state.active_generation(name)
        assert active is not None
        if active.id == before.id:
            states.add("previous kept")
            # The previously active generation is intact and answers the same searches.
            assert _answers(after, before.id) == expected
            # The runtime never sees candidate data: the new revision has no generation yet.
            runtime_view = after.search().search(*QUERIES[0])
            assert runtime_view.code == "revision_mismatch"
        else:
            states.add("new activated")  # the kill came after the atomic switch
            assert active.status == "active" and active.id in after.backend.sealed()
            runtime_view = after.search().search(*QUERIES[0])
            assert runtime_view.available and runtime_view.generation == active.id
        after.close()

    # The next build cleans up whatever the kills left and publishes normally.
    final = open_runtime(Workspace.open(rt.ws.root))
    from tests.publishing import publish

    report = publish(final)
    assert report.outcome == "activated"
    assert not list(final.backend.root.glob("*.building"))  # type: ignore[attr-defined]
    interrupted = [
        b for b in final.state.list_builds(name, limit=100) if b.outcome == "interrupted"
    ]
    assert interrupted, "killed builds are recorded as interrupted"
    final.close()
    assert "previous kept" in states


# ---------------------------------------------------------------------- tht docs sync

SYNC_CHILD = """
import sys, time
from thoth.cli.main import app
print("ready", flush=True)
started = time.perf_counter()
args = ["docs", "sync", "-w", sys.argv[1], "--json"] + (["--full"] if sys.argv[2] == "full" else [])
code = app(args, standalone_mode=False)
print("activated" if code == 0 else f"exit-{code}", round(time.perf_counter() - started, 3))
"""
QUERY = "ricovero con pernottamento in reparto"
SECTION = (
    "Il reparto {n} registra i trasferimenti interni entro {h} ore dalla dimissione; la "
    "cartella resta aperta finché il responsabile non firma la chiusura dell'episodio di "
    "ricovero, anche quando il paziente passa per più reparti della struttura."
)


def _docs_workspace(root: Path, url: str) -> Workspace:
    """The documents and wiki page of tests/test_sync.py plus 40 documents of a few sections
    each, so that a sync lasts long enough to be killed at many points."""
    files: dict[str, str | bytes] = dict(FILES)
    for n in range(40):
        files[f"docs/reparti/reparto-{n:02d}.md"] = f"# Reparto {n}\n\n" + "\n\n".join(
            f"## Sezione {s}\n\n{SECTION.format(n=n, h=n + s)}" for s in range(4)
        )
    return docs_workspace(root, url, files)


def _sync(root: Path) -> SyncReport:
    with open_runtime(Workspace.open(root)) as rt:
        return DocsSync(rt.ws, rt.state, rt.backend, rt.embedder).run(run_by="tests")


def _fragments(rt: Runtime, gen_id: str) -> list[tuple[str, float]]:
    """The document and page fragments the generation answers QUERY with, and their fused
    scores (sorted, so that RRF ties cannot reorder them)."""
    gen = rt.state.get_generation(gen_id)
    assert gen is not None
    bm25 = Bm25Encoder(rt.ws.settings.language, float(gen.config["bm25"]["avg_len"]))
    dense = [float(x) for x in rt.embedder.embed_query(QUERY)[0]]
    store = rt.backend.open(gen_id)
    try:
        where = {"record_kind": ["document", "wiki"]}
        hits = store.query_hybrid(dense, bm25.query(QUERY), where, limit=10, prefetch_limit=50)
    finally:
        store.close()
    assert hits, f"generation {gen_id} answers nothing"
    return sorted((h.id, round(h.score, 6)) for h in hits)


def test_sigkill_during_docs_sync_never_damages_the_active_generation(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    ws = _docs_workspace(tmp_path / "ws", fake.url)
    root, name = ws.root, ws.settings.workspace
    assert _sync(root).outcome == "activated"

    def edit(n: int, text: str) -> None:
        path = root / "docs" / "reparti" / f"reparto-{n % 40:02d}.md"
        path.write_text(path.read_text(encoding="utf-8") + f"\n\nNota: {text}\n", "utf-8")
        commit_all(root, f"edit {n}")

    # How long does an uninterrupted sync take, incremental (one document changed) and full?
    durations: dict[str, float] = {}
    for mode in ("incremental", "full"):
        edit(0, f"misura {mode}")
        durations[mode] = _timed(SYNC_CHILD, str(root), mode)

    rng = random.Random(4321)
    states: set[str] = set()
    for kill in range(KILLS):
        with open_runtime(Workspace.open(root)) as rt:
            before = rt.state.active_generation(name)
            assert before is not None
            expected = _fragments(rt, before.id)
        edit(kill + 1, f"modifica {rng.random()}")  # so that every run really builds
        mode = "full" if kill % 2 else "incremental"
        _kill_at_random(rng, durations[mode], SYNC_CHILD, str(root), mode)

        with open_runtime(Workspace.open(root)) as rt:
            active = rt.state.active_generation(name)
            assert active is not None and active.id in rt.backend.sealed()
            if active.id == before.id:
                states.add("previous kept")
                # The previously active generation is intact and answers the same query.
                assert _fragments(rt, before.id) == expected
            else:
                states.add("new activated")  # the kill came after the atomic switch
                _fragments(rt, active.id)  # it answers
        # The next sync cleans up whatever the kill left and succeeds.
        report = _sync(root)
        assert report.outcome == ("activated" if active.id == before.id else "unchanged")
        with open_runtime(Workspace.open(root)) as rt:
            assert not list(rt.backend.root.glob("*.building"))  # type: ignore[attr-defined]
            assert all(g.status != "building" for g in rt.state.list_generations(name))
            runs = rt.state.list_sync_runs(name, limit=3)
            assert runs[0].status == "succeeded" and "running" not in {r.status for r in runs}
            assert report.generation is not None and _fragments(rt, report.generation)

    with open_runtime(Workspace.open(root)) as rt:
        interrupted = [
            r for r in rt.state.list_sync_runs(name, limit=100) if r.status == "interrupted"
        ]
    assert interrupted, "killed syncs are recorded as interrupted"
    assert "previous kept" in states
