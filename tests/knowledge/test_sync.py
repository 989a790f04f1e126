"""`tht docs sync`: incremental and full syncs of declared document and wiki sources into index
generations, the run registry and its overlap lock (SQLite and PostgreSQL), and the failures
that must leave the active generation untouched. Real Git repositories, Qdrant Edge shards,
state databases and an OpenAI-compatible embedder talking to a local fake server."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from sqlalchemy import create_engine, insert
from sqlalchemy.exc import IntegrityError
from typer.testing import CliRunner

import thoth.documents.records as records
import thoth.index.build as build_module
import thoth.knowledge.sync as sync_module
from tests.conftest import commit_all, git
from tests.documents.test_documents import build_pdf, text_lines
from tests.fake_embeddings import FakeEmbeddingServer, normalised
from tests.publishing import activate_head, prepared_workspace, publish, write_config
from thoth.cli import exitcodes
from thoth.cli.docs import render_sync
from thoth.cli.main import app
from thoth.documents.sources import SourceUnavailable
from thoth.errors import ProblemsError
from thoth.index.base import IndexRecord
from thoth.index.bm25 import Bm25Encoder
from thoth.index.records import FragmentPayload, parse_payload
from thoth.knowledge.sync import DocsSync, SyncError, SyncReport
from thoth.runtime import Runtime, open_runtime
from thoth.search.service import EvidenceSearch
from thoth.state import StateError, StateStore, SyncRunConflict
from thoth.state.schema import sync_runs
from thoth.workspace import Workspace

WS = "ws"
HOST = socket.gethostname()

CHANNELS = """
[[channels]]
name = "clinica"
examples = ["Come si registra un ricovero?"]

[[channels]]
name = "amministrazione"
examples = ["Chi firma il modulo di richiesta?"]
"""


def sources_config(doc_labels: str = '["internal"]', wiki_include: str = '["wiki/**/*.md"]') -> str:
    return f"""
[[sources]]
name = "documenti"
include = ["docs/**/*.md", "docs/**/*.pdf"]
not_knowledge = ["docs/moduli/**"]
channel = "clinica"
labels = {doc_labels}

[[sources]]
name = "wiki"
kind = "wiki"
include = {wiki_include}
channel = "clinica"
labels = ["public"]
"""


RICOVERI = """# Ricoveri

## Registrazione

Il ricovero ordinario comporta almeno un pernottamento in reparto. La data di ammissione è
registrata dall'accettazione e non può essere modificata dopo la dimissione del paziente, se non
con una rettifica firmata dal responsabile del reparto che ha accolto il paziente.

## Trasferimenti

Un trasferimento interno tra reparti non chiude il ricovero: l'episodio resta aperto fino alla
dimissione e i giorni di degenza si sommano su tutti i reparti attraversati dal paziente durante
la sua permanenza nella struttura ospedaliera.
"""

DIMISSIONI = """# Dimissioni

## Lettera di dimissione

La lettera di dimissione riporta la diagnosi principale, le terapie in corso e i controlli
programmati. È consegnata al paziente il giorno della dimissione e inviata al medico curante
entro le ventiquattro ore successive, anche quando il paziente è trasferito ad altro istituto.
"""

MODULO = """# Modulo di richiesta

Nome, cognome, firma del richiedente e data della richiesta della copia della cartella clinica.
"""

CAVEAT = "I dati del 2023 sono provvisori fino alla chiusura dell'esercizio."


def page(labels: str | None = None, pin: str | None = None) -> str:
    lines = ["---", "title: Guida ai ricoveri"]
    if labels is not None:
        lines.append(f"labels: {labels}")
    if pin is None:
        lines += ["documents:", "  - documenti:docs/ricoveri.md"]
    else:
        lines += ["documents:", "  - doc: documenti:docs/ricoveri.md", f"    sha256: {pin}"]
    lines += ["caveats:", f"  - {CAVEAT}", "---"]
    return (
        "\n".join(lines)
        + """
# Guida ai ricoveri

Per i ricoveri ordinari conta il pernottamento: senza almeno una notte in reparto l'episodio è un
day hospital. Il trasferimento tra reparti non apre un nuovo ricovero e non azzera i giorni di
degenza già maturati dal paziente nella struttura.

## Avvertenze

- Le regole dei reparti pediatrici possono differire da quelle descritte in questa pagina.
"""
    )


FILES: dict[str, str | bytes] = {
    "docs/ricoveri.md": RICOVERI,
    "docs/dimissioni.md": DIMISSIONI,
    "docs/moduli/richiesta.md": MODULO,
    "wiki/ricoveri.md": page(),
}
DOC_IDS = ["documenti:docs/dimissioni.md", "documenti:docs/ricoveri.md", "wiki:wiki/ricoveri.md"]


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def configure(root: Path, url: str, sources: str | None = None, extra: str = "") -> None:
    write_config(root, url, extra=CHANNELS + (sources or sources_config()) + extra)


def docs_workspace(
    root: Path, url: str, files: dict[str, str | bytes] | None = None, extra: str = ""
) -> Workspace:
    """A committed Git workspace declaring a documents source and a wiki source (repo ".")."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".thoth/\n", encoding="utf-8")
    configure(root, url, extra=extra)
    write(root, FILES if files is None else files)
    commit_all(root, "sources")
    return Workspace.open(root)


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def rt(tmp_path: Path, fake: FakeEmbeddingServer) -> Iterator[Runtime]:
    runtime = open_runtime(docs_workspace(tmp_path / "ws", fake.url))
    yield runtime
    runtime.close()


