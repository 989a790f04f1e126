"""The search contract (seed §9.6, §10, §13.3): deterministic query text, mandatory and
binding filters, one result per unit with caveats and provenance, receipts, and `unavailable`
with a stable code for every fault — never an empty list."""

import shutil
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import commit_all
from tests.fake_embeddings import FakeEmbeddingServer, Reply
from tests.publishing import activate_head, prepared_workspace, published, write_config
from thoth.runtime import Runtime, open_runtime
from thoth.search.outcome import EvidenceSearchContext
from thoth.search.query import EmptyQuestion, render_query
from thoth.workspace import Workspace

Make = Callable[..., Workspace]


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


@pytest.fixture
def rt(make_workspace: Make, fake: FakeEmbeddingServer) -> Iterator[Runtime]:
    runtime = published(make_workspace, fake.url)
    yield runtime
    runtime.close()


# -- the query text --------------------------------------------------------------------


def test_query_text_is_deterministic() -> None:
    text = render_query(
        "  Quanti ricoveri\r\nper  reparto?  ",
        concepts=["ricovero", " ricovero ", "Degenza"],
        tables=["adt.admission", 'adt."Ward"', "adt.admission"],
        columns=[],
    )
    assert text == (
        "Domanda: Quanti ricoveri\nper  reparto?\n"
        "Concetti: Degenza, ricovero\n"
        'Tabelle: adt."Ward", adt.admission'
    )
    same = render_query(
        "Quanti ricoveri\nper  reparto?",
        concepts=["Degenza", "ricovero"],
        tables=['adt."Ward"', "adt.admission"],
    )
    assert same == text
    assert render_query("perche\u0301?") == "Domanda: perché?"


def test_empty_question_is_rejected() -> None:
    with pytest.raises(EmptyQuestion):
        render_query(" \r\n ")


def test_dense_and_bm25_receive_the_same_text(rt: Runtime, fake: FakeEmbeddingServer) -> None:
    ctx = EvidenceSearchContext(concepts=("ricovero",), tables=("adt.admission",))
    outcome = rt.search().search("degenza con pernottamento", "disambiguation", ctx)
    assert outcome.query_text == (
        "Domanda: degenza con pernottamento\nConcetti: ricovero\nTabelle: adt.admission"
    )
    assert fake.requests[-1].inputs == [outcome.query_text]


# -- results -----------------------------------------------------------------------------


def test_results_are_units_with_provenance_caveats_and_receipt(rt: Runtime) -> None:
    path = rt.ws.evidence / "curated/enum/esito-della-dimissione.md"
    path.write_text(
        path.read_text().replace("caveats: []", "caveats:\n- Il codice X vale solo dal 2020.")
    )
    commit_all(rt.ws.root)
    activate_head(rt)
    from tests.publishing import publish

    assert publish(rt).outcome == "activated"
    outcome = rt.search().search(
        "esito dimissione deceduto", "schema_linking", stage="schema_linking"
    )
    assert outcome.available
    ids = [r.evidence_id for r in outcome.results]
    assert len(ids) == len(set(ids)), "one result per unit"
    [enum] = [r for r in outcome.results if r.evidence_id == "evidence:esito-della-dimissione"]
    assert enum.caveats == ("Il codice X vale solo dal 2020.",)
    assert all("vale solo dal 2020" not in e for e in enum.excerpts), "caveats are not embedded"
    assert enum.provenance.source_file == "source/e.md"
    assert enum.document == "evidence/curated/enum/esito-della-dimissione.md"
    assert enum.revision == outcome.revision and enum.revision[:12] in enum.citation
    receipt = outcome.receipt
    assert receipt is not None and receipt.stage == "schema_linking"
    assert receipt.evidence_ids == tuple(ids) and receipt.generation == outcome.generation
    assert not any(isinstance(v, str) and "deceduto" in v for v in vars(receipt).values())


def test_purpose_is_a_mandatory_filter(rt: Runtime) -> None:
    outcome = rt.search().search("ricovero", "schema_linking")
    assert outcome.available
    assert "evidence:ricovero" not in [r.evidence_id for r in outcome.results]  # glossary


