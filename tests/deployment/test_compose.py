"""deploy/compose.yaml (docs/deployment.md) says only what Thoth accepts: the YAML parses, every
Thoth service runs a `tht` command the CLI knows with options it has, the workspace it names is
the one mounted, every environment variable is one that deploy/thoth.toml names (`*_env`),
every variable thoth.toml names is given, no password is written in either file (the database
URLs take it from Compose's environment), and thoth.toml itself is valid settings.
Compose's own `config` check is not run: neither this machine kind nor CI has Docker."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.test_docs_commands import resolve
from thoth.cli.main import app
from thoth.config import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
WORKSPACE = "/srv/workspace"


def compose() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE.read_text("utf-8")))


def thoth_services() -> dict[str, dict[str, Any]]:
    """The services that run the Thoth image."""
    return {
        name: service
        for name, service in compose()["services"].items()
        if service.get("image") == "thoth:local"
    }


def settings() -> tuple[dict[str, Any], Settings]:
    raw = tomllib.loads((DEPLOY / "thoth.toml").read_text("utf-8"))
    return raw, Settings.model_validate(raw)


def named_env(value: Any) -> set[str]:
    """Every environment variable a settings document names (`*_env` keys)."""
    if isinstance(value, dict):
        found = {str(v) for k, v in value.items() if k.endswith("_env") and v}
        return found.union(*(named_env(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(named_env(v) for v in value))
    return set()


def test_the_services_are_the_documented_topology() -> None:
    services = compose()["services"]
    thoth = thoth_services()
    commands = [tuple(s["command"][:3]) for s in thoth.values()]
    assert commands.count(("tht", "serve", "--host")) == 2
    assert sum(c[:3] == ("tht", "agent", "worker") for c in commands) == 2
    assert "pgvector" in services["postgres"]["image"]
    assert "text-embeddings-inference" in services["embed"]["image"]
    published = [p for s in services.values() for p in s.get("ports", [])]
    assert len(published) == len(set(published)), "two services publish one host port"
    ids = [
        s["command"][s["command"].index("--id") + 1]
        for s in thoth.values()
        if "--id" in s["command"]
    ]
    assert len(ids) == len(set(ids)) == 2, "each worker names itself"


@pytest.mark.parametrize("name", sorted(thoth_services()))
def test_every_command_is_one_the_cli_accepts(name: str) -> None:
    command = thoth_services()[name]["command"]
    assert command[0] == "tht"
    path, cli = resolve(command[1:])
    assert path, f"{name}: {command} is no tht command"
    args = command[1 + len(path) :]
    accepted = {opt for param in cli.params for opt in (*param.opts, *param.secondary_opts)}
    flags = [a for a in args if a.startswith("-")]
    assert set(flags) <= accepted, (name, set(flags) - accepted)
    assert args[args.index("-w") + 1] == WORKSPACE
    result = CliRunner().invoke(app, [*command[1:], "--help"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", sorted(thoth_services()))
def test_every_variable_is_read_by_the_settings(name: str) -> None:
    service = thoth_services()[name]
    raw, _ = settings()
    named = named_env(raw)
    given = set(service["environment"])
    assert given == named, (name, given ^ named)
    assert any(volume.endswith(f":{WORKSPACE}") for volume in service["volumes"])


def test_the_settings_it_expects_are_valid_and_name_the_compose_services() -> None:
    _, parsed = settings()
    assert parsed.embedding.provider == "openai" and parsed.embedding.base_url
    assert parsed.embedding.base_url.startswith("http://embed:")
    assert parsed.state.url is None and parsed.state.url_env, "the state URL is in thoth.toml"
    assert parsed.index.backend == "postgres" and parsed.index.url_env
    for name, service in thoth_services().items():
        for var in (parsed.state.url_env, parsed.index.url_env):
            url = service["environment"][var]
            assert "@postgres:5432/" in url, (name, var, url)
            userinfo = url.split("://", 1)[1].split("@", 1)[0]
            # The password is Compose's variable, the one the postgres service is given.
            assert userinfo == "thoth:${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}", (name, var)
    postgres = compose()["services"]["postgres"]["environment"]
    assert postgres["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
    assert parsed.state.url_env != parsed.index.url_env
    state_url = thoth_services()["api-1"]["environment"][parsed.state.url_env]
    assert state_url.startswith("postgresql+psycopg://"), "SQLAlchemy needs the psycopg driver"
