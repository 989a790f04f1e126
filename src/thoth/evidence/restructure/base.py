"""The restructurer interface: one source (plus its prior units) in, drafts of units out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from thoth.errors import ThothError
from thoth.evidence.model import Unit
from thoth.evidence.sources import SourceFile


@dataclass(frozen=True)
class ReviewNote:
    code: str
    message: str
    field: str | None = None

    def as_dict(self) -> dict[str, str]:
        out = {"code": self.code, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass(frozen=True)
class Draft:
    """A proposed unit. `existing_id` is one of the prior IDs it received, or None (new unit:
    the preparer assigns the ID). Provenance file and hash are filled in by the preparer."""

    title: str
    kind: str
    data: dict[str, Any]
    excerpts: list[str]
    body: str
    purposes: list[str] | None = None
    applies_to: dict[str, list[str]] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)
    review_items: list[ReviewNote] = field(default_factory=list)
    existing_id: str | None = None


@dataclass(frozen=True)
class Restructuring:
    drafts: list[Draft]
    # Prior units the source no longer supports, with the reason (retirement candidates).
    unsupported: dict[str, str] = field(default_factory=dict)


class RestructureError(ThothError):
    """The restructurer could not handle this source; prepare attributes it to the file."""

    code = "restructure_failed"


class Restructurer(Protocol):
    name: str

    def restructure(
        self, source: SourceFile, prior: Sequence[Unit], language: str
    ) -> Restructuring: ...
