"""The first fork with a model: one function call whose tools are the catalog queries (strict
JSON schemas from the typed parameters) plus the fallback tool, through the real OpenAI and
Anthropic clients talking to a local fake model server. The model only chooses; Thoth
validates its values, computes, and pseudonymises the rows before the answer model sees them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.conftest import WAIT_QUESTION, AnalyticsWorkspace, make_analytics_workspace
from tests.analytics.store import DATA_DATE
from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.analytics.routing import FALLBACK_TOOL
from thoth.answer.service import Answer
from thoth.answer.wording import ITALIAN

KEY_ENV = "THOTH_TEST_ANALYTICS_LLM_KEY"


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, "test-key")
    with FakeLLMServer() as server:
        yield server


def _with_model(
    tmp_path: Path, server: FakeLLMServer, provider: str, privacy: str = ""
) -> AnalyticsWorkspace:
    base = server.url + "/v1" if provider == "openai" else server.url
    return with_model(tmp_path, base, provider, privacy)


def with_model(
    tmp_path: Path,
    base: str,
    provider: str,
    privacy: str = "",
    model: str = "fake",
    extra: str = "",
) -> AnalyticsWorkspace:
    """The analytics workspace with `[llm]` at `base` (its key in KEY_ENV) answering with it."""
    aw = make_analytics_workspace(tmp_path / "ws")
    text = (aw.root / "thoth.toml").read_text("utf-8")
    text = text.replace('answerer = "extractive"', 'answerer = "llm"')
    text = (
        f'[llm]\nprovider = "{provider}"\nbase_url = "{base}"\nmodel = "{model}"\n'
        f'api_key_env = "{KEY_ENV}"\n{extra}\n' + text.split("\n\n", 1)[1]
    )
    aw.write("thoth.toml", 'workspace = "an"\nlanguage = "it"\n\n' + privacy + text)
    aw.activate()
    aw.publish_text()
    return aw


def ask(aw: AnalyticsWorkspace, question: str) -> Answer:
    service = aw.service()
    try:
        return service.ask(question)
    finally:
        service.close()


def _tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    if "messages" in body and "tools" in body and "input_schema" in body["tools"][0]:
        return {t["name"]: t for t in body["tools"]}
    return {t["function"]["name"]: t["function"] for t in body["tools"]}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_model_chooses_the_query_thoth_computes(
    tmp_path: Path, llm: FakeLLMServer, provider: str
) -> None:
    aw = _with_model(tmp_path, llm, provider)
    llm.reply_tool_calls(
        ToolCallScript("ricoveri-reparto", {"reparto": "Pediatria", "anno": 2024, "regime": None})
    )
    llm.reply("In Pediatria i ricoveri ordinari del 2024 sono 3.")
    # The year as the question states it: a model's year the question does not say is refused
    # (test_a_model_s_value_the_question_does_not_state_is_never_computed).
    answer = ask(aw, "Quanti ricoveri ha avuto la Pediatria nel 2024?")
    assert answer.status == "computed", answer.text
    assert answer.provenance is not None
    assert answer.provenance["parameters"] == {
        "reparto": "Pediatria",
        "anno": 2024,
        "regime": "ordinario",
    }
    assert answer.diagnostics["analytics"]["route"]["by"] == "model"
    # Thoth states the figure, its data date and the query whatever the model wrote.
    assert answer.text.startswith("In Pediatria i ricoveri ordinari del 2024 sono 3.")
    assert f"Ricoveri: 3 ricoveri (dati aggiornati al {DATA_DATE})" in answer.text
    assert "ricoveri-reparto" in answer.text
    routing, wording = (r.body for r in llm.requests)
    if provider == "openai":
        # Said explicitly: llama-cpp-python's server reads a request without it as tool-less
        assert routing["tool_choice"] == "auto"
    tools = _tools(routing)
    assert set(tools) == {
        "degenza-media",
        "ricoveri-per-reparto",
        "ricoveri-reparto",
        FALLBACK_TOOL,
    }
    schema = (
        tools["ricoveri-reparto"].get("parameters") or tools["ricoveri-reparto"]["input_schema"]
    )
    assert schema["required"] == ["reparto", "anno", "regime"]
    assert schema["additionalProperties"] is False
    # values_from: the allowed values come from the view; optional means nullable.
    assert schema["properties"]["reparto"]["enum"] == ["Cardiologia", "Ortopedia", "Pediatria"]
    assert schema["properties"]["regime"]["enum"] == ["ordinario", "day hospital", None]
    if provider == "openai":
        assert tools["ricoveri-reparto"]["strict"] is True
    # The rows reached the answer model as a table, with the data date.
    assert "| 3 |" in str(wording) and DATA_DATE in str(wording)


def test_the_fallback_takes_the_text_path_and_says_the_figure_is_missing(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    aw = _with_model(tmp_path, llm, "openai")
    llm.reply_tool_calls(
        ToolCallScript(FALLBACK_TOOL, {"asks_for_a_figure": True, "reason": "farmaci"})
    )
    llm.reply("Le fonti non riportano il numero di prescrizioni.")
    answer = ask(aw, "Quante prescrizioni di farmaci nel 2024?")
    assert answer.status in ("found", "nothing_found") and answer.sources is not None
    assert answer.text.startswith(ITALIAN.figure_not_available)
    assert answer.provenance is None


def test_a_text_question_is_never_refused_as_numeric(tmp_path: Path, llm: FakeLLMServer) -> None:
    aw = _with_model(tmp_path, llm, "openai")
    llm.reply_tool_calls(
        ToolCallScript(FALLBACK_TOOL, {"asks_for_a_figure": False, "reason": "procedura"})
    )
    llm.reply("Entro 120 minuti [1].")
    answer = ask(aw, WAIT_QUESTION)
    assert answer.status == "found" and answer.text == "Entro 120 minuti [1]."


def test_an_invalid_value_is_an_error_shown_not_a_guess(tmp_path: Path, llm: FakeLLMServer) -> None:
    aw = _with_model(tmp_path, llm, "openai")
    llm.reply_tool_calls(
        ToolCallScript("ricoveri-reparto", {"reparto": "Neurologia", "anno": 2024, "regime": None})
    )
    answer = ask(aw, "Quanti ricoveri ha avuto la Neurologia nel 2024?")
    assert answer.status == "needs_parameter" and answer.error_code == "invalid_parameter"
    assert "'Neurologia' is not an allowed value" in answer.text
    assert llm.pending == 0 and len(llm.requests) == 1  # nothing computed, no answer model


def test_a_model_s_choice_passes_the_unknown_words_gate_too(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Found by `benchmarks/analytics_routing.py --model`: for "parti cesarei", which no query
    speaks of, a small model called the emergency-room query and a number was computed. The
    word no query explains refuses the model's choice as it refuses every query offline."""
    aw = _with_model(tmp_path, llm, "openai")
    llm.reply_tool_calls(
        ToolCallScript("ricoveri-per-reparto", {"anno": 2024, "regime": "ordinario"})
    )
    llm.reply("Testo.")
    answer = ask(aw, "Quanti parti cesarei sono stati fatti nel 2024?")
    assert answer.status != "computed" and answer.provenance is None, answer.status
    reason = answer.diagnostics["analytics"].get("reason", answer.diagnostics["analytics"])
    assert str(reason).startswith("unknown words:") and "cesarei" in str(reason), reason


