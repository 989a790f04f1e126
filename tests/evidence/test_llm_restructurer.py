"""The LLM restructurer end to end: real `openai` / `anthropic` SDK clients make real HTTP
requests to a scripted model server on 127.0.0.1 (tests/fake_llm.py). Nothing is mocked: the
tests see exactly what goes over the wire and what `prepare` writes to a real Git workspace."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import FORMULA, GLOSSARY, commit_all, status, write_source
from tests.fake_llm import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    FakeLLMServer,
    RecordedRequest,
    ToolCallScript,
)
from thoth.config import LLMSettings
from thoth.errors import Problem, ProblemsError
from thoth.evidence.corpus import load_corpus
from thoth.evidence.document import parse_unit
from thoth.evidence.manifest import Detached, load_manifest
from thoth.evidence.model import KINDS, Unit
from thoth.evidence.normalize import normalize_text
from thoth.evidence.prepare import UNSUPPORTED, PrepareReport, prepare
from thoth.evidence.restructure import make_restructurer
from thoth.evidence.restructure.llm import (
    REPLY_SCHEMA,
    SYSTEM_PROMPT,
    LLMRestructurer,
    RestructureReply,
)
from thoth.evidence.sources import sha256_of
from thoth.llm import LLMError, chat_client
from thoth.privacy import NoPseudonymizer
from thoth.workspace import Workspace

KEY_ENV = "THOTH_TEST_KEY"
KEY = "local-test-key-not-a-secret"
REL = "source/ricoveri.md"

# CRLF line ends, a tab, inner and trailing double spaces, a `*` bullet and a double blank line:
# the model must receive the normalised text, not the bytes on disk.
RAW_SOURCE = (
    "# Note sui ricoveri\r\n"
    "\r\n"
    "**Ricovero**:  permanenza del paziente in reparto con almeno un pernottamento.   \r\n"
    "* il day hospital\tnon è un ricovero ordinario\r\n"
    "\r\n"
    "\r\n"
    "## Fascia pediatrica\r\n"
    "\r\n"
    "Per fascia pediatrica si intendono i pazienti con età inferiore a 18 anni, calcolata da "
    "`clinical.patient.birth_date` e `adt.admission.admission_date`.\r\n"
    "\r\n"
    "```sql\r\n"
    "CASE WHEN date_part('year', age(a.admission_date, p.birth_date)) < 18 "
    "THEN 'pediatrica' ELSE 'adulta' END\r\n"
    "```\r\n"
)
NORMALIZED = normalize_text(RAW_SOURCE)
RICOVERO_LINE = "**Ricovero**: permanenza del paziente in reparto con almeno un pernottamento."
PEDIATRIC_LINE = (
    "Per fascia pediatrica si intendono i pazienti con età inferiore a 18 anni, calcolata da "
    "`clinical.patient.birth_date` e `adt.admission.admission_date`."
)
PEDIATRIC_SQL = (
    "CASE WHEN date_part('year', age(a.admission_date, p.birth_date)) < 18 "
    "THEN 'pediatrica' ELSE 'adulta' END"
)


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def use_llm(
    ws: Workspace,
    server: FakeLLMServer,
    provider: str = "openai",
    timeout: float = 2,
) -> Workspace:
    """Point the workspace at the fake server, commit, and re-open it."""
    base_url = f"{server.url}/v1" if provider == "openai" else server.url
    (ws.root / "thoth.toml").write_text(
        f'workspace = "{ws.settings.workspace}"\n'
        'language = "it"\n'
        "\n"
        "[evidence]\n"
        'restructurer = "llm"\n'
        "\n"
        "[llm]\n"
        f'provider = "{provider}"\n'
        f'base_url = "{base_url}"\n'
        'model = "test-model"\n'
        f'api_key_env = "{KEY_ENV}"\n'
        f"timeout_seconds = {timeout}\n",
        encoding="utf-8",
    )
    commit_all(ws.root, "use the LLM restructurer")
    reopened = Workspace.open(ws.root)
    assert reopened.settings.evidence.restructurer == "llm"
    return reopened


def run_prepare(ws: Workspace) -> PrepareReport:
    return prepare(ws, make_restructurer(ws.settings, NoPseudonymizer()))


def unit(
    title: str,
    kind: str,
    data: dict[str, Any],
    excerpts: list[str],
    unit_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One unit as the model writes it in its reply."""
    return {
        "id": unit_id,
        "title": title,
        "kind": kind,
        "purposes": extra.pop("purposes", []),
        "applies_to": extra.pop("applies_to", {"concepts": [], "tables": [], "columns": []}),
        "caveats": extra.pop("caveats", []),
        "review_items": extra.pop("review_items", []),
        "data": data,
        "supporting_excerpts": excerpts,
        "body": extra.pop("body", f"# {title}"),
        **extra,
    }


