"""Evidence as records of the index (seed §7.2, §8, §9.6): the units of a revision that may be
published, their fragments, and the typed payload of each point. `thoth.workflow.publish` builds,
evaluates and activates a generation of them through the one builder of `thoth.index.build`.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from thoth.config import AnswersSettings
from thoth.errors import PreconditionError, Problem, ProblemsError
from thoth.evidence.corpus import load_corpus, unit_rel_path
from thoth.evidence.fragments import Fragment, fragment_unit
from thoth.evidence.model import Unit
from thoth.evidence.validate import validate_workspace
from thoth.index.base import IndexRecord, SparseVec
from thoth.index.records import RECORD_EVIDENCE, EvidencePayload, caveats_for, point_id
from thoth.workspace import Workspace


@contextmanager
def materialize(root: Path, revision: str) -> Iterator[Path]:
    """The workspace exactly as committed at `revision`, in a temporary directory: what is
    published never depends on the worktree."""
    done = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", revision, "."],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise PreconditionError(
            f"{root}: cannot read revision {revision[:12]}: "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    tmp = Path(tempfile.mkdtemp(prefix="thoth-rev-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publishable_units(snapshot: Workspace, revision: str) -> list[Unit]:
    """Every unit of the revision, sorted by id, if the revision may be published: validated,
    with no review item, orphan or retirement candidate left. Otherwise ProblemsError listing
    each one; nothing is built."""
    validation = validate_workspace(snapshot)
    if not validation.publishable:
        problems = (
            list(validation.problems)
            + [
                Problem(d.id, f"review item {i.code}: {i.message}", field=i.field)
                for d in validation.doubts
                for i in d.review_items
            ]
            + [Problem(o.id, f"orphan (source {o.source} removed)") for o in validation.orphans]
            + [
                Problem(c.id, f"retirement candidate of {c.source}")
                for c in validation.retirement_candidates
            ]
        )
        raise ProblemsError(
            f"revision {revision[:12]} is not publishable ({validation.outcome}): "
            "nothing was built",
            problems,
        )
    files, _ = load_corpus(snapshot.evidence)
    return sorted((f.unit for f in files), key=lambda u: u.id)


def unit_fragments(units: list[Unit], max_chars: int) -> list[tuple[Unit, Fragment]]:
    return [(u, f) for u in units for f in fragment_unit(u, max_chars)]


def evidence_stamp(answers: AnswersSettings) -> tuple[tuple[str, ...], str]:
    """The labels (in the order thoth.toml declares them) and the channel every Evidence point
    carries: what a publication writes and what docs sync restamps carried Evidence with."""
    return tuple(answers.evidence_labels), answers.evidence_channel or ""


def evidence_payload(
    ws_name: str,
    revision: str,
    gen_id: str,
    unit: Unit,
    fragment: Fragment,
    answers: AnswersSettings | None = None,
) -> EvidencePayload:
    """The payload of seed §9.6 on every point, plus the fragment text (shown as the best
    excerpt) and the unit's path (its full document is resolved from Git, never copied).

    The answer engine reads the same points: `title`, `caveats` (read by the model, never
    embedded) and the channel and labels declared for Evidence in `[answers]`; without labels
    a unit is never served to `tht ask` (labels fail closed)."""
    labels, channel = evidence_stamp(answers or AnswersSettings())
    return EvidencePayload(
        workspace_id=ws_name,
        workspace_revision=revision,
        vector_generation=gen_id,
        evidence_id=unit.id,
        evidence_kind=unit.kind,
        purposes=tuple(unit.purposes),
        concepts=tuple(unit.applies_to.concepts),
        tables=tuple(unit.applies_to.tables),
        columns=tuple(unit.applies_to.columns),
        language=unit.language,
        source_file=unit.provenance.source_file,
        source_sha256=unit.provenance.source_sha256,
        fragment_ordinal=fragment.ordinal,
        fragment_section=fragment.section,
        unit_path=unit_rel_path(unit),
        text=fragment.text,
        title=unit.title,
        doc_id=unit.id,
        caveats=caveats_for(fragment.text, unit.caveats),
        channel=channel,
        labels=labels,
    )


def evidence_record(payload: EvidencePayload, dense: list[float], sparse: SparseVec) -> IndexRecord:
    return IndexRecord(
        id=point_id(RECORD_EVIDENCE, payload.evidence_id, payload.fragment_ordinal),
        dense=dense,
        sparse=sparse,
        payload=payload.to_payload(),
    )


def other_kinds(record: IndexRecord) -> IndexRecord | None:
    """What a publication carries forward: every record that is not Evidence, unchanged."""
    return None if record.payload.get("record_kind") == RECORD_EVIDENCE else record
