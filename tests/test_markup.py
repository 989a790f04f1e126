"""The one Markdown and front-matter reader (thoth.markup), and a table cell holding `|` through
the real pipeline: extraction, chunking (as `docs sync` prepares a document) and the
extractive answer."""

from __future__ import annotations

from pathlib import Path

import docx
import openpyxl
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.knowledge.test_ingest import make_repo, settings, source
from thoth.answer.answerers import ExtractiveAnswerer
from thoth.answer.context import assemble_context
from thoth.answer.retrieval import Retrieval, RetrievedFragment
from thoth.answer.routing import Route
from thoth.answer.seams import NoPseudonymizer
from thoth.answer.wording import ITALIAN
from thoth.documents.records import fragment_point_id
from thoth.documents.sources import read_source
from thoth.errors import ProblemsError
from thoth.evaluation.evidence import load_evaluation
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.restructure.base import Draft, RestructureError
from thoth.evidence.sources import SourceFile
from thoth.knowledge.ingest import prepare_document
from thoth.markup import (
    FrontMatterError,
    escape_cell,
    load_yaml,
    markdown_table,
    parse_markdown,
    split_front_matter,
    table_cells,
)
from thoth.schema import DescriptionsInvalid, load_descriptions

# --------------------------------------------------------------------------------------------
# Front matter


def test_front_matter_fields_body_and_body_line() -> None:
    split = split_front_matter("---\ntitle: T\nyear: 2024\n---\n# Titolo\n\nTesto.\n", "a.md")
    assert split.fields == {"title": "T", "year": 2024}
    assert split.body == "# Titolo\n\nTesto.\n"
    assert split.body_line == 4


@pytest.mark.parametrize(
    "text",
    ["# Nessun front matter\n", "---\ntitle: mai chiuso\n", "Testo\n---\ntitle: T\n---\n"],
)
def test_no_front_matter_leaves_the_whole_text_as_body(text: str) -> None:
    split = split_front_matter(text, "a.md")
    assert (split.fields, split.body, split.body_line) == (None, text, 0)


def test_the_yaml_end_marker_closes_and_an_empty_front_matter_has_no_fields() -> None:
    assert split_front_matter("---\ntitle: T\n...\nCorpo\n", "a.md").fields == {"title": "T"}
    assert split_front_matter("---\n---\nCorpo\n", "a.md").fields == {}


def test_invalid_yaml_names_the_file_and_the_line() -> None:
    with pytest.raises(FrontMatterError) as info:
        split_front_matter("---\ntitle: T\nlabels: [aperta\n---\nCorpo\n", "wiki/p.md")
    [problem] = info.value.problems
    assert problem.where == "wiki/p.md" and problem.code == "front_matter"
    assert "not valid YAML (line 4)" in problem.message, problem.message


def test_front_matter_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(FrontMatterError) as info:
        split_front_matter("---\n- una\n- lista\n---\nCorpo\n", "p.md")
    assert "a list, not a set of fields" in info.value.problems[0].message


def test_yaml_is_loaded_safely() -> None:
    with pytest.raises(FrontMatterError):
        split_front_matter("---\nx: !!python/object/apply:os.system ['true']\n---\n", "p.md")


# --------------------------------------------------------------------------------------------
# Blocks and tables


def test_blocks_with_kinds_levels_lines_and_table_cells() -> None:
    text = (
        "---\ntitle: T\n---\n# Titolo\n\nUn paragrafo\nsu due righe.\n\n- uno\n- due\n\n"
        "| Codice | Significato |\n| --- | --- |\n| A\\|B | uno |\n| `x\\|y` | due |\n\n"
        "```sql\nselect 1\n```\n"
    )
    blocks = parse_markdown(text)
    assert [(b.kind, b.level, b.lines) for b in blocks] == [
        ("heading", 1, (3, 4)),
        ("paragraph", None, (5, 7)),
        ("list", None, (8, 10)),
        ("table", None, (11, 15)),
        ("code", None, (16, 19)),
    ]
    heading, paragraph, _, table, code = blocks
    assert heading.text == "Titolo" and heading.source == "# Titolo"
    assert paragraph.text == "Un paragrafo\nsu due righe."
    assert table.header == ("Codice", "Significato")
    assert table.rows == (("A|B", "uno"), ("`x|y`", "due")), "the `\\|` escape is undone"
    assert table.row_lines == (13, 14)
    assert code.info == "sql"


