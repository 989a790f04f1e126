"""Issue 24, point 6: Italian questions on English documents (and the reverse). The workspace
glossary lists terms that mean the same across languages; a question using one is searched
with the others too, each language's terms in the BM25 branch of that language and in the
second stage of ranking, and diagnostics say what was matched and added."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.answer.test_entities import build
from thoth.answer.service import AnswerService
from thoth.cli.main import app
from thoth.errors import ProblemsError
from thoth.glossary import Glossary, load_glossary
from thoth.knowledge.sync import SyncReport
from thoth.runtime import open_answer_service
from thoth.workspace import Workspace

GLOSSARY = """\
# terms that mean the same, per language
- it: [ricavi netti, fatturato]
  en: [net sales, net revenue]
- it: [riacquisto di azioni, azioni proprie]
  en: [share repurchases, buyback]
"""


def glossary(text: str = GLOSSARY, tmp: Path | None = None) -> Glossary:
    assert tmp is not None
    (tmp / "glossary.yaml").write_text(text, encoding="utf-8")
    return load_glossary(tmp, "glossary.yaml")


# -- the file and its matching -------------------------------------------------------------------


def test_a_term_is_matched_on_its_stems_and_adds_the_other_terms_by_language(
    tmp_path: Path,
) -> None:
    g = glossary(tmp=tmp_path)
    # "ricavo netto" is not written in the glossary: the Italian stems meet "ricavi netti".
    found = g.expand("A quanto è ammontato il ricavo netto di Fabrikam?")
    assert found.matched == ("ricavi netti",)
    assert found.added_in("en") == ("net sales", "net revenue")
    assert found.added_in("english") == ("net sales", "net revenue")  # Qdrant's name
    assert found.added_in("it") == ("fatturato",)
    # Consecutive words only: "netti ... ricavi" is not the term.
    assert not g.expand("Quanti netti e quanti ricavi?")
    # An acronym only as written: the Italian article "un" is not the United Nations.
    un = glossary("- it: [ONU]\n  en: [UN, United Nations]\n", tmp_path)
    assert not un.expand("Chi ha fondato un impero?")
    assert un.expand("Quando fu fondata l'UN?").added_in("it") == ("ONU",)
    # An acronym joined by "&" is one acronym: "A&E" is neither "a" nor the Italian "e" (and).
    ae = glossary("- it: [pronto soccorso]\n  en: [A&E, emergency department]\n", tmp_path)
    assert not ae.expand("Quanti pazienti e familiari aspettano?")
    assert ae.expand("How long is the wait in A&E?").added_in("it") == ("pronto soccorso",)
    # A negation is part of the term, though a stopword of BM25: "non programmato" is the
    # opposite of "programmato", and "non-elective" of "elective".
    unplanned = glossary(
        "- it: [ricovero non programmato]\n  en: [non-elective admission, unplanned admission]\n",
        tmp_path,
    )
    assert not unplanned.expand("Quanti ricoveri programmati nel 2024?")
    assert not unplanned.expand("How many elective admissions were there?")
    assert unplanned.expand("Quanti ricoveri non programmati nel 2024?").added_in("en") == (
        "non-elective admission",
        "unplanned admission",
    )
    assert unplanned.expand("How many non-elective admissions?").added_in("it") == (
        "ricovero non programmato",
    )
    # A question written in capitals is still stemmed: only the glossary's acronyms are.
    assert g.expand("QUALI SONO STATI I RICAVI NETTI?").matched == ("ricavi netti",)
    # The reverse direction: an English term adds the Italian ones.
    assert g.expand("How large were the share repurchases?").added_in("it") == (
        "riacquisto di azioni",
        "azioni proprie",
    )


def test_what_the_second_stage_matches_is_the_question_in_the_text_s_language(
    tmp_path: Path,
) -> None:
    g = glossary(tmp=tmp_path)
    question = "Quali sono stati i ricavi netti nel trimestre?"
    asked = g.question_in(question, g.expand(question), "en")
    # Italian stopwords and the Italian words the glossary matched are no English terms.
    for word in ("sono", "i", "ricavi", "netti", "nel"):
        assert word not in asked.split(), asked
    assert "net sales" in asked and "trimestre" in asked
    # An English question keeps its own matched words in English.
    english = "What were net sales in the quarter?"
    assert "sales" in g.question_in(english, g.expand(english), "en").split()
    # No match: the question as written.
    assert g.question_in("Chi è il CEO?", g.expand("Chi è il CEO?"), "en") == "Chi è il CEO?"


def test_the_glossary_s_terms_of_a_question_are_its_matched_words_then_the_added_terms(
    tmp_path: Path,
) -> None:
    # What the second stage weighs more: the reviewed vocabulary, not the question's framing.
    g = glossary(tmp=tmp_path)
    english = g.expand("How do net revenue trends compare with the outlook?")
    assert english.terms_in("en") == ("net", "revenue", "net sales")
    assert english.terms_in("english") == english.terms_in("en")
    assert english.terms_in("it") == ("ricavi netti", "fatturato")
    # An Italian question: no English word of its own, the English terms the entry adds.
    assert g.expand("Quanto fatturato?").terms_in("en") == ("net sales", "net revenue")


def test_a_bad_glossary_is_refused_whole_naming_each_entry(tmp_path: Path) -> None:
    bad = """\
