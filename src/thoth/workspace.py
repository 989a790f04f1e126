"""A workspace: its directory and the settings of its thoth.toml. `tht init` creates one
(thoth.evidence.layout)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from thoth.config import Settings, load_settings
from thoth.errors import PreconditionError
from thoth.gitrepo import head_revision

if TYPE_CHECKING:
    from thoth.state import Generation, StateStore


@dataclass(frozen=True)
class Workspace:
    root: Path
    settings: Settings

    @property
    def evidence(self) -> Path:
        return self.root / "evidence"

    @property
    def curated(self) -> Path:
        return self.evidence / "curated"

    @property
    def manifest_path(self) -> Path:
        return self.evidence / "manifest.yaml"

    @classmethod
    def open(cls, root: str | os.PathLike[str]) -> Workspace:
        """The workspace at `root` (a str or a path), its thoth.toml read and checked."""
        resolved = Path(root).resolve()
        return cls(root=resolved, settings=load_settings(resolved))


def generation_revision(ws: Workspace, state: StateStore, active: Generation | None) -> str:
    """The workspace revision a new generation is stamped with: the active generation's (the
    Evidence reader requires it to be the activated one), else the activated revision, else
    the workspace's Git HEAD."""
    if active is not None:
        return active.revision
    revision = state.active_revision(ws.settings.workspace) or head_revision(ws.root)
    if revision is None:
        raise PreconditionError(
            f"{ws.root}: no activated revision and no Git commit to stamp the generation "
            "with -> commit the workspace (git init, git commit) first"
        )
    return revision