def test_a_model_s_value_the_question_does_not_state_is_never_computed(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Found by `benchmarks/analytics_routing.py --model` (2026-12-04): for "Quanto è costato
    il pembrolizumab nel 2023?" a small model called the emergency-room query with anno =
    2019 and a number was computed. A number, date or year the model binds must be the one
    the question states; a year the question does not say is a guess."""
    aw = _with_model(tmp_path, llm, "openai")
    llm.reply_tool_calls(ToolCallScript("degenza-media", {"anno": 2019, "soglia": None}))
    llm.reply("Testo.")
    answer = ask(aw, "Qual è stata la degenza media nel 2024?")
    assert answer.status != "computed" and answer.provenance is None, answer.status
    reason = str(answer.diagnostics["analytics"].get("reason", answer.diagnostics["analytics"]))
    assert reason.startswith("unstated value:") and "anno = 2019" in reason, reason


def test_a_model_s_choice_that_leaves_out_what_another_query_speaks_of_is_refused(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The same run: every word of the question was known to *some* query (pembrolizumab to
    the high-cost drugs one), so the unknown-words gate passed, yet the chosen query spoke of
    none of them. A word the model's query does not explain while another query does means
    the model took a neighbour."""
    aw = _with_model(tmp_path, llm, "openai")
    llm.reply_tool_calls(ToolCallScript("degenza-media", {"anno": 2024, "soglia": None}))
    llm.reply("Testo.")
    answer = ask(aw, "Ricoveri dimessi nel 2024?")
    assert answer.status != "computed" and answer.provenance is None, answer.status
    reason = str(answer.diagnostics["analytics"].get("reason", answer.diagnostics["analytics"]))
    assert reason.startswith("neighbour query:") and "dimessi" in reason.lower(), reason


def test_two_calls_are_decided_offline_and_said(tmp_path: Path, llm: FakeLLMServer) -> None:
    aw = _with_model(tmp_path, llm, "openai")
    llm.reply_tool_calls(
        ToolCallScript("degenza-media", {"anno": 2024, "soglia": None}),
        ToolCallScript(FALLBACK_TOOL, {"asks_for_a_figure": False, "reason": "x"}),
    )
    llm.reply("La degenza media del 2024 è di 3,4 giorni.")
    answer = ask(aw, "Degenza media 2024?")
    # Neither call is used: the offline router decides (issue 46), and the answer says why.
    assert answer.diagnostics["analytics"]["route"]["by"] == "similarity"
    assert any("2 function calls" in d for d in answer.degraded), answer.degraded


def test_rows_reach_the_answer_model_only_through_protect_rows(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """[privacy] on: the per-ward table's columns pass as the catalog's reviewed kinds say
    (reparto a category, ricoveri a quantity), and the answer states every figure with its
    data date, as Thoth computed it. Without those kinds the same columns are masked (the
    pseudonymiser's own tests): a reviewer's declaration is what lets a figure through."""
    aw = _with_model(tmp_path, llm, "openai", privacy="[privacy]\npseudonymise = true\n\n")
    llm.reply_tool_calls(
        ToolCallScript("ricoveri-per-reparto", {"anno": 2024, "regime": "ordinario"})
    )
    llm.reply("Ecco i ricoveri per reparto.")
    answer = ask(aw, "Ricoveri ordinari per reparto nel 2024?")
    assert answer.status == "computed"
    wording = llm.requests[1].raw.decode("utf-8")
    assert "| Pediatria | 3 |" in wording and "[MASKED]" not in wording
    assert "| Pediatria | 3 |" in answer.text and DATA_DATE in answer.text


def test_enum_values_reach_the_router_protected_and_come_back_restored(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """values_from may hold names (a registry's companies): they reach the model as
    placeholders, and the placeholder the model chooses is restored before validation."""
    privacy = '[privacy]\npseudonymise = true\nregistry = "registry.csv"\n\n'
    aw = _with_model(tmp_path, llm, "openai", privacy=privacy)
    aw.write("registry.csv", "kind,id,name\nAZIENDA,7,Pediatria\n")
    llm.reply_tool_calls(
        ToolCallScript("ricoveri-reparto", {"reparto": "[AZIENDA:7]", "anno": 2024, "regime": None})
    )
    llm.reply("Sono 3.")
    answer = ask(aw, "Quanti ricoveri ha avuto quel reparto nel 2024?")
    assert answer.status == "computed", answer.text
    assert answer.provenance is not None
    assert answer.provenance["parameters"]["reparto"] == "Pediatria"
    routing = llm.requests[0].body
    enum = _tools(routing)["ricoveri-reparto"]["parameters"]["properties"]["reparto"]["enum"]
    assert "[AZIENDA:7]" in enum and "Pediatria" not in enum
    # Nor through the queries' descriptions and example questions ("...la Pediatria nel 2024?")
    sent = llm.requests[0].raw.decode("utf-8")
    assert "Pediatria" not in sent, sent[sent.find("Pediatria") - 200 : sent.find("Pediatria") + 50]


def test_a_column_masked_for_the_model_is_named_in_the_answer_and_an_over_masked_report(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A result column reviewed as `unknown` reaches the model masked: the answer's
    diagnostics name it with its values and the rule, and a reader's over_masked report on
    that answer carries the same, for the reviewer who can declare it harmless."""
    from thoth.answer.feedback import report
    from thoth.runtime import open_state

    aw = _with_model(tmp_path, llm, "openai", privacy="[privacy]\npseudonymise = true\n\n")
    query = aw.root / "analytics/queries/ricoveri-per-reparto.yaml"
    text = query.read_text("utf-8").replace(
        "reparto: {label: Reparto, kind: category}", "reparto: {label: Reparto, kind: unknown}"
    )
    aw.write("analytics/queries/ricoveri-per-reparto.yaml", text)
    aw.activate()
    llm.reply_tool_calls(
        ToolCallScript("ricoveri-per-reparto", {"anno": 2024, "regime": "ordinario"})
    )
    llm.reply("Ecco i ricoveri per reparto.")
    answer = ask(aw, "Ricoveri ordinari per reparto nel 2024?")
    assert answer.status == "computed", answer.text
    assert "| [MASKED] | 3 |" in llm.requests[1].raw.decode("utf-8")
    [masked] = answer.diagnostics["masked"]
    assert answer.figures is not None and masked["column"] == "reparto"
    assert masked["values"] == len(answer.figures["rows"])
    assert "reviewed kind 'unknown'" in masked["rule"]
    with open_state(aw.ws) as state:
        saved = report(state, "an", answer.id, "over_masked", "the ward is not personal")
    assert saved.masked == [masked]