def sync(
    rt: Runtime,
    full: bool = False,
    run_by: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> SyncReport:
    return DocsSync(rt.ws, rt.state, rt.backend, rt.embedder, progress).run(full, run_by)


def reopen(rt: Runtime) -> Runtime:
    """A runtime on the same workspace after thoth.toml changed."""
    rt.close()
    return open_runtime(Workspace.open(rt.ws.root))


def points(rt: Runtime, gen_id: str | None = None) -> dict[str, IndexRecord]:
    gen = gen_id or active_id(rt)
    store = rt.backend.open(gen)
    try:
        return {r.id: r for r in store.scroll()}
    finally:
        store.close()


def active_id(rt: Runtime) -> str:
    gen = rt.state.active_generation(rt.ws.settings.workspace)
    assert gen is not None
    return gen.id


def by_doc(found: dict[str, IndexRecord]) -> dict[str, list[IndexRecord]]:
    docs: dict[str, list[IndexRecord]] = {}
    for rec in found.values():
        if rec.payload.get("record_kind") in ("document", "wiki"):
            docs.setdefault(rec.payload["doc_id"], []).append(rec)
    return docs


def edit(rt: Runtime, files: dict[str, str | bytes], message: str = "edit") -> None:
    write(rt.ws.root, files)
    commit_all(rt.ws.root, message)


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


# ---------------------------------------------------------------------- incremental syncs


def test_first_sync_indexes_every_admitted_file(rt: Runtime) -> None:
    report = sync(rt, run_by="tester")
    assert report.outcome == "activated" and report.previous_generation is None
    assert report.created == DOC_IDS and report.updated == [] and report.deleted == []
    assert report.not_knowledge == [
        {
            "doc_id": "documenti:docs/moduli/richiesta.md",
            "reason": "matches not_knowledge glob 'docs/moduli/**'",
        }
    ]
    assert report.revisions == {"documenti": head(rt.ws.root), "wiki": head(rt.ws.root)}
    counts = report.counts
    assert counts["documents_indexed"] == 2 and counts["pages_indexed"] == 1
    assert counts["created"] == 3 and counts["unchanged"] == 0 and counts["not_knowledge"] == 1
    assert counts["fragments_carried"] == 0 and counts["stale_fragments"] == 0
    assert counts["fragments_built"] == counts["fragments_total"] >= 3
    assert (
        report.chunk_stats is not None and report.chunk_stats["count"] == counts["fragments_built"]
    )

    gen = rt.state.get_generation(report.generation or "")
    assert gen is not None and gen.status == "active" and gen.revision == head(rt.ws.root)
    assert gen.config["docs"]["pipeline_version"] == records.PIPELINE_VERSION
    # The label set of the generation, for readers that fail closed on retired labels.
    assert gen.counts["labels"] == ["internal", "public"]
    docs = by_doc(points(rt))
    assert sorted(docs) == DOC_IDS
    assert sum(len(v) for v in docs.values()) == counts["fragments_total"]
    for doc_id, recs in docs.items():
        for rec in recs:
            p = rec.payload
            assert p["channel"] == "clinica" and p["vector_generation"] == gen.id
            assert p["labels"] == (["public"] if doc_id.startswith("wiki:") else ["internal"])
            assert p["pipeline_version"] == records.PIPELINE_VERSION
            assert p["content_sha256"] and p["revision"] == head(rt.ws.root)


def test_second_sync_without_changes_builds_nothing(rt: Runtime) -> None:
    first = sync(rt)
    before = points(rt)
    second = sync(rt)
    assert second.outcome == "unchanged" and second.generation == first.generation
    assert second.created == second.updated == [] and second.deleted == []
    assert second.counts["fragments_built"] == 0
    assert second.counts["fragments_carried"] == first.counts["fragments_total"]
    assert second.counts["fragments_total"] == first.counts["fragments_total"]
    assert second.counts["unchanged"] == 3
    assert len(rt.state.list_generations(rt.ws.settings.workspace)) == 1  # no churn
    assert points(rt) == before


def test_only_the_edited_document_is_rebuilt(rt: Runtime) -> None:
    first = sync(rt)
    before = by_doc(points(rt))
    edit(rt, {"docs/dimissioni.md": DIMISSIONI + "\nLe dimissioni protette seguono un iter.\n"})
    report = sync(rt)
    assert report.outcome == "activated" and report.previous_generation == first.generation
    assert report.updated == ["documenti:docs/dimissioni.md"]
    assert report.created == [] and report.deleted == [] and report.labels_changed == []
    assert report.counts["unchanged"] == 2
    assert report.counts["fragments_built"] == len(
        by_doc(points(rt))["documenti:docs/dimissioni.md"]
    )
    after = by_doc(points(rt))
    for doc_id in ("documenti:docs/ricoveri.md", "wiki:wiki/ricoveri.md"):
        # Carried as they were: same ids and vectors (no new embedding), restamped generation.
        old = {r.id: (r.dense, r.sparse) for r in before[doc_id]}
        assert {r.id: (r.dense, r.sparse) for r in after[doc_id]} == old
        assert {r.payload["vector_generation"] for r in after[doc_id]} == {report.generation}
    assert any("iter" in r.payload["text"] for r in after["documenti:docs/dimissioni.md"])


def test_label_changes_are_listed_by_name(rt: Runtime) -> None:
    sync(rt)
    edit(rt, {"wiki/ricoveri.md": page(labels="[internal]")})
    configure(rt.ws.root, _url(rt), sources_config(doc_labels='["confidential"]'))
    commit_all(rt.ws.root, "labels")
    rt2 = reopen(rt)
    try:
        report = sync(rt2)
        assert report.labels_changed == [
            {
                "doc_id": "documenti:docs/dimissioni.md",
                "old": ["internal"],
                "new": ["confidential"],
            },
            {"doc_id": "documenti:docs/ricoveri.md", "old": ["internal"], "new": ["confidential"]},
            {"doc_id": "wiki:wiki/ricoveri.md", "old": ["public"], "new": ["internal"]},
        ]
        assert report.updated == DOC_IDS
        labels = {
            d: {tuple(r.payload["labels"]) for r in recs} for d, recs in by_doc(points(rt2)).items()
        }
        assert labels["wiki:wiki/ricoveri.md"] == {("internal",)}
        assert labels["documenti:docs/ricoveri.md"] == {("confidential",)}
    finally:
        rt2.close()


def _url(rt: Runtime) -> str:
    url = rt.ws.settings.embedding.base_url
    assert url is not None
    return url


def test_deleted_file_is_listed_and_its_fragments_removed(rt: Runtime) -> None:
    sync(rt)
    (rt.ws.root / "docs" / "dimissioni.md").unlink()
    commit_all(rt.ws.root, "remove")
    report = sync(rt)
    assert [d["doc_id"] for d in report.deleted] == ["documenti:docs/dimissioni.md"]
    assert "no longer in source documenti" in report.deleted[0]["reason"]
    assert report.counts["deleted"] == 1 and report.counts["documents_indexed"] == 1
    assert "documenti:docs/dimissioni.md" not in by_doc(points(rt))


def test_not_knowledge_after_indexing_is_deleted_with_its_reason(rt: Runtime) -> None:
    sync(rt)
    edit(rt, {"docs/dimissioni.md": "---\nknowledge: false\n---\n" + DIMISSIONI})
    report = sync(rt)
    assert report.deleted == [
        {
            "doc_id": "documenti:docs/dimissioni.md",
            "reason": "not knowledge: front matter knowledge: false",
        }
    ]
    assert "documenti:docs/dimissioni.md" in [d["doc_id"] for d in report.not_knowledge]
    assert "documenti:docs/dimissioni.md" not in by_doc(points(rt))


def test_curation_keeps_the_version_the_page_was_written_against(rt: Runtime) -> None:
    pin = hashlib.sha256(RICOVERI.encode()).hexdigest()
    edit(rt, {"wiki/ricoveri.md": page(pin=pin)})
    sync(rt)
    before = by_doc(points(rt))["documenti:docs/ricoveri.md"]
    edit(rt, {"docs/ricoveri.md": RICOVERI.replace("pernottamento", "pernottamento notturno")})
    report = sync(rt)
    [routed] = report.curation
    assert routed["doc_id"] == "documenti:docs/ricoveri.md" and "pinned" in routed["reason"]
    assert routed["kept_fragments"] == len(before)
    assert "documenti:docs/ricoveri.md" not in report.updated + report.created
    kept = by_doc(points(rt))["documenti:docs/ricoveri.md"]
    assert sorted(r.payload["text"] for r in kept) == sorted(r.payload["text"] for r in before)


def test_curation_keeps_the_old_version_under_the_labels_declared_now(rt: Runtime) -> None:
    pin = hashlib.sha256(RICOVERI.encode()).hexdigest()
    edit(rt, {"wiki/ricoveri.md": page(pin=pin)})
    sync(rt)
    before = by_doc(points(rt))["documenti:docs/ricoveri.md"]
    # The pinned document changes (-> curation) while its source is relabelled.
    write(rt.ws.root, {"docs/ricoveri.md": RICOVERI.replace("pernottamento", "notte")})
    configure(rt.ws.root, _url(rt), sources_config(doc_labels='["confidential"]'))
    commit_all(rt.ws.root, "relabelled while a pinned document changed")
    rt2 = reopen(rt)
    try:
        report = sync(rt2)
        assert [c["doc_id"] for c in report.curation] == ["documenti:docs/ricoveri.md"]
        assert {
            "doc_id": "documenti:docs/ricoveri.md",
            "old": ["internal"],
            "new": ["confidential"],
        } in report.labels_changed
        kept = by_doc(points(rt2))["documenti:docs/ricoveri.md"]
        # The same fragments and vectors (the curated version), under the labels of today.
        assert {r.id: (r.dense, r.sparse, r.payload["text"]) for r in kept} == {
            r.id: (r.dense, r.sparse, r.payload["text"]) for r in before
        }
        assert {(tuple(r.payload["labels"]), r.payload["channel"]) for r in kept} == {
            (("confidential",), "clinica")
        }
        gen = rt2.state.get_generation(report.generation or "")
        assert gen is not None and gen.counts["labels"] == ["confidential", "public"]
    finally:
        rt2.close()


def test_full_rebuild_leaves_no_fragment_of_an_older_pipeline(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = sync(rt)
    total = first.counts["fragments_total"]
    # A newer Thoth: the pipeline version is bumped (the payload contract and sync read it).
    monkeypatch.setattr(records, "PIPELINE_VERSION", records.PIPELINE_VERSION + 1)
    monkeypatch.setattr(sync_module, "PIPELINE_VERSION", records.PIPELINE_VERSION)
    quiet = sync(rt)
    assert quiet.outcome == "unchanged" and quiet.counts["stale_fragments"] == total
    assert any("--full" in w for w in quiet.warnings)
    edit(rt, {"docs/dimissioni.md": DIMISSIONI + "\nNuova regola.\n"})
    normal = sync(rt)
    rebuilt = normal.counts["fragments_built"]
    assert normal.updated == ["documenti:docs/dimissioni.md"]
    assert normal.counts["stale_fragments"] == normal.counts["fragments_total"] - rebuilt > 0
    full = sync(rt, full=True)
    assert full.full and full.outcome == "activated"
    assert sorted(full.updated) == DOC_IDS and full.counts["unchanged"] == 0
    assert full.counts["fragments_built"] == full.counts["fragments_total"]
    assert full.counts["stale_fragments"] == 0 and full.warnings == []
    versions = {r.payload["pipeline_version"] for r in points(rt).values()}
    assert versions == {records.PIPELINE_VERSION}
    run = rt.state.get_sync_run(full.run_id)
    assert run is not None and run.full and run.pipeline_version == records.PIPELINE_VERSION
    assert run.counts["stale_fragments"] == 0


def test_source_whose_globs_match_nothing(rt: Runtime) -> None:
    sync(rt)
    configure(rt.ws.root, _url(rt), sources_config(wiki_include='["pagine/**/*.md"]'))
    commit_all(rt.ws.root, "wrong globs")
    rt2 = reopen(rt)
    try:
        before = active_id(rt2)
        with pytest.raises(SyncError, match=r"source wiki: .* refusing to delete them all"):
            sync(rt2)
        assert active_id(rt2) == before
        assert "wiki:wiki/ricoveri.md" in by_doc(points(rt2))
    finally:
        rt2.close()


def test_empty_source_is_a_warning_when_nothing_of_it_is_indexed(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    files = {k: v for k, v in FILES.items() if not k.startswith("wiki/")}
    rt = open_runtime(docs_workspace(tmp_path / "ws", fake.url, files))
    try:
        report = sync(rt)
        assert report.outcome == "activated" and report.counts["pages_indexed"] == 0
        assert any(w.startswith("source wiki: its include globs") for w in report.warnings)
    finally:
        rt.close()


# ---------------------------------------------------------------------- what is embedded


def test_vectors_hold_the_search_text_and_never_the_caveats(rt: Runtime) -> None:
    sync(rt)
    wiki = by_doc(points(rt))["wiki:wiki/ricoveri.md"]
    assert wiki
    for rec in wiki:
        p = rec.payload
        assert CAVEAT in p["caveats"] and CAVEAT not in p["text"]
        embedded = np.asarray(rec.dense, dtype=np.float32)
        payload = parse_payload(p, rec.id)
        assert isinstance(payload, FragmentPayload)
        searched = records.search_text(payload)
        assert searched.startswith("Guida ai ricoveri") and searched.endswith(p["text"])
        assert np.allclose(embedded, normalised(searched, 8), atol=1e-6)
        reading = p["text"] + "\n" + "\n".join(p["caveats"])
        assert not np.allclose(embedded, normalised(reading, 8), atol=1e-3)
        assert rec.sparse == Bm25Encoder("it", p["bm25_avg_len"]).document(searched)


def test_bm25_reads_a_table_without_its_figure_cells_and_the_embedder_with_them(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    """A statement's figures would lengthen it to BM25 and weigh its row labels down; the
    embedder still reads them (records.bm25_text)."""
    table = (
        "# Magazzino\n\nLe rimanenze a fine periodo.\n\n"
        "| Voce | 30 settembre 2023 | 2022 |\n| --- | --- | --- |\n"
        "| Materie prime | 1.278 | 1.517 |\n| Prodotti finiti | $3,922 | (412) |\n"
    )
    rt = open_runtime(
        docs_workspace(tmp_path / "ws", fake.url, {**FILES, "docs/magazzino.md": table})
    )
    try:
        sync(rt)
        [rec] = by_doc(points(rt))["documenti:docs/magazzino.md"]
        payload = parse_payload(rec.payload, rec.id)
        assert isinstance(payload, FragmentPayload) and payload.chunk_kind == "table"
        terms = records.bm25_text(payload)
        assert "Materie prime\n" in terms and "Voce 30 settembre 2023 2022" in terms
        assert "1.278" not in terms and "3,922" not in terms and "(412)" not in terms
        encoder = Bm25Encoder("it", rec.payload["bm25_avg_len"])
        assert (
            rec.sparse == encoder.document(terms) != encoder.document(records.search_text(payload))
        )
        searched = records.search_text(payload)
        assert "Materie prime 1.278 1.517" in searched
        assert np.allclose(
            np.asarray(rec.dense, dtype=np.float32), normalised(searched, 8), atol=1e-6
        )
    finally:
        rt.close()


# ---------------------------------------------------------------------- failures


def test_unreachable_source_fails_and_keeps_the_active_generation(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    write(origin, {"note/bandi.md": DIMISSIONI.replace("Dimissioni", "Bandi")})
    commit_all(origin, "external")
    served = tmp_path / "served"
    subprocess.run(["git", "clone", "-q", str(origin), str(served)], check=True)
    extra = f"""
[[sources]]
name = "esterni"
repo = "{served}"
include = ["note/**/*.md"]
channel = "amministrazione"
labels = ["internal"]
"""
    rt = open_runtime(docs_workspace(tmp_path / "ws", fake.url, extra=extra))
    try:
        first = sync(rt)
        assert "esterni:note/bandi.md" in first.created
        before = points(rt)
        shutil.rmtree(origin)  # the upstream is gone
        with pytest.raises(SourceUnavailable, match="source 'esterni'") as info:
            sync(rt)
        assert active_id(rt) == first.generation and points(rt) == before
        [run] = rt.state.list_sync_runs(rt.ws.settings.workspace, limit=1)
        assert run.status == "failed" and "esterni" in run.message
        assert run.generation is None and str(info.value) in run.message
        assert rt.state.list_generations(rt.ws.settings.workspace)[0].id == first.generation
    finally:
        rt.close()


NUOVO = """# Accessi

Gli accessi in pronto soccorso sono registrati al triage con l'ora di arrivo, il codice di
priorità assegnato e l'esito dell'accesso, anche quando il paziente si allontana prima della visita.
"""


def test_thoth_toml_changed_by_the_alignment_stops_the_run(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    ws = docs_workspace(tmp_path / "ws", fake.url)
    # The served workspace follows an upstream: a sync fast-forwards it (repo = ".").
    upstream = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(ws.root), str(upstream)], check=True)
    git(ws.root, "remote", "add", "origin", str(upstream))
    git(ws.root, "fetch", "-q", "origin")
    git(ws.root, "branch", "-q", "--set-upstream-to=origin/main", "main")
    author = tmp_path / "author" / "ws"  # same directory name: same workspace name
    subprocess.run(["git", "clone", "-q", str(upstream), str(author)], check=True)
    rt = open_runtime(Workspace.open(ws.root))
    try:
        first = sync(rt)
        configure(author, fake.url, sources_config(doc_labels='["confidential"]'))
        write(author, {"docs/accessi.md": NUOVO})
        commit_all(author, "documents are confidential now; a new one")
        git(author, "push", "-q", "origin", "main")
        pushed = head(author)
        with pytest.raises(SyncError) as info:
            sync(rt)
        message = str(info.value)
        assert (
            f"thoth.toml changed with the alignment of the workspace to revision {pushed[:12]}"
            in message
        )
        assert "run `tht docs sync` again so the new settings apply" in message
        assert head(ws.root) == pushed  # the alignment happened; nothing was indexed from it
        name = rt.ws.settings.workspace
        assert active_id(rt) == first.generation
        assert [g.id for g in rt.state.list_generations(name)] == [first.generation]
        run = rt.state.list_sync_runs(name, limit=1)[0]
        assert run.status == "failed" and run.generation is None
        assert "thoth.toml changed" in run.message and run.revisions["documenti"] == pushed
    finally:
        rt.close()
    # Run again: the new settings apply to the new document and the old ones.
    rt = open_runtime(Workspace.open(ws.root))
    try:
        report = sync(rt)
        assert report.outcome == "activated" and report.created == ["documenti:docs/accessi.md"]
        labels = {
            d: {tuple(r.payload["labels"]) for r in recs} for d, recs in by_doc(points(rt)).items()
        }
        for doc_id in ("documenti:docs/accessi.md", "documenti:docs/ricoveri.md"):
            assert labels[doc_id] == {("confidential",)}
    finally:
        rt.close()


def test_extraction_error_stops_the_run_and_old_fragments_answer_the_same(rt: Runtime) -> None:
    first = sync(rt)
    before = points(rt)
    probe = [float(x) for x in normalised("ricovero con pernottamento", 8)]
    sparse = Bm25Encoder("it", 10.0).query("ricovero con pernottamento")

    def answers() -> list[str]:
        store = rt.backend.open(active_id(rt))
        try:
            hits = store.query_hybrid(probe, sparse, {"record_kind": ["document", "wiki"]}, 10, 50)
            return [h.id for h in hits]
        finally:
            store.close()

    expected = answers()
    sealed = rt.backend.sealed()
    edit(
        rt,
        {
            "docs/dimissioni.md": DIMISSIONI + "\nUna modifica che non deve arrivare.\n",
            "docs/rotto.pdf": b"%PDF-1.4\nnot really a pdf\n",
        },
    )
    (rt.ws.root / "docs" / "ricoveri.md").unlink()
    commit_all(rt.ws.root, "a corrupt pdf among good files")
    with pytest.raises(ProblemsError, match=r"rotto\.pdf"):
        sync(rt)
    assert active_id(rt) == first.generation
    assert points(rt) == before  # nothing deleted, nothing updated
    assert answers() == expected
    assert rt.backend.sealed() == sealed  # the failed candidate left no data behind
    [run, _] = rt.state.list_sync_runs(rt.ws.settings.workspace)
    assert run.status == "failed" and "rotto.pdf" in run.message
    assert f"generation {first.generation} is unchanged" in run.message


def test_a_secret_in_a_page_or_a_document_is_refused_and_nothing_is_indexed(
    rt: Runtime,
) -> None:
    first = sync(rt)
    before = points(rt)
    sealed = rt.backend.sealed()
    wiki = page() + "\nPer il collaudo: La password del database è Segreta2024!\n"
    wiki_line = wiki.split("\n").index("Per il collaudo: La password del database è Segreta2024!")
    pdf = build_pdf(
        [
            text_lines(["Manuale del DWH, pagina uno."]),
            text_lines(["Accesso tecnico:", "export PGPASSWORD=Dwh#Prod_77"]),
        ]
    )
    edit(
        rt,
        {
            "wiki/ricoveri.md": wiki,
            "docs/dimissioni.md": DIMISSIONI
            + "\n| Utente | Password |\n|---|---|\n| etl | Pr0d-2024 |\n",
            "docs/manuale.pdf": pdf,
        },
    )
    with pytest.raises(SyncError) as info:
        sync(rt)
    error = info.value
    assert error.code == "credential"
    found = sorted((p.where, p.code, p.message) for p in error.problems)
    assert [(where, code) for where, code, _ in found] == [
        ("documenti:docs/dimissioni.md", "credential"),
        ("documenti:docs/manuale.pdf", "credential"),
        ("wiki:wiki/ricoveri.md", "credential"),
    ]
    messages = {where: message for where, _, message in found}
    assert "password in a table cell" in messages["documenti:docs/dimissioni.md"]
    assert f"line {DIMISSIONI.count(chr(10)) + 4}" in messages["documenti:docs/dimissioni.md"]
    assert "page 2" in messages["documenti:docs/manuale.pdf"]
    assert f"on line {wiki_line + 1}" in messages["wiki:wiki/ricoveri.md"]
    for problem in error.problems:
        assert problem.hint and "remove" in problem.hint
        for secret in ("Segreta2024", "Dwh#Prod_77", "Pr0d-2024"):
            assert secret not in problem.render()
    # Nothing indexed: the active generation serves exactly what it served before.
    assert active_id(rt) == first.generation
    assert points(rt) == before
    assert rt.backend.sealed() == sealed
    [run, _] = rt.state.list_sync_runs(rt.ws.settings.workspace)
    assert run.status == "failed" and "Segreta2024" not in run.message


def test_overlapping_sync_is_refused_by_the_database(rt: Runtime) -> None:
    name = rt.ws.settings.workspace
    running = rt.state.start_sync_run(name, "alice", False, host=HOST, pid=os.getpid())
    with pytest.raises(SyncRunConflict, match=f"run {running}, started by alice on {HOST}") as info:
        sync(rt)
    assert isinstance(info.value.__cause__, IntegrityError)  # the constraint, not Python
    assert info.value.exit_code == exitcodes.PRECONDITION
    assert [r.id for r in rt.state.list_sync_runs(name)] == [running]
    assert rt.state.active_generation(name) is None


def test_a_run_whose_process_died_does_not_lock_forever(rt: Runtime) -> None:
    name = rt.ws.settings.workspace
    pid = _dead_pid()
    crashed = rt.state.start_sync_run(name, "bob", False, host=HOST, pid=pid)
    report = sync(rt)
    assert report.outcome == "activated"
    run = rt.state.get_sync_run(crashed)
    assert run is not None and run.status == "interrupted" and f"process {pid}" in run.message


def test_an_interrupted_run_is_recorded_as_such(rt: Runtime) -> None:
    def stop(phase: str, done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sync(rt, progress=stop)
    [run] = rt.state.list_sync_runs(rt.ws.settings.workspace)
    assert run.status == "interrupted" and run.message.startswith("KeyboardInterrupt")
    assert rt.state.active_generation(rt.ws.settings.workspace) is None
    assert sync(rt).outcome == "activated"  # the lock was released


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_an_activation_in_between_is_not_overwritten(rt: Runtime) -> None:
    name = rt.ws.settings.workspace
    first = sync(rt)
    edit(rt, {"docs/dimissioni.md": DIMISSIONI + "\nAltro.\n"})
    interloper: list[str] = []

    def activate_another(phase: str, done: int, total: int) -> None:
        # An Evidence publish that started from the same generation finishes first.
        if phase == "embed" and not interloper:
            gen = rt.state.create_generation(name, "rev", {"dim": 8})
            store = rt.backend.create(gen, 8)
            rt.backend.seal(gen, store)
            rt.state.mark_generation(gen, "candidate")
            rt.state.activate_generation(name, gen, expected_previous=first.generation)
            interloper.append(gen)

    syncer = DocsSync(rt.ws, rt.state, rt.backend, rt.embedder, activate_another)
    with pytest.raises(StateError, match=r"another build .* finished first"):
        syncer.run()
    assert active_id(rt) == interloper[0]
    report = syncer.report
    assert report is not None and report.generation is None  # abandoned: not the run's own
    abandoned = report.abandoned_generation
    assert abandoned is not None and abandoned != interloper[0]
    [run, _] = rt.state.list_sync_runs(name)
    assert run.status == "failed" and run.generation is None
    assert f"the build of generation {abandoned} was abandoned" in run.message
    failed = rt.state.get_generation(abandoned)
    assert failed is not None and failed.status == "failed"
    assert abandoned not in rt.backend.sealed()


# ---------------------------------------------------------------------- other kinds


def test_evidence_is_carried_forward_and_stays_searchable(
    make_workspace: Callable[..., Workspace], fake: FakeEmbeddingServer
) -> None:
    ws = prepared_workspace(make_workspace, fake.url)
    configure(ws.root, fake.url)
    write(ws.root, FILES)
    commit_all(ws.root, "declared sources")
    rt = open_runtime(Workspace.open(ws.root))
    try:
        activate_head(rt)
        published = publish(rt)
        assert published.outcome == "activated"
        evidence = {i: r for i, r in points(rt).items() if r.payload["record_kind"] == "evidence"}
        assert evidence
        report = sync(rt)
        assert report.counts["records_other_kinds"] == len(evidence)
        gen = rt.state.get_generation(report.generation or "")
        assert gen is not None and gen.revision == published.revision
        after = {i: r for i, r in points(rt).items() if r.payload["record_kind"] == "evidence"}
        assert sorted(after) == sorted(evidence)
        for point_id, rec in after.items():
            old = evidence[point_id]
            assert (rec.dense, rec.sparse) == (old.dense, old.sparse)
            assert {**rec.payload, "vector_generation": "x"} == {
                **old.payload,
                "vector_generation": "x",
            }
            assert rec.payload["vector_generation"] == gen.id
        search = EvidenceSearch(ws.settings.workspace, ws.root, rt.state, rt.backend, rt.embedder)
        try:
            outcome = search.search("ricovero con pernottamento", "disambiguation")
        finally:
            search.close()
        assert outcome.available and outcome.generation == gen.id
        assert "evidence:ricovero" in [r.evidence_id for r in outcome.results]
        # And an Evidence publish afterwards carries the documents forward in turn.
        again = publish(rt)
        assert (
            again.outcome == "activated"
            and again.carried_forward == report.counts["fragments_total"]
        )
    finally:
        rt.close()


def evidence_answers(labels: str, channel: str) -> str:
    return f'\n[answers]\nevidence_labels = {labels}\nevidence_channel = "{channel}"\n'


def evidence_and_documents(
    make_workspace: Callable[..., Workspace], url: str, answers: str
) -> Runtime:
    """Published Evidence (labels and channel from `answers`) and declared sources."""
    ws = prepared_workspace(make_workspace, url)
    configure(ws.root, url, extra=answers)
    write(ws.root, FILES)
    commit_all(ws.root, "declared sources")
    rt = open_runtime(Workspace.open(ws.root))
    activate_head(rt)
    published = publish(rt)
    assert published.outcome == "activated", published.message
    return rt


def evidence_points(rt: Runtime) -> dict[str, IndexRecord]:
    return {i: r for i, r in points(rt).items() if r.payload["record_kind"] == "evidence"}


def test_evidence_relabelled_in_thoth_toml_is_restamped_by_a_sync(
    make_workspace: Callable[..., Workspace], fake: FakeEmbeddingServer
) -> None:
    rt = evidence_and_documents(
        make_workspace, fake.url, evidence_answers('["internal"]', "clinica")
    )
    try:
        name = rt.ws.settings.workspace
        published = rt.state.active_generation(name)
        assert published is not None and published.counts["labels"] == ["internal"]
        first = sync(rt)
        gen = rt.state.get_generation(first.generation or "")
        assert gen is not None and gen.counts["labels"] == ["internal", "public"]
        before = evidence_points(rt)
        assert {(tuple(r.payload["labels"]), r.payload["channel"]) for r in before.values()} == {
            (("internal",), "clinica")
        }
        units = sorted({r.payload["evidence_id"] for r in before.values()})
        configure(
            rt.ws.root, fake.url, extra=evidence_answers('["confidential"]', "amministrazione")
        )
        commit_all(rt.ws.root, "Evidence is confidential now")
        rt = reopen(rt)
        report = sync(rt)
        # Only the payloads change, but it is a change: a new generation, every unit by name.
        assert report.outcome == "activated" and report.generation != first.generation
        assert report.labels_changed == [
            {
                "doc_id": unit,
                "old": ["internal"],
                "new": ["confidential"],
                "old_channel": "clinica",
                "new_channel": "amministrazione",
            }
            for unit in units
        ]
        assert report.counts["fragments_built"] == 0 and report.counts["unchanged"] == 3
        after = evidence_points(rt)
        assert sorted(after) == sorted(before)
        for point_id, rec in after.items():
            old = before[point_id]
            assert (rec.dense, rec.sparse) == (old.dense, old.sparse)
            assert rec.payload == {
                **old.payload,
                "labels": ["confidential"],
                "channel": "amministrazione",
                "vector_generation": report.generation,
            }
        gen = rt.state.get_generation(report.generation or "")
        assert gen is not None and gen.counts["labels"] == ["confidential", "internal", "public"]
        assert sync(rt).outcome == "unchanged"  # restamped once
        # A publication afterwards stamps the same and records the carried labels too.
        again = publish(rt)
        gen = rt.state.get_generation(again.generation or "")
        assert gen is not None and gen.counts["labels"] == ["confidential", "internal", "public"]
    finally:
        rt.close()


def test_embedder_of_another_dimension_is_refused(rt: Runtime) -> None:
    sync(rt)
    with FakeEmbeddingServer(dim=16) as other:
        write_config(rt.ws.root, other.url, extra=CHANNELS + sources_config())
        (rt.ws.root / "thoth.toml").write_text(
            (rt.ws.root / "thoth.toml").read_text().replace("dim = 8", "dim = 16")
        )
        commit_all(rt.ws.root, "another model")
        rt2 = reopen(rt)
        try:
            with pytest.raises(SyncError, match="`--full` is not enough"):
                sync(rt2, full=True)
        finally:
            rt2.close()


# ---------------------------------------------------------------------- run registry


def test_the_run_registry_records_revisions_counts_and_names(rt: Runtime) -> None:
    report = sync(rt, run_by="tester")
    run = rt.state.get_sync_run(report.run_id)
    assert run is not None and run.status == "succeeded" and run.finished_at is not None
    assert run.run_by == "tester" and run.host == HOST and run.pid == os.getpid()
    assert run.revisions == report.revisions and run.generation == report.generation
    assert run.full is False and run.pipeline_version == records.PIPELINE_VERSION
    assert {k: run.counts[k] for k in report.counts} == report.counts
    assert run.changes["created"] == DOC_IDS
    assert run.changes["not_knowledge"] == report.not_knowledge
    assert run.message == f"generation {report.generation} is active"


def test_run_by_defaults_to_the_git_user(rt: Runtime) -> None:
    git(rt.ws.root, "config", "user.name", "Ada Lovelace")
    report = sync(rt)
    assert report.run_by == "Ada Lovelace"


# ---------------------------------------------------------------------- CLI

runner = CliRunner()


def tht(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_cli_docs_sync_and_runs(tmp_path: Path, fake: FakeEmbeddingServer) -> None:
    ws = docs_workspace(tmp_path / "ws", fake.url)
    root = str(ws.root)
    code, data = tht("docs", "sync", "-w", root)
    assert code == exitcodes.OK and data["ok"] is True and data["outcome"] == "activated"
    assert data["created"] == DOC_IDS and data["counts"]["fragments_total"] > 0
    code, data = tht("docs", "sync", "--full", "-w", root)
    assert code == exitcodes.OK and data["full"] is True and data["counts"]["stale_fragments"] == 0

    with StateStore.open(f"sqlite:///{ws.root / '.thoth' / 'state.sqlite'}") as state:
        # A run on a machine that no longer exists: only an operator can close it.
        held = state.start_sync_run(
            ws.settings.workspace, "alice", False, host="gone-host", pid=os.getpid()
        )
    code, data = tht("docs", "sync", "-w", root)
    assert code == exitcodes.PRECONDITION and data["ok"] is False
    assert f"run {held}" in data["error"] and data["run_id"] is None

    code, data = tht("docs", "runs", "--interrupt", str(held), "-w", root)
    assert code == exitcodes.OK
    assert [r["status"] for r in data["runs"]] == ["interrupted", "succeeded", "succeeded"]
    code, data = tht("docs", "sync", "-w", root)
    assert code == exitcodes.OK and data["outcome"] == "unchanged"

    write(ws.root, {"docs/rotto.pdf": b"%PDF-1.4\nbroken\n"})
    commit_all(ws.root, "corrupt")
    code, data = tht("docs", "sync", "-w", root)
    assert code == exitcodes.FAILED and data["ok"] is False and data["run_id"] is not None
    assert "rotto.pdf" in data["error"] + json.dumps(data.get("problems"))
    failed_run = data["run_id"]
    code, data = tht("docs", "runs", "--limit", "1", "-w", root)
    assert [(r["id"], r["status"]) for r in data["runs"]] == [(failed_run, "failed")]

    result = runner.invoke(app, ["docs", "runs", "-w", root])
    assert result.exit_code == 0 and "sync runs of" in result.stdout


def test_cli_readable_report_lists_changes_by_name(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    ws = docs_workspace(tmp_path / "ws", fake.url)
    result = runner.invoke(app, ["docs", "sync", "-w", str(ws.root)])
    assert result.exit_code == 0, result.output
    for name in DOC_IDS:
        assert name in result.stdout
    write(ws.root, {"wiki/ricoveri.md": page(labels="[internal]")})
    commit_all(ws.root, "labels")
    result = runner.invoke(app, ["docs", "sync", "-w", str(ws.root)])
    assert "labels changed" in result.stdout and "wiki:wiki/ricoveri.md" in result.stdout
    assert "[public] -> [internal]" in result.stdout


def test_readable_report_names_a_channel_change_with_the_labels() -> None:
    change = {"doc_id": "evidence:ricovero", "old": ["internal"], "new": ["confidential"]}
    report = SyncReport(
        run_id=1,
        workspace=WS,
        full=False,
        run_by="tests",
        labels_changed=[
            {**change, "old_channel": "clinica", "new_channel": "amministrazione"},
            {**change, "doc_id": "documenti:docs/a.md"},
        ],
    )
    console = Console(record=True, width=200)
    render_sync(console, report)
    text = console.export_text()
    assert (
        "evidence:ricovero: [internal] -> [confidential] (channel clinica -> amministrazione)"
        in text
    )
    assert "documenti:docs/a.md: [internal] -> [confidential]\n" in text


def _one_line(text: str) -> str:
    return " ".join(text.split())  # Rich wraps stderr at the terminal width


def test_cli_failure_says_which_generation_serves(
    tmp_path: Path, fake: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = docs_workspace(tmp_path / "ws", fake.url)
    root = str(ws.root)
    code, data = tht("docs", "sync", "-w", root)
    assert code == exitcodes.OK
    active = data["generation"]
    # A failure before activation: the active generation serves, untouched.
    write(ws.root, {"docs/rotto.pdf": b"%PDF-1.4\nbroken\n"})
    commit_all(ws.root, "corrupt")
    result = runner.invoke(app, ["docs", "sync", "-w", root])
    assert result.exit_code == exitcodes.FAILED
    said = _one_line(result.stderr)
    assert "rotto.pdf" in said and "is recorded as failed" in said
    assert f"nothing was activated: the active generation {active} is unchanged" in said
    # A failure after activation (retention): the new generation serves, and the CLI says so.
    (ws.root / "docs" / "rotto.pdf").unlink()
    write(ws.root, {"docs/dimissioni.md": DIMISSIONI + "\nAltro.\n"})
    commit_all(ws.root, "fixed")

    def retention_fails(*_args: Any, **_kwargs: Any) -> list[str]:
        raise StateError("retention: cannot list the generations -> retry")

    monkeypatch.setattr(build_module, "retain_generations", retention_fails)
    code, data = tht("docs", "sync", "-w", root)
    assert code == exitcodes.FAILED and data["run_recorded"] is True
    activated = data["generation"]
    assert activated not in (None, active)
    assert data["serving"] == (
        f"generation {activated} was activated before the error and is serving"
    )
    with StateStore.open(f"sqlite:///{ws.root / '.thoth' / 'state.sqlite'}") as state:
        current = state.active_generation(ws.settings.workspace)
        assert current is not None and current.id == activated
        [run] = state.list_sync_runs(ws.settings.workspace, limit=1)
        assert run.status == "failed" and run.generation == activated


def test_cli_interrupt_refuses_a_run_whose_process_is_alive(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    ws = docs_workspace(tmp_path / "ws", fake.url)
    root = str(ws.root)
    with StateStore.open(f"sqlite:///{ws.root / '.thoth' / 'state.sqlite'}") as state:
        alive = state.start_sync_run(ws.settings.workspace, "alice", False, HOST, os.getpid())
    code, data = tht("docs", "runs", "--interrupt", str(alive), "-w", root)
    assert code == exitcodes.PRECONDITION
    assert f"sync run {alive} is still running" in data["error"]
    assert f"pid {os.getpid()}" in data["error"] and "wait for it to finish" in data["error"]
    with StateStore.open(f"sqlite:///{ws.root / '.thoth' / 'state.sqlite'}") as state:
        run = state.get_sync_run(alive)
        assert run is not None and run.status == "running"
        state.finish_sync_run(alive, "succeeded", {}, None, {}, {}, "")
        # Its process gone on this host: closing it by hand is allowed.
        dead = state.start_sync_run(ws.settings.workspace, "bob", False, HOST, _dead_pid())
    code, data = tht("docs", "runs", "--interrupt", str(dead), "-w", root)
    assert code == exitcodes.OK
    assert (data["runs"][0]["id"], data["runs"][0]["status"]) == (dead, "interrupted")


# ---------------------------------------------------------------------- state store


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state' / 'state.sqlite'}"
    found: str = request.getfixturevalue("pg_url")
    return found


def test_second_running_sync_is_refused_by_the_constraint(db_url: str) -> None:
    with StateStore.open(db_url) as one, StateStore.open(db_url) as two:
        first = one.start_sync_run(WS, "alice", False, host="h1", pid=os.getpid())
        with pytest.raises(SyncRunConflict, match=f"run {first}, started by alice on h1") as info:
            two.start_sync_run(WS, "bob", True, host="h2", pid=os.getpid())
        assert isinstance(info.value.__cause__, IntegrityError)
        assert "ux_sync_runs_one_running" in str(info.value.__cause__) or "UNIQUE" in str(
            info.value.__cause__
        )
        other = two.start_sync_run("other-ws", "bob", False, host="h2", pid=os.getpid())
        one.finish_sync_run(first, "succeeded", {"src": "abc"}, None, {"n": 1}, {}, "done")
        again = two.start_sync_run(WS, "bob", True, host="h2", pid=os.getpid())
        assert [r.id for r in one.list_sync_runs(WS)] == [again, first]
        assert one.get_sync_run(other) is not None


def test_simultaneous_starts_let_exactly_one_run(db_url: str) -> None:
    stores = [StateStore.open(db_url) for _ in range(4)]
    barrier = threading.Barrier(len(stores))

    def start(store: StateStore) -> int | str:
        barrier.wait()
        try:
            return store.start_sync_run(WS, "racer", False, host="h", pid=os.getpid())
        except SyncRunConflict as exc:
            return str(exc)

    try:
        with ThreadPoolExecutor(len(stores)) as pool:
            results = list(pool.map(start, stores))
    finally:
        for store in stores:
            store.close()
    started = [r for r in results if isinstance(r, int)]
    assert len(started) == 1
    assert all(f"run {started[0]}," in r for r in results if isinstance(r, str))


def test_inserting_a_second_running_row_directly_fails(db_url: str) -> None:
    with StateStore.open(db_url):
        pass  # creates the tables
    engine = create_engine(db_url)
    row = {
        "workspace": WS,
        "status": "running",
        "started_at": "2024-05-01T09:30:00.000000+00:00",
        "run_by": "sql",
        "host": "h",
        "pid": 1,
        "full_rebuild": False,
        "pipeline_version": 1,
        "revisions": "{}",
        "counts": "{}",
        "changes": "{}",
        "message": "",
    }
    try:
        with engine.begin() as conn:
            conn.execute(insert(sync_runs).values(**row))
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(insert(sync_runs).values(**{**row, "run_by": "sql2"}))
        with engine.begin() as conn:  # finished runs do not count
            conn.execute(
                insert(sync_runs).values(
                    **{**row, "status": "failed", "finished_at": row["started_at"]}
                )
            )
    finally:
        engine.dispose()


def test_dead_process_runs_are_interrupted_only_on_their_own_host(db_url: str) -> None:
    with StateStore.open(db_url) as store:
        pid = _dead_pid()
        remote = store.start_sync_run(WS, "carol", False, host="elsewhere", pid=pid)
        with pytest.raises(SyncRunConflict):
            store.start_sync_run(WS, "dave", False, host=HOST, pid=os.getpid())
        store.finish_sync_run(remote, "interrupted", {}, None, {}, {}, "closed by hand")
        local = store.start_sync_run(WS, "carol", False, host=HOST, pid=pid)
        fresh = store.start_sync_run(WS, "dave", False, host=HOST, pid=os.getpid())
        run = store.get_sync_run(local)
        assert run is not None and run.status == "interrupted" and run.finished_at is not None
        assert f"process {pid} on {HOST}" in run.message
        assert store.get_sync_run(fresh) is not None


def test_finish_sync_run_once_with_its_documents(db_url: str) -> None:
    with StateStore.open(db_url) as store:
        run_id = store.start_sync_run(WS, "alice", True, host="h", pid=1, pipeline_version=3)
        changes = {
            "created": ["a:b.md"],
            "labels_changed": [{"doc_id": "a:b.md", "old": [], "new": ["x"]}],
        }
        store.finish_sync_run(
            run_id, "succeeded", {"a": "c0ffee"}, "gen-1", {"created": 1}, changes, "ok"
        )
        run = store.get_sync_run(run_id)
        assert run is not None and run.full and run.pipeline_version == 3
        assert run.revisions == {"a": "c0ffee"} and run.changes == changes
        assert run.generation == "gen-1" and run.counts == {"created": 1}
        with pytest.raises(StateError, match="already finished"):
            store.finish_sync_run(run_id, "failed", {}, None, {}, {}, "again")
        with pytest.raises(StateError, match="cannot finish run"):
            store.finish_sync_run(run_id, "running", {}, None, {}, {}, "")
        with pytest.raises(StateError, match="not found"):
            store.finish_sync_run(9999, "failed", {}, None, {}, {}, "")
        assert store.get_sync_run(9999) is None


def test_activation_compare_and_swap(db_url: str) -> None:
    with StateStore.open(db_url) as store:

        def candidate() -> str:
            gen = store.create_generation(WS, "rev", {"dim": 8})
            store.mark_generation(gen, "candidate")
            return gen

        first, second, third = candidate(), candidate(), candidate()
        with pytest.raises(StateError, match="built from gen-x"):
            store.activate_generation(WS, first, expected_previous="gen-x")
        assert store.active_generation(WS) is None
        assert store.activate_generation(WS, first, expected_previous=None) is None
        assert store.activate_generation(WS, second, expected_previous=first) == first
        with pytest.raises(StateError, match=f"{second} is active now"):
            store.activate_generation(WS, third, expected_previous=first)
        active = store.active_generation(WS)
        assert active is not None and active.id == second
        third_gen = store.get_generation(third)
        assert third_gen is not None and third_gen.status == "candidate"
        assert store.activate_generation(WS, third) == second  # no expectation: as before


def test_evidence_search_is_unavailable_after_a_docs_sync_when_evidence_was_never_published(
    tmp_path: Path, fake: FakeEmbeddingServer
) -> None:
    """A generation built by docs sync holds documents only: for an activated revision whose
    Evidence was never published and gated, Evidence search must say so, never answer
    `available` with nothing in it."""
    ws = docs_workspace(tmp_path / "ws", fake.url)
    root = str(ws.root)
    code, data = tht("workspace", "activate", root)
    assert code == exitcodes.OK, data
    code, data = tht("docs", "sync", "-w", root)
    assert code == exitcodes.OK and data["outcome"] == "activated"
    code, data = tht("evidence", "search", "ricovero", "--purpose", "disambiguation", "-w", root)
    assert code == exitcodes.FAILED
    assert (data["status"], data["code"]) == ("unavailable", "evidence_not_published")
    assert "tht workspace preprocess evidence" in data["message"]
    assert data["results"] == []


# ---------------------------------------------------------------------- dry run


def test_a_dry_run_says_what_would_be_built_and_changes_nothing(rt: Runtime) -> None:
    """`tht docs sync --dry-run`: before the first sync every admitted file is to build, with
    no estimate; after one, an edit and a new file are to build, the rest carried, and the
    estimate rests on the last run; neither dry run records a run or builds a generation."""
    ws = rt.ws.settings.workspace
    first = DocsSync(rt.ws, rt.state, rt.backend, rt.embedder).plan()
    assert first.files == {"documenti": 3, "wiki": 1}
    assert first.to_build == DOC_IDS and first.unchanged == 0 and first.not_knowledge == 1
    assert first.estimate_s is None and "no earlier run" in first.estimate_basis
    assert rt.state.list_sync_runs(ws) == [] and rt.state.active_generation(ws) is None

    report = sync(rt)
    edit(
        rt,
        {
            "docs/dimissioni.md": DIMISSIONI + "\nNuovo paragrafo.\n",
            "docs/nuovo.md": "# N\n\nTesto nuovo.\n",
        },
    )
    result = CliRunner().invoke(app, ["docs", "sync", "--dry-run", "-w", str(rt.ws.root), "--json"])
    assert result.exit_code == exitcodes.OK, result.output
    plan = json.loads(result.stdout)
    assert plan["to_build"] == ["documenti:docs/dimissioni.md", "documenti:docs/nuovo.md"]
    assert plan["unchanged"] == 2 and plan["to_delete"] == []
    assert plan["estimate_s"] is not None and f"run {report.run_id}" in plan["estimate_basis"]
    assert len(rt.state.list_sync_runs(ws)) == 1  # the real run only
    assert active_id(rt) == report.generation
