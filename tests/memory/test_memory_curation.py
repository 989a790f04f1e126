"""Issue 48: a memory a curator can keep — retire and merge (append-only, index in the same
step, reconcile repairs a half-done one), older record types skipped by type, `tht memory
import`, and F8 as one checklist.

Real registry files, real Qdrant Edge shards and a fake embeddings server speaking the OpenAI
wire format (tests/fake_embeddings.py), as in test_memory_flow.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from tests.memory.test_memory_flow import ABLAZIONE, OTHER_QUESTION, QUESTION, Env, clarify, tht
from tests.publishing import write_config
from thoth.cli import exitcodes
from thoth.embed.openai_compat import OpenAICompatEmbedder
from thoth.index.base import IndexRecord
from thoth.index.edge import EdgeStore
from thoth.index.live import EdgeLiveCollection
from thoth.memory import MemoryRefused, Registry, RegistryCorrupted
from thoth.memory.checklist import ChecklistRequest, checklist, confirm
from thoth.memory.curation import (
    MergeRequest,
    RetireRequest,
    list_memories,
    merge,
    near_duplicate_pairs,
    retire,
)
from thoth.memory.index import RECORD_KIND, MemoryIndex
from thoth.memory.legacy import verify_registry
from thoth.memory.projection import summarize
from thoth.memory.promotion import NEAR_DUPLICATE_MIN_COSINE, draft_for
from thoth.memory.recall import choose, search_memories
from thoth.memory.registry import RetireEvent
from thoth.runtime import memory_registry_path, sessions_dir
from thoth.session import Session, SessionStore
from thoth.storage import file_lock
from thoth.workspace import Workspace


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    """As in test_memory_flow."""
    with FakeEmbeddingServer(dim=8) as server:
        yield Env(
            root=tmp_path,
            server=server,
            embedder=OpenAICompatEmbedder(server.url, "fake-e5", dim=8),
            sessions=SessionStore(tmp_path / ".thoth" / "sessions"),
            registry=Registry(tmp_path / ".thoth" / "memory" / "registry.jsonl"),
            index=MemoryIndex(tmp_path / ".thoth" / "index" / "ws" / "memory", language="it"),
        )


@pytest.fixture
def workspace(make_workspace: Callable[..., Workspace], env: Env) -> Workspace:
    ws = make_workspace()
    write_config(ws.root, env.server.url)
    return Workspace.open(ws.root)


def promote(env: Env, subject: str, detail: str, question: str = QUESTION) -> tuple[Session, str]:
    s = env.session(question)
    saved = env.save(s, clarify(s, subject, detail).seq)
    return s, saved.record.id


def proposed(env: Env, question: str, session: Session | None = None) -> list[str]:
    found = env.search(question, session or env.session(OTHER_QUESTION), limit=20)
    return [p.memory_id for p in found.proposals]


def retire_it(env: Env, memory_id: str, why: str = "definizione sbagliata") -> None:
    retire(
        RetireRequest(memory_id=memory_id, why=why, by="curatore"),
        registry=env.registry,
        index=env.index,
    )


# ---------------------------------------------------------------------- retire and merge


def test_a_memory_retired_in_one_session_is_never_proposed_in_the_next(env: Env) -> None:
    _, wrong = promote(env, "ablazione", ABLAZIONE)
    _, right = promote(env, "ricovero", "permanenza con almeno un pernottamento")
    assert set(proposed(env, "ablazione ricovero")) == {wrong, right}

    retire_it(env, wrong)

    assert proposed(env, "ablazione ricovero") == [right]
    assert set(env.index.ids()) == {right}
    line = json.loads(env.registry.path.read_text("utf-8").splitlines()[-1])
    assert line["type"] == "memory_retired" and line["memory_id"] == wrong
    assert line["by"] == "curatore" and line["why"] == "definizione sbagliata" and line["at"]
    assert env.reconcile().repairs == ()


def test_a_retire_cut_before_its_index_step_is_not_proposed_and_reconcile_finishes_it(
    env: Env,
) -> None:
    _, wrong = promote(env, "ablazione", ABLAZIONE)
    # The registry line of a retire whose process died before the index step.
    env.registry.curate(RetireEvent(at="2026-01-01T00:00:00Z", by="c", why="w", memory_id=wrong))
    assert wrong in env.index.ids()

    found = env.search("ablazione", env.session(OTHER_QUESTION))

    assert found.proposals == ()
    assert [(d.memory_id, d.reason) for d in found.dropped] == [(wrong, "retired")]
    report = env.reconcile()
    assert [(r.action, r.memory_id, r.detail) for r in report.repairs] == [
        ("removed_from_index", wrong, "retired")
    ]
    assert env.index.ids() == {} and env.reconcile().repairs == ()


def test_merge_keeps_every_source_and_proposes_only_the_kept_memory(env: Env) -> None:
    first, keep = promote(env, "ablazione", ABLAZIONE)
    second, drop = promote(env, "ablazione transcatetere", ABLAZIONE + " Anche detta TC.")
    adopter = env.session(OTHER_QUESTION)
    choose(adopter, drop, registry=env.registry)

    merge(
        MergeRequest(keep=keep, drop=(drop,), why="stesso concetto", by="curatore"),
        registry=env.registry,
        index=env.index,
    )

    assert proposed(env, "ablazione") == [keep]
    # The session that adopted the dropped one has decided the kept one too.
    assert env.search("ablazione", adopter).proposals == ()
    listing = {
        m.memory_id: m for m in list_memories(registry=env.registry, sessions=env.sessions).memories
    }
    assert [(s.session_id, s.memory_id) for s in listing[keep].sources] == [
        (first.id, keep),
        (second.id, drop),
    ]
    assert listing[drop].state == "merged" and listing[drop].merged_into == keep
    assert [h.action for h in listing[keep].history] == ["merged"]
    assert [u.session_id for u in listing[drop].used_in] == [adopter.id]
    shown = summarize(adopter, env.registry)
    assert [(a.memory_id, a.state, a.merged_into) for a in shown.adopted] == [
        (drop, "merged", keep)
    ]
    assert f"since merged into {keep}" in shown.markdown()


def test_a_session_that_chose_a_memory_shows_what_it_chose_and_that_it_was_retired(
    env: Env,
) -> None:
    _, memory_id = promote(env, "ablazione", ABLAZIONE)
    later = env.session(OTHER_QUESTION)
    choose(later, memory_id, registry=env.registry)

    retire_it(env, memory_id)

    shown = summarize(later, env.registry)
    assert [(a.memory_id, a.detail, a.state) for a in shown.adopted] == [
        (memory_id, ABLAZIONE, "retired")
    ]
    assert "since retired" in shown.markdown() and ABLAZIONE in shown.markdown()


def test_near_duplicates_are_offered_for_merging(env: Env) -> None:
    # Same concept, same question in two sessions: the same text, cosine 1.
    _, a = promote(env, "ablazione", ABLAZIONE)
    _, b = promote(env, "ablazione", ABLAZIONE)
    _, c = promote(env, "ricovero", "permanenza con pernottamento")

    pairs = near_duplicate_pairs(
        registry=env.registry,
        index=env.index,
        embedder=env.embedder,
        threshold=NEAR_DUPLICATE_MIN_COSINE,
    )

    assert [(p.keep, p.drop) for p in pairs] == [(a, b)]
    assert c not in {a, b}


def registry_bytes(ws: Workspace) -> bytes:
    path = memory_registry_path(ws)
    return path.read_bytes() if path.exists() else b""


def test_cli_curation_refusals_change_nothing(workspace: Workspace) -> None:
    root = str(workspace.root)
    sessions = SessionStore(sessions_dir(workspace))
    for subject in ("ablazione", "ricovero", "pernottamento"):
        s = sessions.create(QUESTION)
        clarify(s, subject, f"definizione di {subject}")
        code, _ = tht("memory", "promote", s.id, "-w", root)
        assert code == exitcodes.OK
    code, data = tht("memory", "retire", "mem-0003", "--why", "sbagliata", "-w", root)
    assert code == exitcodes.OK and data["action"] == "retired"
    before = registry_bytes(workspace)

    cases = [
        (("retire", "mem-0099"), "not_found"),
        (("retire", "mem-0003"), "not_active"),
        (("merge", "mem-0001", "mem-0001"), "merge_into_itself"),
        (("merge", "mem-0003", "mem-0001"), "not_active"),
        (("merge", "mem-0001", "mem-0003"), "not_active"),
    ]
    for args, expected in cases:
        code, data = tht("memory", *args, "--why", "prova", "-w", root)
        assert code == exitcodes.FAILED, args
        assert data["code"] == expected, (args, data)
        assert registry_bytes(workspace) == before

    code, data = tht("memory", "merge", "mem-0001", "mem-0002", "--why", "uguali", "-w", root)
    assert code == exitcodes.OK and data["dropped"] == ["mem-0002"]
    code, data = tht("memory", "list", "-w", root)
    states = {m["memory_id"]: m["state"] for m in data["memories"]}  # type: ignore[attr-defined]
    assert states == {"mem-0001": "active", "mem-0002": "merged", "mem-0003": "retired"}
    code, data = tht("memory", "reconcile", "-w", root)
    assert code == exitcodes.OK and data["repairs"] == []


# ---------------------------------------------------------------------- older record types


def legacy_line(number: int) -> str:
    kind = ("table_promoted", "table_excluded", "column_promoted")[number % 3]
    return json.dumps(
        {
            "id": f"mem-{900 + number:04d}",
            "created_at": "2024-05-01T09:30:00Z",
            "session_id": "s-20240501-093000-a1b2c3",
            "decision_seq": number + 1,
            "type": kind,
            "subject": f"cardio.fact_tabella_{number}",
            "detail": "",
            "rationale": "",
            "question_context": "",
            "tables": [f"cardio.fact_tabella_{number}"],
            "concepts": [],
            "content_sha256": "0" * 64,
        }
    )


def plant_index_points(env: Env, types: list[str]) -> None:
    """Points of older record types, written straight into the memory shard."""
    assert isinstance(env.index.collection, EdgeLiveCollection)
    texts = [f"cardio.fact_tabella_{n} tabella" for n in range(len(types))]
    vectors = env.embedder.embed_passages(texts)
    with file_lock(env.index.collection.lock_path, exclusive=True):
        store = EdgeStore.open(env.index.collection.path)
        store.upsert(
            [
                IndexRecord(
                    id=str(uuid.uuid4()),
                    dense=[float(x) for x in vec],
                    sparse=env.index.query_sparse(text),
                    payload={
                        "record_kind": RECORD_KIND,
                        "memory_id": f"mem-{950 + n:04d}",
                        "ref": f"memory:mem-{950 + n:04d}",
                        "type": kind,
                        "subject": text,
                    },
                )
                for n, (kind, text, vec) in enumerate(zip(types, texts, vectors, strict=True))
            ]
        )
        store.flush()
        store.close()


def test_a_registry_with_30_percent_older_lines_loads_and_proposes_the_same(env: Env) -> None:
    for n in range(14):
        promote(env, f"concetto {n}", f"definizione numero {n} di ablazione")
    clean = env.registry.path.read_text("utf-8").splitlines()
    rng = random.Random(48)
    mixed = list(clean)
    for n in range(6):  # 6 of 20 lines: 30 %
        mixed.insert(rng.randrange(len(mixed) + 1), legacy_line(n))
    with_legacy = Registry(env.root / "legacy" / "registry.jsonl")
    with_legacy.path.parent.mkdir()
    with_legacy.path.write_text("\n".join(mixed) + "\n", "utf-8")

    asker = env.session(OTHER_QUESTION)
    questions = ("ablazione", "definizione numero 3", "concetto 7 definizione")
    clean_results = [env.search(q, asker, limit=10).proposals for q in questions]
    # And index points of older types (as the earlier system indexed its table memories).
    plant_index_points(env, ["table_promoted", "table_excluded", "table_promoted"])

    report = verify_registry(with_legacy, env.index)

    assert report.memories == 14 and report.active == 14
    assert {t.type: t.count for t in report.skipped} == {
        "table_promoted": 2,
        "table_excluded": 2,
        "column_promoted": 2,
    }
    assert sorted(n for t in report.skipped for n in t.lines) == sorted(
        i + 1 for i, line in enumerate(mixed) if "fact_tabella" in line
    )
    assert report.index_points == 17
    assert [(i.type, i.memory_ids) for i in report.index_skipped] == [
        ("table_excluded", ("mem-0951",)),
        ("table_promoted", ("mem-0950", "mem-0952")),
    ]
    for question, expected in zip(questions, clean_results, strict=True):
        got = search_memories(
            question,
            asker,
            registry=with_legacy,
            index=env.index,
            embedder=env.embedder,
            limit=10,
        )
        # Identical, scores included: the older points are skipped by type in the query, so
        # they take no rank in the fused ranking.
        assert got.proposals == expected and got.dropped == ()
    # Adding on top of it works, and keeps the legacy lines as they were.
    extra = env.session()
    with_legacy.add(draft_for(extra, clarify(extra, "nuovo", "concetto nuovo")))
    assert with_legacy.path.read_text("utf-8").splitlines()[:20] == mixed


def test_unknown_type_bad_json_and_broken_hash_are_still_corruption(env: Env) -> None:
    promote(env, "ablazione", ABLAZIONE)
    good = env.registry.path.read_text("utf-8")
    record = json.loads(good.splitlines()[0])
    typo = {**record, "id": "mem-0002", "decision_seq": 9, "type": "concept_clarifed"}
    hashed = {**record, "id": "mem-0002", "decision_seq": 9, "detail": "cambiato"}
    for bad in (json.dumps(typo), json.dumps(hashed), '{"type": "table_promoted", '):
        env.registry.path.write_text(good + bad + "\n", "utf-8")
        with pytest.raises(RegistryCorrupted, match="line 2"):
            env.registry.all()


def test_legacy_memory_rejected_is_shown_as_such(env: Env) -> None:
    s = env.session()
    s.append(
        "memory",
        "memory_rejected",
        subject="mem-0007",
        detail="",
        rationale="non vale per la cardiologia",
    )

    shown = summarize(s, env.registry)

    assert [(r.memory_ids, r.rationale) for r in shown.rejected] == [
        (("mem-0007",), "non vale per la cardiologia")
    ]
    assert "Rejected in F2 (earlier system)" in shown.markdown()
    assert shown.hidden == ()


def test_import_keeps_what_is_reusable_and_says_what_it_skipped(workspace: Workspace) -> None:
    root = str(workspace.root)
    sessions = SessionStore(sessions_dir(workspace))
    s = sessions.create(QUESTION)
    a = clarify(s, "ablazione", ABLAZIONE)
    b = clarify(s, "ricovero", "permanenza con pernottamento")
    # The earlier system's registry, written by our own registry class then mixed.
    old = Registry(workspace.root / "old" / "registry.jsonl")
    old.add(draft_for(s, a))
    old.add(draft_for(s, b))
    text = old.path.read_text("utf-8")
    old.path.write_text(legacy_line(0) + "\n" + text, "utf-8")

    code, data = tht("memory", "import", str(old.path), "-w", root)

    assert code == exitcodes.OK, data
    assert [(m["old_id"], m["memory_id"]) for m in data["imported"]] == [  # type: ignore[attr-defined]
        ("mem-0001", "mem-0001"),
        ("mem-0002", "mem-0002"),
    ]
    assert [(x["line"], x["id"]) for x in data["skipped"]] == [(1, "mem-0900")]  # type: ignore[attr-defined]
    assert "table_promoted" in data["skipped"][0]["reason"]  # type: ignore[index]
    code, data = tht("memory", "reconcile", "-w", root)
    assert data["repairs"] == []
    # Again: everything is already here.
    code, data = tht("memory", "import", str(old.path), "-w", root)
    assert code == exitcodes.OK and data["imported"] == []


def test_import_of_another_workspace_or_a_cut_file_is_refused(workspace: Workspace) -> None:
    root = str(workspace.root)
    other = SessionStore(workspace.root / "elsewhere")
    s = other.create(QUESTION)
    old = Registry(workspace.root / "old" / "registry.jsonl")
    old.add(draft_for(s, clarify(s, "ablazione", ABLAZIONE)))
    before = registry_bytes(workspace)

    code, data = tht("memory", "import", str(old.path), "-w", root)
    assert code == exitcodes.FAILED and data["code"] == "other_workspace"
    assert registry_bytes(workspace) == before

    cut = old.path.read_bytes()[:-20]
    old.path.write_bytes(cut)
    code, data = tht("memory", "import", str(old.path), "-w", root)
    assert code == exitcodes.FAILED and data["code"] == "corrupted"
    assert registry_bytes(workspace) == before


# ---------------------------------------------------------------------- one checklist


def test_checklist_promotes_all_but_the_deselected_with_an_edited_wording(env: Env) -> None:
    s = env.session()
    keep = clarify(s, "ablazione", ABLAZIONE)
    drop = clarify(s, "ricovero", "permanenza")
    reword = clarify(s, "episodio", "un episodio")

    shown = checklist(s, env.registry, index=env.index, embedder=env.embedder)
    assert [(i.seq, i.selected) for i in shown.items] == [
        (keep.seq, True),
        (drop.seq, True),
        (reword.seq, True),
    ]
    request = ChecklistRequest(
        deselect=(drop.seq,), edits={reword.seq: "un episodio di ricovero con ablazione"}
    )
    first = confirm(s, request, registry=env.registry, index=env.index, embedder=env.embedder)

    assert [(o.seq, o.action, o.created) for o in first.outcomes] == [
        (keep.seq, "promoted", True),
        (drop.seq, "declined", True),
        (reword.seq, "promoted", True),
    ]
    assert first.finalize_ready
    details = {r.subject: r.detail for r in env.registry.all()}
    assert details == {"ablazione": ABLAZIONE, "episodio": "un episodio di ricovero con ablazione"}
    ledger = len(s.entries())
    again = confirm(s, request, registry=env.registry, index=env.index, embedder=env.embedder)
    # Only what the answer names is left to report: the rest was promoted the first time.
    assert [(o.seq, o.created) for o in again.outcomes] == [(drop.seq, False), (reword.seq, False)]
    assert len(s.entries()) == ledger and len(env.registry.all()) == 2
    # Another wording of the seq already edited and promoted is not a repeat: refused.
    other = ChecklistRequest(edits={reword.seq: "un'altra formulazione"})
    with pytest.raises(MemoryRefused) as caught:
        confirm(s, other, registry=env.registry, index=env.index, embedder=env.embedder)
    assert caught.value.code == "not_proposed"
    assert len(s.entries()) == ledger and len(env.registry.all()) == 2
    assert env.reconcile().repairs == ()


def test_checklist_naming_a_candidate_not_proposed_changes_nothing(workspace: Workspace) -> None:
    root = str(workspace.root)
    s = SessionStore(sessions_dir(workspace)).create(QUESTION)
    concept = clarify(s, "ablazione", ABLAZIONE)
    table = s.append("schema_linking", "table_promoted", subject="cardio.fact_ablazione")
    ledger = s.ledger.path.read_bytes()

    for args in (("--deselect", str(table.seq)), ("--edit", "99=nuova formulazione")):
        code, data = tht("memory", "promote", s.id, *args, "-w", root)
        assert code == exitcodes.FAILED and data["code"] == "not_proposed", data
        assert s.ledger.path.read_bytes() == ledger
        assert registry_bytes(workspace) == b""

    code, data = tht("memory", "promote", s.id, "-w", root)
    assert code == exitcodes.OK
    assert [(o["seq"], o["memory_id"]) for o in data["outcomes"]] == [(concept.seq, "mem-0001")]  # type: ignore[attr-defined]


def test_a_refused_merge_or_retire_raises_memory_refused(env: Env) -> None:
    _, a = promote(env, "ablazione", ABLAZIONE)
    with pytest.raises(MemoryRefused) as caught:
        merge(
            MergeRequest(keep=a, drop=(a,), why="x", by="y"),
            registry=env.registry,
            index=env.index,
        )
    assert caught.value.code == "merge_into_itself"


# ---------------------------------------------------------------------- crash and recovery

_CURATOR = """
import json, random, sys, time
from pathlib import Path
from thoth.embed.openai_compat import OpenAICompatEmbedder
from thoth.errors import ThothError
from thoth.memory.curation import MergeRequest, RetireRequest, merge, retire
from thoth.index.base import IndexRecord
from thoth.index.edge import EdgeStore
from thoth.index.live import EdgeLiveCollection
from thoth.memory.index import RECORD_KIND, MemoryIndex
from thoth.storage import file_lock
from thoth.memory.promotion import save_one
from thoth.memory.registry import Registry
from thoth.session import SessionStore

