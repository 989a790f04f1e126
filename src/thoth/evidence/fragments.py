"""Evidence Fragments: what gets embedded and indexed for one unit (seed §9.8).

A unit is split along its typed fields and its body paragraphs; atomic elements (a formula, a
value/meaning pair, a mapping, a rule, a URL) are never split. Every fragment repeats a short
header (title, kind, concepts) so it stands alone, and the whole rendered text — labels
included — must fit in `max_chunk_chars`. An atomic element that cannot fit is reported, never
cut. Caveats are not part of the embedded text: they travel with search results instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from thoth.evidence.model import (
    DomainUnit,
    EnumUnit,
    ExampleUnit,
    FormulaUnit,
    GlossaryUnit,
    MappingUnit,
    NormalizationUnit,
    ReferenceUnit,
    Unit,
)

TOO_LARGE = "atomic_content_too_large"

_LABELS = {
    "it": {
        "kind": "Tipo",
        "concepts": "Concetti",
        "tables": "Tabelle",
        "columns": "Colonne",
        "formula": "Formula",
        "column": "Colonna",
        "values": "Valori",
        "rules": "Regole",
        "term": "Termine",
        "definition": "Definizione",
        "synonyms": "Sinonimi",
        "rule": "Regola",
        "question": "Domanda",
        "interpretation": "Interpretazione",
        "sql": "SQL",
        "url": "URL",
        "description": "Descrizione",
        "note": "Nota",
    },
    "en": {
        "kind": "Kind",
        "concepts": "Concepts",
        "tables": "Tables",
        "columns": "Columns",
        "formula": "Formula",
        "column": "Column",
        "values": "Values",
        "rules": "Rules",
        "term": "Term",
        "definition": "Definition",
        "synonyms": "Synonyms",
        "rule": "Rule",
        "question": "Question",
        "interpretation": "Interpretation",
        "sql": "SQL",
        "url": "URL",
        "description": "Description",
        "note": "Note",
    },
}


@dataclass(frozen=True)
class Fragment:
    evidence_id: str
    ordinal: int
    section: str  # which part of the unit: "formula", "values", "body", ...
    text: str  # exactly what the embedder and BM25 receive


@dataclass(frozen=True)
class Oversized:
    field: str
    chars: int


def _labels(language: str) -> dict[str, str]:
    return _LABELS.get(language.split("-")[0], _LABELS["en"])


def _header(unit: Unit, lab: dict[str, str]) -> str:
    lines = [unit.title, f"{lab['kind']}: {unit.kind}"]
    if unit.applies_to.concepts:
        lines.append(f"{lab['concepts']}: {', '.join(unit.applies_to.concepts)}")
    return "\n".join(lines)


def _typed_elements(unit: Unit, lab: dict[str, str]) -> tuple[str, str, list[str]]:
    """(section name, a preamble shared by the section's fragments, atomic elements)."""
    if isinstance(unit, FormulaUnit):
        f = unit.formula
        return (
            "formula",
            "",
            [
                f"{lab['formula']}: {f.concept}\n{lab['columns']}: {', '.join(f.columns)}\n"
                f"{lab['sql']}: {f.sql}"
            ],
        )
    if isinstance(unit, EnumUnit):
        pairs = [f"{code} = {meaning}" for code, meaning in unit.enum.values.items()]
        return "values", f"{lab['column']}: {unit.enum.column}\n{lab['values']}:", pairs
    if isinstance(unit, MappingUnit):
        m = unit.mapping
        # The header already names the unit's concepts; repeat the mapped one only if new.
        text = f"{lab['tables']}: {', '.join(m.tables)}"
        if m.concept not in unit.applies_to.concepts:
            text = f"{lab['concepts']}: {m.concept}\n{text}"
        if m.columns:
            text += f"\n{lab['columns']}: {', '.join(m.columns)}"
        return "mapping", "", [text]
    if isinstance(unit, NormalizationUnit):
        n = unit.normalization
        pre = f"{lab['columns']}: {', '.join(n.columns)}\n" if n.columns else ""
        return "rules", pre + f"{lab['rules']}:", [f"- {r}" for r in n.rules]
    if isinstance(unit, GlossaryUnit):
        g = unit.glossary
        text = f"{lab['term']}: {g.term}\n{lab['definition']}: {g.definition}"
        if g.synonyms:
            text += f"\n{lab['synonyms']}: {', '.join(g.synonyms)}"
        return "definition", "", [text]
    if isinstance(unit, DomainUnit):
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", unit.domain.rule) if p.strip()]
        return "rule", f"{lab['rule']}:", paragraphs
    if isinstance(unit, ExampleUnit):
        e = unit.example
        text = f"{lab['question']}: {e.question}\n{lab['interpretation']}: {e.interpretation}"
        if e.sql:
            text += f"\n{lab['sql']}: {e.sql}"
        return "example", "", [text]
    assert isinstance(unit, ReferenceUnit)
    r = unit.reference
    return (
        "reference",
        "",
        [f"{r.label}\n{lab['url']}: {r.url}\n{lab['description']}: {r.description}"],
    )


def _body_paragraphs(body: str, already: str) -> list[str]:
    """Prose of the body not already carried by the typed fields: no headings, no code
    blocks, no tables, no paragraph whose text the typed fragments already contain."""
    text = re.sub(r"```.*?```", "", body, flags=re.S)
    flat_known = " ".join(already.split())
    out = []
    for para in re.split(r"\n\s*\n", text):
        lines = [
            ln for ln in para.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "|"))
        ]
        joined = "\n".join(lines).strip()
        if joined and " ".join(joined.split()) not in flat_known:
            out.append(joined)
    return out


