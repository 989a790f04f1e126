"""A small answering workspace for the page's browser tests: Evidence published and documents
and wiki pages indexed into one generation, embeddings over real HTTP from the local fake
server, the offline extractive answerer. Its corpus gives each thing a person must see on the
page: a found answer, a figure with its caveat next to it, nothing found, and (once the index
is damaged) a failed search."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.publishing import (
    CLINICA_ANSWERS,
    CLINICA_WIKI,
    MANUAL,
    prepared_workspace,
    synced_workspace,
)
from thoth.runtime import state_dir
from thoth.workspace import Workspace

ANSWERS = CLINICA_ANSWERS + CLINICA_WIKI

PAGE = """---
title: Ricoveri urgenti
documents: [manuali:documents/manuali/ricovero.md]
caveats:
  - "Il 41% conta due volte i trasferimenti interni: la crescita reale è intorno al 2%."
---
# Ricoveri urgenti

I ricoveri urgenti sono cresciuti del 41% nel 2024 secondo il cruscotto di reparto.
"""

# A document whose text holds markup: the page must show it as text, never run it.
MARKUP = """# Modulo di triage

Il triage in pronto soccorso compila il modulo <b>T1</b> <img src=x onerror="document.body.dataset.pwned='1'"> al primo contatto.
"""
MARKUP_QUESTION = "Quale modulo compila il triage in pronto soccorso?"
MARKUP_TEXT = "<b>T1</b>"

FOUND_QUESTION = "Di quanto sono cresciuti i ricoveri urgenti nel 2024?"
CLAIM = "I ricoveri urgenti sono cresciuti del 41% nel 2024"
CAVEAT = "la crescita reale è intorno al 2%"
PAGE_TITLE = "Ricoveri urgenti"
PAGE_ID = "wiki:wiki/ricoveri-urgenti.md"


def answering_workspace(
    make_workspace: Callable[..., Workspace], embeddings_url: str, service: str = ""
) -> Workspace:
    """The workspace, published and synced, with `service` appended to its thoth.toml."""
    return synced_workspace(
        prepared_workspace(make_workspace, embeddings_url),
        embeddings_url,
        ANSWERS + service,
        {
            "documents/manuali/ricovero.md": MANUAL,
            "documents/manuali/triage.md": MARKUP,
            "wiki/ricoveri-urgenti.md": PAGE,
        },
    )


def index_dirs(ws: Workspace) -> list[Path]:
    """The workspace's index generations on disk (what the failure tests remove)."""
    root = state_dir(ws) / "index" / ws.settings.workspace
    return sorted(p for p in root.iterdir() if p.is_dir())
