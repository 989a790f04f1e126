"""Whose a document is, and whom a question names: the workspace's reviewed entity list.

Filings of five companies read alike: "total net sales for the quarter" is in each of them,
and similarity cannot tell Apple's quarter from Amazon's. So each document carries the entity
it belongs to (an issuer, a company, a public body), decided at sync, and a question that names
an entity is answered from that entity's documents only: the entity is a condition of the
scope, applied inside the index before similarity, like labels.

The list is a YAML file of the workspace (`entities = "entities.yaml"` in thoth.toml), reviewed
in Git like everything that changes what Thoth answers::

    - id: apple
      name: Apple Inc.
      aliases: [Apple]          # any language: names the text or a question may use
      tickers: [AAPL]           # matched as written (upper case), never inside a word
      fiscal_year_end: 9        # the month its fiscal year ends in (default 12)

A document's entity, first that applies: the front matter's `entity` (Markdown), the source's
`entities` (file name or path -> id) in thoth.toml, else the one entity the document's title,
path and opening text (its cover page) name most. None found is said in the sync report.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from thoth.errors import Problem, ProblemsError
from thoth.reviewed_yaml import read_list

# The opening of a document read for its entity: a filing's cover page, a report's title block.
COVER_CHARS: Final = 4000

_ID: Final = r"^[a-z0-9][a-z0-9_.-]*$"


class Entity(BaseModel):
    """One entity of the list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=_ID, description="Stable id, lower case (what documents carry).")
    name: str = Field(min_length=1, description="The entity's name as shown to readers.")
    aliases: tuple[str, ...] = Field(default=(), description="Other names, any language.")
    tickers: tuple[str, ...] = Field(default=(), description="Ticker symbols, as written.")
    fiscal_year_end: int = Field(
        default=12,
        ge=1,
        le=12,
        description="The month its fiscal year ends in (Apple: 9); a question's Q2 2023 is "
        "read as the calendar quarter or as this fiscal calendar's.",
    )

    @field_validator("aliases", "tickers")
    @classmethod
    def _not_blank(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = tuple(" ".join(v.split()) for v in values)
        if any(not v for v in cleaned):
            raise ValueError("an empty alias or ticker: remove it")
        return cleaned

    @property
    def names(self) -> tuple[str, ...]:
        """The name and the aliases; a trailing legal form ("Inc.", "S.p.A.") is also tried
        without it, since texts and questions seldom write it."""
        out: dict[str, None] = {}
        for name in (self.name, *self.aliases):
            out[name] = None
            short = _LEGAL_FORM.sub("", name).strip(" ,")
            if short and len(short) >= 2:
                out[short] = None
        return tuple(out)


_LEGAL_FORM: Final = re.compile(
    r"[, ]+(?:inc\.?|incorporated|corp\.?|corporation|ltd\.?|limited|llc|plc|co\.?|"
    r"s\.?p\.?a\.?|s\.?r\.?l\.?|ag|gmbh|n\.?v\.?|s\.?a\.?)$",
    re.IGNORECASE,
)


def _pattern(words: Iterable[str], *, ignore_case: bool) -> re.Pattern[str] | None:
    ordered = sorted({w for w in words if w}, key=len, reverse=True)
    if not ordered:
        return None
    body = "|".join(r"\s+".join(map(re.escape, w.split())) for w in ordered)
    flags = re.IGNORECASE if ignore_case else 0
    # Never inside a word: "Apple" not in "Applebee", "MU" not in "MUST"; "Apple's" is Apple.
    return re.compile(rf"(?<![\w&])(?:{body})(?![\w&])", flags)


@dataclass(frozen=True)
class Mention:
    entity: str  # id
    count: int


class EntityList:
    """The reviewed list, with its matchers. Empty: the feature is off (no scope, no detection)."""

    def __init__(self, entities: Sequence[Entity], digest: str = "") -> None:
        self.entities = {e.id: e for e in entities}
        self.digest = digest  # of the file's bytes: a change re-prepares the documents
        self._patterns = {
            e.id: [
                p
                for p in (
                    _pattern(e.names, ignore_case=True),
                    _pattern(e.tickers, ignore_case=False),
                )
                if p is not None
            ]
            for e in entities
        }

    def __bool__(self) -> bool:
        return bool(self.entities)

    def get(self, entity_id: str) -> Entity | None:
        return self.entities.get(entity_id)

    def mentions(self, text: str) -> list[Mention]:
        """Every entity `text` names, with how often; most named first, then by id."""
        text = text.replace("’", "'")
        counts = Counter(
            {
                eid: sum(len(p.findall(text)) for p in patterns)
                for eid, patterns in self._patterns.items()
            }
        )
        return [Mention(eid, n) for eid, n in sorted(counts.items(), key=_most) if n]

    def named_in(self, question: str) -> list[str]:
        """The ids of the entities a question names, in the order the list declares them."""
        named = {m.entity for m in self.mentions(question)}
        return [eid for eid in self.entities if eid in named]

    def without_names(self, text: str) -> str:
        """`text` with every name and ticker of the list blanked out: what a question asks
        once its scope is known (the second stage of ranking matches only that)."""
        text = text.replace("’", "'")
        for patterns in self._patterns.values():
            for pattern in patterns:
                text = pattern.sub(" ", text)
        return text

    def of_document(self, title: str, path: str, opening: str) -> str | None:
        """The one entity a document's title, path and opening text name most; None when none
        is named or two are named equally (the sync report says so: configure it)."""
        found = self.mentions(f"{title}\n{path}\n{opening[:COVER_CHARS]}")
        if not found or (len(found) > 1 and found[0].count == found[1].count):
            return None
        return found[0].entity


def _most(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


NO_ENTITIES: Final = EntityList(())


def load_entities(root: Path, relative: str | None) -> EntityList:
    """The list `thoth.toml` names (`entities = "entities.yaml"`), checked whole: every
    problem is reported at once, naming the entry and the field."""
    if relative is None:
        return NO_ENTITIES
    where = relative
    entities, data, problems = read_list(
        root,
        relative,
        Entity,
        setting="entities",
        what="entity list",
        example="{id: apple, name: Apple Inc., aliases: [Apple], tickers: [AAPL]}",
    )
    owners: dict[str, str] = {}
    for e in entities:
        for name in (*(n.casefold() for n in e.names), *e.tickers):
            other = owners.setdefault(name, e.id)
            if other != e.id:
                problems.append(
                    Problem(
                        where,
                        f"{name!r} names both {other} and {e.id}: a question using it could "
                        "not say whose documents to read",
                        field="aliases",
                        hint="keep the name on one entity only",
                        code="entities_ambiguous",
                    )
                )
    ids = [e.id for e in entities]
    for dupe in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(
            Problem(where, f"id {dupe!r} is used twice", field="id", code="entities_invalid")
        )
    if problems:
        raise ProblemsError(f"{where}: the entity list has problems", problems)
    return EntityList(entities, hashlib.sha256(data).hexdigest()[:16])
