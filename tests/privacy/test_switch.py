"""One switch, read in one place: the composition root. The hooks call the three methods
whatever the switch says (no `if` on it), and off they get the no-op."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import thoth
from thoth.errors import ConfigError
from thoth.privacy import NoPseudonymizer, PlaceholderPseudonymizer
from thoth.runtime import knowledge_search, open_pseudonymizer, open_runtime
from thoth.workspace import Workspace

SRC = Path(thoth.__file__).parent


def workspace(root: Path, privacy: str = "") -> Workspace:
    (root / "thoth.toml").write_text(f'workspace = "ws"\n{privacy}', encoding="utf-8")
    return Workspace.open(root)


def uses(name: str) -> set[str]:
    """The modules of thoth (outside thoth/privacy) that read `name` (an attribute or a
    name; config.py declaring the field does not count)."""
    found = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("privacy/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            read = (isinstance(node, ast.Attribute) and node.attr == name) or (
                isinstance(node, ast.Name) and node.id == name
            )
            if read and isinstance(getattr(node, "ctx", None), ast.Load):
                found.add(rel)
    return found


def test_only_the_composition_root_reads_the_switch_and_picks_the_object() -> None:
    assert uses("pseudonymise") == {"runtime.py"}
    assert uses("PlaceholderPseudonymizer") == {"runtime.py"}


def test_off_by_default_the_no_op_is_injected(tmp_path: Path) -> None:
    with open_runtime(workspace(tmp_path)) as rt:
        assert isinstance(rt.pseudonymizer, NoPseudonymizer)


def test_on_without_a_registry_the_codes_are_still_replaced(tmp_path: Path) -> None:
    p = open_pseudonymizer(workspace(tmp_path, "[privacy]\npseudonymise = true\n"))
    assert isinstance(p, PlaceholderPseudonymizer)
    assert p.protect("CF RSSMRA85T10A562S") == "CF [CF:1]"


def test_a_missing_registry_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path, '[privacy]\npseudonymise = true\nregistry = "anagrafica.csv"\n')
    with pytest.raises(ConfigError, match=r"anagrafica\.csv.*does not exist"):
        open_pseudonymizer(ws)


def test_registry_sql_needs_a_database(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"privacy.registry_sql needs a \[database\]"):
        workspace(tmp_path, '[privacy]\nregistry_sql = "SELECT 1"\n')


def test_a_reranking_model_is_refused_where_identities_must_not_reach_a_model(
    tmp_path: Path,
) -> None:
    # The reranking model reads the fragments as stored: no placeholder stands between them.
    ws = workspace(
        tmp_path,
        '[privacy]\npseudonymise = true\n\n[reranker]\nbase_url = "http://127.0.0.1:9/v1"\n'
        'model = "bge-reranker"\n',
    )
    with open_runtime(ws) as rt, pytest.raises(ConfigError, match=r"\[reranker\] with \[privacy\]"):
        knowledge_search(ws, rt)
