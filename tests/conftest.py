"""Shared fixtures: real Git workspaces in temporary directories (no mocks of our storage)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from thoth.evidence.layout import init_workspace
from thoth.workspace import Workspace

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits in test repositories need an author; never touch the user's git config."""
    for var, value in {
        "GIT_AUTHOR_NAME": "Thoth Tests",
        "GIT_AUTHOR_EMAIL": "tests@thoth.invalid",
        "GIT_COMMITTER_NAME": "Thoth Tests",
        "GIT_COMMITTER_EMAIL": "tests@thoth.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }.items():
        monkeypatch.setenv(var, value)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def commit_all(root: Path, message: str = "test commit") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)


def status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


class WorkspaceFactory:
    """Builds a committed Git workspace with the given sources (paths under evidence/source/)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.count = 0

    def __call__(self, sources: Mapping[str, str | bytes] | None = None) -> Workspace:
        self.count += 1
        root = self.base / f"ws{self.count}"
        init_workspace(root, name=f"ws{self.count}")
        git(root, "init", "-q", "-b", "main")
        for rel, content in (sources or {}).items():
            write_source(root, rel, content)
        commit_all(root, "sources")
        return Workspace.open(root)


def write_source(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / "evidence" / "source" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[..., Workspace]:
    return WorkspaceFactory(tmp_path)


GLOSSARY = """# Glossario dei ricoveri

## Termini

**Ricovero**: permanenza del paziente in reparto con almeno un pernottamento. Sinonimi: degenza, ospedalizzazione.
**Day hospital**: ricovero diurno senza pernottamento, registrato in `adt.admission`.
"""

FORMULA = """# Formule

## Fascia pediatrica

Per fascia pediatrica si intendono i pazienti con età inferiore a 18 anni alla data di ricovero,
calcolata da `clinical.patient.birth_date` e `adt.admission.admission_date`.

```sql
CASE WHEN date_part('year', age(a.admission_date, p.birth_date)) < 18 THEN 'pediatrica' ELSE 'adulta' END
```
"""

ENUM = """# Esiti

## Esito della dimissione

Colonna: `clinical.episode.discharge_status`

| Codice | Significato |
|---|---|
| D | dimesso a domicilio |
| T | trasferito ad altro istituto |
| X | deceduto |
"""