def test_binding_fields_filter_and_leave_the_text(rt: Runtime) -> None:
    ctx = EvidenceSearchContext(tables=("adt.admission",), binding=frozenset({"tables"}))
    outcome = rt.search().search("ricovero", "disambiguation", ctx)
    assert outcome.query_text == "Domanda: ricovero"
    assert [r.evidence_id for r in outcome.results] == ["evidence:day-hospital"]
    loose = rt.search().search(
        "ricovero", "disambiguation", EvidenceSearchContext(tables=("adt.admission",))
    )
    assert len(loose.results) > 1


def test_available_with_no_results_is_not_a_fault(rt: Runtime) -> None:
    ctx = EvidenceSearchContext(kinds=("reference",))
    outcome = rt.search().search("linee guida", "disambiguation", ctx)
    assert outcome.available and outcome.results == ()
    assert outcome.receipt is not None and outcome.receipt.evidence_ids == ()


def test_unknown_purpose_is_a_caller_error(rt: Runtime) -> None:
    with pytest.raises(ValueError, match="unknown purpose"):
        rt.search().search("ricovero", "chatting")


# -- failures: unavailable with a stable code ------------------------------------------


def test_revision_not_activated(make_workspace: Make, fake: FakeEmbeddingServer) -> None:
    runtime = open_runtime(prepared_workspace(make_workspace, fake.url))
    outcome = runtime.search().search("ricovero", "disambiguation")
    assert (outcome.status, outcome.code) == ("unavailable", "revision_not_activated")
    assert outcome.results == () and outcome.receipt is None
    activate_head(runtime)
    outcome = runtime.search().search("ricovero", "disambiguation")
    assert outcome.code == "generation_not_active"
    runtime.close()


def test_revision_mismatch_during_the_maintenance_window(rt: Runtime) -> None:
    (rt.ws.root / "note.txt").write_text("new revision")
    commit_all(rt.ws.root)
    activate_head(rt)
    outcome = rt.search().search("ricovero", "disambiguation")
    assert outcome.code == "revision_mismatch" and len(outcome.message or "") <= 300


def test_generation_pointer_to_missing_data(rt: Runtime) -> None:
    gen = rt.state.active_generation(rt.ws.settings.workspace)
    assert gen is not None
    shutil.rmtree(rt.backend.root / gen.id)  # type: ignore[attr-defined]
    outcome = rt.search().search("ricovero", "disambiguation")
    assert outcome.code == "index_unavailable" and gen.id in (outcome.message or "")


def test_corrupt_index_directory(rt: Runtime) -> None:
    gen = rt.state.active_generation(rt.ws.settings.workspace)
    assert gen is not None
    segments = rt.backend.root / gen.id / "segments"  # type: ignore[attr-defined]
    for path in segments.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage")
    outcome = rt.search().search("ricovero", "disambiguation")
    assert (
        outcome.status == "unavailable" and outcome.code == "index_corrupt"
    )  # not the files sealed


def test_embedder_failure(rt: Runtime, fake: FakeEmbeddingServer) -> None:
    fake.script(Reply(status=500))
    outcome = rt.search().search("ricovero", "disambiguation")
    assert outcome.code == "embedder_failed" and "500" in (outcome.message or "")


def test_embedder_wrong_dimension(rt: Runtime, fake: FakeEmbeddingServer) -> None:
    fake.script(Reply(dim=5))
    outcome = rt.search().search("ricovero", "disambiguation")
    assert outcome.code == "embedder_failed" and "5" in (outcome.message or "")


def test_another_embedding_model_is_refused(rt: Runtime, fake: FakeEmbeddingServer) -> None:
    toml = rt.ws.root / "thoth.toml"
    toml.write_text(toml.read_text().replace('model = "fake-e5"', 'model = "other-e5"'))
    other = open_runtime(Workspace.open(rt.ws.root))
    outcome = other.search().search("ricovero", "disambiguation")
    assert outcome.code == "embedder_mismatch"
    other.close()


def test_state_store_unreachable(rt: Runtime, fake: FakeEmbeddingServer) -> None:
    write_config(
        rt.ws.root,
        fake.url,
        extra='\n[state]\nurl = "postgresql+psycopg://nobody@127.0.0.1:1/none"\n',
    )
    from thoth.errors import ThothError

    with pytest.raises(ThothError, match="cannot open state store"):
        open_runtime(Workspace.open(rt.ws.root))
