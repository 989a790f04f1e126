"""The one generation builder (thoth.index.build) on its own: a real Qdrant Edge backend in a
temporary directory and a real SQLite state store. Every failure leaves the previously active
generation serving; nothing a failed build wrote stays readable."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import thoth.index.build as build_module
from thoth.embed.base import EmbedderError, Vectors
from thoth.index.base import IndexRecord
from thoth.index.build import (
    EMBED_BATCH,
    UPSERT_BATCH,
    BuildError,
    GenerationBuild,
    GenerationBuilder,
    RunLock,
    RunRow,
    embed_passages,
    record_labels,
)
from thoth.index.generations import EdgeBackend
from thoth.state import StateError, StateStore, SyncRunConflict

WS = "ws"
DIM = 4


class _Embedder:
    identity = "test:fixed-4"
    dim = DIM

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return np.ones((len(texts), self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return np.ones((1, self.dim), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return np.ones((len(texts), self.dim), dtype=np.float32)


class _Env:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = StateStore.open(f"sqlite:///{root / 'state.sqlite'}")
        self.backend = EdgeBackend(root / "index")
        self.embedder = _Embedder()
        self.seen: list[tuple[str, int, int]] = []

    def builder(self) -> GenerationBuilder:
        return GenerationBuilder(
            self.state, self.backend, WS, self.embedder, lambda *a: self.seen.append(a)
        )

    def active(self) -> str | None:
        gen = self.state.active_generation(WS)
        return gen.id if gen else None

    def status(self, gen_id: str) -> str:
        gen = self.state.get_generation(gen_id)
        assert gen is not None
        return gen.status

    def ids(self, gen_id: str) -> list[str]:
        store = self.backend.open(gen_id)
        try:
            return sorted(r.id for r in store.scroll())
        finally:
            store.close()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[_Env]:
    e = _Env(tmp_path)
    yield e
    e.state.close()


def rec(n: int, kind: str = "note", dim: int = DIM, labels: Sequence[str] = ()) -> IndexRecord:
    vector = [1.0 + n % 3] + [0.5] * (dim - 1)
    return IndexRecord(
        str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}#{n}")),
        vector,
        None,
        {"record_kind": kind, "n": n, "labels": list(labels)},
    )


def build_and_activate(
    env: _Env, records: Sequence[IndexRecord], source: str | None = None
) -> GenerationBuild:
    build = env.builder().begin("rev", {"note": "test"}, source=source, payload_indexes=["n"])
    with build:
        build.write(records)
        build.verify()
        build.seal()
        build.mark_candidate({"records": len(records)})
        build.activate()
    return build


# ---------------------------------------------------------------------- the happy path


def test_a_build_writes_verifies_seals_and_activates(env: _Env) -> None:
    records = [rec(n, "a", labels=["public"]) for n in range(3)] + [
        rec(n, "b", labels=["internal"]) for n in range(UPSERT_BATCH + 2)
    ]
    build = env.builder().begin("rev", {"mine": 1}, source=None, payload_indexes=["n"])
    with build:
        build.write(records)
        verified = build.verify()
        assert verified.kinds == {"a": 3, "b": UPSERT_BATCH + 2}
        assert verified.labels == {"internal", "public"}
        assert verified.total == len(records)
        build.seal()
        build.mark_candidate({"records": len(records)})
        assert env.status(build.gen_id) == "candidate"
        build.activate()
    assert env.active() == build.gen_id and build.activated and not build.abandoned
    gen = env.state.get_generation(build.gen_id)
    assert gen is not None
    files = gen.counts.pop("files")  # every sealed file: size and SHA-256
    assert files["edge_config.json"][0] > 0 and len(files["edge_config.json"][1]) == 64
    assert any(name.endswith("/version.info") for name in files)
    assert gen.counts == {
        "records": len(records),
        "labels": ["internal", "public"],
        "points": {"a": 3, "b": UPSERT_BATCH + 2},  # what readers check the shard against
    }
    assert gen.config == {"mine": 1, "embedder": "test:fixed-4", "dim": DIM, "backend": "edge"}
    total = len(records)
    assert env.seen == [("index", UPSERT_BATCH, total), ("index", total, total)]


def test_carry_copies_what_the_caller_keeps_and_transforms(env: _Env) -> None:
    first = build_and_activate(env, [rec(n, "a") for n in range(3)] + [rec(0, "b")])
    build = env.builder().begin("rev2", {}, source=first.gen_id, payload_indexes=[])
    with build:

        def keep(r: IndexRecord) -> IndexRecord | None:
            if r.payload["record_kind"] != "a":
                return None
            return IndexRecord(r.id, r.dense, r.sparse, {**r.payload, "restamped": True})

        assert build.carry(keep) == {"a": 3}
        build.write([rec(5, "b")])
        assert build.verify().kinds == {"a": 3, "b": 1}
        build.seal()
        build.mark_candidate({})
        build.activate()
    store = env.backend.open(build.gen_id)
    try:
        kept = [r for r in store.scroll() if r.payload["record_kind"] == "a"]
        assert len(kept) == 3 and all(r.payload["restamped"] for r in kept)
    finally:
        store.close()
    assert env.status(first.gen_id) == "retired"


# ---------------------------------------------------------------------- failures


def test_a_failed_write_abandons_the_build(env: _Env, monkeypatch: pytest.MonkeyPatch) -> None:
    previous = build_and_activate(env, [rec(0)]).gen_id
    before = env.ids(previous)
    build = env.builder().begin("rev2", {}, source=previous, payload_indexes=[])
    store = build.store
    assert store is not None
    real = store.upsert
    calls: list[int] = []

    def second_batch_fails(records: Sequence[IndexRecord]) -> None:
        calls.append(len(records))
        if len(calls) == 2:
            raise OSError("disk full")
        real(records)

    monkeypatch.setattr(store, "upsert", second_batch_fails)
    with pytest.raises(OSError, match="disk full"), build:
        build.write([rec(n) for n in range(UPSERT_BATCH + 5)])
    assert build.abandoned and not build.activated
    assert env.status(build.gen_id) == "failed"
    assert build.gen_id not in env.backend.sealed()
    assert not list((env.root / "index").glob("*.building"))  # the data is dropped
    assert env.active() == previous and env.ids(previous) == before


def test_a_failing_gate_leaves_the_previous_generation_active(env: _Env) -> None:
    previous = build_and_activate(env, [rec(0)]).gen_id
    build = env.builder().begin("rev2", {}, source=previous, payload_indexes=[])
    judged: list[tuple[str, str]] = []

    def gate(gen_id: str) -> bool:
        judged.append((gen_id, env.status(gen_id)))
        return False

    with build:
        build.write([rec(1)])
        build.verify()
        build.seal()
        build.mark_candidate({})
        assert build.gate(gate) is False
    assert judged == [(build.gen_id, "candidate")]  # the gate ran on the sealed candidate
    assert env.status(build.gen_id) == "failed" and not build.activated
    assert env.active() == previous
    with pytest.raises(BuildError, match="did not pass its gate"):
        build.activate()


def test_a_carried_generation_of_another_dimension_is_refused(env: _Env) -> None:
    old = env.state.create_generation(WS, "rev", {"dim": 8})
    store = env.backend.create(old, 8)
    store.upsert([rec(0, dim=8)])
    env.backend.seal(old, store)
    env.state.mark_generation(old, "candidate")
    env.state.activate_generation(WS, old)

    build = env.builder().begin("rev2", {}, source=old, payload_indexes=[])
    with pytest.raises(BuildError) as info, build:
        build.carry(lambda r: r)
    message = str(info.value)
    assert f"generation {old}" in message and "test:fixed-4" in message
    assert "dimension 8" in message and f"gives {DIM}" in message
    assert build.abandoned and env.status(build.gen_id) == "failed"
    assert env.active() == old


def test_every_carried_record_is_checked_for_its_dimension(env: _Env) -> None:
    previous = build_and_activate(env, [rec(n) for n in range(3)]).gen_id
    build = env.builder().begin("rev2", {}, source=previous, payload_indexes=[])

    def shrink_the_last(r: IndexRecord) -> IndexRecord:
        if r.payload["n"] == 2:
            return IndexRecord(r.id, r.dense[:2], r.sparse, r.payload)
        return r

    with pytest.raises(BuildError) as info, build:
        build.carry(shrink_the_last)
    message = str(info.value)
    assert f"generation {previous}" in message and rec(2).id in message
    assert "dimension 2" in message and "test:fixed-4" in message
    assert env.status(build.gen_id) == "failed" and env.active() == previous


def test_two_records_sharing_a_point_id_fail_the_verification(env: _Env) -> None:
    build = env.builder().begin("rev", {}, source=None, payload_indexes=[])
    with pytest.raises(BuildError, match="share a point id") as info, build:
        build.write([rec(0), rec(1), rec(0)])
        build.verify()
    assert f"generation {build.gen_id}" in str(info.value)
    assert build.abandoned and env.active() is None


def test_compare_and_swap_refuses_when_another_build_activated_meanwhile(
    env: _Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth behind the run lock: two builds that overlapped anyway (the second
    one, holding no lock, does not clean up after crashes) cannot both activate."""
    previous = build_and_activate(env, [rec(0)]).gen_id
    build = env.builder().begin("rev2", {}, source=previous, payload_indexes=[])
    monkeypatch.setattr(build_module.GenerationBuilder, "discard_crashed", lambda _self: [])
    with pytest.raises(StateError, match=r"another build .* finished first"), build:
        build.write([rec(1)])
        build.verify()
        build.seal()
        build.mark_candidate({})
        other = build_and_activate(env, [rec(2)], source=previous)  # finishes first
        build.activate()
    assert env.active() == other.gen_id
    assert build.abandoned and env.status(build.gen_id) == "failed"
    assert build.gen_id not in env.backend.sealed()


