"""The wiki as the index serves it: the agent reads pages at the commit the active generation
indexed, never the working tree, so an edit nobody synced (or reviewed) is invisible to it.

The pages under `[agent].wiki` at that commit are written once into a read-only snapshot under
the state directory (`.thoth/agent-wiki/<commit>/`, taken with `git archive`), and the shelf
reads that directory with its usual fence. A snapshot is made in a temporary directory and
renamed into place, so a worker never reads half of one; a new generation means a new commit
and a new snapshot.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from thoth.agent.errors import ToolRefused
from thoth.answer.passage import link
from thoth.gitrepo import repo_top
from thoth.runtime import state_dir
from thoth.state import StateStore
from thoth.workspace import Workspace

WIKI_NOT_SERVED: Final = "wiki_not_served"
SNAPSHOTS: Final = "agent-wiki"


@dataclass(frozen=True)
class ServedWiki:
    """The snapshot of `[agent].wiki` at the served commit, and how its pages are indexed."""

    root: Path  # the snapshot's folder for `[agent].wiki`
    source: str  # the `kind = "wiki"` source that indexed it
    prefix: str  # the folder's path in the repository ("" at its top)
    commit: str

    def link(self, page: str, labels: Sequence[str] = ()) -> str:
        """The passage link of a page (`page` relative to the wiki folder), as indexed, under
        `labels` (a job's)."""
        path = f"{self.prefix}/{page}" if self.prefix else page
        return link(f"{self.source}:{path}", self.commit, None, labels)


def served_wiki(ws: Workspace, state: StateStore) -> ServedWiki:
    """`[agent].wiki` as the active generation indexed it."""
    settings = ws.settings
    wiki = (ws.root / settings.agent.wiki).resolve()
    active = state.active_generation(settings.workspace)
    if active is None:
        raise ToolRefused(
            "no index generation is served yet, so no wiki page is reviewed and indexed -> "
            "run `tht docs sync`",
            code=WIKI_NOT_SERVED,
        )
    revisions: dict[str, str] = (active.config.get("docs") or {}).get("revisions") or {}
    for source in settings.sources:
        commit = revisions.get(source.name)
        if source.kind != "wiki" or commit is None:
            continue
        top = repo_top((ws.root / source.repo).resolve()).resolve()
        if wiki.is_relative_to(top):
            rel = wiki.relative_to(top)
            prefix = "" if rel == Path(".") else rel.as_posix()
            return ServedWiki(_snapshot(ws, top, commit, prefix) / rel, source.name, prefix, commit)
    raise ToolRefused(
        f"generation {active.id} indexed no wiki source holding {settings.agent.wiki} "
        f"(indexed: {', '.join(sorted(revisions)) or 'none'}) -> point [agent].wiki at the "
        'folder of a `kind = "wiki"` source and run `tht docs sync`',
        code=WIKI_NOT_SERVED,
    )


def _snapshot(ws: Workspace, top: Path, commit: str, rel: str) -> Path:
    base = state_dir(ws) / SNAPSHOTS
    target = base / f"{commit}-{_slug(rel)}"
    if target.is_dir():
        return target
    base.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["git", "-C", str(top), "archive", "--format=tar", commit, "--", rel or "."],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise ToolRefused(
            f"the wiki at the served commit {commit[:12]} cannot be read from {top}: "
            f"{done.stderr.decode('utf-8', 'replace').strip()} -> run `tht docs sync` "
            "(and `git fsck` there if it persists)",
            code=WIKI_NOT_SERVED,
        )
    staging = Path(tempfile.mkdtemp(prefix=".snapshot-", dir=base))
    try:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            archive.extractall(staging, filter=_inside)
        (staging / rel).mkdir(parents=True, exist_ok=True)  # a folder with no page yet
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # not another worker's snapshot of the same commit
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _inside(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """Tar's "data" filter (no absolute path, no `..`, no link pointing outside), a member it
    refuses left out rather than failing the job: a link out of the wiki is no page."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _slug(rel: str) -> str:
    return rel.replace("/", "_") or "root"