def _pack(header: str, preamble: str, elements: list[str], limit: int) -> list[str]:
    """Greedy packing of whole elements into texts of at most `limit` characters."""
    head = header + ("\n" + preamble if preamble else "")
    texts: list[str] = []
    current: list[str] = []
    for element in elements:
        candidate = "\n".join([head, *current, element])
        if current and len(candidate) > limit:
            texts.append("\n".join([head, *current]))
            current = [element]
        else:
            current.append(element)
    if current:
        texts.append("\n".join([head, *current]))
    return texts


def oversized(unit: Unit, max_chars: int, language: str | None = None) -> list[Oversized]:
    """Atomic elements that cannot fit in one fragment, even alone with the header."""
    lab = _labels(language or unit.language)
    header = _header(unit, lab)
    _, preamble, elements = _typed_elements(unit, lab)
    found = []
    head = header + ("\n" + preamble if preamble else "")
    typed_text = "\n".join(elements)
    for element in elements:
        size = len(head) + 1 + len(element)
        if size > max_chars:
            found.append(Oversized(f"{unit.kind}", size))
    for para in _body_paragraphs(unit.body, typed_text):
        size = len(header) + 1 + len(lab["note"]) + 2 + len(para)
        if size > max_chars:
            found.append(Oversized("body", size))
    return found


def fragment_unit(unit: Unit, max_chars: int, language: str | None = None) -> list[Fragment]:
    """The unit's fragments, in order. Raises ValueError when an atomic element is too large
    (prepare has already flagged such a unit with `atomic_content_too_large`)."""
    too_large = oversized(unit, max_chars, language)
    if too_large:
        raise ValueError(
            f"{unit.id}: atomic content of {too_large[0].chars} characters exceeds "
            f"max_chunk_chars={max_chars} ({too_large[0].field})"
        )
    lab = _labels(language or unit.language)
    header = _header(unit, lab)
    section, preamble, elements = _typed_elements(unit, lab)
    texts = [(section, t) for t in _pack(header, preamble, elements, max_chars)]
    notes = _body_paragraphs(unit.body, "\n".join(elements))
    texts += [("body", t) for t in _pack(header, f"{lab['note']}:", notes, max_chars)]
    return [
        Fragment(evidence_id=unit.id, ordinal=n, section=sec, text=text)
        for n, (sec, text) in enumerate(texts)
    ]
