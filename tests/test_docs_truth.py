"""What the docs say exists matches the code (issue 29, point 6; issue 46, point 7): every HTTP
route of `tht serve` is in docs/service.md's table and every route the table gives exists; every
MCP tool is in docs/mcp.md's table and no other; the statements of absence an earlier version
made ("not built yet", "no per-caller ceiling" ...) are gone from the user docs, read as prose
(a phrase wrapped over two lines included); a claim tied to code (CLAIMS) names code that exists
and is called, and no Protocol declares a method nothing calls; every statement of absence the
docs make ("there is no X", "not yet") is tied to a check that the code still lacks X
(ABSENCES). The CLI's commands and flags are kept true by tests/test_docs_commands.py, the
settings by test_settings_reference."""

from __future__ import annotations

import ast
import functools
import importlib
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
from pydantic import ValidationError

from thoth.config import LLMSettings, Settings
from thoth.llm.base import sdk_options
from thoth.periods import asked_quarters
from thoth.privacy import PlaceholderPseudonymizer, Registry
from thoth.privacy.registry import Entity
from thoth.service.http import create_app
from thoth.sqlcheck import check_read_only_query

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# Statements of something missing that stopped being true; each names what exists now.
STALE = {
    "not built yet": "the agent and its free SQL exist (docs/agent.md)",
    "no per-caller ceiling": "callers have label ceilings (docs/service.md)",
    "routing is by pattern": "routing is by similarity, measure and parameters, or by a model",
    "there is no `GET /metrics`": "GET /metrics exists",
    "Not counted yet": "masked values and feedback are counted",
    "the agent is not built": "the agent exists",
    "read the working tree of the wiki": "the agent reads the served revision",
}
_ROUTE = re.compile(
    r"^\| `((?:GET|POST|DELETE)(?:, (?:GET|POST|DELETE))*) (/[^`? ]*)", re.MULTILINE
)


def _shape(path: str) -> str:
    """`/v1/jobs/{job_id}` and `/v1/jobs/{id}` are the same route."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def app_routes() -> set[tuple[str, str]]:
    routes = set()
    for route in create_app(Path(".")).routes:
        path = getattr(route, "path", "")
        if path.startswith(("/v1/", "/metrics")):
            routes |= {(m, _shape(path)) for m in getattr(route, "methods", set()) - {"HEAD"}}
    return routes


def documented_routes() -> set[tuple[str, str]]:
    text = (DOCS / "service.md").read_text("utf-8")
    found = set()
    for match in re.finditer(r"`((?:GET|POST) /[^`?]*)", text):
        method, path = match.group(1).split(" ", 1)
        if path.startswith(("/v1/", "/metrics")):
            found.add((method, _shape(path.rstrip())))
    return found


def test_every_http_route_is_documented_and_every_documented_route_exists() -> None:
    served, documented = app_routes(), documented_routes()
    assert served - documented == set(), "routes missing from docs/service.md"
    assert documented - served == set(), "docs/service.md names routes that do not exist"


def test_the_mcp_tools_are_the_documented_ones() -> None:
    from thoth.service import mcp_server

    source = Path(mcp_server.__file__).read_text("utf-8")
    tools = set(re.findall(r'Tool\(\n\s+"([a-z_]+)"', source))
    text = (DOCS / "mcp.md").read_text("utf-8")
    section = text[text.index("## Tools") : text.index("## Errors")]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    assert tools and tools == documented


# -- statements read as prose -------------------------------------------------------------------


def prose(path: Path) -> str:
    """A doc's text with every run of whitespace one space: a statement wrapped over two lines
    is still one statement ("no\\n  per-caller ceiling")."""
    return re.sub(r"\s+", " ", path.read_text("utf-8"))


def user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("phrase", sorted(STALE))
def test_no_user_doc_says_a_built_thing_is_missing(phrase: str) -> None:
    """Read as prose: the phrase wrapped over two lines is found too."""
    for path in user_docs():
        assert phrase.casefold() not in prose(path).casefold(), (
            f"{path.name} still says {phrase!r}: {STALE[phrase]}"
        )


# -- claims tied to the code that does them -------------------------------------------------


@functools.cache
def references() -> frozenset[str]:
    """Every name src/thoth uses (a call, an attribute read, a name read): a definition is
    not a use, so a function only defined — or only declared by a Protocol — is not here."""
    used: set[str] = set()
    for path in (ROOT / "src" / "thoth").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.Name):
                used.add(node.id)
    return frozenset(used)


def resolve(dotted: str) -> object:
    """`pkg.module.Class.method` -> the object (an AttributeError names what is missing)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            target = getattr(target, name)
        return target
    raise ModuleNotFoundError(dotted)


