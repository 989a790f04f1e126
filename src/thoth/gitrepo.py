"""The few Git questions Thoth asks. Thoth never commits or branches in a workspace; `tht init`
may create its repository (`init_repository`), nothing more."""

from __future__ import annotations

import getpass
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from thoth.errors import PreconditionError, ThothError


class GitMissing(PreconditionError):
    """The `git` program is not installed (not on PATH)."""

    code = "git_missing"


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as exc:
        raise GitMissing("git is not installed -> install git and retry") from exc
    if done.returncode != 0:
        raise PreconditionError(f"{root}: `git {' '.join(args)}` failed: {done.stderr.strip()}")
    return done.stdout


def repo_top(root: Path) -> Path:
    try:
        return Path(_git(root, "rev-parse", "--show-toplevel").strip())
    except PreconditionError as exc:
        raise PreconditionError(
            f"{root} is not inside a Git repository: Thoth relies on Git for review and "
            f"recovery -> run `git init` there and commit the workspace"
        ) from exc


@dataclass(frozen=True)
class RepositoryInit:
    """What `init_repository` did: `created` a repository at `repository`, found the folder
    already in one (`existing`), or could not (`unavailable`, with the reason and the hint)."""

    state: Literal["created", "existing", "unavailable"]
    repository: str | None = None
    reason: str | None = None
    hint: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "state": self.state,
            "repository": self.repository,
            "reason": self.reason,
            "hint": self.hint,
        }


def init_repository(root: Path) -> RepositoryInit:
    """`git init` in `root` unless it is already inside a Git work tree; nothing is added or
    committed. Git missing or failing is said (the workspace stays usable), never raised."""
    hint = f"install git if needed, then run `git init` in {root} and commit the workspace"
    try:
        try:
            inside = _git(root, "rev-parse", "--is-inside-work-tree").strip() == "true"
        except GitMissing:
            raise
        except PreconditionError:
            inside = False  # not a repository: git says so with an error
        if not inside:
            _git(root, "init", "--quiet")
        top = _git(root, "rev-parse", "--show-toplevel").strip()
    except GitMissing:
        return RepositoryInit("unavailable", reason="git is not installed", hint=hint)
    except PreconditionError as exc:
        return RepositoryInit("unavailable", reason=str(exc), hint=hint)
    return RepositoryInit("existing" if inside else "created", repository=top)


def dirty_paths(root: Path, *paths: str) -> list[str]:
    """Uncommitted changes (staged, unstaged or untracked) under the given paths."""
    repo_top(root)
    out = _git(root, "status", "--porcelain=v1", "--untracked-files=all", "--", *paths)
    return [line[3:] for line in out.splitlines() if line.strip()]


def require_clean(root: Path, *paths: str, why: str) -> None:
    dirty = dirty_paths(root, *paths)
    if dirty:
        shown = ", ".join(dirty[:8]) + (f" (+{len(dirty) - 8} more)" if len(dirty) > 8 else "")
        raise PreconditionError(
            f"{root}: uncommitted changes in {shown}; {why} -> commit or stash them first"
        )


def head_revision(root: Path) -> str | None:
    try:
        return _git(root, "rev-parse", "HEAD").strip()
    except PreconditionError:
        return None


def resolve_revision(root: Path, revision: str) -> str:
    """The full commit id of `revision` (a branch, tag or abbreviated id)."""
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").strip()
    except PreconditionError as exc:
        raise PreconditionError(
            f"{root}: {revision!r} is not a commit of this repository -> check `git log`"
        ) from exc


def diff_summary(root: Path, *paths: str) -> str:
    """`git status` style summary of what changed under paths (for reports)."""
    return _git(root, "status", "--short", "--untracked-files=all", "--", *paths)


def default_run_by(root: Path) -> str:
    """Who runs a build: the workspace's `git config user.name`, else the OS user."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "config", "user.name"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    except OSError:
        pass  # no git: fall back to the OS user
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


class ObjectNotBlob(ThothError):
    """An object asked of `git cat-file --batch` is missing or not a blob. Callers name the
    object in their own terms (a source file, a catalog entry) and raise their own error."""

    code = "git_object_unreadable"

    def __init__(self, position: int, header: str) -> None:
        super().__init__(
            f"object {position + 1} of a `git cat-file --batch` request cannot be read "
            f"({header}) -> run `git fsck` in the repository"
        )
        self.position = position  # index of the object in the request
        self.header = header  # what Git answered for it ("<name> missing", ...)


def batch_blobs(output: bytes, count: int) -> list[bytes]:
    """The contents of the `count` objects of a `git cat-file --batch` output, in request
    order. Raises ObjectNotBlob for the first one Git could not give as a blob: the caller
    names it in its own terms (a source file, a catalog entry)."""
    blobs: list[bytes] = []
    pos = 0
    for position in range(count):
        end = output.index(b"\n", pos)
        header = output[pos:end].split(b" ")
        if len(header) != 3 or header[1] != b"blob":
            raise ObjectNotBlob(position, output[pos:end].decode(errors="replace"))
        size = int(header[2])
        blobs.append(output[end + 1 : end + 1 + size])
        pos = end + 1 + size + 1  # the content is followed by a newline
    return blobs
