"""`tht verify`: the data checks that catch filters selecting nothing in silence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import commit_all, git
from tests.fake_embeddings import FakeEmbeddingServer
from tests.knowledge.test_ingest import write_files
from tests.knowledge.test_sync import docs_workspace, tht
from thoth.cli import exitcodes
from thoth.documents.records import PIPELINE_VERSION, KnowledgeFragment, fragment_point_id
from thoth.index.base import IndexRecord
from thoth.index.reader import open_generation
from thoth.index.records import DOCUMENT_KINDS
from thoth.knowledge import verify as verify_module
from thoth.knowledge.verify import verify
from thoth.runtime import open_runtime
from thoth.workspace import Workspace

TOML = """
workspace = "v"
[answers]
labels = ["public", "internal", "confidential"]
[[channels]]
name = "mercati"
examples = ["Come va il mercato?"]
[[channels]]
name = "bandi"
examples = ["Quando scade il bando?"]
[[channels]]
name = "vuoto"
examples = ["Domanda senza documenti?"]
[[sources]]
name = "docs"
include = ["docs/**"]
channel = "mercati"
labels = ["public"]
[[sources]]
name = "nolabel"
include = ["nolabel/**"]
channel = "bandi"
[[sources]]
name = "wiki"
kind = "wiki"
include = ["wiki/**/*.md"]
channel = "mercati"
labels = ["internal"]
"""

PAGE = """---
title: Giappone
documents: [docs:docs/giappone.md, docs:docs/missing.md]
---
# Giappone