# What a doc says Thoth does, and the code that does it: the phrase must still be in the doc,
# and each symbol must exist and be used by src/thoth (not only defined). A statement whose
# code path is never called describes nothing a user can reach.
CLAIMS: Final = [
    ("answers.md", "label_above_ceiling", ["thoth.service.callers.ceiling_labels"]),
    (
        "answers.md",
        "the labels the question was asked with",
        ["thoth.answer.passage.link", "thoth.answer.passage.read_passage"],
    ),
    ("agent.md", 'tool choice "none"', ["thoth.agent.loop.AgentRun._reserve"]),
    (
        "documents.md",
        "each fragment in its own source's `bm25_language`",
        ["thoth.answer.answerers.ExtractiveAnswerer._entry_language"],
    ),
    ("publishing-and-search.md", "thoth.index.fusion.fuse", ["thoth.index.fusion.fuse"]),
    (
        "publishing-and-search.md",
        "sealed by an alias",
        ["thoth.index.server.ServerBackend.seal"],
    ),
    (
        "publishing-and-search.md",
        "Migrations only go forward",
        ["thoth.state.migrations.forward_only"],
    ),
]


@pytest.mark.parametrize(("doc", "phrase", "symbols"), CLAIMS)
def test_a_claim_of_the_docs_names_code_that_exists_and_is_called(
    doc: str, phrase: str, symbols: list[str]
) -> None:
    assert phrase.casefold() in prose(DOCS / doc).casefold(), (
        f"{doc} no longer says {phrase!r}: update CLAIMS"
    )
    used = references()
    for symbol in symbols:
        resolve(symbol)
        name = symbol.rsplit(".", 1)[-1]
        assert name in used, f"{doc} says {phrase!r}, but {symbol} is never called in src/thoth"


def test_every_method_a_protocol_declares_is_called_somewhere() -> None:
    """A Protocol method nothing calls is a code path no user reaches (and a doc describing
    it describes nothing): every method a Protocol of src/thoth declares is used."""
    used, unused = references(), []
    for path in (ROOT / "src" / "thoth").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base).endswith("Protocol") for base in node.bases
            ):
                unused += [
                    f"{path.relative_to(ROOT)}: {node.name}.{item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef)
                    and not item.name.startswith("__")
                    and item.name not in used
                ]
    assert unused == [], "Protocol methods nothing in src/thoth calls"


# -- statements of absence, each checked against the code -----------------------------------

# A sentence saying Thoth has no X, or not yet.
_ABSENCE: Final = re.compile(
    r"[^.;:!?]*\b(?:there (?:is|are) no|in this version|not (?:done|covered|built) yet|"
    r"does not \w+ yet|not yet (?:built|implemented|supported|mapped))\b[^.;!?]*",
    re.IGNORECASE,
)


def _no_automatic_retries() -> None:
    settings = LLMSettings.model_validate(
        {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    )
    assert sdk_options(settings, "k")["max_retries"] == 0


def _no_import_cycles() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert any(c["type"] == "acyclic_siblings" for c in contracts)


def _imported_roots() -> dict[str, set[str]]:
    """Top-level packages imported, by module of src/thoth."""
    out: dict[str, set[str]] = {}
    for path in (ROOT / "src" / "thoth").rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        out[str(path.relative_to(ROOT / "src"))] = names
    return out


def _no_message_broker() -> None:
    brokers = {"celery", "kombu", "redis", "pika", "kafka", "aiokafka", "dramatiq", "rq", "nats"}
    used = set().union(*_imported_roots().values())
    assert not used & brokers, used & brokers
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    named = {re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0] for d in dependencies["dependencies"]}
    assert not named & brokers, named & brokers


def _no_numeric_patterns() -> None:
    with pytest.raises(ValidationError, match="numeric_patterns was removed"):
        Settings.model_validate(
            {"workspace": "ws", "answers": {"routing": {"numeric_patterns": []}}}
        )


