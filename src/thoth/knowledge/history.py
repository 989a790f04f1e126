"""A document or wiki page as an earlier sync served it: what an old answer's link opens once
the index has moved on.

Only a commit a succeeded `tht docs sync` read for that source qualifies (`served_revisions`):
an unreviewed commit nobody synced, or a forged one, is never read. The file is taken from Git
at that commit — never from the working tree — and prepared by the same pipeline the sync ran,
so its fragments (and their ordinals, labels and caveats) are those the answer was written from,
as long as the pipeline version is the same.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from thoth.config import Settings
from thoth.documents.records import KnowledgeFragment
from thoth.documents.sources import SourceFile
from thoth.gitrepo import repo_top
from thoth.knowledge.ingest import prepare_document, prepare_page
from thoth.state import StateStore


def fragments_at(
    root: Path, settings: Settings, state: StateStore, doc_id: str, revision: str
) -> tuple[KnowledgeFragment, ...] | None:
    """The fragments of `doc_id` as served at `revision`; None when no sync served that
    revision of its source, or the file was not there."""
    name, _, path = doc_id.partition(":")
    source = next((s for s in settings.sources if s.name == name), None)
    if source is None or not path:
        return None
    if revision not in state.served_revisions(settings.workspace, name):
        return None
    top = repo_top((root / source.repo).resolve())
    done = subprocess.run(
        ["git", "-C", str(top), "show", f"{revision}:{path}"], capture_output=True, check=False
    )
    if done.returncode != 0:
        return None
    data = done.stdout
    file = SourceFile(source, path, data, hashlib.sha256(data).hexdigest(), revision)
    # A file that no longer prepares (a setting changed since) raises, naming why.
    prepare = prepare_page if source.kind == "wiki" else prepare_document
    return prepare(file, settings).fragments