Il mercato giapponese del vino italiano cresce stabilmente da cinque anni consecutivi.
"""


def workspace(tmp_path: Path, files: dict[str, str]) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write_files(root, {"thoth.toml": TOML, **files})
    commit_all(root, "ws")
    return Workspace.open(root)


def codes(ws: Workspace, indexed: list[IndexRecord] | None = None) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in verify(ws, indexed).findings:
        found.setdefault(f.code, []).append(f.where)
    return found


FILES = {
    "docs/giappone.md": "# Giappone\n\nVendite in crescita del vino italiano in Giappone.\n",
    "nolabel/bando.md": "# Bando\n\nIl bando scade il 30 giugno.\n",
    "wiki/giappone.md": PAGE,
}


@pytest.fixture
def fake() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=8) as server:
        yield server


def test_a_channel_without_documents_is_an_error(tmp_path: Path) -> None:
    ws = workspace(tmp_path, FILES)
    assert not verify(ws).ok
    assert codes(ws)["channel_empty"] == ["channels.vuoto"]


def test_an_unresolved_wiki_reference_is_an_error(tmp_path: Path) -> None:
    found = codes(workspace(tmp_path, FILES))
    assert found["reference_unresolved"] == ["wiki:wiki/giappone.md"]


def test_a_page_naming_another_page_as_contradicting_or_as_a_document_is_an_error(
    tmp_path: Path,
) -> None:
    other = "---\ntitle: Cina\n---\n# Cina\n\nIl mercato cinese del vino italiano cresce.\n"
    page = PAGE.replace(
        "documents: [docs:docs/giappone.md, docs:docs/missing.md]",
        "documents: [docs:docs/giappone.md, wiki:wiki/cina.md]\n"
        "contradicted_by: [wiki:wiki/cina.md]",
    )
    ws = workspace(tmp_path, {**FILES, "wiki/giappone.md": page, "wiki/cina.md": other})
    report = verify(ws)
    found = [f for f in report.findings if f.code == "reference_not_document"]
    assert [f.where for f in found] == ["wiki:wiki/giappone.md"] * 2
    contradicted, documents = sorted(found, key=lambda f: f.message)
    assert contradicted.message.startswith(
        "contradicted_by names wiki page wiki:wiki/cina.md: contradicted_by must name a "
        "document: pages are curated, they are not routed to curation"
    )
    assert documents.message.startswith("documents names wiki page wiki:wiki/cina.md")
    assert all(f.level == "error" and f.hint for f in found)
    assert not report.ok
    assert "reference_unresolved" not in codes(ws)  # the page exists: resolved, but refused


def test_unlabelled_documents_and_unused_labels_are_reported(tmp_path: Path) -> None:
    found = codes(workspace(tmp_path, FILES))
    assert found["unlabelled"] == ["nolabel:nolabel/bando.md"]
    assert found["label_unused"] == ["answers.labels.confidential"]


def test_a_page_label_outside_the_vocabulary_is_an_error(tmp_path: Path) -> None:
    bad = PAGE.replace("title: Giappone", "title: Giappone\nlabels: [segreto]")
    found = codes(workspace(tmp_path, {**FILES, "wiki/giappone.md": bad}))
    assert found["label_unknown"] == ["wiki:wiki/giappone.md"]


def test_a_source_matching_nothing_is_an_error(tmp_path: Path) -> None:
    files = {k: v for k, v in FILES.items() if not k.startswith("nolabel/")}
    found = codes(workspace(tmp_path, files))
    assert found["source_empty"] == ["sources.nolabel"]


def test_indexed_labels_outside_the_vocabulary_are_errors(tmp_path: Path) -> None:
    ws = workspace(tmp_path, FILES)
    fragment = KnowledgeFragment(
        record_kind="document",
        doc_id="docs:old.md",
        source="docs",
        path="old.md",
        title="Old",
        channel="mercati",
        labels=("riservatissimo",),
        ordinal=0,
        text="testo",
    )
    record = IndexRecord(
        fragment_point_id(fragment.doc_id, 0), [0.0], None, fragment.payload("v", "g")
    )
    report = verify(ws, [record])
    assert report.indexed_records == 1
    assert [f.where for f in report.findings if f.code == "label_unknown"] == ["index: docs:old.md"]


def test_a_clean_workspace_verifies(tmp_path: Path) -> None:
    toml = TOML.replace(
        '[[channels]]\nname = "vuoto"\nexamples = ["Domanda senza documenti?"]\n', ""
    )
    toml = toml.replace('channel = "bandi"\n', 'channel = "bandi"\nlabels = ["confidential"]\n')
    files = {**FILES, "wiki/giappone.md": PAGE.replace(", docs:docs/missing.md", "")}
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write_files(root, {**files, "thoth.toml": toml})
    commit_all(root, "ws")
    report = verify(Workspace.open(root))
    assert report.ok, report.findings
    assert report.documents == 2 and report.pages == 1


def test_fragments_of_an_older_pipeline_are_flagged_per_source_with_the_fix(
    tmp_path: Path, fake: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real sync, then a pipeline newer than the one that built the active generation: every
    document and page fragment is stale, counted per source and per document."""
    ws = docs_workspace(tmp_path / "ws", fake.url)
    code, synced = tht("docs", "sync", "-w", str(ws.root))
    assert code == exitcodes.OK, synced
    current_code, data = tht("verify", "-w", str(ws.root))
    assert "stale_fragments" not in {f["code"] for f in data["findings"]}, data
    assert data["stale_fragments"] == 0

    monkeypatch.setattr(verify_module, "PIPELINE_VERSION", PIPELINE_VERSION + 1)
    code, data = tht("verify", "-w", str(ws.root))
    stale = [f for f in data["findings"] if f["code"] == "stale_fragments"]
    assert code == current_code, data  # served as built: a warning, the outcome is unchanged
    with open_runtime(ws) as rt:
        active = rt.state.active_generation(ws.settings.workspace)
        assert active is not None
        store = open_generation(rt.backend, active)
        try:
            built = Counter(
                (str(r.payload["source"]), str(r.payload["doc_id"]))
                for r in store.scroll({"record_kind": list(DOCUMENT_KINDS)})
            )
        finally:
            store.close()
    per_source: dict[str, dict[str, int]] = {}
    for (source, doc_id), n in built.items():
        per_source.setdefault(source, {})[doc_id] = n
    assert {f["where"] for f in stale} == {f"sources.{s}" for s in per_source}
    for finding in stale:
        assert finding["level"] == "warning"
        assert finding["hint"] == "run `tht docs sync --full` to rebuild them"
        source = finding["where"].removeprefix("sources.")
        details = finding["details"]
        assert details["documents"] == per_source[source]
        assert details["fragments"] == sum(per_source[source].values())
        assert details["built_by"] == [PIPELINE_VERSION]
        assert details["current"] == PIPELINE_VERSION + 1
        assert (
            f"{details['fragments']} fragment(s) of {len(per_source[source])}"
            in (finding["message"])
        )
    assert data["stale_fragments"] == sum(built.values())
