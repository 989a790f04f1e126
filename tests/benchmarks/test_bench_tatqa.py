"""benchmarks/tatqa_retrieval.py on a tiny TAT-QA-format file: the table handling, the
relevance rule, row-safe chunking and the --json output (fake embeddings, real Qdrant Edge)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_embeddings import FakeEmbeddingServer
from thoth.documents.chunk import ChunkLimits
from thoth.embed.openai_compat import OpenAICompatEmbedder
from thoth.markup import markdown_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import tatqa_retrieval as tq

COUNTRIES = [
    "Italy",
    "France",
    "Germany",
    "Spain",
    "Portugal",
    "Austria",
    "Belgium",
    "Netherlands",
    "Denmark",
    "Sweden",
    "Norway",
    "Finland",
    "Poland",
    "Greece",
    "Ireland",
    "Czech Republic",
    "Hungary",
    "Romania",
    "Bulgaria",
    "Croatia",
    "Slovenia",
    "Slovakia",
    "Estonia",
    "Latvia",
    "Lithuania",
    "Luxembourg",
    "Malta",
    "Cyprus",
    "Iceland",
    "Switzerland",
    "Canada",
    "Mexico",
    "Brazil",
    "Argentina",
    "Chile",
    "Japan",
    "China",
    "India",
    "Australia",
    "Egypt",
]


def _tatqa() -> list[dict[str, Any]]:
    revenue = {
        "table": {
            "uid": "ctx-revenue",
            "table": [
                ["", "", "Years Ended December 31,"],
                ["", "2019", "2018"],
                ["Wind turbines", "$ 1,200.5", "$ 900.0"],
                ["Solar panels", "300.1", "250.7"],
                ["Total", "$1,500.6", "$1,150.7"],
            ],
        },
        "paragraphs": [
            {
                "uid": "p1",
                "order": 1,
                "text": "Revenue by segment is presented in the table below:",
            },
            {
                "uid": "p2",
                "order": 2,
                "text": "The company expects wind turbines revenue to double in the next two "
                "years because of new offshore contracts signed in Norway and Denmark.",
            },
        ],
        "questions": [
            {
                "uid": "q1",
                "order": 1,
                "question": "What is the change in Solar panels revenue from 2018 to 2019?",
                "answer": 49.4,
                "derivation": "300.1-250.7",
                "answer_type": "arithmetic",
                "answer_from": "table",
                "rel_paragraphs": [],
            },
            {
                "uid": "q2",
                "order": 2,
                "question": "Why does the company expect wind turbines revenue to double?",
                "answer": ["because of new offshore contracts signed in Norway and Denmark"],
                "derivation": "",
                "answer_type": "span",
                "answer_from": "text",
                "rel_paragraphs": ["2"],
            },
        ],
    }
    headcount = {
        "table": {
            "uid": "ctx-headcount",
            "table": [
                ["Country", "2019", "2018", "2017", "2016"],
                *[
                    [name, *(f"{1000 + (37 - 2 * y) * i:,}" for y in range(4))]
                    for i, name in enumerate(COUNTRIES)
                ],
            ],
        },
        "paragraphs": [
            {"uid": "p3", "order": 1, "text": "Headcount by country."},
            {
                "uid": "p4",
                "order": 2,
                "text": "Headcount is measured on the last working day of the year and includes "
                "part-time employees counted as full-time equivalents.",
            },
        ],
        "questions": [
            {
                "uid": "q3",
                "order": 1,
                "question": "How many employees were in Greece in 2019?",
                "answer": ["1,481"],
                "derivation": "",
                "answer_type": "span",
                "answer_from": "table",
                "rel_paragraphs": [],
            },
            {
                "uid": "q4",
                "order": 2,
                "question": "When is headcount measured?",
                "answer": ["on the last working day of the year"],
                "derivation": "",
                "answer_type": "span",
                "answer_from": "table-text",
                "rel_paragraphs": ["2"],
            },
        ],
    }
    return [revenue, headcount]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "tatqa_tiny.json"
    path.write_text(json.dumps(_tatqa()), encoding="utf-8")
    return path


def test_table_becomes_one_block_with_a_merged_header(data: Path) -> None:
    revenue, headcount = tq.load_tatqa(data)
    assert revenue.table.header_rows == 2
    assert revenue.table.header == (
        "",
        "Years Ended December 31, 2019",
        "Years Ended December 31, 2018",
    )
    assert revenue.table.body[1] == ("Solar panels", "300.1", "250.7")
    # "... in the table below" announces the table: it follows paragraph 1.
    assert revenue.table_at == 1
    kinds = [b.kind for b in tq.build_document(revenue).blocks]
    assert kinds == ["paragraph", "table", "paragraph"]
    # No announcing paragraph: the table comes first, as TAT-QA presents it.
    assert headcount.table_at == 0
    assert headcount.table.header_rows == 1
    assert len(headcount.table.body) == len(COUNTRIES)


def test_relevance_of_a_table_question(data: Path) -> None:
    revenue, headcount = tq.load_tatqa(data)
    q1 = revenue.questions[0]
    rows = tq.evidence_rows(q1, revenue.table)
    assert rows == {1}  # the Solar panels row holds the derivation's 300.1 and 250.7

    def naive(text: str, ctx: tq.Context = revenue) -> tq.ChunkInfo:
        return tq.chunk_info(ctx, "naive", 0, text, False)

    whole = "Wind turbines $ 1,200.5 $ 900.0\nSolar panels 300.1 250.7\nTotal $1,500.6"
    assert tq.is_relevant(q1, revenue, rows, naive(whole))
    # The row cut by the window: its value is there, its label is not.
    assert not tq.is_relevant(q1, revenue, rows, naive("nels 300.1 250.7\nTotal $1,500.6"))
    # Table content, but not the row with the evidence.
    assert not tq.is_relevant(q1, revenue, rows, naive("Total $1,500.6 $1,150.7"))
    # The same text in another context is not relevant.
    other = tq.chunk_info(headcount, "naive", 0, whole, False)
    assert not tq.is_relevant(q1, revenue, rows, other)
    # "ours": the Markdown row line must be in the chunk.
    (only,) = tq.chunk_context(revenue, "ours", ChunkLimits(), 1000, 100)
    assert only.rows == {0, 1, 2}
    assert tq.is_relevant(q1, revenue, rows, only)
    assert "| Solar panels | 300.1 | 250.7 |" in only.text.split("\n")


def test_relevance_of_a_text_question(data: Path) -> None:
    revenue, _ = tq.load_tatqa(data)
    q2 = revenue.questions[1]
    assert tq.evidence_rows(q2, revenue.table) == frozenset()
    paragraph = revenue.paragraphs[1][1]

    def naive(text: str) -> tq.ChunkInfo:
        return tq.chunk_info(revenue, "naive", 0, text, False)

    assert tq.is_relevant(q2, revenue, frozenset(), naive("Total $1,500.6\n" + paragraph))
    half = paragraph[: len(paragraph) * 2 // 3]
    assert tq.is_relevant(q2, revenue, frozenset(), naive(half))
    assert not tq.is_relevant(q2, revenue, frozenset(), naive(paragraph[-40:]))
    # Table rows are no evidence for a text question.
    table_only = "Wind turbines $ 1,200.5 $ 900.0\nSolar panels 300.1 250.7"
    assert not tq.is_relevant(q2, revenue, frozenset(), naive(table_only))


def test_table_text_question_accepts_either_evidence(data: Path) -> None:
    _, headcount = tq.load_tatqa(data)
    q4 = headcount.questions[1]
    assert tq.evidence_rows(q4, headcount.table) == frozenset()  # not located in the table
    chunks = tq.chunk_context(headcount, "ours", ChunkLimits(), 1000, 100)
    with_text = next(c for c in chunks if tq.covers(c, 2))
    rows_only = next(c for c in chunks if c.rows and not tq.covers(c, 2))
    assert tq.is_relevant(q4, headcount, frozenset(), with_text)
    assert tq.is_relevant(q4, headcount, frozenset(), rows_only)  # any table row counts
    title = tq.chunk_info(headcount, "naive", 0, "Headcount by country.", False)
    assert not tq.is_relevant(q4, headcount, frozenset(), title)


def test_ours_never_splits_a_table_row(data: Path) -> None:
    _, headcount = tq.load_tatqa(data)
    table = headcount.table
    assert len(tq.table_block(table).text) > ChunkLimits().max_chars  # must be split
    chunks = tq.chunk_context(headcount, "ours", ChunkLimits(), 1000, 100)
    parts = [c for c in chunks if c.is_table]
    assert len(parts) > 1
    header, separator = markdown_table(table.header, []).split("\n")
    row_lines = [tq.ours_row(table, row) for row in table.body]
    seen: list[int] = []
    for part in parts:
        lines = [line for line in part.text.split("\n") if line.startswith("|")]
        assert lines[:2] == [header, separator]  # every part repeats the header
        assert all(line in row_lines for line in lines[2:])  # only whole rows
        seen += sorted(part.rows)
    assert seen == list(range(len(row_lines)))  # every row once, in order
    # The naive windows do cut rows: a window ends inside one.
    naive_rows = [tq.naive_row(row) for row in table.body]
    tails = [w.split("\n")[-1] for w in tq.windows(tq.naive_text(headcount), 300, 50)[:-1]]
    assert any(
        tail and tail not in naive_rows and any(row.startswith(tail) for row in naive_rows)
        for tail in tails
    )
    assert tq.evidence_rows(headcount.questions[0], table) == {COUNTRIES.index("Greece")}


def test_ours_ctx_searches_the_product_search_text_of_the_same_chunks(data: Path) -> None:
    _, headcount = tq.load_tatqa(data)
    ours = tq.chunk_context(headcount, "ours", ChunkLimits(), 1000, 100)
    ctx = tq.chunk_context(headcount, "ours-ctx", ChunkLimits(), 1000, 100)
    # The same chunks, rows and relevance: only what is embedded and BM25-encoded differs.
    assert [(c.text, c.rows, c.cover) for c in ctx] == [(c.text, c.rows, c.cover) for c in ours]
    assert all(c.search == c.text for c in ours)
    for c in (c for c in ctx if c.is_table):
        assert c.search != c.text and "|" not in c.search and "---" not in c.search
        greece = next(row for row in headcount.table.body if row[0] == "Greece")
        if c.rows & {COUNTRIES.index("Greece")}:
            assert " ".join(cell for cell in greece if cell) in c.search.split("\n")


def test_json_output_parses(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(data), "--json", "--cache", str(tmp_path / "cache"), "--k", "1", "20"]
    argv += ["--naive-size", "300", "--naive-overlap", "50"]
    with FakeEmbeddingServer(dim=8) as server:
        code = tq.main(argv, embedder=OpenAICompatEmbedder(server.url, "fake-e5", dim=8))
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["data"]["contexts"] == 2
    assert result["data"]["questions"] == 4
    assert len(result["per_question"]) == 4
    assert result["data"]["answer_from"] == {"table": 2, "text": 1, "table-text": 1}
    assert list(result["strategies"]) == ["ours", "naive", "ours-ctx"]
    for strategy in ("ours", "naive", "ours-ctx"):
        r = result["strategies"][strategy]
        assert r["questions_without_relevant_chunk"] == 0
        assert r["records_matching_filter"] == r["sizes"]["count"] <= 20
        for branch in ("dense", "bm25", "fused"):
            m = r["metrics"][branch]
            # At most 20 chunks in all: every question's relevant chunk is in its top 20.
            assert m["all"]["hit@20"] == 1.0
            assert m["all"]["n"] == 4
            assert set(m) == {"all", "table", "text", "table-text"}
    assert result["strategies"]["ours"]["tables_split"] == 1
    assert result["strategies"]["naive"]["sizes"]["max"] == 300
