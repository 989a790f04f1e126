"""Helpers for answer-engine tests: a deterministic bag-of-stems embedder and real knowledge
generations (Qdrant Edge shards under a tmp dir, a SQLite state store) built from fragments.

`StemEmbedder` is a real Embedder, not a mock: texts sharing stems are close, texts sharing
none are nearly orthogonal — enough to make routing and ranking predictable. It counts calls.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thoth.config import AnswersSettings, ChannelSettings, Settings, SourceSettings
from thoth.documents.records import FILTER_FIELDS, KnowledgeFragment, fragment_point_id
from thoth.embed.base import Embedder, Vectors, finish_vectors
from thoth.index.base import IndexRecord
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.index.generations import EdgeBackend
from thoth.index.records import RECORD_EVIDENCE, EvidencePayload, point_id
from thoth.state import StateStore

WORKSPACE = "ws"
DIM = 256


class StemEmbedder:
    """One dimension per hashed BM25 stem (stopwords dropped), plus a small constant so no
    vector is all zeros."""

    def __init__(self, dim: int = DIM) -> None:
        self._dim = dim
        self._stems = Bm25Encoder("it", 1.0)
        self.query_texts: list[str] = []
        self.passage_calls = 0

    @property
    def identity(self) -> str:
        return f"stem-test:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self._dim
        vec[0] = 0.05
        for token in self._stems.query(text).indices:
            digest = hashlib.sha256(str(token).encode()).digest()
            vec[1 + int.from_bytes(digest[:4], "little") % (self._dim - 1)] += 1.0
        return vec

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.passage_calls += 1
        rows = [self._vector(t) for t in texts]
        return finish_vectors(rows, count=len(texts), dim=self._dim, who=self.identity)

    def embed_query(self, text: str) -> Vectors:
        self.query_texts.append(text)
        return finish_vectors([self._vector(text)], count=1, dim=self._dim, who=self.identity)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        self.query_texts.extend(texts)
        rows = [self._vector(t) for t in texts]
        return finish_vectors(rows, count=len(texts), dim=self._dim, who=self.identity)


CHANNELS = [
    ChannelSettings(
        name="clinica",
        examples=[
            "come si registra un ricovero in reparto",
            "quali sono i codici di dimissione del paziente",
        ],
        keywords=["ricovero", "dimissione", "paziente"],
    ),
    ChannelSettings(
        name="amministrazione",
        examples=[
            "come si emette una fattura al fornitore",
            "quando scade il pagamento della fattura",
        ],
        keywords=["fattura", "fornitore", "pagamento"],
    ),
    ChannelSettings(
        name="personale",
        examples=["come si richiedono le ferie", "quante ore di straordinario sono ammesse"],
        keywords=["ferie", "straordinario", "turno"],
    ),
]

SOURCES = [
    SourceSettings(name="manuali", include=["*.md"], channel="clinica", labels=["public"]),
    SourceSettings(
        name="contabilita", include=["*.pdf"], channel="amministrazione", labels=["internal"]
    ),
    SourceSettings(name="wiki", kind="wiki", include=["*.md"], channel="clinica"),
]


def settings(**answers: Any) -> Settings:
    return Settings(
        workspace=WORKSPACE,
        channels=CHANNELS,
        sources=SOURCES,
        answers=AnswersSettings(**answers),
    )


@dataclass
class Doc:
    """A fragment to index; `kind="evidence"` writes an Evidence-like curated point."""

    text: str
    source: str = "manuali"
    channel: str = "clinica"
    labels: tuple[str, ...] = ("public",)
    kind: str = "document"
    year: int | None = None
    doc_format: str = "md"
    path: str = ""


def point(n: int, doc: Doc) -> tuple[str, dict[str, Any], str]:
    """(point id, payload, embedded text) of the n-th doc."""
    path = doc.path or f"doc{n}.{doc.doc_format}"
    frag = KnowledgeFragment(
        record_kind="wiki" if doc.kind == "wiki" else "document",
        doc_id=f"{doc.source}:{path}",
        source=doc.source,
        path=path,
        title=f"Title {n}",
        channel=doc.channel,
        labels=doc.labels,
        ordinal=0,
        text=doc.text,
        doc_format=doc.doc_format,
        year=doc.year,
    )
    if doc.kind != "evidence":
        return fragment_point_id(frag.doc_id, 0), frag.payload(WORKSPACE, ""), doc.text
    unit = f"ev-{n}"
    evidence = EvidencePayload(
        workspace_id=WORKSPACE,
        vector_generation="",
        workspace_revision="r1",
        evidence_id=unit,
        evidence_kind="definition",
        purposes=("general",),
        language="it",
        source_file=f"{unit}.md",
        source_sha256="0" * 64,
        fragment_ordinal=0,
        unit_path=f"curated/{unit}.md",
        doc_id=unit,
        title=f"Title {n}",
        text=doc.text,
        channel=doc.channel,
        labels=doc.labels,
    )
    return point_id(RECORD_EVIDENCE, unit, 0), evidence.to_payload(), doc.text


@dataclass
class Env:
    root: Path
    state: StateStore
    backend: EdgeBackend
    embedder: Embedder
    generation: str


def open_state(root: Path) -> StateStore:
    return StateStore.open(f"sqlite:///{root / 'state.sqlite'}")


def build(
    root: Path, docs: Sequence[Doc], embedder: Embedder, *, record_labels: bool = True
) -> Env:
    """A sealed, active generation holding `docs`, as `tht docs sync` would leave it: its
    counts record `labels`, every label present in it (`record_labels=False`: a generation
    built before that key existed). Building again under the same root activates a second
    generation."""
    state = open_state(root)
    backend = EdgeBackend(root / "index")
    items = [point(n, doc) for n, doc in enumerate(docs)]
    texts = [text for _, _, text in items]
    bm25 = Bm25Encoder("it", average_length(texts))
    config = {"embedder": embedder.identity, "dim": embedder.dim, "bm25": bm25.config()}
    gen_id = state.create_generation(WORKSPACE, "r1", config)
    store = backend.create(gen_id, embedder.dim)
    vectors = embedder.embed_passages(texts)
    records = []
    for (pid, payload, text), vec in zip(items, vectors, strict=True):
        payload["vector_generation"] = gen_id
        records.append(
            IndexRecord(pid, [float(x) for x in vec], bm25.document(text), payload=payload)
        )
    store.upsert(records)
    store.create_payload_indexes(("workspace_id", *FILTER_FIELDS))
    backend.seal(gen_id, store)
    counts = {"labels": sorted({label for doc in docs for label in doc.labels})}
    state.mark_generation(gen_id, "candidate", counts if record_labels else None)
    state.activate_generation(WORKSPACE, gen_id)
    return Env(root, state, backend, embedder, gen_id)


def synced_pages(
    root: Path, language: str, answers: str, config: str, pages: Sequence[tuple[str, str]]
) -> Path:
    """A real workspace at `root` in `language`: `answers` lines added under [answers],
    `config` (channels and sources) appended, each (name, text) page written to docs/NAME.md,
    committed and synced by `DocsSync` with the bundled embedder, as `tht docs sync` does."""
    from tests.conftest import git
    from thoth.evidence.layout import init_workspace
    from thoth.knowledge.sync import DocsSync
    from thoth.runtime import open_runtime
    from thoth.workspace import Workspace

    init_workspace(root, root.parent.name, language=language)
    toml = root / "thoth.toml"
    text = toml.read_text(encoding="utf-8")
    assert "[answers]\n" in text
    toml.write_text(text.replace("[answers]\n", f"[answers]\n{answers}", 1) + config, "utf-8")
    (root / "docs").mkdir()
    for name, page in pages:
        (root / "docs" / f"{name}.md").write_text(page, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    identity = ["-c", "user.name=Thoth Tests", "-c", "user.email=tests@thoth.invalid"]
    git(root, *identity, "commit", "-q", "-m", "pages")
    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="test")
    assert report.outcome == "activated", report.message
    return root