def reply(*units: dict[str, Any], retire: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "units": list(units),
        "retirement_candidates": [{"id": i, "reason": r} for i, r in (retire or {}).items()],
    }


GLOSSARY_RICOVERO = unit(
    "Ricovero",
    "glossary",
    {
        "term": "Ricovero",
        "definition": "permanenza del paziente in reparto con almeno un pernottamento.",
        "synonyms": [],
    },
    [RICOVERO_LINE],
    applies_to={"concepts": ["Ricovero"], "tables": [], "columns": []},
)
FORMULA_PEDIATRIC = unit(
    "Fascia pediatrica",
    "formula",
    {
        "concept": "Fascia pediatrica",
        "columns": ["clinical.patient.birth_date", "adt.admission.admission_date"],
        "sql": PEDIATRIC_SQL,
    },
    [PEDIATRIC_LINE, PEDIATRIC_SQL],
    applies_to={
        "concepts": ["Fascia pediatrica"],
        "tables": ["clinical.patient", "adt.admission"],
        "columns": ["clinical.patient.birth_date", "adt.admission.admission_date"],
    },
)


def openai_payload(request: RecordedRequest) -> dict[str, Any]:
    """The JSON user message of an OpenAI chat-completions request."""
    assert request.path == OPENAI_PATH
    messages = request.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    payload: dict[str, Any] = json.loads(messages[1]["content"])
    return payload


def read_unit(ws: Workspace, rel: str) -> Unit:
    path = ws.evidence / rel
    assert path.is_file(), f"{rel} was not written"
    parsed = parse_unit(path.read_text(encoding="utf-8"), rel)
    assert not isinstance(parsed, list), parsed
    return parsed


def only_problem(exc: pytest.ExceptionInfo[ProblemsError]) -> Problem:
    problems = exc.value.problems
    assert len(problems) == 1, [p.render() for p in problems]
    return problems[0]


def llm_workspace(
    make_workspace: Callable[..., Workspace],
    server: FakeLLMServer,
    source: str = RAW_SOURCE,
    **options: Any,
) -> Workspace:
    ws = make_workspace({"ricoveri.md": source})
    return use_llm(ws, server, **options)


# -- tests -----------------------------------------------------------------------------------