def _one_sql_rule_set() -> None:
    readers = {m for m, roots in _imported_roots().items() if "pglast" in roots}
    assert readers and all(m.startswith("thoth/sqlcheck/") for m in readers), readers


def _no_fiscal_quarter_names() -> None:
    asked = asked_quarters("What was revenue in Q2 fiscal 2024?")
    assert asked == asked_quarters("What was revenue in Q2 2024?") == [(2024, 2)]
    assert asked_quarters("revenue year to date") == asked_quarters("the latest quarter") == []


def _no_list_of_unregistered_names() -> None:
    privacy = PlaceholderPseudonymizer(
        Registry([Entity("AZIENDA", "C1", "Rossi Trading")]), min_name_length=4
    )
    said = privacy.protect("Mario Bianchi scrive a Rossi Trading da mario@example.com")
    assert said.startswith("Mario Bianchi scrive a [AZIENDA:C1]") and "@" not in said


def _no_downgrade() -> None:
    from alembic.util import CommandError

    versions = ROOT / "src" / "thoth" / "state" / "migrations" / "versions"
    modules = sorted(p.stem for p in versions.glob("r*.py"))
    assert modules
    for name in modules:
        module = importlib.import_module(f"thoth.state.migrations.versions.{name}")
        with pytest.raises(CommandError, match="cannot be undone"):
            module.downgrade()


def _no_score_bonus_in_evidence_search() -> None:
    tree = ast.parse((ROOT / "src" / "thoth" / "search" / "service.py").read_text("utf-8"))
    arithmetic = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp | ast.AugAssign) and "score" in ast.unparse(node)
    ]
    assert arithmetic == [], "Evidence search changes a fused score"


def _no_sqlite_dialect() -> None:
    assert not check_read_only_query("SELECT strftime('%Y', d) FROM t").ok
    assert check_read_only_query("SELECT extract(year FROM d) FROM t").ok


# (doc, phrase) -> the check that the code still lacks what the sentence says it lacks.
ABSENCES: Final[dict[tuple[str, str], Callable[[], None]]] = {
    ("README.md", "There are no automatic retries"): _no_automatic_retries,
    ("README.md", "there are no import cycles"): _no_import_cycles,
    ("agent.md", "There is no message broker to run"): _no_message_broker,
    ("analytics.md", "There is no list of regular expressions any more"): _no_numeric_patterns,
    ("code-organisation.md", "there is no second rule set"): _one_sql_rule_set,
    ("documents.md", '"Q2 fiscal 2024" is read as calendar 2024'): _no_fiscal_quarter_names,
    ("privacy.md", "there is no list to recognise it by"): _no_list_of_unregistered_names,
    ("publishing-and-search.md", "there is no downgrade"): _no_downgrade,
    (
        "publishing-and-search.md",
        "There is no bonus for any kind",
    ): _no_score_bonus_in_evidence_search,
    ("source-format.md", "which Thoth does not read yet"): _no_sqlite_dialect,
}
# Sentences the pattern finds that say nothing is missing from Thoth.
NOT_ABSENCES: Final = {
    ("analytics.md", "(true when there is no default)"),  # a parameter without a default
}


def test_every_statement_of_absence_in_the_docs_is_tied_to_a_check() -> None:
    """A new "there is no X" / "not yet" must come with a check of the code (ABSENCES), so it
    cannot outlive the day X is built."""
    known = [*ABSENCES, *NOT_ABSENCES]
    unchecked = [
        f"{path.name}: {sentence.strip()}"
        for path in user_docs()
        for sentence in _ABSENCE.findall(prose(path))
        if not any(
            doc == path.name and phrase.casefold() in sentence.casefold() for doc, phrase in known
        )
    ]
    assert unchecked == [], "statements of absence with no check in ABSENCES"


@pytest.mark.parametrize(("doc", "phrase"), sorted(ABSENCES))
def test_a_statement_of_absence_still_holds_in_the_code(doc: str, phrase: str) -> None:
    path = ROOT / doc if doc == "README.md" else DOCS / doc
    assert phrase.casefold() in prose(path).casefold(), f"{doc} no longer says {phrase!r}"
    ABSENCES[(doc, phrase)]()
