"""Helpers for tests that publish Evidence: a prepared, committed workspace whose embedder is
the real OpenAI-compatible client talking to a local fake embeddings server."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from tests.conftest import ENUM, FORMULA, GLOSSARY, commit_all, git
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.knowledge.sync import DocsSync
from thoth.runtime import Runtime, open_runtime
from thoth.workflow.publish import Publisher, PublishReport
from thoth.workspace import Workspace

SOURCES = {"g.md": GLOSSARY, "f.md": FORMULA, "e.md": ENUM}
EVALUATION = """questions:
  - id: ricovero
    question: ricovero con pernottamento
    purpose: disambiguation
    profile: lexical
    expected: [evidence:ricovero]
  - id: pediatrica
    question: età del paziente sotto i 18 anni
    purpose: sql_generation
    profile: semantic
    expected: [evidence:fascia-pediatrica]
  - id: esito
    question: codici di esito della dimissione discharge_status
    purpose: schema_linking
    profile: mixed
    expected: [evidence:esito-della-dimissione]
"""
# A question whose expected unit cannot match its purpose: the gate must fail.
FAILING_QUESTION = """  - id: impossible
    question: ricovero
    purpose: schema_linking
    profile: lexical
    expected: [evidence:ricovero]
"""


def write_config(root: Path, embeddings_url: str, retain: int = 2, extra: str = "") -> None:
    (root / "thoth.toml").write_text(
        f'workspace = "{root.name}"\nlanguage = "it"\n\n'
        f'[embedding]\nprovider = "openai"\nbase_url = "{embeddings_url}"\nmodel = "fake-e5"\n'
        f"dim = 8\n\n[index]\nretain = {retain}\n{extra}",
        encoding="utf-8",
    )


def prepared_workspace(
    make_workspace: Callable[..., Workspace],
    embeddings_url: str,
    retain: int = 2,
    evaluation: str = EVALUATION,
) -> Workspace:
    ws = make_workspace(SOURCES)
    write_config(ws.root, embeddings_url, retain)
    (ws.evidence / "evaluation.yaml").write_text(evaluation, encoding="utf-8")
    commit_all(ws.root, "config and evaluation")
    ws = Workspace.open(ws.root)
    prepare(ws, RuleBasedRestructurer())
    commit_all(ws.root, "prepared units")
    return ws


def head(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", "HEAD").strip()


def activate_head(rt: Runtime) -> str:
    revision = head(rt.ws)
    rt.state.activate_revision(rt.ws.settings.workspace, revision, activated_by="tests")
    return revision


def publish(rt: Runtime) -> PublishReport:
    return Publisher(
        rt.ws, rt.state, rt.backend, rt.embedder, retain=rt.ws.settings.index.retain
    ).preprocess()


def published(
    make_workspace: Callable[..., Workspace], embeddings_url: str, retain: int = 2
) -> Runtime:
    ws = prepared_workspace(make_workspace, embeddings_url, retain)
    rt = open_runtime(ws)
    activate_head(rt)
    report = publish(rt)
    assert report.outcome == "activated", report.message
    return rt


# The clinical answering corpus the MCP, web and answer end-to-end tests share: its
# [answers] settings, channel and public manual source (each test adds its own sources and
# then CLINICA_WIKI), the manual and the wiki page citing it.
CLINICA_ANSWERS = """
[answers]
labels = ["public", "internal", "confidential"]
default_labels = ["public"]
evidence_channel = "clinica"
evidence_labels = ["internal"]

[[channels]]
name = "clinica"
examples = ["Cosa si intende per ricovero?", "Come si registra un accesso in pronto soccorso?"]
keywords = ["ricovero", "pronto soccorso"]

[[sources]]
name = "manuali"
include = ["documents/manuali/**"]
channel = "clinica"
labels = ["public"]
"""

CLINICA_WIKI = """
[[sources]]
name = "wiki"
kind = "wiki"
include = ["wiki/**/*.md"]
channel = "clinica"
labels = ["public"]
"""

MANUAL = """# Registrazione del ricovero

Il ricovero ordinario viene registrato dal reparto entro 24 ore dall'ingresso del paziente,
con la scheda di accettazione firmata dal medico di guardia e il codice di provenienza.
"""

AUDIT = """# Audit riservato

L'audit interno ha trovato il 17,9% di schede di ricovero con codice di provenienza errato.
"""

PAGE = """---
title: Ricoveri urgenti
documents: [manuali:documents/manuali/ricovero.md]
---
# Ricoveri urgenti

I ricoveri urgenti sono cresciuti del 41% nel 2024 secondo il cruscotto di reparto.

## Avvertenze

- Il 41% conta due volte i trasferimenti interni: la crescita reale è intorno al 2%.
"""


def synced_workspace(
    ws: Workspace, embeddings_url: str, extra: str, files: Mapping[str, str]
) -> Workspace:
    """A prepared workspace answering questions: `extra` appended to its thoth.toml and
    `files` (path: text) committed, then its Evidence published and its documents and wiki
    synced into the same active generation; fails unless both activate."""
    write_config(ws.root, embeddings_url, extra=extra)
    for rel, text in files.items():
        path = ws.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    commit_all(ws.root, "answers corpus")
    ws = Workspace.open(ws.root)
    with open_runtime(ws) as rt:
        activate_head(rt)
        assert publish(rt).outcome == "activated"
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="tests")
        assert report.outcome == "activated", report.message
    return ws