def test_table_cells_of_exactly_one_table() -> None:
    assert table_cells("| a | b |\n| --- | --- |\n| 1 | 2 |") == (("a", "b"), (("1", "2"),))
    assert table_cells("| a | b |\n| 1 | 2 |") is None, "no delimiter row: not a table"
    assert table_cells("Testo.\n\n| a |\n| --- |\n| 1 |") is None


def test_the_writer_escapes_what_the_reader_unescapes() -> None:
    assert escape_cell("A|B") == "A\\|B"
    assert escape_cell("due\nrighe") == "due righe"
    assert markdown_table(["Codice", "Significato"], [["A|B", "uno"]]) == (
        "| Codice | Significato |\n| --- | --- |\n| A\\|B | uno |"
    )


_CELL = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=12
)


@given(st.lists(st.lists(_CELL, min_size=2, max_size=2), min_size=1, max_size=4))
def test_any_cell_survives_writing_and_reading(rows: list[list[str]]) -> None:
    cells = table_cells(markdown_table(["h1", "h2"], rows))
    assert cells is not None
    assert cells[1] == tuple(tuple(row) for row in rows)


# --------------------------------------------------------------------------------------------
# A cell holding `|`, through extraction, chunking and the extractive answer

MARKDOWN_CODES = """# Codici di esito

| Codice | Significato |
| --- | --- |
| A\\|B | uno |
| C | due |
"""


