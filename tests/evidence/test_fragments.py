"""Fragments (seed §9.8): split along typed fields and paragraphs, atomic elements never cut,
the whole rendered text within max_chunk_chars, caveats never embedded."""

from collections.abc import Callable

import pytest

from tests.conftest import ENUM, commit_all
from tests.evidence.test_model import unit_text
from thoth.evidence.document import parse_unit
from thoth.evidence.fragments import TOO_LARGE, fragment_unit, oversized
from thoth.evidence.model import Unit
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer
from thoth.evidence.validate import validate_workspace
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


def unit(kind: str, data: dict[str, object], **envelope: object) -> Unit:
    parsed = parse_unit(unit_text(kind, data, **envelope), "x.md")
    assert not isinstance(parsed, list), parsed
    return parsed


def test_enum_pairs_are_packed_but_never_split() -> None:
    values = {f"C{n:03d}": f"significato numero {n} " + "x" * 40 for n in range(200)}
    u = unit("enum", {"column": "a.b.c", "values": values})
    fragments = fragment_unit(u, max_chars=1000)
    assert len(fragments) > 5
    assert all(len(f.text) <= 1000 for f in fragments)
    joined = "\n".join(f.text for f in fragments)
    for code, meaning in values.items():
        assert f"{code} = {meaning}" in joined  # every pair whole, in some fragment
    assert all(f.text.startswith("Test\nTipo: enum") for f in fragments)  # header everywhere
    assert [f.ordinal for f in fragments] == list(range(len(fragments)))


def test_formula_is_one_fragment() -> None:
    u = unit(
        "formula",
        {"concept": "età", "columns": ["a.b.c"], "sql": "CASE WHEN x < 18 THEN 1 ELSE 0 END"},
    )
    [fragment] = fragment_unit(u, max_chars=4000)
    assert "CASE WHEN x < 18 THEN 1 ELSE 0 END" in fragment.text
    assert fragment.section == "formula"


def test_caveats_are_not_embedded() -> None:
    u = unit(
        "domain",
        {"rule": "Il giorno di dimissione non si conta."},
        caveats=["Vale solo per i ricoveri ordinari."],
    )
    assert all("ricoveri ordinari" not in f.text for f in fragment_unit(u, 4000))


def test_body_prose_adds_fragments_without_repeating_fields() -> None:
    u = unit("glossary", {"term": "ricovero", "definition": "permanenza in reparto"})
    u = u.model_copy(
        update={
            "body": "# Test\n\npermanenza in reparto\n\nUna nota in più sul "
            "ricovero notturno.\n\n```sql\nSELECT 1\n```"
        }
    )
    texts = [f.text for f in fragment_unit(u, 4000)]
    assert len(texts) == 2 and "Una nota in più" in texts[1]
    assert "SELECT 1" not in "".join(texts)


def test_an_atomic_element_over_the_limit_is_reported_not_cut() -> None:
    u = unit("formula", {"concept": "c", "columns": ["a.b.c"], "sql": "a + " * 300 + "b"})
    [found] = oversized(u, max_chars=500)
    assert found.field == "formula" and found.chars > 500
    with pytest.raises(ValueError, match="exceeds max_chunk_chars=500"):
        fragment_unit(u, max_chars=500)


def test_too_large_blocks_publication(make_workspace: Make) -> None:
    huge = ENUM.replace("| X | deceduto |", "| X | " + "deceduto " * 600 + "|")
    ws = make_workspace({"e.md": huge})
    (ws.root / "thoth.toml").write_text(
        'workspace = "w"\n[evidence]\nmax_chunk_chars = 1000\n', encoding="utf-8"
    )
    commit_all(ws.root)
    ws = Workspace.open(ws.root)
    report = prepare(ws, RuleBasedRestructurer())
    [items] = report.review_items.values()
    assert TOO_LARGE in [i["code"] for i in items]
    validation = validate_workspace(ws)
    assert not validation.publishable
    assert validation.too_large == ["evidence:esito-della-dimissione"]