root, url, ready, seed, count = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
candidates = json.loads(sys.argv[6])
sessions = SessionStore(root / ".thoth" / "sessions")
registry = Registry(root / ".thoth" / "memory" / "registry.jsonl")
index = MemoryIndex(root / ".thoth" / "index" / "ws" / "memory", language="it")
embedder = OpenAICompatEmbedder(url, "fake-e5", dim=8)
rng = random.Random(seed)
ready.touch()
for _ in range(count):
    roll = rng.random()
    active = sorted(r.id for r in registry.active())
    try:
        if roll < 0.6 or len(active) < 3:
            session_id, seq = rng.choice(candidates)
            saved = save_one(sessions.open(session_id), seq, registry=registry, index=index, embedder=embedder)
            done = ["promote", session_id, seq, saved.record.id]
        elif roll < 0.8:
            victim = rng.choice(active)
            retire(RetireRequest(memory_id=victim, why="prova", by="w"), registry=registry, index=index)
            done = ["retire", victim]
        else:
            keep, drop = rng.sample(active, 2)
            merge(MergeRequest(keep=keep, drop=(drop,), why="prova", by="w"), registry=registry, index=index)
            done = ["merge", keep, drop]
    except ThothError as exc:  # the other process retired or merged it first
        done = ["refused", getattr(exc, "code", "")]
    print(json.dumps(done), flush=True)
