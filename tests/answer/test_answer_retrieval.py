"""Retrieval for answers (seed 004): one condition before similarity (channel, labels, source,
year, format), labels fail closed, request fields derived from the signature, the verbatim
floor, BM25 alone when the embedder is down, and `failed` (never empty) on technical faults."""

from __future__ import annotations

import inspect
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge_index import Doc, Env, StemEmbedder, build, open_state, settings
from thoth.answer.request import SearchRequest
from thoth.answer.retrieval import (
    KnowledgeSearch,
    SearchRequestError,
    parse_request,
    request_fields,
)
from thoth.answer.routing import split_threshold
from thoth.config import IndexSettings
from thoth.embed import OpenAICompatEmbedder
from thoth.index.base import IndexUnavailable, Match, Where
from thoth.index.bm25 import Bm25Encoder
from thoth.index.fusion import fuse, fusion_from
from thoth.index.generations import EdgeBackend

QUESTION = "procedura di registrazione del ricovero urgente"

CORPUS = [
    Doc("il ricovero urgente in reparto richiede la registrazione del paziente", year=2021),
    Doc("la dimissione del paziente avviene con un codice di esito", year=2022),
    Doc("ricovero programmato: modulo da compilare", year=2022, doc_format="pdf"),
    Doc("la procedura di ricovero per il day hospital", source="wiki", kind="wiki"),
    Doc(
        "la fattura del ricovero si emette al fornitore",
        source="contabilita",
        channel="amministrazione",
        labels=("internal",),
        doc_format="pdf",
    ),
    Doc("registrazione del ricovero urgente senza etichette", labels=()),
    Doc("procedura riservata di registrazione del ricovero", labels=("public", "confidential")),
]


def search(env: Env, **answers: Any) -> KnowledgeSearch:
    return KnowledgeSearch(settings(**answers), env.state, env.backend, env.embedder)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    built = build(tmp_path, CORPUS, StemEmbedder())
    yield built
    built.state.close()


def texts(ks: KnowledgeSearch, question: str = QUESTION, **request: Any) -> list[str]:
    result = ks.search(question, **request)
    assert result.status in ("found", "nothing_found"), result.error
    return [f.record.text for f in result.fragments]


# -- the request -------------------------------------------------------------------------


