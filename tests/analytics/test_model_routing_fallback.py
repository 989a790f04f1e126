"""Issue 46, point 7: a model that cannot route does not fail the question. When the routing
call times out, answers HTTP 500 or returns garbage, the offline router decides (its gates
hold: no number for a question no query computes), and the answer says it is degraded and
why — `degraded` (shown by `tht ask`) and `diagnostics.analytics.route_degraded`; a text
question is answered. The provider is a real local HTTP server (tests/fake_llm.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.analytics.store import DATA_DATE, count
from tests.analytics.test_model_routing import KEY_ENV, ask, with_model
from tests.fake_llm import FakeLLMServer

SCRIPTS: dict[str, Callable[[FakeLLMServer], None]] = {
    "timeout": lambda s: s.reply("late", delay=3.0),
    "http_500": lambda s: s.reply("boom", status=500),
    "garbage": lambda s: s.reply("I think the answer is ricoveri, probably."),  # no call
}


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, "test-key")
    with FakeLLMServer() as server:
        yield server


@pytest.mark.parametrize("failure", sorted(SCRIPTS))
def test_the_offline_router_decides_when_the_model_cannot_route(
    tmp_path: Path, llm: FakeLLMServer, failure: str
) -> None:
    aw = with_model(tmp_path, llm.url + "/v1", "openai", extra="timeout_seconds = 1")
    # A covered question: computed by the offline decision, with the figure's own wording
    # (the answer model words it: scripted after the failed routing call).
    SCRIPTS[failure](llm)
    llm.reply("In Pediatria i ricoveri ordinari del 2024 sono 3.")
    answer = ask(aw, "Quanti ricoveri ha avuto la Pediatria nel 2024?")
    assert answer.status == "computed", answer.text
    assert answer.provenance is not None and answer.provenance["query_id"] == "ricoveri-reparto"
    assert answer.figures is not None and answer.figures["rows"] == [
        [count("Pediatria", "ordinario", 2024)]
    ]
    assert DATA_DATE in answer.text
    analytics = answer.diagnostics["analytics"]
    assert analytics["route"]["by"] == "similarity"
    assert "offline router decided" in analytics["route_degraded"]
    assert answer.degraded and "offline router decided" in answer.degraded[0]
    assert answer.as_dict()["degraded"] == answer.degraded


def test_a_text_question_is_answered_and_no_number_is_invented(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    aw = with_model(tmp_path, llm.url + "/v1", "openai", extra="timeout_seconds = 1")
    llm.reply("boom", status=500)
    llm.reply("Il codice verde va visitato entro 120 minuti [1].")
    text = ask(aw, "Entro quanto tempo va visitato un codice verde in pronto soccorso?")
    assert text.status == "found", text.text
    assert "120 minuti" in text.text and text.provenance is None
    assert text.degraded and "offline router decided" in text.degraded[0]
    # A figure no query computes: the gates refuse it offline too, no number.
    llm.reply("boom", status=500)
    llm.reply("Le fonti non riportano le prescrizioni.")
    figure = ask(aw, "Quanti farmaci sono stati prescritti nei ricoveri del 2024?")
    assert figure.status != "computed" and figure.provenance is None