def test_llm_prepare_writes_units_from_model_reply(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server)
    llm_server.reply_json(reply(GLOSSARY_RICOVERO, FORMULA_PEDIATRIC))

    report = run_prepare(ws)

    assert report.restructurer == "llm:openai:test-model"
    assert [(s.source, s.status) for s in report.sources] == [(REL, "new")]
    assert report.sources[0].created == ["evidence:ricovero", "evidence:fascia-pediatrica"]
    assert report.written == [
        "curated/formula/fascia-pediatrica.md",
        "curated/glossary/ricovero.md",
        "manifest.yaml",
    ]
    glossary = read_unit(ws, "curated/glossary/ricovero.md")
    assert glossary.id == "evidence:ricovero"
    assert glossary.kind == "glossary"
    assert glossary.provenance.source_file == REL
    assert glossary.provenance.source_sha256 == sha256_of(RAW_SOURCE.encode("utf-8"))
    assert glossary.provenance.supporting_excerpts == [RICOVERO_LINE]
    assert glossary.purposes == ["disambiguation", "rewriting"]  # defaults for the kind
    formula = read_unit(ws, "curated/formula/fascia-pediatrica.md")
    assert formula.id == "evidence:fascia-pediatrica"
    assert formula.kind == "formula"
    assert formula.formula.sql == PEDIATRIC_SQL
    assert formula.applies_to.columns == [
        "clinical.patient.birth_date",
        "adt.admission.admission_date",
    ]
    files, problems = load_corpus(ws.evidence)
    assert problems == []
    assert sorted(f.unit.id for f in files) == ["evidence:fascia-pediatrica", "evidence:ricovero"]
    manifest = load_manifest(ws.manifest_path)
    assert list(manifest.sources) == [REL]
    assert manifest.sources[REL].sha256 == sha256_of(RAW_SOURCE.encode("utf-8"))
    assert [u.id for u in manifest.sources[REL].units] == [
        "evidence:ricovero",
        "evidence:fascia-pediatrica",
    ]

    # What went over the wire: exactly one call for the one changed source, no retry.
    assert len(llm_server.requests) == 1
    request = llm_server.requests[0]
    assert request.method == "POST"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "test-model"
    assert request.body["temperature"] == 0
    # The reply contract goes over the wire as OpenAI structured output: the pydantic model's
    # JSON schema, the same model that checks the reply.
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": REPLY_SCHEMA.name,
            "description": REPLY_SCHEMA.description,
            "schema": RestructureReply.model_json_schema(),
            "strict": False,
        },
    }
    assert request.body["response_format"]["json_schema"]["schema"]["required"] == ["units"]
    system = request.body["messages"][0]["content"]
    assert system == SYSTEM_PROMPT
    assert "Do not invent" in system
    assert "Flag doubts" in system
    payload = openai_payload(request)
    assert NORMALIZED != RAW_SOURCE  # the fixture really exercises normalisation
    assert payload["source_text"] == NORMALIZED
    assert "\r" not in payload["source_text"]
    assert payload["source_file"] == REL
    assert payload["language"] == "it"
    assert sorted(payload["kind_schemas"]) == sorted(KINDS)
    assert len(payload["kind_schemas"]) == 8
    assert payload["kind_schemas"]["formula"]["required"] == ["concept", "columns", "sql"]
    assert payload["prior_units"] == []
    assert payload["allowed_ids"] == []

    # Nothing changed since: the next prepare makes no call at all.
    commit_all(ws.root, "reviewed units")
    again = run_prepare(ws)
    assert again.noop
    assert [(s.source, s.status) for s in again.sources] == [(REL, "unchanged")]
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""


