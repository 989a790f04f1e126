"""The domain expert's questionnaire (issue 29, point 4), end to end on a Git workspace with a
wiki source: written outside the indexed folder with the proposed wording, the caveat and the
confidence scale; applied back as a change in the working tree for review — high removes the
caveat, medium rewrites it, low or blank leaves the page as it is; never indexed, even moved
into the wiki; a broken or stale file refused with its code and the page untouched."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import commit_all, git
from tests.fake_embeddings import FakeEmbeddingServer
from thoth.cli.main import app
from thoth.wiki.questionnaire import is_questionnaire, parse_returned

runner = CliRunner()
PAGE = "wiki/ps/accessi.md"
CLAIM = "Nel 2023 gli accessi al PS pediatrico sono cresciuti del 53%."
CAVEAT = (
    "Il valore del 53% è anomalo: il cambio del gestionale ha contato due volte i "
    "trasferimenti interni."
)
PAGE_TEXT = f"""---
title: Accessi al PS pediatrico
labels: [public]
---
# Accessi al PS pediatrico

## Andamento

{CLAIM}

## Avvertenze

{CAVEAT}

## Fonti

Rapporto annuale del DWH clinico.
"""
LISTED = f"""---
title: Riammissioni
labels: [public]
caveats:
  - "Le riammissioni del 2024 sono provvisorie."
---
# Riammissioni

Il tasso di riammissione a 30 giorni è del 7%.

## Avvertenze

- {CAVEAT}
- Il dato di dicembre manca.
"""
CONFIG = """workspace = "qs"
language = "it"

[embedding]
provider = "openai"
base_url = "{url}"
model = "fake"
dim = 8

[[channels]]
name = "ps"
examples = ["accessi al pronto soccorso"]