- it: [ricavi]
- xx: [foo]
  en: [bar]
- it: ["  "]
  en: [net sales]
"""
    with pytest.raises(ProblemsError) as caught:
        glossary(bad, tmp_path)
    text = "\n".join(p.message for p in caught.value.problems)
    assert "[0]" in text and "at least two terms" in text
    assert "[1]" in text and "unknown language code(s) xx" in text
    assert "[2]" in text and "an empty term" in text
    assert {p.code for p in caught.value.problems} == {"glossary_invalid"}
    with pytest.raises(ProblemsError) as missing:
        load_glossary(tmp_path, "nowhere.yaml")
    assert missing.value.problems[0].code == "glossary_missing"


# -- end to end: the BM25 branch and the diagnostics --------------------------------------------


@pytest.fixture(scope="module")
def filings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root: Path = tmp_path_factory.mktemp("glossary") / "ws"
    report: SyncReport = build(root)
    assert report.outcome == "activated", report.message
    yield root


def _service(root: Path, with_glossary: bool, text: str = GLOSSARY) -> AnswerService:
    toml = root / "thoth.toml"
    config = toml.read_text(encoding="utf-8").replace('glossary = "glossary.yaml"\n', "")
    # The BM25 branch is what is measured here: a short Italian question over an English text
    # stays under the bundled embedder's generic floor (0.77 against 0.80), so it is lowered.
    if "min_similarity = 0.7\n" not in config:
        config = config.replace("[answers]\n", "[answers]\nmin_similarity = 0.7\n", 1)
    if with_glossary:
        (root / "glossary.yaml").write_text(text, encoding="utf-8")
        config = 'glossary = "glossary.yaml"\n' + config
    toml.write_text(config, encoding="utf-8")
    return open_answer_service(Workspace.open(root))


QUESTION = "A quanto sono ammontati i ricavi netti trimestrali di Fabrikam?"


def _sales_rank(service: AnswerService) -> tuple[int | None, dict[str, object]]:
    answer = service.ask(QUESTION)
    diagnostics = answer.diagnostics
    ranks = [
        f["bm25_rank"]
        for f in diagnostics["fragments"]
        if "fab-report" in str(f["doc_id"]) and "Net sales" in str(f["snippet"])
    ]
    return (ranks[0] if ranks else None), diagnostics


def test_an_italian_question_meets_the_english_figure_through_the_glossary(
    filings: Path,
) -> None:
    without = _service(filings, with_glossary=False)
    try:
        rank, diagnostics = _sales_rank(without)
    finally:
        without.close()
    # No Italian word of the question is in the English filing: BM25 cannot rank it, no
    # analyser checks them, and nothing else of the question is held (Fabrikam is the scope):
    # nothing vouches for a passage (relevance: other_language), none is quoted.
    relevance = diagnostics["relevance"]
    assert isinstance(relevance, dict)
    assert diagnostics["glossary"] is None and relevance["verdict"] == "other_language"
    assert {"ricavi", "netti"} <= set(relevance["unchecked"]), relevance
    assert rank is None, diagnostics["fragments"]
    with_it = _service(filings, with_glossary=True)
    try:
        rank, diagnostics = _sales_rank(with_it)
    finally:
        with_it.close()
    assert rank == 1, diagnostics["fragments"]
    assert diagnostics["glossary"] == {
        "matched": ["ricavi netti"],
        "added": {"it": ["fatturato"], "en": ["net sales", "net revenue"]},
    }


def test_the_cli_diagnostics_say_what_the_glossary_matched_and_added(filings: Path) -> None:
    _service(filings, with_glossary=True).close()
    result = CliRunner().invoke(app, ["ask", QUESTION, "-w", str(filings), "--diagnostics"])
    assert result.exit_code == 0, result.output
    assert "glossary: {'matched': ['ricavi netti']" in result.output, result.output
    assert "entities: {'named': ['fabrikam']" in result.output


def test_a_glossary_named_in_thoth_toml_that_is_missing_stops_the_answer_service(
    filings: Path,
) -> None:
    _service(filings, with_glossary=True).close()
    (filings / "glossary.yaml").unlink()
    try:
        with pytest.raises(ProblemsError) as caught:
            open_answer_service(Workspace.open(filings))
        assert caught.value.problems[0].code == "glossary_missing"
    finally:
        (filings / "glossary.yaml").write_text(GLOSSARY, encoding="utf-8")


def test_a_name_the_documents_write_another_way_is_held_through_the_glossary(
    filings: Path,
) -> None:
    """The FAQ benchmark's "USA" over rows that write "Stati Uniti": a name the documents do
    not write is `nothing_found` (the relevance check), unless the glossary says what they
    write instead; the term then says `via`."""
    question = "How much did demand for industrial pumps grow in the EU in 2023?"
    without = _service(filings, with_glossary=False)
    try:
        refused = without.ask(question)
    finally:
        without.close()
    assert refused.status == "nothing_found"
    assert "EU" in refused.diagnostics["relevance"]["missing"]
    with_it = _service(filings, with_glossary=True, text=GLOSSARY + "- en: [EU, Europe]\n")
    try:
        answer = with_it.ask(question)
    finally:
        with_it.close()
    assert answer.status == "found", json.dumps(answer.diagnostics["relevance"])
    terms = {t["text"]: t for t in answer.diagnostics["relevance"]["terms"]}
    assert terms["EU"]["retrieved"] and terms["EU"]["via"] == "Europe"


def test_the_offline_answer_quotes_the_sentence_the_glossary_s_terms_meet(filings: Path) -> None:
    """The extractive answerer matches the question's words in each fragment's language; an
    Italian question over an English filing meets no word of it, and the answer said so
    ("no passage holds the question's terms") before quoting whatever came first. With the
    glossary it also matches the terms the glossary adds, as retrieval does."""
    service = _service(filings, with_glossary=True)
    try:
        answer = service.ask(QUESTION)
    finally:
        service.close()
    assert answer.status == "found"
    first = answer.text.splitlines()[0]
    assert "Net sales" in first and "1,875" in first, answer.text


def test_the_glossary_s_terms_weigh_double_in_the_bm25_query(tmp_path: Path) -> None:
    # The question's framing words ("compare", "outlook") keep their weight; the reviewed
    # vocabulary ("net revenue" asked, "net sales" added) weighs GLOSSARY_WEIGHT times more.
    from types import SimpleNamespace

    from thoth.answer.retrieval import _bm25_queries
    from thoth.glossary import GLOSSARY_WEIGHT
    from thoth.index.bm25 import Bm25Encoder

    g = glossary(tmp=tmp_path)
    encoder = Bm25Encoder("english", 1.0)
    question = "How do net revenue trends compare with the outlook?"
    gen = SimpleNamespace(encoder=encoder, branches=())
    [(query, _)] = _bm25_queries(gen, question, encoder.query(question), g.expand(question))  # type: ignore[arg-type]
    weights = dict(zip(query.indices, query.values, strict=True))

    def weight(word: str) -> float:
        [stem] = encoder.query(word).indices
        return weights[stem]

    assert weight("revenue") == weight("sales") == GLOSSARY_WEIGHT * weight("compare")
    assert weight("outlook") == weight("compare")
    # No glossary term in the question: the vector computed for the dense-and-BM25 search.
    plain = "How do trends compare with the outlook?"
    own = encoder.query(plain)
    assert _bm25_queries(gen, plain, own, g.expand(plain)) == [(own, {})]  # type: ignore[arg-type]


def test_an_answer_that_meets_none_of_the_question_s_terms_is_nothing_found(
    filings: Path,
) -> None:
    """Issue 46, point 6: without the glossary the Italian question meets no word of the
    English filing; the offline answer said "no passage holds the question's terms", quoted
    the closest passage and was served `found`. It is nothing_found, with no source: the
    retrieval refuses it first now (its Italian words are checked by no analyser and nothing
    else of it is held: other_language); the offline answerer's own net for a context that
    holds none of the question's terms (no_terms) is tested in test_extractive_figures."""
    without = _service(filings, with_glossary=False)
    try:
        answer = without.ask(QUESTION)
    finally:
        without.close()
    assert answer.status == "nothing_found", answer.text
    assert answer.sources == []
    assert answer.diagnostics["relevance"]["verdict"] == "other_language", answer.diagnostics