def test_a_retention_failure_after_activation_keeps_the_new_generation(
    env: _Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    previous = build_and_activate(env, [rec(0)]).gen_id
    build = build_and_activate(env, [rec(1)], source=previous)

    def retention_fails(*_args: Any, **_kwargs: Any) -> list[str]:
        raise StateError("retention: cannot list the generations -> retry")

    monkeypatch.setattr(build_module, "retain_generations", retention_fails)
    with pytest.raises(StateError, match="retention") as info:
        build.retain(2)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert f"generation {build.gen_id} was activated before the error" in notes
    assert env.active() == build.gen_id and build.gen_id in env.backend.sealed()


def test_retention_is_applied_after_activation_only(env: _Env) -> None:
    gens = [build_and_activate(env, [rec(0)]).gen_id]
    for n in range(3):
        gens.append(build_and_activate(env, [rec(n)], source=gens[-1]).gen_id)
    build = env.builder().begin("rev", {}, source=gens[-1], payload_indexes=[])
    with build:
        build.write([rec(9)])
        with pytest.raises(BuildError, match="only after its activation"):
            build.retain(1)
        build.verify()
        build.seal()
        build.mark_candidate({})
        build.activate()
    dropped = build.retain(1)  # the active one and the newest retired one are kept
    assert len(dropped) == 3 and set(dropped) < set(gens)
    kept = env.backend.sealed()
    assert len(kept) == 2 and build.gen_id in kept and env.active() == build.gen_id


def test_an_interrupt_marks_the_run_interrupted_and_abandons_the_build(env: _Env) -> None:
    previous = build_and_activate(env, [rec(0)]).gen_id
    lock = RunLock(env.state, WS, kind="evidence", run_by="tests")
    with pytest.raises(KeyboardInterrupt), lock:
        build = env.builder().begin("rev2", {}, source=previous, payload_indexes=[])
        with build:
            build.write([rec(1)])
            raise KeyboardInterrupt
    [run] = env.state.list_sync_runs(WS)
    assert run.id == lock.run_id and lock.recorded
    assert run.status == "interrupted" and run.kind == "evidence"
    assert run.message.startswith("KeyboardInterrupt")
    assert build.abandoned and env.status(build.gen_id) == "failed"
    assert env.active() == previous
    with RunLock(env.state, WS, kind="docs", run_by="tests"):  # the lock was released
        pass


def test_a_crashed_build_is_discarded_by_the_next_one(env: _Env) -> None:
    previous = build_and_activate(env, [rec(0)]).gen_id
    crashed = env.state.create_generation(WS, "rev", {})
    env.backend.create(crashed, DIM).close()  # its process died before sealing
    build = env.builder().begin("rev2", {}, source=previous, payload_indexes=[])
    assert build.discarded == [crashed]
    assert env.status(crashed) == "failed" and env.status(build.gen_id) == "building"
    assert [p.name for p in (env.root / "index").glob("*.building")] == [f"{build.gen_id}.building"]
    build.abandon(RuntimeError("test over"))


# ---------------------------------------------------------------------- the run lock


def test_the_run_lock_records_how_the_run_ended(env: _Env) -> None:
    with RunLock(env.state, WS, kind="docs", run_by="alice", full=True, pipeline_version=3) as lock:
        assert lock.run_id is not None
        with pytest.raises(SyncRunConflict, match=r"a docs sync .* already running"):
            env.state.start_sync_run(WS, "bob", False, socket.gethostname(), os.getpid())
        lock.closing = lambda failure: RunRow(
            revisions={"src": "abc"}, generation="g1", counts={"n": 1}, message="done"
        )
    run = env.state.get_sync_run(lock.run_id)
    assert run is not None and run.status == "succeeded" and run.full and run.run_by == "alice"
    assert (run.revisions, run.generation, run.counts, run.message) == (
        {"src": "abc"}, "g1", {"n": 1}, "done"
    )  # fmt: skip
    assert run.pipeline_version == 3 and run.host == socket.gethostname()

    with RunLock(env.state, WS, kind="evidence", run_by="alice") as lock:
        lock.closing = lambda failure: RunRow(message="gate failed", succeeded=False)
    run = env.state.get_sync_run(lock.run_id)
    assert run is not None and run.status == "failed" and run.message == "gate failed"

    with (
        pytest.raises(ValueError, match="boom"),
        RunLock(env.state, WS, kind="evidence", run_by="alice") as lock,
    ):
        raise ValueError("boom")
    run = env.state.get_sync_run(lock.run_id)
    assert run is not None and run.status == "failed" and run.message == "ValueError: boom"


def test_a_bookkeeping_failure_never_hides_the_error_that_stopped_the_run(
    env: _Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    def database_gone(*_args: Any, **_kwargs: Any) -> None:
        raise StateError("state store: the database is unreachable -> check it")

    # A dead pid: the row this lock cannot close does not block the next lock of this host.
    lock = RunLock(env.state, WS, kind="docs", run_by="tests", pid=_dead_pid())
    with pytest.raises(ValueError, match="the real error") as info, lock:
        monkeypatch.setattr(env.state, "finish_sync_run", database_gone)
        raise ValueError("the real error")
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert f"the run row {lock.run_id} could not be closed" in notes
    assert "database is unreachable" in notes and not lock.recorded
    # Without an error of its own, the run's bookkeeping failure is the error.
    with (
        pytest.raises(StateError, match="unreachable"),
        RunLock(env.state, WS, kind="docs", run_by="tests"),
    ):
        pass


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# ---------------------------------------------------------------------- embedding helpers


class _ShortEmbedder:
    """Returns one vector fewer than asked for, from its second batch on."""

    identity = "short:model"
    dim = 4

    def __init__(self) -> None:
        self.calls = 0

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        rows = len(texts) - (self.calls > 1)
        return np.ones((rows, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return np.ones((1, self.dim), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_a_missing_vector_stops_the_build() -> None:
    seen: list[tuple[str, int, int]] = []
    texts = [f"testo {n}" for n in range(EMBED_BATCH + 3)]
    with pytest.raises(EmbedderError, match=r"short:model: 2 vectors returned for 3 texts"):
        embed_passages(_ShortEmbedder(), texts, lambda *a: seen.append(a))
    assert seen == [("embed", EMBED_BATCH, len(texts))]  # the first batch only
    assert len(embed_passages(_ShortEmbedder(), texts[:EMBED_BATCH])) == EMBED_BATCH


def test_record_labels_collects_every_label() -> None:
    assert record_labels([{"labels": ["a", "b"]}, {"labels": []}, {}, {"labels": ["b"]}]) == {
        "a",
        "b",
    }


# ---------------------------------------------------------------------- the layer


def test_the_builder_imports_only_the_layers_below_it() -> None:
    allowed = ("thoth.errors", "thoth.index", "thoth.state", "thoth.embed.base")
    tree = ast.parse(Path(build_module.__file__).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
        n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    }
    thoth = {m for m in imported if m.split(".")[0] == "thoth"}
    above = sorted(m for m in thoth if not any(m == a or m.startswith(a + ".") for a in allowed))
    assert thoth and not above, above


def test_the_next_build_abandons_a_candidate_that_never_reached_its_gate(env: _Env) -> None:
    previous = build_and_activate(env, [rec(0)]).gen_id
    killed = env.builder().begin("rev2", {}, source=previous, payload_indexes=[])
    killed.write([rec(1)])
    killed.verify()
    killed.seal()
    killed.mark_candidate({})  # ... and the process died before the gate ran
    builder = env.builder()
    assert killed.gen_id in builder.discard_crashed()
    assert env.status(killed.gen_id) == "abandoned"  # never evaluated, unlike 'failed'
    assert killed.gen_id not in env.backend.sealed()
    assert env.active() == previous