[[sources]]
name = "wiki"
kind = "wiki"
include = ["wiki/**/*.md"]
channel = "ps"
labels = ["public"]
"""


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    with FakeEmbeddingServer(dim=8) as embeddings:
        root = tmp_path / "ws"
        (root / "wiki" / "ps").mkdir(parents=True)
        git(root, "init", "-q")
        (root / ".gitignore").write_text(".thoth/\n", encoding="utf-8")
        (root / "thoth.toml").write_text(CONFIG.format(url=embeddings.url), encoding="utf-8")
        (root / PAGE).write_text(PAGE_TEXT, encoding="utf-8")
        (root / "wiki/ps/riammissioni.md").write_text(LISTED, encoding="utf-8")
        commit_all(root, "pages")
        yield root


def tht(ws: Path, *args: str) -> tuple[int, Any]:
    result = runner.invoke(app, [*args, "-w", str(ws), "--json"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result.exit_code, result.output


def write(ws: Path, page: str = PAGE, *extra: str) -> Path:
    code, written = tht(ws, "wiki", "questionnaire", page, *extra)
    assert code == 0, written
    return ws / str(written["file"])


def answer(file: Path, confidence: str, *, wording: tuple[str, str] | None = None,
           caveat: str | None = None) -> None:  # fmt: skip
    text = file.read_text("utf-8")
    text = text.replace("Confidenza:\n", f"Confidenza: {confidence}\n")
    if wording:
        text = text.replace(*wording)
    if caveat:
        head, _, rest = text.partition("~~~~text caveat\n")
        _, _, tail = rest.partition("\n~~~~")
        text = f"{head}~~~~text caveat\n{caveat}\n~~~~{tail}"
    file.write_text(text, "utf-8")


def test_the_questionnaire_holds_the_wording_the_caveat_and_the_scale_outside_the_index(
    ws: Path,
) -> None:
    file = write(ws)
    assert file.parent == ws / "questionnaires"
    text = file.read_text("utf-8")
    assert CLAIM in text and f"> {CAVEAT}" in text and "Confidenza:" in text
    assert "**alta**" in text and "**media**" in text and "**bassa**" in text
    assert "Rapporto annuale" in text  # the rest of the page is wording too
    assert is_questionnaire(text)
    returned = parse_returned(text, "q")
    assert returned.confidence == "low" and returned.caveat == " ".join(CAVEAT.split())
    assert "## Avvertenze" not in returned.wording  # the caveat section is asked apart
    assert (ws / PAGE).read_text("utf-8") == PAGE_TEXT  # the page is published as it is
    code, refused = tht(ws, "wiki", "questionnaire", PAGE, "--out", "wiki/ps")
    assert code == 1 and refused["code"] == "questionnaire_indexed"


def test_high_removes_the_caveat_and_applies_the_corrected_wording(ws: Path) -> None:
    file = write(ws)
    corrected = "Nel 2023 gli accessi al PS pediatrico sono cresciuti del 3,5%."
    answer(file, "alta", wording=(CLAIM, corrected))
    code, applied = tht(ws, "wiki", "questionnaire", "apply", str(file))
    assert code == 0, applied
    assert (applied["outcome"], applied["wording_changed"]) == ("caveat_removed", True)
    page = (ws / PAGE).read_text("utf-8")
    assert corrected in page and CLAIM not in page
    assert "Avvertenze" not in page and CAVEAT not in page  # its only caveat: section gone
    assert "Rapporto annuale" in page
    diff = git(ws, "diff", "--stat")
    assert PAGE in diff  # a change in the working tree, for review: Thoth never commits
    assert git(ws, "log", "--oneline").count("\n") == 1


def test_medium_rewrites_the_caveat_where_it_was(ws: Path) -> None:
    file = write(ws)
    precise = "Il 53% include i trasferimenti interni di marzo-dicembre 2023; senza, +3,5%."
    answer(file, "medium", caveat=precise)
    code, applied = tht(ws, "wiki", "questionnaire", "apply", str(file))
    assert code == 0, applied
    assert (applied["outcome"], applied["new_caveat"]) == ("caveat_rewritten", precise)
    page = (ws / PAGE).read_text("utf-8")
    assert page == PAGE_TEXT.replace(CAVEAT, precise)


def test_low_or_blank_leaves_the_page_as_it_is(ws: Path) -> None:
    for confidence in ("bassa", ""):
        file = write(ws)
        answer(file, confidence, wording=(CLAIM, "Cresciuti del 10%."))
        code, applied = tht(ws, "wiki", "questionnaire", "apply", str(file))
        assert code == 0 and applied["outcome"] == "unchanged", applied
        assert (ws / PAGE).read_text("utf-8") == PAGE_TEXT
    assert git(ws, "status", "--porcelain") == "?? questionnaires/\n"


def test_caveats_in_a_list_and_in_the_front_matter(ws: Path) -> None:
    page = "wiki/ps/riammissioni.md"
    code, ambiguous = tht(ws, "wiki", "questionnaire", page)
    assert code == 1 and ambiguous["code"] == "questionnaire_caveat_ambiguous"
    file = write(ws, page, "--caveat", "2")  # the first list item of the section
    answer(file, "high")
    assert tht(ws, "wiki", "questionnaire", "apply", str(file))[0] == 0
    text = (ws / page).read_text("utf-8")
    assert CAVEAT not in text and "- Il dato di dicembre manca." in text
    commit_all(ws, "reviewed")
    file = write(ws, page, "--caveat", "1")  # the front matter's
    answer(file, "media", caveat="Le riammissioni del 2024 saranno definitive a marzo 2025.")
    assert tht(ws, "wiki", "questionnaire", "apply", str(file))[0] == 0
    text = (ws / page).read_text("utf-8")
    assert "  - Le riammissioni del 2024 saranno definitive a marzo 2025." in text
    assert "provvisorie" not in text


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda t: t.replace("Confidenza:\n", "Confidenza: forse\n"), "questionnaire_confidence_unknown"),
        (lambda t: t.replace("Confidenza:\n", ""), "questionnaire_invalid"),
        (lambda t: t.replace("Confidenza:\n", "Confidenza: alta\nConfidenza: bassa\n"), "questionnaire_invalid"),
        (lambda t: t.replace("~~~~text wording\n", "text wording\n"), "questionnaire_invalid"),
        (lambda t: t.rsplit("~~~~", 1)[0] + "Confidenza: alta\n", "questionnaire_invalid"),
        (lambda t: t.replace("page_sha256: ", "page_sha256: 0"), "questionnaire_stale"),
        (lambda t: t.replace(f"page: {PAGE}", "page: ../../etc/passwd"), "questionnaire_invalid"),
        (lambda t: t.replace("Confidenza:\n", "Confidenza: media\n"), "questionnaire_caveat_unchanged"),
    ],
)  # fmt: skip
def test_a_broken_answer_is_refused_with_its_code_and_the_page_untouched(
    ws: Path, edit: Any, code: str
) -> None:
    file = write(ws)
    file.write_text(
        edit(file.read_text("utf-8").replace("Confidenza:\n", "Confidenza:\n")), "utf-8"
    )
    exit_code, refused = tht(ws, "wiki", "questionnaire", "apply", str(file))
    assert exit_code == 1, refused
    assert code in {refused["code"], *(p["code"] for p in refused["problems"])}, refused
    assert (ws / PAGE).read_text("utf-8") == PAGE_TEXT


def test_a_page_changed_since_is_stale_and_an_uncommitted_page_is_not_rewritten(ws: Path) -> None:
    file = write(ws)
    answer(file, "alta")
    (ws / PAGE).write_text(PAGE_TEXT + "\nAggiunta.\n", "utf-8")
    code, refused = tht(ws, "wiki", "questionnaire", "apply", str(file))
    assert code == 1 and refused["code"] == "questionnaire_stale"
    file = write(ws)  # written on the uncommitted page: its change would not be alone in Git
    answer(file, "alta")
    code, refused = tht(ws, "wiki", "questionnaire", "apply", str(file))
    assert code == 4 and "uncommitted" in refused["error"], refused
    assert (ws / PAGE).read_text("utf-8") == PAGE_TEXT + "\nAggiunta.\n"


def test_a_questionnaire_moved_into_the_wiki_is_never_indexed(ws: Path) -> None:
    """Moved into the wiki, even with `knowledge: false` taken out of its front matter: the
    sync lists it as not knowledge, and no fragment of it is indexed."""
    file = write(ws)
    moved = ws / "wiki" / "ps" / file.name
    moved.write_text(file.read_text("utf-8").replace("knowledge: false\n", ""), "utf-8")
    commit_all(ws, "moved")
    code, synced = tht(ws, "docs", "sync")
    assert code == 0, synced
    reasons = {d["doc_id"]: d["reason"] for d in synced["not_knowledge"]}
    assert "questionnaire" in reasons[f"wiki:wiki/ps/{file.name}"]
    code, shown = tht(ws, "docs", "show", f"wiki:wiki/ps/{file.name}")
    assert code == 2, shown  # nothing of it is in the active generation
    code, shown = tht(ws, "docs", "show", f"wiki:{PAGE}")
    assert code == 0, shown  # the page itself is served, with its caveat


DEMO_PAGE = Path(__file__).resolve().parents[2] / (
    "examples/clinical-dwh/wiki/pronto-soccorso/accessi-pediatrici.md"
)


@pytest.mark.parametrize(
    ("confidence", "outcome"),
    [("alta", "caveat_removed"), ("media", "caveat_rewritten"), ("bassa", "unchanged")],
)
def test_the_three_outcomes_on_the_demo_page(ws: Path, confidence: str, outcome: str) -> None:
    """The demo's own page (two caveats in its Avvertenze section), the first caveat asked."""
    text = DEMO_PAGE.read_text("utf-8").replace("channel: pronto-soccorso\n", "")
    (ws / PAGE).write_text(text, "utf-8")
    commit_all(ws, "the demo page")
    file = write(ws, PAGE, "--caveat", "1")
    anomaly = "Il valore del 53% della prima sezione è un valore anomalo."
    assert anomaly in file.read_text("utf-8")
    precise = "Il 53% conta due volte i trasferimenti interni da marzo 2023: senza, +3,5%."
    answer(file, confidence, caveat=precise if confidence == "media" else None)
    code, applied = tht(ws, "wiki", "questionnaire", "apply", str(file))
    assert code == 0 and applied["outcome"] == outcome, applied
    page = (ws / PAGE).read_text("utf-8")
    second = "Le estrazioni della tabella per struttura scaricate prima del 18 novembre 2024"
    assert second in page  # the other caveat is not the questionnaire's
    assert (anomaly in page) == (outcome == "unchanged")
    assert (precise in page) == (outcome == "caveat_rewritten")
    assert "## Avvertenze" in page