def test_request_fields_are_the_search_request_model_and_the_search_takes_each() -> None:
    """SearchRequest is the single list: request_fields() follows it, and the search takes
    exactly those keyword parameters (a field the search ignored would be dropped silently)."""
    assert request_fields() == ("channel", "labels", "source", "year", "doc_format")
    keywords = [
        p.name
        for p in inspect.signature(KnowledgeSearch.search).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    assert tuple(keywords) == request_fields()


def test_an_unknown_field_is_refused_by_the_model_itself() -> None:
    with pytest.raises(ValidationError, match="region"):
        SearchRequest.model_validate({"region": "nord"})


def test_parse_request_accepts_labels_and_rejects_unknown_fields_and_types() -> None:
    assert parse_request({"labels": ["public"], "year": 2022, "channel": None}) == {
        "labels": ["public"],
        "year": 2022,
    }
    with pytest.raises(SearchRequestError, match=r"include_unlabelled.*accepted: channel, labels"):
        parse_request({"labels": ["public"], "include_unlabelled": True})
    with pytest.raises(SearchRequestError, match="year: expected int"):
        parse_request({"year": "2022"})
    with pytest.raises(SearchRequestError, match="labels: expected a list of strings"):
        parse_request({"labels": "public"})  # a string would split into characters


@pytest.mark.parametrize("year", [1899, 2100, -5, 99_999_999_999])
def test_a_year_no_document_can_carry_is_refused_with_the_range(year: int) -> None:
    """A number past the engine's integer range once failed inside the index as
    index_unavailable; any year outside 1900-2099 can match nothing."""
    with pytest.raises(SearchRequestError, match="accepted 1900 to 2099") as info:
        parse_request({"year": year})
    [problem] = info.value.problems
    assert problem.field == "year" and problem.code == "out_of_range"
    assert parse_request({"year": 1900}) == {"year": 1900}
    assert parse_request({"year": 2099}) == {"year": 2099}


def test_unknown_label_is_an_error_even_with_the_index_missing(tmp_path: Path) -> None:
    state = open_state(tmp_path)  # no generation at all
    ks = KnowledgeSearch(settings(), state, EdgeBackend(tmp_path / "none"), StemEmbedder())
    with pytest.raises(SearchRequestError, match=r"secret.*public, internal, confidential"):
        ks.search(QUESTION, labels=["public", "secret"])
    assert ks.search(QUESTION).error_code == "generation_not_active"
    state.close()


def test_validate_checks_question_fields_and_names_without_the_index(tmp_path: Path) -> None:
    state = open_state(tmp_path)  # no generation at all
    ks = KnowledgeSearch(settings(), state, EdgeBackend(tmp_path / "none"), StemEmbedder())
    assert ks.validate(QUESTION, {"labels": ["public"], "year": None}) == {"labels": ["public"]}
    with pytest.raises(SearchRequestError, match="the question is empty -> ask something"):
        ks.validate(" \n ", {})
    with pytest.raises(SearchRequestError, match="unknown channel 'radiologia'"):
        ks.validate(QUESTION, {"channel": "radiologia"})
    with pytest.raises(SearchRequestError, match="unknown request field"):
        ks.validate(QUESTION, {"colour": "red"})
    state.close()


def test_unknown_channel_or_source_lists_the_declared_ones(env: Env) -> None:
    ks = search(env)
    with pytest.raises(SearchRequestError, match="clinica, amministrazione, personale"):
        ks.search(QUESTION, channel="radiologia")
    with pytest.raises(SearchRequestError, match="manuali, contabilita, wiki"):
        ks.search(QUESTION, source="intranet")


# -- filters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "labels"),
    [
        ("channel", "amministrazione", ["public", "internal"]),
        ("source", "wiki", None),
        ("year", 2022, None),
        ("doc_format", "pdf", ["public", "internal"]),
    ],
)
def test_each_filter_narrows(env: Env, field: str, value: Any, labels: list[str] | None) -> None:
    ks = search(env, top_k=10, verbatim_floor=0)
    wide = ks.search("ricovero", channel="clinica" if field != "channel" else None, labels=labels)
    narrow = ks.search("ricovero", labels=labels, **{field: value})
    assert narrow.status == "found" and narrow.filters[field] == value
    assert all(getattr(f.record, field) == value for f in narrow.fragments)
    assert any(getattr(f.record, field) != value for f in wide.fragments)


def test_a_declared_channel_is_used_as_given_without_routing(env: Env) -> None:
    ks = search(env)
    result = ks.search("fattura del fornitore", channel="clinica")
    assert (result.route.channel, result.route.channel_source) == ("clinica", "request")
    assert result.route.scores == {}
    assert all(f.record.channel == "clinica" for f in result.fragments)


def test_one_embedding_call_per_question(env: Env) -> None:
    ks = search(env)
    ks.search(QUESTION)  # first question: the channel examples are embedded too
    embedder = env.embedder
    assert isinstance(embedder, StemEmbedder)
    before = len(embedder.query_texts)
    result = ks.search("codice di esito della dimissione")
    assert result.route.channel_source == "similarity"
    assert embedder.query_texts[before:] == ["codice di esito della dimissione"]


# -- labels ------------------------------------------------------------------------------


def test_an_unlabelled_point_is_never_served(env: Env) -> None:
    ks = search(env, top_k=20, verbatim_floor=0)
    everything = ["public", "internal", "confidential"]
    for labels in (None, ["public"], everything):
        assert "registrazione del ricovero urgente senza etichette" not in texts(ks, labels=labels)
    # A listing, not a question (no fragment holds its words): the word check only reports.
    listing = search(env, top_k=20, verbatim_floor=0, distinctive_terms="report")
    served = texts(listing, "elenco completo dei documenti", labels=everything)  # all channels
    assert sorted(served) == sorted(d.text for d in CORPUS if d.labels)


def test_a_point_with_a_label_outside_the_request_is_invisible(env: Env) -> None:
    ks = search(env, top_k=20)
    secret = "procedura riservata di registrazione del ricovero"
    public = ks.search(QUESTION)  # default labels: public
    assert public.filters["labels"]["allowed"] == ["public"]
    assert secret not in [f.record.text for f in public.fragments]
    assert secret in texts(ks, labels=["public", "confidential"])


