"""Bounded input in `tht docs sync`: per-source limits on a file's size (checked before the
file is read) and on its fragments, and progress while large documents are extracted and
embedded. Real Git repositories, Qdrant Edge shards, SQLite state and the fake embeddings
server, as in test_sync."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import thoth.documents.sources as sources_module
from tests.conftest import commit_all
from tests.documents.test_documents import build_pdf, paragraphs_page
from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge.test_sync import (
    DIMISSIONI,
    FILES,
    active_id,
    docs_workspace,
    points,
    sources_config,
    sync,
    write,
)
from thoth.config import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_DOCUMENT_FRAGMENTS,
    SourceSettings,
)
from thoth.errors import ProblemsError
from thoth.knowledge.sync import preparation_fingerprint
from thoth.runtime import Runtime, open_runtime


def limited(extra: str) -> str:
    """The test sources, with `extra` lines added to the documents source."""
    return sources_config().replace(
        'not_knowledge = ["docs/moduli/**"]', f'not_knowledge = ["docs/moduli/**"]\n{extra}'
    )


def runtime(tmp_path: Path, fake: FakeEmbeddingServer, extra: str) -> Runtime:
    ws = docs_workspace(tmp_path / "ws", fake.url, extra="")
    (ws.root / "thoth.toml").write_text(
        (ws.root / "thoth.toml").read_text("utf-8").replace(sources_config(), limited(extra)),
        encoding="utf-8",
    )
    commit_all(ws.root, "limits")
    return open_runtime(type(ws).open(ws.root))


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def test_defaults_leave_headroom_over_the_measured_filings() -> None:
    # The SEC 10-Q PDFs of the shared data: at most 3.6 MB and 183 fragments each.
    assert DEFAULT_MAX_DOCUMENT_BYTES >= 8 * 3_657_048
    assert DEFAULT_MAX_DOCUMENT_FRAGMENTS >= 10 * 183
    source = SourceSettings(name="s", include=["*"], channel="c")
    assert source.max_document_bytes == DEFAULT_MAX_DOCUMENT_BYTES
    assert source.max_document_fragments == DEFAULT_MAX_DOCUMENT_FRAGMENTS


def test_changing_a_limit_rebuilds_nothing() -> None:
    """The limits decide whether a file is accepted, not how it is prepared: raising one must
    not re-embed every document of the source."""
    base = SourceSettings(name="s", include=["*"], channel="c")
    raised = base.model_copy(update={"max_document_bytes": 10**9, "max_document_fragments": 9})
    assert preparation_fingerprint(base) == preparation_fingerprint(raised)


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, fake: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = runtime(tmp_path, fake, "max_document_bytes = 2000")
    try:
        first = sync(rt)
        before = points(rt)
        big = "# Grande\n\n" + "Una riga di testo che si ripete nel documento.\n" * 100
        assert len(big.encode()) > 2000
        write(rt.ws.root, {"docs/grande.md": big, "docs/dimissioni.md": DIMISSIONI + "\nAltro.\n"})
        commit_all(rt.ws.root, "a file over the limit")
        read: list[str] = []
        blobs = sources_module._blobs

        def recording(repo: Path, name: str, oids: Sequence[str]) -> list[bytes]:
            data = blobs(repo, name, oids)
            read.extend(d.decode("utf-8", "replace")[:9] for d in data)
            return data

        monkeypatch.setattr(sources_module, "_blobs", recording)
        with pytest.raises(ProblemsError) as info:
            sync(rt)
        error = info.value
        assert error.code == "document_too_large"
        [problem] = error.problems
        assert problem.where == "documenti:docs/grande.md"
        assert problem.field == "max_document_bytes"
        assert f"{len(big.encode()):,} bytes" in problem.message
        assert "2,000 bytes" in problem.message and "documenti" in problem.message
        assert problem.hint is not None
        assert "max_document_bytes" in problem.hint and "split" in problem.hint
        assert "# Grande\n" not in read  # refused from its size in Git, never read
        assert active_id(rt) == first.generation and points(rt) == before
        [run, _] = rt.state.list_sync_runs(rt.ws.settings.workspace)
        assert run.status == "failed" and "docs/grande.md" in run.message
    finally:
        rt.close()


def test_a_file_over_the_fragment_limit_is_refused(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    rt = runtime(tmp_path, fake, "max_document_fragments = 3")
    try:
        first = sync(rt)
        before = points(rt)
        sections = "".join(
            f"## Sezione {n}\n\n"
            + f"Il paragrafo della sezione {n} descrive una regola. " * 30
            + "\n\n"
            for n in range(8)
        )
        write(rt.ws.root, {"docs/lungo.md": "# Lungo\n\n" + sections})
        commit_all(rt.ws.root, "a file over the fragment limit")
        with pytest.raises(ProblemsError) as info:
            sync(rt)
        assert info.value.code == "too_many_fragments"
        [problem] = info.value.problems
        assert problem.where == "documenti:docs/lungo.md"
        assert problem.field == "max_document_fragments"
        assert "limit of source 'documenti' is 3" in problem.message
        assert problem.hint is not None and "split" in problem.hint
        assert active_id(rt) == first.generation and points(rt) == before
    finally:
        rt.close()


def test_sync_reports_extraction_progress_per_file_and_embedding_progress(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    pages = [
        paragraphs_page([[f"Pagina {n}: il ricovero ordinario e le sue regole."]]) for n in range(5)
    ]
    files = {**FILES, "docs/manuale.pdf": build_pdf(pages)}
    ws = docs_workspace(tmp_path / "ws", fake.url, files=files)
    ticks: list[tuple[str, int, int]] = []
    with open_runtime(ws) as rt:
        report = sync(rt, progress=lambda phase, done, total: ticks.append((phase, done, total)))
    extract = [(d, t) for p, d, t in ticks if p == "extract documenti:docs/manuale.pdf"]
    assert extract == [(n, 5) for n in range(1, 6)]  # one tick per page
    assert ("extract documenti:docs/ricoveri.md", 1, 1) in ticks
    embedded = [(d, t) for p, d, t in ticks if p == "embed"]
    built = report.counts["fragments_built"]
    assert embedded and embedded[-1] == (built, built)