def test_llm_receives_prior_units_and_may_keep_ids(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    first_source = "# Ricoveri\n\nRicovero: permanenza in reparto con almeno un pernottamento.\n"
    first_line = "Ricovero: permanenza in reparto con almeno un pernottamento."
    ws = llm_workspace(make_workspace, llm_server, source=first_source)
    llm_server.reply_json(
        reply(unit("Ricovero", "domain", {"rule": first_line}, [first_line], body="# Ricovero"))
    )
    run_prepare(ws)
    assert (ws.curated / "domain" / "ricovero.md").is_file()
    commit_all(ws.root, "first review")

    second_source = first_source + "Sinonimi: degenza, ospedalizzazione.\n"
    write_source(ws.root, "ricoveri.md", second_source)
    commit_all(ws.root, "source edited")
    llm_server.reply_json(
        reply(
            unit(
                "Ricovero",
                "glossary",
                {
                    "term": "Ricovero",
                    "definition": "permanenza in reparto con almeno un pernottamento.",
                    "synonyms": ["degenza", "ospedalizzazione"],
                },
                [first_line, "Sinonimi: degenza, ospedalizzazione."],
                unit_id="evidence:ricovero",
            )
        )
    )
    report = run_prepare(ws)

    assert len(llm_server.requests) == 2
    payload = openai_payload(llm_server.requests[1])
    assert payload["source_text"] == normalize_text(second_source)
    assert payload["allowed_ids"] == ["evidence:ricovero"]
    assert len(payload["prior_units"]) == 1
    prior = payload["prior_units"][0]
    assert prior["id"] == "evidence:ricovero"
    assert prior["kind"] == "domain"
    assert prior["title"] == "Ricovero"
    assert prior["data"] == {"rule": first_line}
    assert prior["supporting_excerpts"] == [first_line]

    # Same id, reclassified: the file moved from curated/domain/ to curated/glossary/.
    assert [(s.source, s.status) for s in report.sources] == [(REL, "changed")]
    assert report.sources[0].updated == ["evidence:ricovero"]
    assert report.sources[0].created == []
    assert report.deleted == ["curated/domain/ricovero.md"]
    assert not (ws.curated / "domain" / "ricovero.md").exists()
    moved = read_unit(ws, "curated/glossary/ricovero.md")
    assert moved.id == "evidence:ricovero"
    assert moved.kind == "glossary"
    assert moved.glossary.synonyms == ["degenza", "ospedalizzazione"]
    assert moved.provenance.source_sha256 == sha256_of(second_source.encode("utf-8"))
    manifest = load_manifest(ws.manifest_path)
    assert [u.id for u in manifest.sources[REL].units] == ["evidence:ricovero"]
    assert manifest.retirement_candidates == []
    files, problems = load_corpus(ws.evidence)
    assert problems == []
    assert [f.rel for f in files] == ["curated/glossary/ricovero.md"]


def test_llm_unknown_id_fails_source_and_writes_nothing(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server)
    invented = dict(GLOSSARY_RICOVERO, id="evidence:invented")
    llm_server.reply_json(reply(invented, FORMULA_PEDIATRIC))

    with pytest.raises(ProblemsError) as exc:
        run_prepare(ws)

    problem = only_problem(exc)
    assert problem.where == REL
    assert problem.code == "restructure_failed"
    assert "unknown id" in problem.message
    assert "evidence:invented" in problem.message
    assert "nothing was written" in exc.value.summary
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""
    assert load_corpus(ws.evidence) == ([], [])


def test_llm_malformed_json_fails_source(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server)
    llm_server.reply("not json {")

    with pytest.raises(ProblemsError) as exc:
        run_prepare(ws)

    problem = only_problem(exc)
    assert problem.where == REL
    assert problem.code == "restructure_failed"
    assert "not valid JSON" in problem.message
    assert REL in str(exc.value)
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""


def test_llm_timeout_is_attributed_and_not_retried(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server, timeout=1)
    assert ws.settings.llm.timeout_seconds == 1
    llm_server.reply_json(reply(GLOSSARY_RICOVERO), delay=2)

    with pytest.raises(ProblemsError) as exc:
        run_prepare(ws)

    problem = only_problem(exc)
    assert problem.where == REL
    assert problem.code == "restructure_failed"
    assert "timed out" in problem.message
    assert "1.0s" in problem.message or "1s" in problem.message
    assert "no retry" in (problem.hint or "")
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""


def test_llm_http_error_is_attributed(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server)
    llm_server.reply(status=500)

    with pytest.raises(ProblemsError) as exc:
        run_prepare(ws)

    problem = only_problem(exc)
    assert problem.where == REL
    assert problem.code == "restructure_failed"
    assert "HTTP 500" in problem.message
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""


def test_llm_retirement_candidate(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server, source=GLOSSARY)
    normalized = normalize_text(GLOSSARY)
    ricovero_line = next(line for line in normalized.split("\n") if "**Ricovero**" in line)
    day_line = next(line for line in normalized.split("\n") if "**Day hospital**" in line)
    ricovero = unit(
        "Ricovero",
        "glossary",
        {"term": "Ricovero", "definition": "permanenza in reparto con pernottamento."},
        [ricovero_line],
    )
    day_hospital = unit(
        "Day hospital",
        "glossary",
        {"term": "Day hospital", "definition": "ricovero diurno senza pernottamento."},
        [day_line],
    )
    llm_server.reply_json(reply(ricovero, day_hospital))
    run_prepare(ws)
    commit_all(ws.root, "first review")

    # The Day hospital definition disappears from the source.
    write_source(ws.root, "ricoveri.md", GLOSSARY.replace(day_line + "\n", ""))
    commit_all(ws.root, "definition removed")
    reason = "the source no longer defines day hospital"
    llm_server.reply_json(
        reply(
            dict(ricovero, id="evidence:ricovero"),
            retire={"evidence:day-hospital": reason},
        )
    )
    report = run_prepare(ws)

    payload = openai_payload(llm_server.requests[1])
    assert sorted(payload["allowed_ids"]) == ["evidence:day-hospital", "evidence:ricovero"]
    assert day_line not in payload["source_text"]
    assert report.sources[0].retirement_candidates == ["evidence:day-hospital"]
    assert report.sources[0].kept == ["evidence:ricovero"]
    candidate = read_unit(ws, "curated/glossary/day-hospital.md")
    assert candidate.id == "evidence:day-hospital"
    codes = [i.code for i in candidate.review_items]
    assert codes == [UNSUPPORTED] == ["source_no_longer_supports_unit"]
    assert reason in candidate.review_items[0].message
    assert report.review_items["evidence:day-hospital"][0]["code"] == UNSUPPORTED
    kept = read_unit(ws, "curated/glossary/ricovero.md")
    assert kept.review_items == []
    manifest = load_manifest(ws.manifest_path)
    assert manifest.retirement_candidates == [Detached(id="evidence:day-hospital", source=REL)]
    assert sorted(u.id for u in manifest.sources[REL].units) == [
        "evidence:day-hospital",
        "evidence:ricovero",
    ]


def test_llm_excerpt_not_in_source_is_rejected(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server)
    invented_excerpt = "Un ricovero dura sempre almeno tre notti."
    llm_server.reply_json(reply(dict(GLOSSARY_RICOVERO, supporting_excerpts=[invented_excerpt])))

    with pytest.raises(ProblemsError) as exc:
        run_prepare(ws)

    problem = only_problem(exc)
    assert problem.field == "provenance.supporting_excerpts.0"
    assert problem.code == "excerpt_not_found"
    assert problem.where == f"{REL} -> evidence:ricovero"
    assert REL in problem.message
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""
    assert not (ws.curated / "glossary" / "ricovero.md").exists()


def test_anthropic_wire_format(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server, provider="anthropic")
    assert ws.settings.llm.provider == "anthropic"
    # Anthropic structured output: the model is forced to call one tool whose input schema is
    # the reply contract, and answers with that call.
    llm_server.reply_tool_calls(
        ToolCallScript(REPLY_SCHEMA.name, reply(GLOSSARY_RICOVERO, FORMULA_PEDIATRIC))
    )

    # Built by hand this time, from the same settings make_restructurer uses.
    restructurer = LLMRestructurer(chat_client(ws.settings.llm), NoPseudonymizer())
    assert restructurer.name == "llm:anthropic:test-model"
    report = prepare(ws, restructurer)

    assert report.sources[0].created == ["evidence:ricovero", "evidence:fascia-pediatrica"]
    assert read_unit(ws, "curated/glossary/ricovero.md").id == "evidence:ricovero"
    assert read_unit(ws, "curated/formula/fascia-pediatrica.md").kind == "formula"
    manifest = load_manifest(ws.manifest_path)
    assert [u.id for u in manifest.sources[REL].units] == [
        "evidence:ricovero",
        "evidence:fascia-pediatrica",
    ]

    assert len(llm_server.requests) == 1
    request = llm_server.requests[0]
    assert request.path == ANTHROPIC_PATH
    # The key from the environment, as `x-api-key` or (newer SDKs) a bearer token.
    carried = {
        request.headers.get("x-api-key"),
        request.headers.get("authorization", "").removeprefix("Bearer "),
    }
    assert KEY in carried
    assert carried <= {KEY, None, ""}
    assert "anthropic-version" in request.headers
    assert request.body["model"] == "test-model"
    assert request.body["max_tokens"] == ws.settings.llm.max_tokens
    assert request.body["system"] == SYSTEM_PROMPT
    messages = request.body["messages"]
    assert [m["role"] for m in messages] == ["user"]
    payload = json.loads(messages[0]["content"])
    assert payload["source_text"] == NORMALIZED
    assert sorted(payload["kind_schemas"]) == sorted(KINDS)
    assert payload["allowed_ids"] == []
    assert request.body["tools"] == [
        {
            "name": REPLY_SCHEMA.name,
            "description": REPLY_SCHEMA.description,
            "input_schema": RestructureReply.model_json_schema(),
        }
    ]
    assert request.body["tool_choice"] == {"type": "tool", "name": REPLY_SCHEMA.name}


def test_anthropic_reply_without_the_forced_tool_call_is_attributed(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server, provider="anthropic")
    llm_server.reply_json(reply(GLOSSARY_RICOVERO))  # text, not the forced tool call

    with pytest.raises(ProblemsError) as exc:
        run_prepare(ws)

    problem = only_problem(exc)
    assert problem.where == REL and problem.code == "restructure_failed"
    assert f"did not call the tool {REPLY_SCHEMA.name}" in problem.message
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""


def test_llm_formula_statement_rejected(
    make_workspace: Callable[..., Workspace], llm_server: FakeLLMServer
) -> None:
    ws = llm_workspace(make_workspace, llm_server, source=FORMULA)
    line = next(x for x in normalize_text(FORMULA).split("\n") if x.startswith("Per fascia"))
    llm_server.reply_json(
        reply(
            unit(
                "Fascia pediatrica",
                "formula",
                {
                    "concept": "Fascia pediatrica",
                    "columns": ["clinical.patient.birth_date"],
                    "sql": "SELECT 1",
                },
                [line],
            )
        )
    )

    with pytest.raises(ProblemsError) as exc:
        run_prepare(ws)

    problem = only_problem(exc)
    assert problem.where == f"{REL} -> evidence:fascia-pediatrica"
    assert problem.field == "formula.sql"
    assert "formula.sql" in str(exc.value)
    assert "complete statement" in problem.message
    assert len(llm_server.requests) == 1
    assert status(ws.root) == ""
    assert load_corpus(ws.evidence) == ([], [])


def test_fake_server_reports_a_missing_reply_visibly(llm_server: FakeLLMServer) -> None:
    """Guard for the harness itself: an unscripted call must fail, never hang or pass."""
    settings = LLMSettings(base_url=f"{llm_server.url}/v1", model="test-model", api_key_env=KEY_ENV)
    client = chat_client(settings)
    with pytest.raises(LLMError, match="HTTP 599"):
        client.complete_json("system", "user")
    assert len(llm_server.requests) == 1
    assert llm_server.requests[0].path == OPENAI_PATH


@pytest.mark.parametrize(
    "reply,fragment",
    [
        ('{"units": [], "retirement_candidates": [{"id": ["x"]}]}', "unknown id"),
        ('{"units": [], "retirement_candidates": [{"id": {"a": 1}}]}', "unknown id"),
        ('{"units": [], "retirement_candidates": "evidence:a"}', "must be a list"),
        ("[" * 100_000, "not valid JSON"),
        ("[]", "the reply must be an object"),
        ("{}", r"units: is missing"),
        ('{"units": [{"title": "T", "kind": "rule", "data": {}}]}', r"units\[0\]\.kind 'rule'"),
        ('{"units": [{"title": 3, "kind": "domain", "data": {}}]}', r"units\[0\]\.title: must"),
        ('{"units": [{"title": "T", "kind": "domain", "data": []}]}', r"units\[0\]\.data: must"),
        (
            '{"units": [{"title": "T", "kind": "domain", "data": {}, "review_items": [{"code": "x"}]}]}',
            r"units\[0\]\.review_items\[0\]\.message: is missing",
        ),
        (
            '{"units": [{"title": "T", "kind": "domain", "data": {}, "note": "extra"}]}',
            r"units\[0\]\.note: is not part of the reply contract",
        ),
        (
            '{"units": [{"title": "T", "kind": "domain", "data": {}, "caveats": "one"}]}',
            r"units\[0\]\.caveats: must be a list",
        ),
        (
            '{"units": [{"id": "evidence:b", "title": "T", "kind": "domain", "data": {}}]}',
            r"unknown id 'evidence:b' in units\[0\]\.id",
        ),
    ],
)
def test_malformed_replies_are_attributed_errors(reply: str, fragment: str) -> None:
    from thoth.evidence.restructure.base import RestructureError
    from thoth.evidence.restructure.llm import parse_reply

    with pytest.raises(RestructureError, match=fragment):
        parse_reply(reply, {"evidence:a"})
