"""Discovery of source files: allowed types, size, strict UTF-8, safe paths, SHA-256."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from thoth.errors import Problem
from thoth.evidence.normalize import normalize_text
from thoth.secrets import find_secrets

SUFFIXES = (".md", ".txt")  # `.sql.md` is a `.md` with a legacy-formula meaning


@dataclass(frozen=True)
class SourceFile:
    rel: str  # posix path relative to evidence/, e.g. "source/00-glossario/ricovero.md"
    sha256: str  # "sha256:<hex>"
    text: str  # decoded text, as stored

    @cached_property
    def normalized(self) -> str:
        # Computed on first use: an unchanged source is hashed, never normalised.
        return normalize_text(self.text)

    @property
    def is_legacy_formula(self) -> bool:
        return self.rel.endswith(".sql.md")


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_source(
    evidence_dir: Path, rel: str, max_bytes: int, scan: bool = True
) -> SourceFile | Problem:
    """Read one source, refusing anything that is not safe, small, UTF-8 text, or (with
    `scan`) that carries a credential."""
    workspace = evidence_dir.parent.resolve()
    parts = rel.split("/")
    if rel.startswith("/") or ".." in parts or parts[0] != "source":
        return Problem(
            rel,
            "unsafe source path: it must stay under evidence/source/ without '..'",
            code="unsafe_path",
        )
    path = evidence_dir / rel
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return Problem(rel, f"cannot be read: {exc}", code="unreadable")
    if not real.is_relative_to(workspace):
        return Problem(
            rel,
            f"symlink points outside the workspace (to {real})",
            hint="copy the file into evidence/source/ instead of linking it",
            code="unsafe_path",
        )
    if not real.is_file():
        return Problem(rel, "not a regular file", code="unreadable")
    size = real.stat().st_size
    if size > max_bytes:
        return Problem(
            rel,
            f"too large: {size} bytes, the limit is {max_bytes}",
            hint="split the source or raise [evidence].max_source_bytes",
            code="too_large",
        )
    data = real.read_bytes()
    if b"\x00" in data:
        return Problem(
            rel, "binary content (NUL bytes): only UTF-8 text is accepted", code="binary"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Problem(
            rel,
            f"not valid UTF-8 at byte {exc.start}",
            hint="re-save the file as UTF-8",
            code="encoding",
        )
    source = SourceFile(rel=rel, sha256=sha256_of(data), text=text)
    if scan:
        return credential_problem(source) or source
    return source


def credential_problem(source: SourceFile) -> Problem | None:
    """The first secret in a source (thoth.secrets), or None; the value is never shown."""
    for finding in find_secrets(source.text):
        return Problem(
            source.rel,
            f"contains what looks like a credential ({finding.kind}) on line {finding.line}",
            hint="remove the secret from the source; it must never be published",
            code="credential",
        )
    return None


def discover(
    evidence_dir: Path, max_bytes: int, scan: bool = True
) -> tuple[list[SourceFile], list[Problem]]:
    """Every accepted file under evidence/source/, sorted by path; problems for the rest."""
    root = evidence_dir / "source"
    found: list[SourceFile] = []
    problems: list[Problem] = []
    if not root.is_dir():
        return found, problems
    workspace = evidence_dir.parent.resolve()
    seen_dirs: set[Path] = set()
    rels: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        real_dir = here.resolve()
        rel_dir = here.relative_to(evidence_dir).as_posix()
        if not real_dir.is_relative_to(workspace):
            problems.append(
                Problem(
                    rel_dir,
                    f"symlinked folder points outside the workspace (to {real_dir})",
                    code="unsafe_path",
                )
            )
            dirnames[:] = []
            continue
        if real_dir in seen_dirs:  # a symlink loop
            dirnames[:] = []
            continue
        seen_dirs.add(real_dir)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rels += [
            f"{rel_dir}/{name}"
            for name in filenames
            if name.endswith(SUFFIXES) and not name.startswith(".")
        ]
    for rel in sorted(rels):
        result = read_source(evidence_dir, rel, max_bytes, scan)
        if isinstance(result, Problem):
            problems.append(result)
        else:
            found.append(result)
    return found, problems
