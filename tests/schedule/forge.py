"""A forge for the realignment tests: a bare repository, an author's clone that pushes to it,
and the clone a workspace serves (which follows the forge's `main`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import commit_all, git
from tests.publishing import write_config
from thoth.workspace import Workspace

PAGE = """---
title: Ricoveri urgenti
---
# Ricoveri urgenti

I ricoveri urgenti sono registrati entro 24 ore.
"""

# The workspace's side: one wiki source, the clone the forge serves (`{served}`).
WIKI_CONFIG = """
[answers]
labels = ["public"]
default_labels = ["public"]

[[channels]]
name = "clinica"
examples = ["Come si registra un ricovero?"]

[[sources]]
name = "wiki"
kind = "wiki"
repo = "{served}"
include = ["wiki/**/*.md"]
channel = "clinica"
labels = ["public"]
"""


class Forge:
    """A bare repository, an author's clone that pushes to it, and the served clone."""

    def __init__(self, base: Path) -> None:
        self.bare = base / "forge.git"
        git(base, "init", "-q", "--bare", "-b", "main", str(self.bare))
        self.author = base / "author"
        git(base, "clone", "-q", str(self.bare), str(self.author))
        self.write("wiki/ricoveri-urgenti.md", PAGE)
        self.served = base / "served"
        git(base, "clone", "-q", str(self.bare), str(self.served))

    def write(self, rel: str, text: str, branch: str = "main") -> str:
        path = self.author / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        commit_all(self.author, f"edit {rel}")
        git(self.author, "push", "-q", "origin", f"HEAD:{branch}")
        return git(self.author, "rev-parse", "HEAD").strip()

    def push_payload(self, commit: str, branch: str = "main") -> dict[str, Any]:
        return {
            "ref": f"refs/heads/{branch}",
            "before": "0" * 40,
            "after": commit,
            "repository": {
                "full_name": "clinica/wiki",
                "clone_url": str(self.bare),
                "html_url": "https://forge.invalid/clinica/wiki",
            },
            "commits": [{"id": commit, "message": "edit"}],
        }


def following_workspace(
    base: Path, make_workspace: Callable[..., Workspace], embeddings_url: str, extra: str
) -> tuple[Workspace, Forge]:
    """A forge under `base` and a workspace whose wiki source is the forge's served clone, its
    config (WIKI_CONFIG, then `extra`) committed."""
    forge = Forge(base)
    ws = make_workspace()
    write_config(ws.root, embeddings_url, extra=WIKI_CONFIG.format(served=forge.served) + extra)
    commit_all(ws.root, "config")
    return ws, forge
