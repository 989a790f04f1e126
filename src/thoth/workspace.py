"""A workspace: its directory and the settings of its thoth.toml. `tht init` creates one
(thoth.evidence.layout)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from thoth.config import Settings, load_settings


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
    def open(cls, root: Path) -> Workspace:
        root = root.resolve()
        return cls(root=root, settings=load_settings(root))