"""


def _start(
    env: Env, name: str, seed: int, count: int, candidates: list[list[object]]
) -> tuple[object, Path]:
    import subprocess
    import sys

    ready = env.root / f"ready.{name}"
    ready.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _CURATOR,
            str(env.root),
            env.server.url,
            str(ready),
            str(seed),
            str(count),
            json.dumps(candidates),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, ready


def _wait_ready(procs: list[tuple[object, Path]]) -> None:
    import time

    deadline = time.monotonic() + 60
    while not all(ready.exists() for _, ready in procs):
        assert time.monotonic() < deadline, "workers did not start within 60 s"
        time.sleep(0.01)


def _check_agreement(env: Env, done: list[list[object]]) -> int:
    """Reconcile, then registry, index and markers agree; returns how many repairs it made."""
    report = env.reconcile()
    assert report.ok, report.problems
    state = env.registry.state()
    assert env.index.ids() == {r.id: r.content_sha256 for r in state.active()}
    sessions = {r.session_id for r in state.records}
    for session_id in sessions:
        markers = [
            m.refs for m in env.sessions.open(session_id).entries() if m.type == "memory_promoted"
        ]
        assert len(markers) == len(set(markers)), f"a seq of {session_id} was marked twice"
        mine = sorted(r.decision_seq for r in state.records if r.session_id == session_id)
        assert sorted(m or 0 for m in markers) == mine
    keys = [(r.session_id, r.decision_seq) for r in state.records]
    assert len(keys) == len(set(keys)), "a decision was promoted twice"
    for row in done:  # nothing a worker reported done was lost
        if row[0] == "promote":
            assert state.by_id[str(row[3])].decision_seq == row[2]
        elif row[0] == "retire":
            assert state.state(str(row[1])) == "retired"
        elif row[0] == "merge":
            assert state.merged_into.get(str(row[2])) == row[1]
    assert env.reconcile().repairs == ()
    return len(report.repairs)


@pytest.mark.slow
def test_interleaved_curation_then_sigkill_at_20_points_reconcile_agrees(env: Env) -> None:
    import signal
    import time

    candidates: list[list[object]] = []
    for n in range(8):
        s = env.session(f"domanda {n}")
        for k in range(8):
            candidates.append([s.id, clarify(s, f"concetto {n}.{k}", f"definizione {n}.{k}").seq])
    done: list[list[object]] = []

    # 200 operations from two processes, interleaved.
    procs = [_start(env, name, seed, 100, candidates) for name, seed in (("a", 1), ("b", 2))]
    _wait_ready(procs)
    for proc, _ in procs:
        out, _ = proc.communicate(timeout=300)  # type: ignore[attr-defined]
        assert proc.returncode == 0  # type: ignore[attr-defined]
        done += [json.loads(line) for line in out.splitlines()]
    assert len(done) == 200
    _check_agreement(env, done)

    # Then a SIGKILL at 20 random points: one worker is killed while it still has work (20
    # operations scheduled), the other finishes its 3.
    rng = random.Random(48)
    repaired_rounds = 0
    for point in range(20):
        procs = [
            _start(env, name, 100 + 2 * point + i, 20 if i == point % 2 else 3, candidates)
            for i, name in enumerate(("c", "d"))
        ]
        _wait_ready(procs)
        time.sleep(rng.uniform(0.0, 0.6))
        victim = procs[point % 2][0]
        victim.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
        for proc, _ in procs:
            out, _ = proc.communicate(timeout=120)  # type: ignore[attr-defined]
            done += [json.loads(line) for line in out.splitlines() if line.strip()]
        assert victim.returncode == -signal.SIGKILL  # type: ignore[attr-defined]
        repaired_rounds += bool(_check_agreement(env, done))
    # How many kills landed between a step's registry write and its index or marker write.
    print(f"crash rounds: 20, repaired by reconcile: {repaired_rounds}, operations: {len(done)}")
