"""`tht init`: a new workspace's configuration and the Evidence layout (one folder per kind)."""

from __future__ import annotations

import os
from pathlib import Path

from thoth.config import CALIBRATION_SET, CONFIG_FILE, example_channel, render_default_config
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

# Commented out: a set needs the workspace's own channels. The examples match the commented
# [[channels]] example of thoth.toml, so uncommenting both gives a set that calibrates.
_CALIBRATION_HEADER = """# Labelled questions for `tht channels calibrate` (docs/answers.md,
# "Measuring and checking"). One entry per question, in the language your users write in:
#   - {question: "...", channel: <name>}   a question that channel should answer (in domain)
#   - {question: "...", channel: null}     a question the workspace cannot answer (out of domain)
# Both kinds are needed: the command prints the similarity of each and suggests
# `channel_threshold` (and, once `tht docs sync` has built an index, `min_similarity`).
# Do not copy the channels' own examples: calibration measures how routing generalises.
# Ten to twenty questions of each kind give a usable estimate. For example (the channel of the
# commented [[channels]] example in thoth.toml):
#
"""


def calibration_set(language: str) -> str:
    """The commented labelled set of a new workspace, its examples in `language`."""
    example = example_channel(language)
    lines = [f'# - {{question: "{q}", channel: {example["name"]}}}' for q in example["in_domain"]]
    lines += [f'# - {{question: "{q}", channel: null}}' for q in example["out_of_domain"]]
    return _CALIBRATION_HEADER + "\n".join(lines) + "\n"


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
    for path, text in (
        (evidence / "README.md", _EVIDENCE_README),
        (evidence / "evaluation.yaml", _EVALUATION),
        (evidence / "manifest.yaml", f"pipeline_version: {PIPELINE_VERSION}\nsources: {{}}\n"),
        (root / CALIBRATION_SET, calibration_set(language)),
    ):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, "utf-8")
            created.append(path)
    return created
