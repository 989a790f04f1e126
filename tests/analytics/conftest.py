"""An analytics workspace: a Git repository with thoth.toml ([analytics] over the small SQLite
store of tests/analytics/store.py), a reviewed catalog of three queries, a glossary unit, one
document for the text path, a published generation and an activated revision. Embeddings are
the deterministic stem embedder of tests/knowledge_index.py (similarity = shared stems), so
routing scores can be reasoned about."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.analytics.store import build_store
from tests.conftest import commit_all, git
from tests.knowledge_index import StemEmbedder
from thoth.answer.service import AnswerService
from thoth.documents.records import FILTER_FIELDS, KnowledgeFragment, fragment_point_id
from thoth.index.base import IndexRecord
from thoth.index.bm25 import Bm25Encoder, average_length
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

PER_WARD = """\
id: ricoveri-per-reparto
description: Numero di ricoveri dimessi in un anno, per reparto e regime
examples:
  - Quanti ricoveri ordinari ha dimesso ogni reparto nel 2024?
  - Ricoveri per reparto nel 2023
parameters:
  anno: {type: year, description: Anno di dimissione, min: 2000, max: 2030}
  regime: {type: enum, description: Regime di ricovero, values: [ordinario, day hospital], default: ordinario, synonyms: {day hospital: [diurno]}}
measure: [count, maximum, minimum]
sql: |
  SELECT reparto, count(*) AS ricoveri
  FROM analytics.v_ricoveri
  WHERE anno = :anno AND regime = :regime
  GROUP BY reparto ORDER BY ricoveri DESC, reparto
result:
  shape: table
  columns:
    reparto: {label: Reparto, kind: category}
    ricoveri: {label: Ricoveri, unit: ricoveri, kind: quantity}
"""

ONE_WARD = """\
id: ricoveri-reparto
description: Numero di ricoveri di un singolo reparto in un anno
examples:
  - Quanti ricoveri ha avuto la Pediatria nel 2024?
  - Numero di ricoveri della Cardiologia nel 2023
parameters:
  reparto: {type: enum, description: Reparto, values_from: analytics.v_reparti.reparto}
  anno: {type: year, description: Anno di dimissione}
  regime: {type: enum, description: Regime, values: [ordinario, day hospital], default: ordinario}
measure: count
sql: |
  SELECT count(*) AS ricoveri FROM analytics.v_ricoveri
  WHERE reparto = :reparto AND anno = :anno AND regime = :regime
result:
  shape: value
  columns:
    ricoveri: {label: Ricoveri, unit: ricoveri, kind: quantity}
"""

STAY = """\
id: degenza-media
description: Degenza media in giorni dei ricoveri di un anno
examples:
  - Qual è la degenza media dei ricoveri nel 2024?
  - Quanti giorni dura in media una degenza nel 2023?
parameters:
  anno: {type: year, description: Anno di dimissione}
  soglia: {type: integer, description: Giorni minimi di degenza, default: 0, min: 0, max: 365}
measure: average
sql: |
  SELECT round(avg(giorni), 2) AS giorni FROM analytics.v_ricoveri
  WHERE anno = :anno AND giorni > :soglia
result:
  shape: value
  columns:
    giorni: {label: Degenza media, unit: giorni, kind: quantity}
"""

CATALOG = {
    "analytics/queries/ricoveri-per-reparto.yaml": PER_WARD,
    "analytics/queries/ricoveri-reparto.yaml": ONE_WARD,
    "analytics/queries/degenza-media.yaml": STAY,
}

GLOSSARY_UNIT = """\
---
schema_version: 1
id: evidence:glossario-day-hospital
title: Day hospital
kind: glossary
purposes: [disambiguation]
applies_to: {concepts: [], tables: [], columns: []}
language: it
provenance:
  source_file: source/glossario.md
  source_sha256: "sha256:{sha}"
  supporting_excerpts: ["Day hospital: ricovero diurno, detto DH"]
caveats: []
review_items: []
glossary:
  term: day hospital
  definition: Ricovero diurno senza pernottamento
  synonyms: [DH]
---

