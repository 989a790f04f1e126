"""Routing (seed 004): text questions routed to the channel whose example questions are closest, widened to all channels below the threshold;
examples embedded once per fingerprint; keywords when the embedder is down; a threshold
calibrated on labelled questions."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge_index import CHANNELS, StemEmbedder
from thoth.answer.routing import (
    ChannelRouter,
    calibrate,
    load_calibration_set,
)
from thoth.cli.main import app
from thoth.embed import OpenAICompatEmbedder
from thoth.errors import ThothError
from thoth.workspace import Workspace

ALL = {"clinica", "amministrazione", "personale"}


@pytest.fixture
def down_embedder() -> Iterator[OpenAICompatEmbedder]:
    """A real HTTP embedder whose server has been stopped."""
    server = FakeEmbeddingServer(dim=8).start()
    embedder = OpenAICompatEmbedder(server.url, "fake-e5", dim=8, timeout=2)
    server.stop()
    yield embedder


# -- similarity --------------------------------------------------------------------------


def test_the_closest_channel_above_the_threshold_wins() -> None:
    router = ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.45)
    route = router.route("come registrare il ricovero del paziente", channels_with_documents=ALL)
    assert (route.channel, route.channel_source) == ("clinica", "similarity")
    assert (
        route.scores["clinica"]
        >= 0.45
        > max(route.scores["amministrazione"], route.scores["personale"])
    )


def test_below_the_threshold_every_channel_is_searched() -> None:
    router = ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.45)
    route = router.route("ricetta della torta di mele", channels_with_documents=ALL)
    assert (route.channel, route.channel_source) == (None, "all")
    assert max(route.scores.values()) < 0.45 and set(route.scores) == ALL


def test_a_channel_without_documents_cannot_win() -> None:
    router = ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.45)
    route = router.route("come si richiedono le ferie", channels_with_documents={"clinica"})
    assert route.scores["personale"] > 0.9
    assert route.channel is None  # widened, not routed to an empty channel


def test_examples_are_embedded_once_and_again_only_when_they_change() -> None:
    embedder = StemEmbedder()
    router = ChannelRouter(CHANNELS, embedder, threshold=0.45)
    examples = sum(len(c.examples) for c in CHANNELS)
    router.route("ricovero urgente", channels_with_documents=ALL)
    assert len(embedder.query_texts) == examples + 1
    router.route("fattura scaduta", channels_with_documents=ALL)
    router.set_channels(list(CHANNELS))  # same texts: same fingerprint
    router.route("ferie estive", channels_with_documents=ALL)
    assert len(embedder.query_texts) == examples + 3, "one embedding call per question"
    changed = [*CHANNELS[:2], CHANNELS[2].model_copy(update={"examples": ["turni di notte"]})]
    router.set_channels(changed)
    router.route("turni di notte", channels_with_documents=ALL)
    assert len(embedder.query_texts) == examples + 3 + (examples - 2 + 1) + 1
    assert router.route("turni di notte", channels_with_documents=ALL).channel == "personale"


# -- keyword fallback ----------------------------------------------------------------------


def test_embedder_down_routes_by_keywords_and_plurals_match(
    down_embedder: OpenAICompatEmbedder,
) -> None:
    router = ChannelRouter(CHANNELS, down_embedder, threshold=0.45)
    route = router.route("elenco dei Ricoveri in corso", channels_with_documents=ALL)
    assert (route.channel, route.channel_source) == ("clinica", "keywords")
    assert route.keyword_matches == {"clinica": ["ricovero"]}
    assert route.scores == {} and route.embedder_error


def test_keyword_fallback_only_channels_with_documents_compete(
    down_embedder: OpenAICompatEmbedder,
) -> None:
    router = ChannelRouter(CHANNELS, down_embedder, threshold=0.45)
    question = "turni e ferie: serve la fattura?"  # 2 personale keywords, 1 amministrazione
    assert router.route(question, channels_with_documents=ALL).channel == "personale"
    route = router.route(question, channels_with_documents={"clinica", "amministrazione"})
    assert route.channel == "amministrazione" and "personale" not in route.keyword_matches


def test_keyword_tie_widens_and_is_reported(down_embedder: OpenAICompatEmbedder) -> None:
    router = ChannelRouter(CHANNELS, down_embedder, threshold=0.45)
    route = router.route("fatture dei pazienti", channels_with_documents=ALL)
    assert (route.channel, route.channel_source) == (None, "all")
    assert route.tied == ("amministrazione", "clinica")
    nothing = router.route("ricetta della torta", channels_with_documents=ALL)
    assert (nothing.channel, nothing.keyword_matches) == (None, {})


# -- calibration -------------------------------------------------------------------------

LABELLED: list[tuple[str, str | None]] = [
    ("registrare un ricovero in reparto", "clinica"),
    ("codici di dimissione", "clinica"),
    ("emettere la fattura al fornitore", "amministrazione"),
    ("scadenza del pagamento", "amministrazione"),
    ("richiedere le ferie", "personale"),
    ("previsioni del tempo per domani", None),
    ("ricetta della torta di mele", None),
    ("risultati del campionato di calcio", None),
]


def test_calibration_threshold_lies_between_the_distributions() -> None:
    result = calibrate(ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.0), LABELLED)
    assert result.separated and result.misrouted == []
    assert max(result.out_of_domain) < result.threshold < min(result.in_domain)
    assert result.accuracy == 1.0
    summary = result.as_dict()
    assert summary["in_domain"]["n"] == 5 and summary["out_of_domain"]["n"] == 3


def test_overlapping_distributions_pick_the_most_accurate_threshold() -> None:
    labelled: list[tuple[str, str | None]] = [
        ("come si registra un ricovero in reparto", "clinica"),
        ("ricovero", "clinica"),  # in domain, but far from every example
        ("registra un ricovero in reparto per il gatto", None),  # out of domain, but close
        ("registra il ricovero del cane in reparto", None),
    ]
    result = calibrate(ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.0), labelled)
    assert not result.separated
    assert min(result.in_domain) < max(result.out_of_domain)
    # Routing "ricovero" would also route both out-of-domain questions: 3 of 4 beats 2 of 4.
    assert result.accuracy == 0.75
    assert max(result.out_of_domain) < result.threshold < max(result.in_domain)


def test_calibration_set_errors_name_the_file_and_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "channels.yaml"
    path.write_text("- question: ricovero\n  channel: clinica\n- {question: '', channel: x}\n")
    with pytest.raises(ThothError, match=r"channels.yaml: entry 1: `question`"):
        load_calibration_set(path)
    path.write_text("questions:\n- question: ricovero\n  channel: clinica\n- question: meteo\n")
    assert load_calibration_set(path) == [("ricovero", "clinica"), ("meteo", None)]


def test_cli_calibrate_prints_distributions_and_threshold(
    make_workspace: Callable[..., Workspace],
) -> None:
    ws = make_workspace()
    examples = {"clinica": "ricovero in reparto", "amministrazione": "fattura al fornitore"}
    channels = "".join(
        f'\n[[channels]]\nname = "{n}"\nexamples = ["{e}"]\n' for n, e in examples.items()
    )
    labelled = [
        {"question": "ricovero in reparto", "channel": "clinica"},
        {"question": "fattura al fornitore", "channel": "amministrazione"},
        {"question": "previsioni del tempo", "channel": None},
    ]
    (ws.root / "answers").mkdir(exist_ok=True)  # tht init created it
    (ws.root / "answers" / "channels.yaml").write_text(json.dumps(labelled))
    with FakeEmbeddingServer(dim=64) as server:
        (ws.root / "thoth.toml").write_text(
            f'workspace = "{ws.root.name}"\n\n[embedding]\nprovider = "openai"\n'
            f'base_url = "{server.url}"\nmodel = "fake-e5"\ndim = 64\n{channels}'
        )
        args = ["channels", "calibrate", "--workspace", str(ws.root)]
        result = CliRunner().invoke(app, [*args, "--json"])
        human = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["configured_threshold"] == 0.45
    assert data["configured_margin"] == 0.02 and data["margin"] == 0.0  # two leads: no spread
    assert data["in_domain"]["n"] == 2 and data["out_of_domain"]["n"] == 1
    assert data["out_of_domain"]["max"] < data["threshold"] < data["in_domain"]["min"]
    assert human.exit_code == 0, human.output
    printed = " ".join(human.output.split())  # Rich wraps long lines
    assert "Configured threshold: 0.450" in printed
    assert "under [answers.routing] in thoth.toml" in printed
    assert "in domain (routed right)" in printed and "out of domain" in printed
    assert "(separated), accuracy 100% on 3 questions." in printed
    assert "Suggested margin: 0.000 (fewer than 3 questions routed right" in printed
    assert "`channel_margin = 0.000`" in printed
    assert "No active index generation" in printed


# -- a lead too small to choose ---------------------------------------------------------------


def test_a_closest_channel_without_a_lead_widens_to_the_close_channels() -> None:
    """Above the threshold but within `margin` of the runner-up, the closest channel is no
    evidence of where the answer is (seed 004: when uncertain, widen instead of emptying):
    the channels within the margin are searched together, and reported."""
    question = "come si registra un ricovero e si richiedono le ferie"  # two channels' words
    plain = ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.1)
    scores = plain.scores(question)
    lead = scores["personale"] - scores["clinica"]
    assert scores["clinica"] >= 0.1 and 0 < lead < 0.2, scores
    assert plain.route(question, channels_with_documents=ALL).channel == "personale"
    router = ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.1, margin=lead + 0.01)
    route = router.route(question, channels_with_documents=ALL)
    assert (route.channel, route.channel_source) == (None, "tied")
    assert route.tied == ("clinica", "personale") and route.margin == lead + 0.01
    assert route.searched == ["clinica", "personale"]  # not amministrazione
    clear = router.route("come si registra un ricovero in reparto", channels_with_documents=ALL)
    assert clear.channel == "clinica"  # a clear lead still routes


def test_calibration_suggests_a_margin_from_the_leads_of_the_routed_questions() -> None:
    """The margin a new wording needs: one spread (standard deviation) of the leads the
    in-domain questions routed right had over their runner-up; reported with every lead."""
    result = calibrate(ChannelRouter(CHANNELS, StemEmbedder(), threshold=0.0), LABELLED)
    leads = [q["lead"] for q in result.per_question if q["expected"] is not None]
    assert len(leads) == 5 and all(lead > 0 for lead in leads)
    assert result.margin == pytest.approx(float(np.std(leads, ddof=1)), abs=1e-4)
    assert result.as_dict()["margin"] == round(result.margin, 4)
    assert result.widened == sum(lead < result.margin for lead in leads)