def test_a_label_removed_from_the_vocabulary_still_excludes_its_points(tmp_path: Path) -> None:
    # "secret" was in [answers].labels when these points were indexed, and was removed since:
    # the generation still holds it, and a point carrying it must stay invisible.
    docs = [
        # Each holds the question's every word: only the labels tell them apart.
        Doc("procedura di registrazione del ricovero urgente interna", labels=("internal",)),
        Doc(
            "procedura di registrazione del ricovero urgente segreta", labels=("internal", "secret")
        ),
    ]
    env = build(tmp_path, docs, StemEmbedder())
    ks = search(env, top_k=10, verbatim_floor=0)
    result = ks.search(QUESTION, labels=["internal"], channel="clinica")
    assert [f.record.text for f in result.fragments] == [docs[0].text]
    assert result.filters["labels"]["excluded"] == ["confidential", "public", "secret"]
    env.state.close()


def test_a_generation_without_recorded_labels_is_not_served(tmp_path: Path) -> None:
    """Without the label set the builder records, a label removed from the vocabulary since
    could not be excluded: nothing is served, the failure says what to run."""
    docs = [
        Doc("registrazione del ricovero urgente interna", labels=("internal",)),
        Doc("registrazione del ricovero urgente riservata", labels=("internal", "secret")),
    ]
    env = build(tmp_path, docs, StemEmbedder(), record_labels=False)
    ks = search(env, top_k=10, verbatim_floor=0)
    result = ks.search(QUESTION, labels=["internal"], channel="clinica")
    assert (result.status, result.error_code, result.fragments) == ("failed", "labels_unknown", [])
    assert result.generation == env.generation
    assert "tht docs sync" in (result.error or "")
    env.state.close()


# -- the verbatim floor ------------------------------------------------------------------

CURATED = [
    Doc("registrazione del ricovero urgente: procedura", kind="wiki", source="wiki"),
    Doc("procedura di registrazione del ricovero urgente", kind="evidence", source=""),
    Doc("ricovero urgente: registrazione e procedura", kind="wiki", source="wiki"),
    Doc("il paziente in reparto dopo il ricovero urgente riceve un braccialetto"),
    Doc("moduli e registrazione del paziente in reparto"),
    Doc("procedura di registrazione del ricovero urgente riservata", labels=("confidential",)),
]


@pytest.fixture
def curated(tmp_path: Path) -> Iterator[Env]:
    built = build(tmp_path, CURATED, StemEmbedder())
    yield built
    built.state.close()


def test_floor_zero_leaves_curated_only(curated: Env) -> None:
    result = search(curated, top_k=3, verbatim_floor=0).search(QUESTION)
    assert sorted(f.record_kind for f in result.fragments) == ["evidence", "wiki", "wiki"]
    assert result.counts["floor_added"] == 0


@pytest.mark.parametrize("floor", [1, 2])
def test_the_floor_guarantees_raw_document_chunks(curated: Env, floor: int) -> None:
    result = search(curated, top_k=3, verbatim_floor=floor).search(QUESTION)
    kinds = [f.record_kind for f in result.fragments]
    assert len(kinds) == 3 and kinds.count("document") == floor
    assert all(f.floor for f in result.fragments if f.record_kind == "document")
    best_curated = search(curated, top_k=3, verbatim_floor=0).search(QUESTION).fragments
    kept = [f.id for f in result.fragments if not f.floor]
    assert kept == [f.id for f in best_curated[: 3 - floor]], "the lowest curated ones leave"
    assert [f.rank for f in result.fragments] == [1, 2, 3]
    assert result.counts["floor_added"] == floor


def test_the_floor_never_crosses_the_filter(curated: Env) -> None:
    result = search(curated, top_k=3, verbatim_floor=3).search(QUESTION)
    documents = [f.record.text for f in result.fragments if f.record_kind == "document"]
    assert len(documents) == 2, "only two documents are public"
    assert not any("riservata" in t for t in documents)


def test_curated_weight_zero_keeps_the_fused_order(curated: Env) -> None:
    result = search(curated, top_k=6, verbatim_floor=0, curated_weight=0.0).search(
        "registrazione del paziente in reparto"
    )
    store = curated.backend.open(curated.generation)
    text = "registrazione del paziente in reparto"
    where: Where = {
        "workspace_id": "ws",
        "record_kind": ["document", "wiki", "evidence"],
        "labels": Match(("public",), ("confidential", "internal")),
        "channel": "clinica",
    }
    dense = [float(x) for x in curated.embedder.embed_query(text)[0]]
    raw = store.query_hybrid(dense, Bm25Encoder("it", 1.0).query(text), where, 50, 50)
    store.close()
    assert raw[0].payload["record_kind"] == "document"  # a document leads on its own merit
    assert [f.id for f in result.fragments] == [h.id for h in raw][:6]
    weighted = search(curated, top_k=6, verbatim_floor=0, curated_weight=1.0).search(text)

    def first_curated(fragments: list[Any]) -> int:
        return next(n for n, f in enumerate(fragments) if f.record_kind != "document")

    # The weight is a real lever: curated fragments move up (how far depends on the fusion's
    # score scale: with DBSF a document that leads both branches keeps the first place).
    assert first_curated(weighted.fragments) < first_curated(result.fragments)


