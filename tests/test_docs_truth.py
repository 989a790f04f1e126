"""What the docs say exists matches the code (issue 29, point 6): every HTTP route of `tht serve`
is in docs/service.md's table and every route the table gives exists; every MCP tool is in
docs/mcp.md's table and no other; and the statements of absence an earlier version made ("not
built yet", "no per-caller ceiling" ...) are gone from the user docs. The CLI's commands and
flags are kept true by tests/test_docs_commands.py, the settings by test_settings_reference."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from thoth.service.http import create_app

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


@pytest.mark.parametrize("phrase", sorted(STALE))
def test_no_user_doc_says_a_built_thing_is_missing(phrase: str) -> None:
    for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        assert phrase.casefold() not in path.read_text("utf-8").casefold(), (
            f"{path.name} still says {phrase!r}: {STALE[phrase]}"
        )