# Day hospital
"""

WAIT_QUESTION = "Qual è il numero di minuti di attesa massima per un codice verde?"
WAIT_DOC = (
    "Tempi di attesa in pronto soccorso: il codice verde deve essere visitato entro 120 "
    "minuti di attesa massima dal triage."
)


def config(threshold: float, uncovered: float | None = None, extra: str = "") -> str:
    uncovered_line = "" if uncovered is None else f"uncovered_threshold = {uncovered}\n"
    return (
        'workspace = "an"\nlanguage = "it"\n\n'
        '[answers]\nanswerer = "extractive"\n\n'
        '[[channels]]\nname = "salute"\nexamples = ["tempi di attesa in pronto soccorso"]\n\n'
        '[[sources]]\nname = "docs"\ninclude = ["docs/**"]\nchannel = "salute"\n'
        'labels = ["public"]\n\n'
        '[analytics]\ndialect = "sqlite"\nfiles = { analytics = "store/analytics.sqlite" }\n'
        'data_date_sql = "SELECT data_dato FROM analytics.v_data_dato"\n'
        'labels = ["public"]\n'
        f"threshold = {threshold}\n{uncovered_line}{extra}"
    )


# The agent's wiki as a source of its own (AnalyticsWorkspace.serve_wiki).
WIKI_SOURCE = (
    '\n[[sources]]\nname = "wiki"\nkind = "wiki"\ninclude = ["wiki/**"]\nchannel = "salute"\n'
    'labels = ["public"]\n'
)

THRESHOLD = 0.5
UNCOVERED = 0.2


class AnalyticsWorkspace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.embedder = StemEmbedder()

    @property
    def ws(self) -> Workspace:
        return Workspace.open(self.root)

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")

    def activate(self) -> str:
        """Commit everything and activate HEAD (as `tht workspace activate` does)."""
        commit_all(self.root)
        revision = git(self.root, "rev-parse", "HEAD").strip()
        with open_runtime(self.ws, self.embedder) as rt:
            rt.state.activate_revision("an", revision, activated_by="test")
        return revision

    def publish_text(self) -> None:
        """A generation holding the one document of the text path."""
        fragment = KnowledgeFragment(
            record_kind="document",
            doc_id="docs:attese.md",
            source="docs",
            path="attese.md",
            title="Tempi di attesa",
            channel="salute",
            labels=("public",),
            ordinal=0,
            text=WAIT_DOC,
        )
        with open_runtime(self.ws, self.embedder) as rt:
            vectors = rt.embedder.embed_passages([fragment.text])
            bm25 = Bm25Encoder("it", average_length([fragment.text]))
            cfg = {"embedder": rt.embedder.identity, "dim": rt.embedder.dim, "bm25": bm25.config()}
            gen = rt.state.create_generation("an", "rev-test", cfg)
            store = rt.backend.create(gen, rt.embedder.dim)
            store.upsert(
                [
                    IndexRecord(
                        id=fragment_point_id(fragment.doc_id, 0),
                        dense=[float(x) for x in vectors[0]],
                        sparse=bm25.document(fragment.text),
                        payload=fragment.payload("an", gen),
                    )
                ]
            )
            store.create_payload_indexes([f for f in FILTER_FIELDS if f != "year"])
            rt.backend.seal(gen, store)
            rt.state.mark_generation(gen, "candidate", {"labels": ["public"]})
            rt.state.activate_generation("an", gen)

    def serve_wiki(self) -> str:
        """The agent's wiki served as `tht docs sync` serves it: a `kind = "wiki"` source over
        wiki/ added, everything committed and activated, then the documents and the wiki
        synced into the active generation (in place of `publish_text`). The agent reads the
        pages at the commit that generation indexed; returns it."""
        config = self.root / "thoth.toml"
        text = config.read_text("utf-8")
        if 'name = "wiki"' not in text:
            config.write_text(text + WIKI_SOURCE, "utf-8")
        revision = self.activate()
        ws = self.ws
        with open_runtime(ws, self.embedder) as rt:
            report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="tests")
        assert report.outcome == "activated", report.message
        return revision

    def service(self) -> AnswerService:
        return open_answer_service(self.ws, self.embedder)


def make_analytics_workspace(
    root: Path,
    *,
    threshold: float = THRESHOLD,
    uncovered: float | None = UNCOVERED,
    extra: str = "",
) -> AnalyticsWorkspace:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    build_store(root)
    aw = AnalyticsWorkspace(root)
    aw.write(".gitignore", ".thoth/\n")
    aw.write("thoth.toml", config(threshold, uncovered, extra))
    aw.write("docs/attese.md", WAIT_DOC + "\n")
    for rel, text in CATALOG.items():
        aw.write(rel, text)
    aw.write(
        "evidence/curated/glossary/glossary-day-hospital.md",
        GLOSSARY_UNIT.replace("{sha}", "0" * 64),
    )
    return aw


@pytest.fixture
def analytics_ws(tmp_path: Path) -> Iterator[AnalyticsWorkspace]:
    aw = make_analytics_workspace(tmp_path / "ws")
    aw.activate()
    aw.publish_text()
    yield aw