# Dense (cosine of stems) puts the one-word "ricovero" first; BM25 the only document with the
# rare "braccialetto": each fusion setting ranks them its own way.
BRANCHES_DISAGREE = [
    Doc("ricovero"),
    Doc("braccialetto paziente reparto letto modulo cartella firma"),
    Doc("ricovero urgente"),
    Doc("ricovero programmato"),
    Doc("ricovero in day hospital"),
]


def test_answers_rank_by_the_configured_fusion_of_both_branches(tmp_path: Path) -> None:
    """The answer path fuses with `thoth.index.fusion.fuse` and the `[index]` fusion settings:
    the same ranks as `query_hybrid` given the same fusion, whatever the settings say (the
    first stage: the second, thoth.answer.rerank, has its own tests)."""
    env = build(tmp_path, BRANCHES_DISAGREE, StemEmbedder())
    text = "ricovero braccialetto"
    where: Where = {
        "workspace_id": "ws",
        "record_kind": ["document", "wiki", "evidence"],
        "labels": Match(("public",), ("confidential", "internal")),
        "channel": "clinica",
    }
    dense = [float(x) for x in env.embedder.embed_query(text)[0]]
    sparse = Bm25Encoder("it", 1.0).query(text)
    orders = set()
    for index in (
        IndexSettings(),
        IndexSettings(dense_weight=1.0, bm25_weight=0.0),
        IndexSettings(dense_weight=0.0, bm25_weight=1.0),
        IndexSettings(fusion="dbsf", dense_weight=1.0, bm25_weight=0.2),
    ):
        configured = settings(top_k=5, verbatim_floor=0, rerank=False).model_copy(
            update={"index": index}
        )
        result = KnowledgeSearch(configured, env.state, env.backend, env.embedder).search(text)
        store = env.backend.open(env.generation)
        expected = store.query_hybrid(dense, sparse, where, 50, 50, fusion_from(index))
        by_hand = fuse(
            [store.query_dense(dense, where, 50), store.query_sparse(sparse, where, 50)],
            50,
            fusion_from(index),
        )
        store.close()
        assert [h.id for h in expected] == [h.id for h in by_hand]
        got = tuple(f.id for f in result.fragments)
        assert got == tuple(h.id for h in expected)[:5], index
        orders.add(got)
    env.state.close()
    assert len(orders) > 1, "the settings must change the ranking, or this test proves nothing"


# -- degradation and failures --------------------------------------------------------------


def test_embedder_down_searches_bm25_alone_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = FakeEmbeddingServer(dim=8).start()
    try:
        env = build(tmp_path, CORPUS, OpenAICompatEmbedder(server.url, "fake-e5", dim=8))
    finally:
        server.stop()
    # Words the corpus holds: with the embedder down a word no fragment holds ("elenco") is
    # weighed by idf against the distinctive words held, and among 7 fragments none is.
    with caplog.at_level(logging.WARNING, logger="thoth.answer"):
        result = search(env, top_k=3, verbatim_floor=0).search("i ricoveri del paziente")
    assert result.status == "found"
    assert len(result.degraded) == 1 and result.degraded[0].startswith("dense: ")
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.name == "thoth.answer" and result.degraded[0] in warning.getMessage()
    assert (result.route.channel, result.route.channel_source) == ("clinica", "keywords")
    assert all(f.dense_rank is None for f in result.fragments)
    assert [f.bm25_rank for f in result.fragments] == [1, 2, 3]
    env.state.close()


def test_without_a_dense_score_the_relevance_floor_is_said_not_applied(tmp_path: Path) -> None:
    server = FakeEmbeddingServer(dim=8).start()
    try:
        env = build(tmp_path, CORPUS, OpenAICompatEmbedder(server.url, "fake-e5", dim=8))
    finally:
        server.stop()
    result = search(env, min_similarity=0.99).search("i ricoveri del paziente")
    assert result.status == "found" and result.best_similarity is None
    assert "relevance floor not applied: no dense similarity" in result.degraded
    assert not any("relevance" in d for d in search(env).search("ricoveri").degraded)
    env.state.close()


