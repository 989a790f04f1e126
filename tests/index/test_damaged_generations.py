"""Fault injection on sealed generations (issue 14, seed 000 §13): a damaged shard is never an
empty answer. Each damage an interrupted copy, a disk fault or an operator can cause is
`index_corrupt` for `tht ask`, reported by `tht verify` and `tht index check`, never carried
forward by a sync; and nothing is lost: the repaired directory, or a rollback to a retained
generation, serves the same answers as before. Reads never write into a sealed generation."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import commit_all
from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge.test_sync import docs_workspace, tht, write
from thoth.cli import exitcodes
from thoth.index.shard import disk_readers_root, readers_roots
from thoth.runtime import open_runtime
from thoth.workspace import Workspace

ASK = ["ask", "ricovero ordinario pernottamento", "--label", "internal"]


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def _segment_files(gen: Path, pattern: str) -> list[Path]:
    found = sorted((gen / "segments").glob(pattern))
    assert found, f"no {pattern} under {gen}"
    return found


def _drop_version_file(gen: Path, _other: Path) -> None:
    _segment_files(gen, "*/version.info")[0].unlink()


def _empty_segments(gen: Path, _other: Path) -> None:
    for segment in (gen / "segments").iterdir():
        shutil.rmtree(segment)


def _swap_shard(gen: Path, other: Path) -> None:
    shutil.rmtree(gen)
    shutil.copytree(other, gen)


def _random_bytes_in_vectors(gen: Path, _other: Path) -> None:
    chunk = _segment_files(gen, "*/vector_storage/vectors/chunk_0.mmap")[0]
    data = bytearray(chunk.read_bytes())
    noise = random.Random(14).randbytes(256)
    data[: len(noise)] = noise  # same size: only the content tells
    chunk.write_bytes(bytes(data))


def _truncate_payloads(gen: Path, _other: Path) -> None:
    page = _segment_files(gen, "*/payload_storage/page_0.dat")[0]
    with page.open("r+b") as fh:
        fh.truncate(page.stat().st_size // 2)


DAMAGES: dict[str, Callable[[Path, Path], None]] = {
    "a segment without its version file": _drop_version_file,
    "an emptied segments directory": _empty_segments,
    "another generation's shard in its place": _swap_shard,
    "random bytes in the vector file": _random_bytes_in_vectors,
    "a truncated payload file": _truncate_payloads,
}


def _snapshot(gen: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file: size, modification time and content."""
    return {
        str(p.relative_to(gen)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(gen.rglob("*"))
        if p.is_file()
    }


def _answer(data: dict[str, Any]) -> tuple[Any, ...]:
    return (data["status"], data["text"], [s["doc_id"] for s in data.get("sources") or []])


def _two_generations(tmp_path: Path, url: str) -> tuple[Workspace, str, str, Path]:
    ws = docs_workspace(tmp_path / "ws", url)
    root = str(ws.root)
    code, first = tht("docs", "sync", "-w", root)
    assert code == exitcodes.OK
    # The same sources rebuilt: a rollback to the first must answer as the second did.
    code, second = tht("docs", "sync", "--full", "-w", root)
    assert code == exitcodes.OK and second["outcome"] == "activated"
    index = ws.root / ".thoth" / "index" / ws.settings.workspace
    return ws, first["generation"], second["generation"], index


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_a_damaged_generation_is_index_corrupt_and_loses_nothing(
    damage: str, tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    ws, first, active, index = _two_generations(tmp_path, fake.url)
    root = str(ws.root)
    code, before = tht(*ASK, "-w", root)
    assert code == exitcodes.OK and before["status"] == "found", before
    backup = tmp_path / "backup"
    shutil.copytree(index / active, backup)

    DAMAGES[damage](index / active, index / first)

    code, answer = tht(*ASK, "-w", root)
    assert (answer["status"], answer["error_code"]) == ("failed", "index_corrupt"), answer
    assert not answer.get("sources")
    code, checked = tht("index", "check", "-w", root)
    assert code == exitcodes.FAILED and checked["ok"] is False
    results = {c["generation"]: (c["ok"], c["code"]) for c in checked["generations"]}
    assert results == {first: (True, None), active: (False, "index_corrupt")}
    code, verified = tht("verify", "-w", root)
    assert code == exitcodes.FAILED
    assert any(f["code"] == "index_corrupt" for f in verified["findings"]), verified

    # No sync carries the damage forward: it fails, and the damaged generation stays active
    # (unavailable) rather than a generation built from an empty or altered copy.
    write(ws.root, {"docs/altro.md": "# Altro\n\nLa dimissione si registra entro due ore.\n"})
    commit_all(ws.root, "and another")
    code, refused = tht("docs", "sync", "-w", root)
    assert code == exitcodes.FAILED and "index_corrupt" in str(refused), refused
    with open_runtime(Workspace.open(ws.root)) as rt:
        serving = rt.state.active_generation(ws.settings.workspace)
        assert serving is not None and serving.id == active, "nothing built from the damage"

    # Repaired (the directory restored from a backup): the same answers as before.
    shutil.rmtree(index / active)
    shutil.copytree(backup, index / active)
    code, repaired = tht(*ASK, "-w", root)
    assert code == exitcodes.OK and _answer(repaired) == _answer(before)

    # Or rolled back: the retained generation answers, and is intact.
    DAMAGES[damage](index / active, index / first)
    code, _ = tht("evidence", "activate", "--generation", first, "-w", root)
    assert code == exitcodes.OK
    code, rolled_back = tht(*ASK, "-w", root)
    assert code == exitcodes.OK and _answer(rolled_back) == _answer(before)


def test_reading_never_writes_into_a_sealed_generation(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    """The engine rewrites its config, drops journals and touches data files of any shard it
    opens; readers open a private copy, so the sealed files keep their bytes and times, and
    the copies are gone once the commands end."""
    ws, first, active, index = _two_generations(tmp_path, fake.url)
    root = str(ws.root)
    sealed = {gen: _snapshot(index / gen) for gen in (first, active)}
    mine = f"{os.getpid()}-"
    earlier = {p for r in readers_roots() for p in r.glob(f"{mine}*")}  # other tests' copies

    for command in (
        ASK,
        ["ask", "lettera di dimissione", "--label", "internal"],
        ["index", "check"],
        ["verify"],
        ["evidence", "generations"],
    ):
        code, data = tht(*command, "-w", root)
        assert code in (exitcodes.OK, exitcodes.FAILED), (command, data)
    code, data = tht("docs", "sync", "-w", root)  # nothing changed: reads the active one
    assert code == exitcodes.OK

    assert {gen: _snapshot(index / gen) for gen in (first, active)} == sealed
    leftovers = {p for r in readers_roots() for p in r.glob(f"{mine}*")} - earlier
    assert leftovers == set(), "every private copy is removed when its store closes"


def test_a_reader_killed_with_its_copy_open_leaves_nothing_the_next_one_keeps(
    tmp_path: Path,
) -> None:
    """Copies of a process that died are swept by the next open."""
    root = disk_readers_root()
    root.mkdir(exist_ok=True)
    dead = root / "999999999-g0-abc"  # no such pid
    (dead / "segments").mkdir(parents=True)
    (dead / "edge_config.json").write_text("{}", encoding="utf-8")
    from thoth.index.shard import private_copy

    sealed = tmp_path / "sealed"
    (sealed / "segments").mkdir(parents=True)
    (sealed / "edge_config.json").write_text("{}", encoding="utf-8")
    copy = private_copy(sealed, None, "g1")
    try:
        assert not dead.exists()
        assert (copy / "edge_config.json").read_text(encoding="utf-8") == "{}"
    finally:
        shutil.rmtree(copy)
