"""`tht init`: a new workspace's configuration and the Evidence layout (one folder per kind)."""

from __future__ import annotations

import os
from pathlib import Path

from thoth.config import CONFIG_FILE, render_default_config
from thoth.errors import PreconditionError
from thoth.evidence.manifest import PIPELINE_VERSION
from thoth.evidence.model import KINDS

_EVIDENCE_README = """# Evidence

- `source/`: the original notes (Markdown, text, `.sql.md`). Thoth never rewrites them.
- `curated/<kind>/`: one Evidence Unit per file, produced by `tht evidence prepare` and
  reviewed in Git. Edit them freely; remove a review item once you have resolved it.
- `manifest.yaml`: managed by `tht evidence prepare` and `tht evidence resolve`; do not edit.
- `evaluation.yaml`: questions and the units each one is expected to retrieve.

Check everything with `tht evidence validate .` before opening a pull request.
"""

_EVALUATION = """# Representative questions and the Evidence Units each should retrieve.
# profile: lexical | semantic | mixed (at least one of each).
questions: []
"""


def init_workspace(
    root: str | os.PathLike[str], name: str | None = None, language: str = "it"
) -> list[Path]:
    """Create the layout at `root` (a str or a path); refuses to overwrite an existing
    configuration."""
    root = Path(root)
    config = root / CONFIG_FILE
    if config.exists():
        raise PreconditionError(f"{config} already exists: {root} is already a workspace")
    created: list[Path] = []
    root.mkdir(parents=True, exist_ok=True)
    config.write_text(render_default_config(name or root.resolve().name, language), "utf-8")
    created.append(config)
    evidence = root / "evidence"
    for sub in ["source", *(f"curated/{k}" for k in KINDS)]:
        d = evidence / sub
        d.mkdir(parents=True, exist_ok=True)
        keep = d / ".gitkeep"
        keep.touch()
        created.append(keep)
    ignore = root / ".gitignore"
    if not ignore.exists():
        # Local state (index generations, caches, state database) is derived: never commit it.
        ignore.write_text(".thoth/\n", "utf-8")
        created.append(ignore)
    for rel, text in (
        ("README.md", _EVIDENCE_README),
        ("evaluation.yaml", _EVALUATION),
        ("manifest.yaml", f"pipeline_version: {PIPELINE_VERSION}\nsources: {{}}\n"),
    ):
        path = evidence / rel
        if not path.exists():
            path.write_text(text, "utf-8")
            created.append(path)
    return created