def test_a_new_active_generation_closes_the_handles_of_the_old_one(tmp_path: Path) -> None:
    first = build(tmp_path, CORPUS, StemEmbedder())
    ks = search(first)
    assert ks.search(QUESTION).generation == first.generation
    old = ks._reader._stores[first.generation]
    second = build(tmp_path, CORPUS[:2], first.embedder)
    assert second.generation != first.generation
    assert ks.search(QUESTION).generation == second.generation
    assert list(ks._reader._stores) == [second.generation]
    with pytest.raises(IndexUnavailable):
        old.count({"workspace_id": "ws"})  # closed
    ks.close()
    first.state.close()
    second.state.close()


def test_index_directory_deleted_is_failed_not_nothing_found(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    ks = search(env)
    assert ks.search(QUESTION).status == "found"
    ks.close()
    shutil.rmtree(env.backend.root / env.generation)
    with caplog.at_level(logging.ERROR, logger="thoth.answer"):
        result = ks.search(QUESTION)
    assert (result.status, result.error_code) == ("failed", "index_unavailable")
    assert result.fragments == [] and result.generation == env.generation
    assert env.generation in (result.error or "")
    assert any("index_unavailable" in r.getMessage() for r in caplog.records)


def test_nothing_found_is_an_empty_result_not_a_fault(env: Env) -> None:
    result = search(env).search(QUESTION, year=1990)
    assert (result.status, result.error_code, result.fragments) == ("nothing_found", None, [])
    assert result.filters["year"] == 1990 and result.generation == env.generation


def test_below_the_relevance_floor_nothing_is_found(env: Env) -> None:
    best = search(env).search(QUESTION).best_similarity
    assert best is not None
    above = search(env, min_similarity=best - 0.01).search(QUESTION)
    assert above.status == "found"
    below = search(env, min_similarity=best + 0.01).search(QUESTION)
    assert (below.status, below.fragments, below.error_code) == ("nothing_found", [], None)
    assert below.best_similarity == best and below.counts["below_min_similarity"] == 1


def test_split_threshold_sits_in_the_gap_or_at_best_accuracy() -> None:
    separated = split_threshold([0.9, 0.85], [0.7, 0.75])
    assert separated.separated and separated.threshold == pytest.approx(0.8)
    assert separated.accuracy == 1.0
    overlapping = split_threshold([0.9, 0.72, 0.88], [0.7, 0.8])
    assert not overlapping.separated
    assert overlapping.accuracy == pytest.approx(0.8)  # one of five on the wrong side


def test_channels_within_the_margin_are_searched_together_and_no_other(tmp_path: Path) -> None:
    """A closest channel that leads the next by less than `channel_margin` is no evidence of
    where the answer is: the close channels are searched together (the filter names them)
    and a channel further away is not."""
    corpus = [
        *CORPUS,
        Doc("le ferie del ricovero si richiedono al responsabile", channel="personale"),
    ]
    built = build(tmp_path, corpus, StemEmbedder())
    try:
        question = "come si registra un ricovero e la fattura al fornitore"
        probe = search(built).router.scores(question)
        top, second, third = sorted(probe, key=lambda n: -probe[n])
        margin = (probe[top] - probe[second] + probe[top] - probe[third]) / 2
        assert probe[top] - probe[second] < margin < probe[top] - probe[third], probe
        result = search(built, top_k=10, verbatim_floor=0, routing={
            "channel_threshold": 0.1, "channel_margin": margin
        }).search(question, labels=["public", "internal"])  # fmt: skip
        assert result.route.channel is None and result.route.channel_source == "tied"
        assert result.route.tied == tuple(sorted((top, second)))
        assert sorted(result.filters["channel"]) == sorted((top, second))
        assert {f.record.channel for f in result.fragments} == {top, second}
        plain = search(
            built,
            top_k=10,
            verbatim_floor=0,
            routing={"channel_threshold": 0.1, "channel_margin": 0},
        )  # no margin: the closest channel alone, however small its lead
        routed = plain.search(question, labels=["public", "internal"])
        assert routed.route.channel_source == "similarity"
        assert routed.route.channel in (top, second)
        assert routed.filters["channel"] == routed.route.channel
    finally:
        built.state.close()
