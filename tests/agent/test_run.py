"""One job's run against the local fake model server, on a real SQLite queue: tools, the fence
against a hostile page, budgets, sources, transcript, cancel, privacy."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import PAGES, SECRET
from tests.fake_llm import FakeLLMServer, ToolCallScript
from thoth.agent import AgentRun, Budgets, Toolbox, WikiShelf
from thoth.agent.worker import Heartbeat
from thoth.config import LLMSettings, Settings
from thoth.llm.anthropic_chat import AnthropicChat
from thoth.llm.openai_chat import OpenAIChat
from thoth.privacy import NoPseudonymizer, PlaceholderPseudonymizer, Pseudonymizer, Registry
from thoth.privacy.registry import Entity
from thoth.state import Job, JobQueue, JobStep, StateStore

PROVIDERS = ["openai", "anthropic"]
BUDGETS = Budgets(
    max_turns=10, max_tool_calls=10, max_tokens=1000, max_seconds=60, max_tool_result_chars=5000
)

# Every file the process opens while a job runs (an audit hook cannot be removed: it records
# only while a test switches it on).
_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | Path):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, text in PAGES.items():
        (root / "wiki" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "wiki" / rel).write_text(text, encoding="utf-8")
    (root / "thoth.toml").write_text(f'# {SECRET}\nworkspace = "ws"\n', encoding="utf-8")
    return root


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[JobQueue]:
    with StateStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}") as store:
        yield JobQueue.on(store)


def client(llm: FakeLLMServer, provider: str) -> OpenAIChat | AnthropicChat:
    settings = LLMSettings.model_validate(
        {
            "provider": provider,
            "base_url": llm.url + "/v1" if provider == "openai" else llm.url,
            "model": "fake-model",
            "timeout_seconds": 20,
        }
    )
    return AnthropicChat(settings, "k") if provider == "anthropic" else OpenAIChat(settings, "k")


def run(
    queue: JobQueue,
    llm: FakeLLMServer,
    ws: Path,
    *,
    provider: str = "openai",
    question: str = "Come va il vino italiano in Giappone?",
    budgets: Budgets = BUDGETS,
    pseudonymizer: Pseudonymizer | None = None,
    lease_seconds: float = 30,
    during: Any = None,
) -> tuple[Job, list[JobStep]]:
    queue.create("ws", "crm", question, {"labels": ["public"], "channel": None})
    job = queue.claim("w1", lease_seconds)
    assert job is not None
    privacy = pseudonymizer or NoPseudonymizer()
    toolbox = Toolbox(
        wiki=WikiShelf(ws / "wiki", Settings(workspace="ws"), ["public"]),
        knowledge=None,
        analytics=None,
        request=job.request,
        pseudonymizer=privacy,
    )
    beat = Heartbeat(queue, job.id, "w1", lease_seconds)
    beat.start()
    if during is not None:
        threading.Thread(target=during, args=(job,), daemon=True).start()
    try:
        AgentRun(queue, job, "w1", client(llm, provider), toolbox, budgets, privacy, beat).run()
    finally:
        beat.stop()
    return queue.get(job.id), queue.steps(job.id)


def tool_steps(steps: list[JobStep]) -> list[dict[str, Any]]:
    return [s.data for s in steps if s.kind == "tool"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_job_answers_citing_what_the_tools_returned(
    queue: JobQueue, llm: FakeLLMServer, ws: Path, provider: str
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}))
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 12% nel 2024 (mercati/giappone.md; anche inventato.md).")
    job, steps = run(queue, llm, ws, provider=provider)
    assert job.status == "completed" and job.error_code is None
    assert job.result is not None and job.result["answer"].startswith("Cresce del 12%")
    # The page the tool read, not the one the model claims.
    [source] = job.result["sources"]
    assert source["kind"] == "wiki_page" and source["path"] == "mercati/giappone.md"
    assert source["title"] == "Mercato Giappone" and len(source["sha256"]) == 64
    assert [s.kind for s in steps] == ["model", "tool", "model", "tool", "model"]
    assert job.usage["turns"] == 3 and job.usage["tool_calls"] == 2
    assert job.usage["tokens"] == 6
    listed = json.loads(tool_steps(steps)[0]["result"])
    assert [p["path"] for p in listed["pages"]] == [
        "mercati/francia.md",
        "mercati/giappone.md",
        "ostile.md",
    ]
    # The model read the listing in the next turn.
    assert "mercati/francia.md" in llm.requests[1].raw.decode()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hostile_page_cannot_make_the_tools_read_outside_the_wiki(
    queue: JobQueue, llm: FakeLLMServer, ws: Path, provider: str
) -> None:
    global _OPENED
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "ostile.md"}))
    # The scripted model obeys the page.
    llm.reply_tool_calls(
        ToolCallScript("wiki_read", {"path": "../../thoth.toml"}),
        ToolCallScript("wiki_read", {"path": "../thoth.toml"}),
        ToolCallScript("wiki_read", {"path": "/etc/passwd"}),
    )
    llm.reply("La nota chiede di leggere file esterni: non è possibile.")
    _OPENED = []
    try:
        job, steps = run(queue, llm, ws, provider=provider)
        opened = list(_OPENED)
    finally:
        _OPENED = None
    refusals = tool_steps(steps)[1:]
    assert [s["error_code"] for s in refusals] == ["path_outside_wiki"] * 3
    assert all(json.loads(s["result"])["error"]["code"] == "path_outside_wiki" for s in refusals)
    # The model saw the coded refusals...
    last = llm.requests[2].raw.decode()
    assert last.count("path_outside_wiki") == 3
    # ...and nothing outside the wiki was opened, sent or stored.
    assert not [p for p in opened if p.endswith("thoth.toml") or p == "/etc/passwd"]
    assert all(SECRET not in r.raw.decode() for r in llm.requests)
    assert all(SECRET not in json.dumps(s.data) for s in steps)
    assert "root:" not in json.dumps([s.data for s in steps])
    # The refused reads are gaps of the answer: it ends partial, saying so.
    assert job.status == "partial" and job.result is not None
    assert job.error_code == "path_outside_wiki"
    assert [g["code"] for g in job.result["gaps"]] == ["path_outside_wiki"] * 3
    assert [s["path"] for s in job.result["sources"]] == ["ostile.md"]


@pytest.mark.parametrize(
    ("which", "budget", "script"),
    [
        ("turns", {"max_turns": 2}, [("wiki_list", 1)] * 3),
        ("tool_calls", {"max_tool_calls": 1}, [("wiki_list", 2)]),
        ("tokens", {"max_tokens": 3}, [("wiki_list", 1)] * 3),
    ],
)
def test_an_exhausted_budget_fails_the_job_with_the_reason_and_keeps_the_steps(
    queue: JobQueue,
    llm: FakeLLMServer,
    ws: Path,
    which: str,
    budget: dict[str, int],
    script: list[tuple[str, int]],
) -> None:
    for name, calls in script:
        llm.reply_tool_calls(*[ToolCallScript(name, {}) for _ in range(calls)])
    budgets = Budgets(**{**BUDGETS.__dict__, **budget})
    job, steps = run(queue, llm, ws, budgets=budgets)
    assert job.status == "failed" and job.result is None
    assert job.error_code == f"budget_{which}"
    assert job.error is not None and f"[agent].max_{which}" in job.error
    assert "no partial answer" in job.error
    assert steps and steps[0].kind == "model"
    expected = {"turns": (2, 2), "tool_calls": (1, 1), "tokens": (2, 1)}[which]
    assert (job.usage["turns"], job.usage["tool_calls"]) == expected


def test_the_wall_time_budget_fails_the_job(queue: JobQueue, llm: FakeLLMServer, ws: Path) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}), delay=0.6)
    budgets = Budgets(**{**BUDGETS.__dict__, "max_seconds": 0.3})
    job, steps = run(queue, llm, ws, budgets=budgets)
    assert job.status == "failed" and job.error_code == "budget_seconds"
    assert [s.kind for s in steps] == ["model"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_slow_model_call_cannot_hold_a_job_past_its_seconds_budget(
    queue: JobQueue, llm: FakeLLMServer, ws: Path, provider: str
) -> None:
    """The call gets only what is left of max_seconds, not the whole [llm].timeout_seconds
    (20 s here): a server that takes 15 s is cut at the budget, and the job says so."""
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}), delay=15)
    budgets = Budgets(**{**BUDGETS.__dict__, "max_seconds": 6})
    began = time.monotonic()
    job, steps = run(queue, llm, ws, budgets=budgets, provider=provider)
    assert time.monotonic() - began < 10
    assert job.status == "failed" and job.error_code == "budget_seconds", job.error
    assert "[agent].max_seconds" in (job.error or "")
    assert steps == []  # the cut call produced no step


def test_an_answer_without_a_source_is_not_served(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply("Il vino cresce del 50%, fidati.")
    job, steps = run(queue, llm, ws)
    assert job.status == "failed" and job.error_code == "no_sources" and job.result is None
    assert steps[0].data["text"] == "Il vino cresce del 50%, fidati."


def test_a_failed_model_call_fails_the_job_keeping_the_steps(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}))
    llm.reply(status=500)
    job, steps = run(queue, llm, ws)
    assert job.status == "failed" and job.error_code == "llm_failed"
    assert [s.kind for s in steps] == ["model", "tool"]


def test_a_running_job_cancelled_stops_at_its_next_step(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}), delay=1.0)

    def cancel(job: Job) -> None:
        time.sleep(0.2)
        queue.cancel(job.id)

    job, steps = run(queue, llm, ws, lease_seconds=0.3, during=cancel)
    assert job.status == "cancelled" and job.error_code == "cancelled" and job.result is None
    assert [s.kind for s in steps] == ["model"]  # the tool call was not run


def test_with_privacy_on_the_model_and_the_transcript_see_placeholders(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    privacy = PlaceholderPseudonymizer(
        Registry([Entity("AZIENDA", "C1", "Rossi Trading")]), min_name_length=4
    )
    # The model searches by the placeholder it was given: the tool gets the name back.
    llm.reply_tool_calls(ToolCallScript("wiki_search", {"query": "[AZIENDA:C1]"}))
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Il cliente principale in Giappone è [AZIENDA:C1].")
    job, steps = run(
        queue, llm, ws, question="Chi è il cliente Rossi Trading?", pseudonymizer=privacy
    )
    assert job.status == "completed" and job.result is not None
    assert job.result["answer"] == "Il cliente principale in Giappone è Rossi Trading."
    assert all("Rossi Trading" not in r.raw.decode() for r in llm.requests)
    assert "[AZIENDA:C1]" in llm.requests[0].raw.decode()
    assert "[AZIENDA:C1]" in llm.requests[2].raw.decode()  # the page, protected
    found = json.loads(tool_steps(steps)[0]["result"])
    assert [p["path"] for p in found["pages"]] == ["mercati/giappone.md"]
    assert all("Rossi Trading" not in json.dumps(s.data) for s in steps)


# -- issue 28, point 1: gaps are data, partial is a state ----------------------------------------


def test_an_answer_written_after_a_refused_call_ends_partial_saying_what_it_rests_on(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "riservato/margini.md"}))
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 12% nel 2024 (mercati/giappone.md).")
    job, _ = run(queue, llm, ws)
    assert job.status == "partial" and job.finished
    assert job.error_code == "page_label_not_allowed"
    assert job.result is not None and job.result["answer"].startswith("Cresce del 12%")
    [source] = job.result["sources"]
    assert source["path"] == "mercati/giappone.md"
    [gap] = job.result["gaps"]
    assert gap["tool"] == "wiki_read" and gap["code"] == "page_label_not_allowed"
    assert gap["recovered"] is False and "wiki" in gap["meaning"]
    rests_on = job.result["rests_on"]
    assert rests_on == job.error
    assert "wiki_read was refused (page_label_not_allowed)" in rests_on
    assert "the answer rests on 1 wiki page" in rests_on


def test_a_call_error_the_model_corrects_is_listed_but_the_job_completes(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"page": "mercati/giappone.md"}))
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 12% nel 2024 (mercati/giappone.md).")
    job, _ = run(queue, llm, ws)
    assert job.status == "completed" and job.error_code is None
    assert job.result is not None
    [gap] = job.result["gaps"]
    assert gap["code"] == "bad_arguments" and gap["recovered"] is True
    assert job.result["rests_on"] == "the answer rests on 1 wiki page"


def test_a_result_cut_for_the_model_is_a_gap(queue: JobQueue, llm: FakeLLMServer, ws: Path) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce (mercati/giappone.md).")
    budgets = Budgets(**{**BUDGETS.__dict__, "max_tool_result_chars": 40})
    job, _ = run(queue, llm, ws, budgets=budgets)
    assert job.status == "partial" and job.error_code == "result_cut"
    assert job.result is not None
    [gap] = job.result["gaps"]
    assert gap["tool"] == "wiki_read" and "cut at 40 of" in gap["meaning"]


def test_a_clean_job_completes_with_no_gaps(queue: JobQueue, llm: FakeLLMServer, ws: Path) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 12% nel 2024 (mercati/giappone.md).")
    job, _ = run(queue, llm, ws)
    assert job.status == "completed" and job.result is not None
    assert job.result["gaps"] == []


# -- issue 28, point 3: figures are checked -------------------------------------------------


def test_an_invented_figure_gets_one_correction_then_the_job_completes(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 15% nel 2024 (mercati/giappone.md).")  # the page says 12%
    llm.reply("Cresce del 12% nel 2024 (mercati/giappone.md).")
    job, steps = run(queue, llm, ws)
    assert job.status == "completed" and job.result is not None
    assert job.result["answer"].startswith("Cresce del 12%")
    assert job.result["figures"] == {
        "supported": ["12%"],
        "derived": [],
        "unsupported": [],
        "dated": [],
    }
    correction = llm.requests[2].raw.decode()
    assert "15%" in correction and "appear in no tool result" in correction
    assert [s.kind for s in steps] == ["model", "tool", "model", "model"]


def test_a_figure_still_unsupported_after_the_correction_ends_partial(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 15% nel 2024 (mercati/giappone.md).")
    llm.reply("Cresce del 15,5% nel 2024 (mercati/giappone.md).")
    job, _ = run(queue, llm, ws)
    assert job.status == "partial" and job.error_code == "unsupported_figures"
    assert job.result is not None and job.result["answer"].startswith("Cresce del 15,5%")
    assert job.result["figures"]["unsupported"] == ["15,5%"]
    [gap] = job.result["gaps"]
    assert gap["tool"] == "answer" and "15,5%" in gap["meaning"]
    assert job.error == (
        "the answer has figures no tool result supports (unsupported_figures): the answer "
        "rests on 1 wiki page"
    )


def test_a_correction_cut_by_a_budget_keeps_the_draft_as_partial(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply("Cresce del 15% nel 2024 (mercati/giappone.md).")
    budgets = Budgets(**{**BUDGETS.__dict__, "max_turns": 2})
    job, _ = run(queue, llm, ws, budgets=budgets)
    assert job.status == "partial" and job.error_code == "unsupported_figures"
    assert job.result is not None and job.result["answer"].startswith("Cresce del 15%")


# -- issue 28, point 2: budgets end in a partial report, not in nothing -------------------------


def test_a_budget_with_results_in_hand_ends_partial_from_a_reserve_turn(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}))
    llm.reply("Cresce del 12% nel 2024 (mercati/giappone.md); il resto non è stato verificato.")
    budgets = Budgets(**{**BUDGETS.__dict__, "max_turns": 2})
    job, steps = run(queue, llm, ws, budgets=budgets)
    assert job.status == "partial" and job.error_code == "budget_turns"
    assert job.result is not None and job.result["answer"].startswith("Cresce del 12%")
    assert [s["path"] for s in job.result["sources"]] == ["mercati/giappone.md"]
    [gap] = job.result["gaps"]
    assert gap["tool"] == "budget" and "reserve turn" in gap["meaning"]
    assert job.error == "the budget ran out (budget_turns): the answer rests on 1 wiki page"
    reserve = llm.requests[2].raw.decode()
    assert "Budget exhausted" in reserve and "Do not call any tool" in reserve
    assert [s.kind for s in steps] == ["model", "tool", "model", "tool", "model"]


# -- issue 46, point 7: the reserve turn forces a text reply ----------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_model_that_keeps_calling_tools_ends_partial_from_a_reserve_without_tools(
    queue: JobQueue, llm: FakeLLMServer, ws: Path, provider: str
) -> None:
    """A model that calls a tool whenever it may: the reserve turn refuses tools in the
    provider's own wire format (the fake answers tool calls otherwise), so what was
    established is kept."""
    llm.always_call_tools(
        ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}),
        answer="Cresce del 12% nel 2024 (mercati/giappone.md); il resto non è verificato.",
    )
    budgets = Budgets(**{**BUDGETS.__dict__, "max_turns": 3})
    job, steps = run(queue, llm, ws, budgets=budgets, provider=provider)
    assert job.status == "partial" and job.error_code == "budget_turns", job.error
    assert job.result is not None and job.result["answer"].startswith("Cresce del 12%")
    assert [s["path"] for s in job.result["sources"]] == ["mercati/giappone.md"]
    assert [g["code"] for g in job.result["gaps"]] == ["budget_turns"]
    choices = [r.body.get("tool_choice") for r in llm.requests]
    refused = "none" if provider == "openai" else {"type": "none"}
    allowed = "auto" if provider == "openai" else None
    assert choices == [allowed, allowed, allowed, refused]
    assert all(r.body["tools"] for r in llm.requests)  # listed: the turns name them
    assert [s.kind for s in steps] == ["model", "tool"] * 3 + ["model"]


def test_a_reserve_turn_answered_with_a_tool_call_fails_the_job_with_the_budget_code(
    queue: JobQueue, llm: FakeLLMServer, ws: Path
) -> None:
    """A server that disregards the tool choice and calls a tool anyway: no answer to keep."""
    llm.ignores_tool_choice = True
    llm.reply_tool_calls(ToolCallScript("wiki_read", {"path": "mercati/giappone.md"}))
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}))
    llm.reply_tool_calls(ToolCallScript("wiki_list", {}))
    budgets = Budgets(**{**BUDGETS.__dict__, "max_turns": 2})
    job, _ = run(queue, llm, ws, budgets=budgets)
    assert job.status == "failed" and job.error_code == "budget_turns" and job.result is None
