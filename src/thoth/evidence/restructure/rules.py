"""Rule-based restructurer: offline, deterministic, and honest about what it cannot decide.

It reads the structure people already write in Markdown notes (headings, definition lines,
value tables, SQL blocks, link lists) and turns it into drafts of the right kind. Wherever it
cannot decide it adds a review item instead of guessing. The conventions are documented in
docs/source-format.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from thoth.evidence.model import MAX_EXCERPT_CHARS, MAX_EXCERPTS, Unit
from thoth.evidence.restructure.base import Draft, RestructureError, Restructuring, ReviewNote
from thoth.evidence.sources import SourceFile
from thoth.markup import FrontMatterError, MarkdownBlock, markdown_tables, split_front_matter
from thoth.sqlcheck import SqlVerdict, check_expression, check_read_only_query

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([A-Za-z]*)\s*$")
_SQL_LANGS = {"sql", "postgresql", "postgres", "pgsql", "psql"}
_DEFINITION = re.compile(
    r"^\s*(?:- )?\*\*(?P<term>[^*]{1,80}?)\*\*\s*(?::|—|–| - )\s*(?P<def>\S.*)$"
)
_PLAIN_DEFINITION = re.compile(r"^\s*(?:- )?(?P<term>[A-ZÀ-Ý][^:]{0,60}?)\s*:\s+(?P<def>\S.*)$")
_LINK_BULLET = re.compile(
    r"^\s*- \[(?P<label>[^\]]+)\]\((?P<url>[^)\s]+)\)\s*(?:(?:—|–|-|:)\s*(?P<desc>.*))?$"
)
_KEY_LINE = re.compile(
    r"^\s*(?:- )?\**(?P<key>Domanda|Interpretazione|Concetto|Colonna|Colonne|Tabella|Tabelle)"
    r"\**\s*:\s*\**\s*(?P<value>.*?)\s*$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:- |\d+[.)] )(?P<text>.+)$")
_REF = re.compile(r"`(\"?[A-Za-z_][\w$]*\"?(?:\.\"?[A-Za-z_][\w$]*\"?){1,2})`")
_SYNONYMS = re.compile(
    r"(?i)\b(?:sinonimi|varianti|anche detto|detto anche)\s*:\s*(?P<list>[^.]+)\.?"
)
_DOUBT = re.compile(
    r"(?i)(da verificare|da chiarire|non [èe] chiaro|non chiaro|ambigu[oaie]|incert[oaie]|"
    r"\bTODO\b|\bTBD\b|\?\?)"
)
_CONFLICT = re.compile(r"(?i)(in contrasto|in conflitto|contraddic|contraddett)")
_NORMALIZATION = re.compile(r"(?i)normaliz|uniforma")
_ENUM_COLUMN_UNKNOWN = ReviewNote(
    "enum_column_unknown",
    "The source lists values and meanings but does not say which column holds them: add "
    "`Colonna: schema.table.column` and reclassify the unit as `enum`.",
    "domain.rule",
)
_ENUM_CODE = {"codice", "valore", "code", "value", "sigla", "cod"}
_ENUM_MEANING = {"significato", "descrizione", "meaning", "description", "etichetta", "label"}
_MAP_CONCEPT = {"concetto", "concept"}
_MAP_TABLES = {"tabella", "tabelle", "table", "tables"}
_MAP_COLUMNS = {"colonna", "colonne", "column", "columns"}


@dataclass
class _Section:
    title: str
    heading: int | None  # line index of the heading, if any
    lines: list[int] = field(default_factory=list)  # content line indices


@dataclass
class _Piece:
    """A draft under construction, with the source lines it rests on."""

    title: str
    kind: str
    data: dict[str, object]
    lines: list[int]
    notes: list[ReviewNote] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)


def _clean(text: str) -> str:
    return text.strip().strip("*`").strip()


def _refs(text: str) -> tuple[list[str], list[str]]:
    tables: list[str] = []
    columns: list[str] = []
    for ref in _REF.findall(text):
        parts = ref.split(".")
        if len(parts) == 3:
            columns.append(ref)
            tables.append(".".join(parts[:2]))
        else:
            tables.append(ref)
    return sorted(set(tables)), sorted(set(columns))


def _legacy_rule(title: str, rule: str, lines: list[int], why: str) -> list[_Piece]:
    """A legacy formula that cannot become a formula unit: its text kept as a domain rule, with
    the review note that says why."""
    note = ReviewNote("legacy_formula_incompatible", why, "domain.rule")
    return [_Piece(title, "domain", {"rule": rule}, lines, [note])]


def _refusal(formula: SqlVerdict, query: SqlVerdict) -> tuple[str, str]:
    """Why a SQL block is neither a formula nor an example: the reasons of the check whose kind
    of SQL it is (`sql_refused`), or `sql_not_parseable` when it is neither kind."""
    if not formula.wrong_kind:
        return "sql_refused", formula.summary()
    if not query.wrong_kind:
        return "sql_refused", query.summary()
    return "sql_not_parseable", formula.summary()


def _split_list(value: str) -> list[str]:
    return [_clean(v) for v in re.split(r"[,;]", value) if _clean(v)]


class RuleBasedRestructurer:
    name = "rules"

    def restructure(
        self, source: SourceFile, prior: Sequence[Unit], language: str
    ) -> Restructuring:
        lines = source.normalized.split("\n")
        if source.is_legacy_formula:
            pieces = self._legacy_formula(source.rel, lines)
        else:
            glossary_file = "glossar" in source.rel.lower()
            blocks = markdown_tables(source.normalized)
            pieces = []
            for section in self._sections(source.rel, lines):
                pieces += self._section_pieces(section, lines, source.rel, glossary_file, blocks)
        drafts = self._drafts(pieces, lines, prior)
        matched = {d.existing_id for d in drafts if d.existing_id}
        unsupported = {
            u.id: "the rule-based restructurer found no section with this title in the source"
            for u in prior
            if u.id not in matched
        }
        return Restructuring(drafts=drafts, unsupported=unsupported)

    # -- structure ---------------------------------------------------------------------

    @staticmethod
    def _fenced(lines: list[str]) -> list[bool]:
        inside = False
        marks = []
        for line in lines:
            if _FENCE.match(line):
                marks.append(True)
                inside = not inside
                continue
            marks.append(inside)
        return marks

    def _sections(self, rel: str, lines: list[str]) -> list[_Section]:
        fenced = self._fenced(lines)
        stem = rel.rsplit("/", 1)[-1].split(".", 1)[0]
        file_title = re.sub(r"^[\d\s_-]+", "", stem).replace("-", " ").replace("_", " ").strip()
        file_title = file_title or stem
        file_title = file_title[:1].upper() + file_title[1:]
        h1: int | None = None
        for i, line in enumerate(lines):
            if not fenced[i] and line.startswith("# "):
                h1 = i
                file_title = line[2:].strip() or file_title
                break
        sections: list[_Section] = []
        current = _Section(title=file_title, heading=h1)
        for i, line in enumerate(lines):
            if i == h1:
                continue
            if not fenced[i] and line.startswith("## "):
                sections.append(current)
                current = _Section(title=line[3:].strip().rstrip("#").strip(), heading=i)
                continue
            current.lines.append(i)
        sections.append(current)
        return [s for s in sections if any(lines[i].strip() for i in s.lines)]

    # -- classification --------------------------------------------------------------

    def _section_pieces(
        self,
        section: _Section,
        lines: list[str],
        rel: str,
        glossary_file: bool,
        table_blocks: Sequence[MarkdownBlock],
    ) -> list[_Piece]:
        used: set[int] = set()
        pieces: list[_Piece] = []
        text_of = "\n".join(lines[i] for i in section.lines)
        keys: dict[str, tuple[int, str]] = {}
        for i in section.lines:
            m = _KEY_LINE.match(lines[i])
            if m and m.group("key").lower() not in keys:
                keys[m.group("key").lower()] = (i, m.group("value"))
        head = [section.heading] if section.heading is not None else []

        # SQL blocks: formula (one expression) or example (a full query).
        pos = 0
        idx = section.lines
        while pos < len(idx):
            m = _FENCE.match(lines[idx[pos]])
            if not m:
                pos += 1
                continue
            start = pos
            pos += 1
            while pos < len(idx) and not _FENCE.match(lines[idx[pos]]):
                pos += 1
            block = idx[start : pos + 1]
            pos += 1
            if m.group(2).lower() not in _SQL_LANGS:
                continue
            used.update(block)
            code = "\n".join(lines[i] for i in block[1:-1]).strip()
            pieces.append(self._sql_piece(section, code, head + block, keys, text_of, used))

        # Value tables and mapping tables, as the Markdown reader finds them.
        inside = set(idx)
        for table in table_blocks:
            if table.lines[0] in inside and table.lines[0] not in used:
                pieces += self._table_pieces(section, table, keys, text_of, used, head)

        # Link lists: one reference unit per link.
        for i in section.lines:
            m = _LINK_BULLET.match(lines[i])
            if m and i not in used:
                used.add(i)
                label = m.group("label").strip()
                desc = (m.group("desc") or "").strip() or label
                pieces.append(
                    _Piece(
                        label,
                        "reference",
                        {"url": m.group("url"), "label": label, "description": desc},
                        [i],
                    )
                )

        # Definition lines: one glossary unit per term.
        pieces += self._glossary_pieces(section, lines, used, glossary_file)

        # Normalisation rules.
        bullets = [i for i in section.lines if i not in used and _BULLET.match(lines[i])]
        if bullets and (_NORMALIZATION.search(section.title) or _NORMALIZATION.search(rel)):
            used.update(bullets)
            rules = [_BULLET.match(lines[i]).group("text").strip() for i in bullets]  # type: ignore[union-attr]
            _, columns = _refs("\n".join(lines[i] for i in bullets))
            pieces.append(
                _Piece(
                    section.title,
                    "normalization",
                    {"rules": rules, "columns": columns},
                    head + bullets,
                )
            )

        rest = [i for i in section.lines if i not in used and lines[i].strip()]
        # Question + interpretation without SQL: an example.
        if (
            "domanda" in keys
            and "interpretazione" in keys
            and not any(p.kind == "example" for p in pieces)
        ):
            q_line, question = keys["domanda"]
            i_line, interpretation = keys["interpretazione"]
            used.update((q_line, i_line))
            pieces.append(
                _Piece(
                    section.title,
                    "example",
                    {"question": question, "interpretation": interpretation},
                    head + [i for i in section.lines if lines[i].strip()],
                )
            )
            rest = []
        # "Tabelle: ..." lines: a mapping of the section's concept.
        table_key = keys.get("tabelle") or keys.get("tabella")
        if table_key and not any(p.kind == "mapping" for p in pieces):
            cols_key = keys.get("colonne") or keys.get("colonna")
            tables = _split_list(table_key[1])
            columns = _split_list(cols_key[1]) if cols_key else []
            concept = _clean(keys["concetto"][1]) if "concetto" in keys else section.title
            pieces.append(
                _Piece(
                    section.title,
                    "mapping",
                    {"concept": concept, "tables": tables, "columns": columns},
                    head + rest,
                    concepts=[concept],
                )
            )
            rest = []

        if rest:
            prose = "\n".join(lines[i] for i in rest).strip()
            if not pieces:
                if glossary_file:
                    pieces.append(
                        _Piece(
                            section.title,
                            "glossary",
                            self._definition(section.title, prose),
                            head + section.lines,
                            concepts=[section.title],
                        )
                    )
                else:
                    pieces.append(
                        _Piece(section.title, "domain", {"rule": prose}, head + section.lines)
                    )
            elif len(pieces) == 1:  # the prose is the context of the section's one unit
                pieces[0].lines = head + section.lines
            elif len(prose) >= 40:
                pieces.append(
                    _Piece(f"{section.title} (contesto)", "domain", {"rule": prose}, head + rest)
                )
        elif len(pieces) == 1:
            pieces[0].lines = head + section.lines
        return pieces

    def _sql_piece(
        self,
        section: _Section,
        code: str,
        block: list[int],
        keys: dict[str, tuple[int, str]],
        text: str,
        used: set[int],
    ) -> _Piece:
        _, columns = _refs(text)
        if "colonne" in keys or "colonna" in keys:
            columns = _split_list((keys.get("colonne") or keys["colonna"])[1])
        formula = check_expression(code)
        if formula.ok:
            concept = _clean(keys["concetto"][1]) if "concetto" in keys else section.title
            if not columns:
                return _Piece(
                    section.title,
                    "domain",
                    {"rule": f"{concept}:\n{code}"},
                    block,
                    [
                        ReviewNote(
                            "formula_columns_unknown",
                            "The source gives a formula but names none of its "
                            "input columns: add them as `schema.table.column` "
                            "and reclassify the unit as `formula`.",
                            "domain.rule",
                        )
                    ],
                )
            return _Piece(
                section.title,
                "formula",
                {"concept": concept, "columns": columns, "sql": code},
                block,
                concepts=[concept],
            )
        query = check_read_only_query(code)
        if query.ok:
            notes: list[ReviewNote] = []
            if "domanda" in keys:
                question = keys["domanda"][1]
                used.add(keys["domanda"][0])
            elif section.title.endswith("?"):
                question = section.title
            else:
                question = section.title
                notes.append(
                    ReviewNote(
                        "example_question_missing",
                        "No `Domanda:` line: the section title stands in for "
                        "the question; write the question users really ask.",
                        "example.question",
                    )
                )
            if "interpretazione" in keys:
                interpretation = keys["interpretazione"][1]
                used.add(keys["interpretazione"][0])
            else:
                interpretation = text.split("```")[0].strip() or question
            return _Piece(
                section.title,
                "example",
                {"question": question, "interpretation": interpretation, "sql": code},
                block,
                notes,
            )
        code_name, why = _refusal(formula, query)
        return _Piece(
            section.title,
            "domain",
            {"rule": code},
            block,
            [
                ReviewNote(
                    code_name,
                    "The SQL block is neither one accepted expression (a formula) nor one "
                    f"read-only query (an example): {why}.",
                    "domain.rule",
                )
            ],
        )

    def _table_pieces(
        self,
        section: _Section,
        block: MarkdownBlock,
        keys: dict[str, tuple[int, str]],
        text: str,
        used: set[int],
        head: list[int],
    ) -> list[_Piece]:
        if not block.rows:
            return []
        table = list(range(*block.lines))
        header = [h.lower().strip("*` ") for h in block.header]
        rows = list(zip(block.row_lines, block.rows, strict=True))
        if len(header) >= 2 and header[0] in _ENUM_CODE and header[1] in _ENUM_MEANING:
            used.update(table)
            values: dict[str, str] = {}
            notes: list[ReviewNote] = []
            for _, cells in rows:
                code, meaning = _clean(cells[0]), cells[1].strip() if len(cells) > 1 else ""
                if not code or not meaning:
                    continue
                if code in values and values[code] != meaning:
                    notes.append(
                        ReviewNote(
                            "conflicting_enum_values",
                            f"Code {code!r} has two meanings in the source: "
                            f"{values[code]!r} and {meaning!r}; keep one.",
                            f"enum.values.{code}",
                        )
                    )
                    continue
                values.setdefault(code, meaning)
            _, columns = _refs(text)
            column = None
            if "colonna" in keys:
                found = _split_list(keys["colonna"][1])
                column = found[0] if len(found) == 1 else None
            elif len(columns) == 1:
                column = columns[0]
            if column is None:
                listing = "\n".join(f"{k}: {v}" for k, v in values.items())
                return [
                    _Piece(
                        section.title,
                        "domain",
                        {"rule": listing},
                        head + table,
                        [*notes, _ENUM_COLUMN_UNKNOWN],
                    )
                ]
            return [
                _Piece(
                    section.title, "enum", {"column": column, "values": values}, head + table, notes
                )
            ]
        if any(h in _MAP_CONCEPT for h in header) and any(h in _MAP_TABLES for h in header):
            used.update(table)
            c_at = next(i for i, h in enumerate(header) if h in _MAP_CONCEPT)
            t_at = next(i for i, h in enumerate(header) if h in _MAP_TABLES)
            k_at = next((i for i, h in enumerate(header) if h in _MAP_COLUMNS), None)
            pieces = []
            for line_no, cells in rows:
                if len(cells) <= max(c_at, t_at):
                    continue
                concept = _clean(cells[c_at])
                columns = _split_list(cells[k_at]) if k_at is not None and k_at < len(cells) else []
                if concept:
                    pieces.append(
                        _Piece(
                            concept,
                            "mapping",
                            {
                                "concept": concept,
                                "tables": _split_list(cells[t_at]),
                                "columns": columns,
                            },
                            [table[0], table[1], line_no],
                            concepts=[concept],
                        )
                    )
            return pieces
        return []

    def _glossary_pieces(
        self, section: _Section, lines: list[str], used: set[int], glossary_file: bool
    ) -> list[_Piece]:
        by_term: dict[str, _Piece] = {}
        pieces: list[_Piece] = []
        for i in section.lines:
            if i in used:
                continue
            m = _DEFINITION.match(lines[i])
            if not m and glossary_file:
                m = _PLAIN_DEFINITION.match(lines[i])
                if m and (
                    m.group("term").lower() in {"sinonimi", "varianti", "nota", "note"}
                    or _KEY_LINE.match(lines[i])
                ):
                    m = None
            if not m:
                continue
            used.add(i)
            term = _clean(m.group("term")).rstrip(":").strip()
            data = self._definition(term, m.group("def"))
            key = term.casefold()
            if key in by_term:
                first = by_term[key]
                if first.data["definition"] != data["definition"]:
                    first.notes.append(
                        ReviewNote(
                            "conflicting_definition",
                            f"{term!r} is defined twice in the source with different text: "
                            f"{first.data['definition']!r} and {data['definition']!r}.",
                            "glossary.definition",
                        )
                    )
                first.lines.append(i)
                continue
            piece = _Piece(term, "glossary", data, [i], concepts=[term])
            by_term[key] = piece
            pieces.append(piece)
        return pieces

    @staticmethod
    def _definition(term: str, text: str) -> dict[str, object]:
        synonyms: list[str] = []
        m = _SYNONYMS.search(text)
        if m:
            synonyms = _split_list(m.group("list"))
            text = (text[: m.start()] + text[m.end() :]).strip()
        return {"term": term, "definition": text.strip() or term, "synonyms": synonyms}

    def _legacy_formula(self, rel: str, lines: list[str]) -> list[_Piece]:
        try:
            front = split_front_matter("\n".join(lines), rel)
        except FrontMatterError as exc:
            raise RestructureError(exc.problems[0].message) from exc
        meta: dict[str, object] = front.fields or {}
        body_start = front.body_line
        section = self._sections(rel, lines[body_start:] if body_start else lines)
        title = str(meta.get("name") or (section[0].title if section else rel))
        for s in section:  # re-base indices onto the full file
            s.lines = [i + body_start for i in s.lines]
            s.heading = None if s.heading is None else s.heading + body_start
        title = next(
            (
                lines[i][2:].strip()
                for i in range(body_start, len(lines))
                if lines[i].startswith("# ")
            ),
            title,
        )
        all_lines = [i for i in range(len(lines)) if lines[i].strip()]
        fenced = [i for i in range(len(lines)) if _FENCE.match(lines[i])]
        if len(fenced) < 2:
            return _legacy_rule(
                title,
                "\n".join(lines[body_start:]).strip(),
                all_lines,
                "The legacy formula has no ```sql block.",
            )
        code = "\n".join(lines[fenced[0] + 1 : fenced[1]]).strip()
        concept = str(meta.get("concept") or title)
        raw_columns = meta.get("columns") or []
        columns = [str(c) for c in raw_columns] if isinstance(raw_columns, list) else []
        if not columns:
            columns = _refs("\n".join(lines))[1]
        formula = check_expression(code)  # checked once, used by every branch below
        if formula.ok and columns:
            return [
                _Piece(
                    title,
                    "formula",
                    {"concept": concept, "columns": columns, "sql": code},
                    all_lines,
                    concepts=[concept],
                )
            ]
        if formula.ok:
            return _legacy_rule(
                title,
                code,
                all_lines,
                "The legacy formula names no input columns; add them and reclassify it as formula.",
            )
        query = check_read_only_query(code)
        if query.ok:
            prose = " ".join(
                lines[i]
                for i in range(body_start, fenced[0])
                if lines[i].strip() and not lines[i].startswith("#")
            )
            return [
                _Piece(
                    title,
                    "example",
                    {"question": title, "interpretation": prose or title, "sql": code},
                    all_lines,
                    [
                        ReviewNote(
                            "legacy_formula_incompatible",
                            "The legacy formula is a complete query, not one composable "
                            "expression: it was imported as an example. Rewrite it as an "
                            "expression (and reclassify) or keep it as an example.",
                            "example.sql",
                        )
                    ],
                )
            ]
        return _legacy_rule(
            title,
            code,
            all_lines,
            f"The legacy formula's SQL is not accepted: {_refusal(formula, query)[1]}",
        )

    # -- drafts ----------------------------------------------------------------------

    def _drafts(self, pieces: list[_Piece], lines: list[str], prior: Sequence[Unit]) -> list[Draft]:
        prior_by_title: dict[str, list[str]] = {}
        for unit in prior:
            prior_by_title.setdefault(unit.title.casefold(), []).append(unit.id)
        seen_titles: dict[str, int] = {}
        drafts = []
        for piece in pieces:
            key = piece.title.casefold()
            seen_titles[key] = seen_titles.get(key, 0) + 1
            if seen_titles[key] > 1:  # two pieces with one title: keep titles distinct
                piece.title = f"{piece.title} ({seen_titles[key]})"
                key = piece.title.casefold()
            candidates = prior_by_title.get(key, [])
            existing = candidates.pop(0) if candidates else None
            own = sorted(set(piece.lines))
            text = "\n".join(lines[i] for i in own)
            tables, columns = _refs(text)
            notes = list(piece.notes) + self._doubts(own, lines)
            drafts.append(
                Draft(
                    title=piece.title,
                    kind=piece.kind,
                    data=piece.data,
                    excerpts=_excerpts(own, lines),
                    body=self._body(piece.title, own, lines),
                    applies_to={"concepts": piece.concepts, "tables": tables, "columns": columns},
                    review_items=notes,
                    existing_id=existing,
                )
            )
        return drafts

    @staticmethod
    def _doubts(own: list[int], lines: list[str]) -> list[ReviewNote]:
        notes = []
        for i in own:
            line = lines[i].strip()
            for sentence in re.split(r"(?<=[.!?])\s+", line):
                if _DOUBT.search(sentence):
                    notes.append(
                        ReviewNote(
                            "ambiguous_source_statement", f"The source flags a doubt: {sentence!r}"
                        )
                    )
                elif _CONFLICT.search(sentence):
                    notes.append(
                        ReviewNote(
                            "conflicting_source_statement",
                            f"The source reports a conflict: {sentence!r}",
                        )
                    )
        return notes

    @staticmethod
    def _body(title: str, own: list[int], lines: list[str]) -> str:
        content = [lines[i] for i in own if not lines[i].startswith(("# ", "## "))]
        return f"# {title}\n\n" + "\n".join(content).strip()


def _excerpts(own: list[int], lines: list[str]) -> list[str]:
    """Verbatim runs of consecutive source lines, each at most MAX_EXCERPT_CHARS, at most
    MAX_EXCERPTS of them: exact substrings of the normalised source."""
    runs: list[list[int]] = []
    for i in own:
        if not lines[i].strip():
            continue
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    pieces: list[str] = []
    for run in runs:
        current = ""
        for i in run:
            line = lines[i].strip()
            candidate = f"{current}\n{lines[i]}" if current else line
            if len(candidate) <= MAX_EXCERPT_CHARS:
                current = candidate
                continue
            if current:
                pieces.append(current)
            current = line if len(line) <= MAX_EXCERPT_CHARS else _cut(line)
        if current:
            pieces.append(current)
    return pieces[:MAX_EXCERPTS]


def _cut(line: str) -> str:
    head = line[:MAX_EXCERPT_CHARS]
    space = head.rfind(" ")
    return head[:space] if space > MAX_EXCERPT_CHARS // 2 else head
