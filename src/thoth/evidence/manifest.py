"""`manifest.yaml`: source hashes, the units derived from each, orphans, candidates, retired IDs.
Managed only by `prepare` and `resolve`; it holds no approval state (Git does)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from thoth.errors import Problem, ProblemsError
from thoth.evidence.document import dump_yaml
from thoth.evidence.ids import ID_PATTERN
from thoth.markup import load_yaml

# Bump when restructuring output changes for the same input: old manifests then need --upgrade.
PIPELINE_VERSION = 1

UnitId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UnitEntry(_Strict):
    id: UnitId
    # Fingerprint of what the restructurer proposed last time: when it proposes the same thing
    # again the curated file (and any curator edit in it) is kept as it is.
    derived: str


class SourceEntry(_Strict):
    sha256: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
    units: list[UnitEntry] = []


class Detached(_Strict):
    id: UnitId
    source: str


class Manifest(_Strict):
    pipeline_version: int = PIPELINE_VERSION
    sources: dict[str, SourceEntry] = Field(default_factory=dict)
    orphans: list[Detached] = []
    retirement_candidates: list[Detached] = []
    retired: list[UnitId] = []

    def source_of(self, unit_id: str) -> str | None:
        for rel, entry in self.sources.items():
            if any(u.id == unit_id for u in entry.units):
                return rel
        return None

    def orphan_ids(self) -> set[str]:
        return {o.id for o in self.orphans}

    def candidate_ids(self) -> set[str]:
        return {c.id for c in self.retirement_candidates}

    def known_ids(self) -> set[str]:
        ids = {u.id for e in self.sources.values() for u in e.units}
        return ids | self.orphan_ids() | set(self.retired)

    def render(self) -> str:
        data = self.model_dump(mode="json")
        data["sources"] = {k: data["sources"][k] for k in sorted(data["sources"])}
        data["orphans"] = sorted(data["orphans"], key=lambda d: d["id"])
        data["retirement_candidates"] = sorted(data["retirement_candidates"], key=lambda d: d["id"])
        data["retired"] = sorted(data["retired"])
        header = "# Managed by `tht evidence prepare` and `tht evidence resolve`. Do not edit.\n"
        return header + dump_yaml(data)


def load_manifest(path: Path) -> Manifest:
    rel = f"evidence/{path.name}"
    if not path.exists():
        return Manifest()
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ProblemsError(
            f"{rel} cannot be read",
            [
                Problem(
                    rel,
                    f"not valid YAML: {exc}".replace("\n", " "),
                    hint="restore it from Git (`git checkout -- evidence/manifest.yaml`)",
                )
            ],
        ) from exc
    try:
        return Manifest.model_validate(raw or {})
    except ValidationError as exc:
        problems = [
            Problem(rel, e["msg"], field=".".join(str(p) for p in e["loc"]) or None)
            for e in exc.errors()
        ]
        raise ProblemsError(f"{rel} is malformed", problems) from exc