def _docx_codes(path: Path) -> bytes:
    document = docx.Document()
    document.add_heading("Codici di esito", level=1)
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(
        table.rows, [("Codice", "Significato"), ("A|B", "uno"), ("C", "due")], strict=True
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.save(str(path))
    return path.read_bytes()


def _xlsx_codes(path: Path) -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Codici"
    for row in [("Codice", "Significato"), ("A|B", "uno"), ("C", "due")]:
        sheet.append(row)
    book.save(path)
    return path.read_bytes()


@pytest.mark.parametrize("name", ["codici.md", "codici.docx", "codici.xlsx"])
def test_a_cell_with_a_pipe_survives_extraction_chunking_and_the_answer(
    tmp_path: Path, name: str
) -> None:
    builders = {"codici.docx": _docx_codes, "codici.xlsx": _xlsx_codes}
    data = builders[name](tmp_path / name) if name in builders else MARKDOWN_CODES.encode()
    repo = make_repo(tmp_path / "repo", {f"docs/{name}": data})
    snapshot = read_source(repo, source(strategy="blocks"))
    prepared = prepare_document(snapshot.files[0], settings(snapshot.source))

    # Chunking: the table chunk still reads back as the same cells.
    [table_text] = [
        block
        for fragment in prepared.fragments
        for block in fragment.text.split("\n\n")
        if block.startswith("|")
    ]
    assert table_cells(table_text) == (
        ("Codice", "Significato"),
        (("A|B", "uno"), ("C", "due")),
    ), table_text

    # The extractive answer quotes the row spelled out with its header, the whole cell kept.
    fragments = [
        RetrievedFragment(
            id=fragment_point_id(f.doc_id, f.ordinal),
            rank=rank,
            score=1.0 / rank,
            record=f.record("ws", "g1"),
            dense_rank=rank,
            bm25_rank=None,
            floor=False,
        )
        for rank, f in enumerate(prepared.fragments, start=1)
    ]
    retrieval = Retrieval("found", fragments, Route(), {}, "g1")
    answer = ExtractiveAnswerer("it", ITALIAN).answer(
        "Che cosa significa il codice A|B?",
        assemble_context(retrieval, 8000, ITALIAN),
        instructions=None,
        pseudonymizer=NoPseudonymizer(),
    )
    assert isinstance(answer, str), answer
    assert "«Codice: A|B; Significato: uno»" in answer, answer


def test_markdown_extraction_keeps_the_cell(tmp_path: Path) -> None:
    from thoth.documents import extract

    path = tmp_path / "codici.md"
    path.write_text(MARKDOWN_CODES, encoding="utf-8")
    [_, table] = extract(path).blocks
    assert table.rows == (("A|B", "uno"), ("C", "due"))
    assert table.text == MARKDOWN_CODES.split("\n\n", 1)[1].strip()


# --------------------------------------------------------------------------------------------
# The rule-based restructurer reads tables and front matter with the same reader


def _restructure(rel: str, text: str) -> list[Draft]:
    source_file = SourceFile(rel, "sha256:" + "0" * 64, text)
    return RuleBasedRestructurer().restructure(source_file, [], "it").drafts


def test_restructurer_value_table_keeps_a_code_with_a_pipe() -> None:
    text = (
        "# Esiti\n\n## Esito\n\nColonna: `clinical.episode.esito`\n\n"
        "| Codice | Significato |\n|---|---|\n| A\\|B | uno |\n| C | due |\n"
    )
    [draft] = _restructure("source/esiti.md", text)
    assert draft.kind == "enum"
    assert draft.data["values"] == {"A|B": "uno", "C": "due"}


def test_restructurer_ignores_pipe_lines_inside_a_code_block() -> None:
    text = (
        "# Esiti\n\n## Esempio di output\n\nColonna: `clinical.episode.esito`\n\n"
        "```text\n| Codice | Significato |\n|---|---|\n| D | dimesso |\n```\n"
    )
    assert all(draft.kind != "enum" for draft in _restructure("source/esiti.md", text))


def test_legacy_formula_with_unreadable_front_matter_names_the_line() -> None:
    text = "---\nname: Età\ncolumns: [aperta\n---\n# Età\n\n```sql\n1\n```\n"
    with pytest.raises(RestructureError, match=r"not valid YAML \(line 4\)"):
        _restructure("source/eta.sql.md", text)


def test_a_body_opening_with_a_rule_is_not_taken_for_front_matter() -> None:
    from thoth.documents.extract import markdown_document

    body = "---\n\nPrima parte.\n\n---\n\nSeconda parte.\n"
    document = markdown_document(body, Path("wiki:p.md"))
    assert [block.text for block in document.blocks] == ["Prima parte.", "Seconda parte."]


def _billion_laughs(depth: int = 12) -> str:
    """Nine-fold nested aliases: expanded, `*last` would be 9**depth strings."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, depth):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines)


def test_an_alias_bomb_in_front_matter_is_refused_by_name_before_any_expansion() -> None:
    text = f"---\ntitle: *a11\n{_billion_laughs()}\n---\nCorpo.\n"
    with pytest.raises(FrontMatterError, match=r"wiki/bomba\.md.*line 2.*aliases"):
        split_front_matter(text, "wiki/bomba.md")


def test_anchors_and_aliases_are_refused_by_every_yaml_reader(tmp_path: Path) -> None:
    """The evaluation files, the manifest, units and legacy formulas all read through
    load_yaml: one place refuses what would expand."""
    with pytest.raises(yaml.YAMLError, match="anchors and aliases"):
        load_yaml(_billion_laughs())
    with pytest.raises(yaml.YAMLError, match="anchors and aliases"):
        load_yaml("base: &b {x: 1}\nother: 2\n")  # an anchor alone is refused too
    assert load_yaml("plain: [1, 2]\ntext: 'a & b * c'\n") == {
        "plain": [1, 2],
        "text": "a & b * c",
    }
    evaluation = tmp_path / "evaluation.yaml"
    evaluation.write_text(f"questions: []\n{_billion_laughs()}\n", encoding="utf-8")
    with pytest.raises(ProblemsError, match="not valid YAML"):
        load_evaluation(evaluation)
    with pytest.raises(RestructureError, match="anchors and aliases"):
        _restructure(
            "source/bomba.sql.md", f"---\n{_billion_laughs()}\n---\n# Età\n\n```sql\n1\n```\n"
        )
    descriptions = tmp_path / "schema"
    descriptions.mkdir()
    (descriptions / "adt.admission.yaml").write_text(_billion_laughs(), encoding="utf-8")
    with pytest.raises(DescriptionsInvalid, match="anchors and aliases"):
        load_descriptions(tmp_path, "schema")
