"""A process killed (SIGKILL) at random points of `preprocess` never damages the active
generation and never makes candidate data visible (seed §13.2). Repeated 20 times."""

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
from tests.publishing import activate_head, published
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.runtime import Runtime, open_runtime
from thoth.workspace import Workspace

Make = Callable[..., Workspace]
KILLS = 20
QUERIES = [
    ("ricovero con pernottamento", "disambiguation"),
    ("età sotto i 18 anni", "sql_generation"),
    ("esito dimissione", "schema_linking"),
]
CHILD = """
import sys, time
from pathlib import Path
from thoth.evidence.publish import Publisher
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


def _start(root: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == "ready", child.stderr.read() if child.stderr else line
    return child


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
    child = _start(rt.ws.root)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    outcome, seconds = out.split()
    assert outcome == "activated"
    duration = float(seconds)

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

        child = _start(rt.ws.root)
        time.sleep(rng.uniform(0, duration * 1.1))
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=60)

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
