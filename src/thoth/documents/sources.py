"""Declared sources read from Git: the files a source's globs select, at a revision.

The served copy of a source repository is read-only: `align` brings it to the latest revision
of its upstream (fetch, then fast-forward only), and files are read from the commit with
`git cat-file`, never from the worktree, so what is indexed is exactly what was committed.
Worktree edits under the source's globs are listed as `uncommitted`, never read.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from thoth.config import SourceSettings
from thoth.documents.records import doc_identifier
from thoth.errors import Problem, ProblemsError, ThothError
from thoth.gitrepo import ObjectNotBlob, batch_blobs

FETCH_TIMEOUT_SECONDS = 300
_MODE_SYMLINK = "120000"
_MODE_GITLINK = "160000"  # a submodule: its files are not in this repository


class SourceUnavailable(ThothError):
    """A declared source cannot be read: repository missing, no commit, or its upstream cannot
    be reached or fast-forwarded. The message names the source, the repository and the cause."""


@dataclass(frozen=True)
class SourceFile:
    source: SourceSettings
    path: str  # POSIX, relative to the repository root
    data: bytes
    sha256: str
    revision: str  # the commit the bytes were read at

    @property
    def doc_id(self) -> str:
        return doc_identifier(self.source.name, self.path)

    def text(self) -> str:
        """The content as text: strict UTF-8 (a guessed encoding would index mojibake), without
        a byte-order mark, with `\\n` line ends."""
        try:
            text = self.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = self.data[: exc.start].count(b"\n") + 1
            raise ProblemsError(
                f"cannot read {self.doc_id}",
                [
                    Problem(
                        self.doc_id,
                        f"not valid UTF-8: byte 0x{self.data[exc.start]:02x} at offset "
                        f"{exc.start} (line {line})",
                        hint="re-save the file as UTF-8 and commit it",
                        code="encoding",
                    )
                ],
            ) from exc
        return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class SourceSnapshot:
    source: SourceSettings
    repo_root: Path
    revision: str
    files: tuple[SourceFile, ...]  # sorted by path
    # Paths under the include globs modified or untracked in the worktree: NOT read, reported
    # so the user commits them.
    uncommitted: tuple[str, ...]


# --------------------------------------------------------------------------------------------
# Globs


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """fnmatch-style pattern -> regex: `*`, `?` and `[...]` stay within one path segment,
    `**` spans directories (`a/**/b` also matches `a/b`)."""
    out: list[str] = []
    index, size = 0, len(pattern)
    while index < size:
        char = pattern[index]
        if pattern.startswith("**", index):
            at_start = index == 0 or pattern[index - 1] == "/"
            if at_start and pattern.startswith("**/", index):
                out.append("(?:.*/)?")
                index += 3
                continue
            if at_start and index + 2 == size:
                out.append(".*")
                index += 2
                continue
            out.append("[^/]*")  # `a**b` is not a directory wildcard: same as `*`
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            start = index + 1
            start += pattern[start : start + 1] in ("!", "^")
            start += pattern[start : start + 1] == "]"  # a leading `]` is a literal
            close = pattern.find("]", start)
            if close == -1:
                out.append(re.escape(char))
            else:
                inner = pattern[index + 1 : close]
                negate = inner[:1] in ("!", "^")
                body = inner[1:] if negate else inner
                body = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
                out.append("[" + ("^/" if negate else "") + body + "]")
                index = close
        else:
            out.append(re.escape(char))
        index += 1
    return re.compile("".join(out) + r"\Z")


def match_glob(path: str, pattern: str) -> bool:
    """Whether a POSIX path relative to the repository root matches a declared glob."""
    return _glob_regex(pattern.removeprefix("./")).match(path) is not None


def first_match(path: str, patterns: Sequence[str]) -> str | None:
    """The first of `patterns` that matches `path`, for reports that say why."""
    return next((pattern for pattern in patterns if match_glob(path, pattern)), None)


def selects(source: SourceSettings, path: str) -> bool:
    """Whether a source declares `path`: an include glob matches and no exclude glob does."""
    return first_match(path, source.include) is not None and not first_match(path, source.exclude)


# --------------------------------------------------------------------------------------------
# Git


def repo_root(ws_root: Path, source: SourceSettings) -> Path:
    """The source repository's path: `source.repo`, relative to the workspace unless absolute."""
    repo = Path(source.repo).expanduser()
    return (repo if repo.is_absolute() else ws_root / repo).resolve()


def _git(
    repo: Path,
    source_name: str,
    *args: str,
    stdin: bytes | None = None,
    timeout: float | None = None,
    hint: str,
) -> bytes:
    """Run one git command in the source repository; any failure names source, repo and cause."""
    where = f"source {source_name!r} ({repo})"
    # Never wait for a password prompt: an unattended sync must fail, not hang. No terminal
    # (a new session) also stops ssh from asking for a passphrase or a host key.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            input=stdin if stdin is not None else b"",
            capture_output=True,
            check=False,
            env=env,
            timeout=timeout,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise SourceUnavailable(f"{where}: git is not installed -> install git and retry") from exc
    except subprocess.TimeoutExpired as exc:
        raise SourceUnavailable(
            f"{where}: `git {' '.join(args)}` did not finish in {timeout:.0f}s -> {hint}"
        ) from exc
    if done.returncode != 0:
        cause = " ".join(done.stderr.decode(errors="replace").split())  # one line in reports
        cause = cause or f"exit code {done.returncode}"
        raise SourceUnavailable(f"{where}: `git {' '.join(args)}` failed: {cause} -> {hint}")
    return done.stdout


class GitMemo:
    """The answers to repository-wide git queries (its top level, HEAD, the tree, the status),
    asked once per repository for a pass over several sources that changes nothing in
    between (`tht verify`: no alignment): sources that share a repository, as the demo's eight
    do, would each ask again. Failures are not kept: the next source asks and names itself."""

    def __init__(self) -> None:
        self._answers: dict[tuple[Path, tuple[str, ...]], bytes] = {}

    def __len__(self) -> int:
        return len(self._answers)

    def git(self, repo: Path, source_name: str, *args: str, hint: str) -> bytes:
        key = (repo, args)
        if key not in self._answers:
            self._answers[key] = _git(repo, source_name, *args, hint=hint)
        return self._answers[key]


def _asker(memo: GitMemo | None) -> Callable[..., bytes]:
    return memo.git if memo is not None else _git


def _git_optional(repo: Path, *args: str) -> str | None:
    """Output of a git query whose failure means "not set" (a config key, a branch name)."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def _check_repository(repo: Path, source_name: str, memo: GitMemo | None = None) -> None:
    where = f"source {source_name!r} ({repo})"
    if not repo.is_dir():
        raise SourceUnavailable(
            f"{where}: the repository path does not exist -> clone the source there, or fix "
            "`repo` in the [[sources]] entry of thoth.toml"
        )
    git = _asker(memo)
    top = git(
        repo,
        source_name,
        "rev-parse",
        "--show-toplevel",
        hint="point `repo` in thoth.toml at a Git checkout (run `git init` or `git clone`)",
    )
    top_path = Path(top.decode().strip())
    if top_path.resolve() != repo.resolve():
        # Globs are relative to the repository root: a subdirectory would shift all of them.
        raise SourceUnavailable(
            f"{where}: not the root of its Git repository ({top_path}) -> set `repo` to "
            "the repository root and put the subdirectory in the include globs"
        )
    git(
        repo,
        source_name,
        "rev-parse",
        "--verify",
        "--quiet",
        "HEAD^{commit}",
        hint="the repository has no commit: commit the source's files first",
    )


def align(repo: Path, source_name: str) -> str | None:
    """Bring the served copy to the latest revision of its upstream: fetch, then fast-forward
    only. Returns the upstream's name, or None when the branch has none (HEAD is used as is).
    Every failure raises `SourceUnavailable`: serving a stale copy silently is not an option."""
    _check_repository(repo, source_name)
    branch = _git_optional(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    remote = branch and _git_optional(repo, "config", "--get", f"branch.{branch}.remote")
    merge = branch and _git_optional(repo, "config", "--get", f"branch.{branch}.merge")
    if not remote or not merge:
        return None  # no upstream (or a detached HEAD): a local repository, read at HEAD
    tracked = merge.removeprefix("refs/heads/")
    name = tracked if remote == "." else f"{remote}/{tracked}"
    dirty = _git(
        repo,
        source_name,
        "status",
        "--porcelain=v1",
        "--untracked-files=no",
        hint="check the repository",
    ).decode(errors="replace")
    if dirty.strip():
        changed = ", ".join(line[3:] for line in dirty.splitlines()[:8])
        raise SourceUnavailable(
            f"source {source_name!r} ({repo}): tracked files are modified in the served copy "
            f"({changed}); it follows {name} and must stay read-only -> commit and push them "
            "from another clone, or discard them (`git restore .`)"
        )
    _git(
        repo,
        source_name,
        "fetch",
        "--quiet",
        timeout=FETCH_TIMEOUT_SECONDS,
        hint=f"check that the remote of {name} is reachable and readable, then sync again",
    )
    _git(
        repo,
        source_name,
        "rev-parse",
        "--verify",
        "--quiet",
        "@{u}^{commit}",
        hint=f"the branch follows {name}, which does not exist after fetching: fix the "
        "tracking branch (`git branch --set-upstream-to`) or remove it (`--unset-upstream`)",
    )
    _git(
        repo,
        source_name,
        "merge",
        "--ff-only",
        "--quiet",
        "@{u}",
        hint=f"the served copy has commits that are not on {name}: it must stay read-only; "
        "push them from another clone, then reset it to the upstream (`git reset --hard @{u}`)",
    )
    return name


def _tree(
    repo: Path, source_name: str, revision: str, memo: GitMemo | None = None
) -> list[tuple[str, str, str, int | None]]:
    """(mode, object id, path, size in bytes) of every entry of the tree at `revision`; the
    size is None for entries that are not blobs (submodules). Sizes come from Git's object
    headers: nothing is read."""
    out = _asker(memo)(
        repo,
        source_name,
        "ls-tree",
        "-r",
        "-z",
        "-l",
        "--full-tree",
        revision,
        hint="check `git log`",
    )
    entries: list[tuple[str, str, str, int | None]] = []
    for raw in out.split(b"\0"):
        if not raw:
            continue
        meta, _, name = raw.partition(b"\t")
        mode, _kind, oid, size = meta.decode().split()
        entries.append(
            (mode, oid, name.decode("utf-8", errors="replace"), None if size == "-" else int(size))
        )
    return entries


def _too_large(source: SourceSettings, path: str, size: int) -> Problem:
    limit = source.max_document_bytes
    return Problem(
        doc_identifier(source.name, path),
        f"{size:,} bytes, over the limit of source {source.name!r} ({limit:,} bytes); it was "
        "not read",
        field="max_document_bytes",
        hint=f"split the file, or raise max_document_bytes in the [[sources]] entry "
        f"{source.name!r} of thoth.toml (at least {size})",
        code="document_too_large",
    )


def _blobs(repo: Path, source_name: str, oids: Sequence[str]) -> list[bytes]:
    """The bytes of many blobs from one `git cat-file --batch` process."""
    if not oids:
        return []
    out = _git(
        repo,
        source_name,
        "cat-file",
        "--batch",
        stdin=("\n".join(oids) + "\n").encode(),
        hint="the repository may be damaged: run `git fsck` there",
    )
    try:
        return batch_blobs(out, len(oids))
    except ObjectNotBlob as exc:
        raise SourceUnavailable(
            f"source {source_name!r} ({repo}): object {oids[exc.position]} cannot be read "
            f"({exc.header}) -> run `git fsck` there"
        ) from exc


def _uncommitted(
    repo: Path, source: SourceSettings, memo: GitMemo | None = None
) -> tuple[str, ...]:
    out = _asker(memo)(
        repo,
        source.name,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        hint="check the repository",
    )
    items = out.decode("utf-8", errors="replace").split("\0")
    paths: set[str] = set()
    index = 0
    while index < len(items):
        entry = items[index]
        index += 1
        if len(entry) < 4:
            continue
        paths.add(entry[3:])
        if ("R" in entry[:2] or "C" in entry[:2]) and index < len(items):
            paths.add(items[index])  # the origin of a rename or copy changed too
            index += 1
    return tuple(sorted(path for path in paths if selects(source, path)))


def _titled(key: str, path: str) -> bool:
    """Whether a per-file key (`titles`, `entities`) names this file: its path in the
    repository, or its file name."""
    return key in (path, PurePosixPath(path).name)


def title_override(source: SourceSettings, path: str) -> str | None:
    """The title `thoth.toml` gives the file (`[[sources]] titles`), None when it gives none."""
    return _per_file(source.titles, path)


def entity_override(source: SourceSettings, path: str) -> str | None:
    """The entity `thoth.toml` gives the file (`[[sources]] entities`), None when it gives
    none."""
    return _per_file(source.entities, path)


def _per_file(table: dict[str, str], path: str) -> str | None:
    for key, value in table.items():
        if _titled(key, path):
            return value
    return None


def _check_per_file(source: SourceSettings, repo: Path, paths: Sequence[str]) -> None:
    """Every `titles` and `entities` key names exactly one file of the source: a key that
    names none (a typo, a renamed file) or several (one file name in two folders) is an error
    naming the key."""
    problems: list[Problem] = []
    for what, table in (("titles", source.titles), ("entities", source.entities)):
        for key in table:
            named = [path for path in paths if _titled(key, path)]
            if len(named) == 1:
                continue
            where = f"sources.{source.name}.{what}"
            if named:
                cause = f"{key!r} names {len(named)} files: {', '.join(named)}"
                hint = "use the file's path inside the repository as the key"
            else:
                cause = f"{key!r} names no file of source {source.name!r}"
                hint = "check the file name (or its path inside the repository) and the globs"
            problems.append(Problem(where, cause, field=what, hint=hint, code="title_unmatched"))
    if problems:
        raise ProblemsError(
            f"source {source.name!r} ({repo}): {len(problems)} file name(s) in thoth.toml "
            "(titles, entities) match no single file; nothing was read or indexed",
            problems,
            code="title_unmatched",
        )


def read_source(
    ws_root: Path,
    source: SourceSettings,
    *,
    align_first: bool = True,
    memo: GitMemo | None = None,
) -> SourceSnapshot:
    """Every file the source declares, read at its repository's HEAD (after `align`).

    A source whose globs match nothing gives an empty snapshot: sync and verify report it.
    Symbolic links and submodules matched by the globs are refused: their content is not in
    the commit. `memo`: repository-wide answers shared by the sources of one pass that aligns
    nothing (refused with `align_first`, which moves HEAD).
    """
    if align_first and memo is not None:
        raise ValueError(
            "read_source: a GitMemo cannot be shared across alignments -> pass align_first=False"
        )
    repo = repo_root(ws_root, source)
    if align_first:
        align(repo, source.name)
    else:
        _check_repository(repo, source.name, memo)
    revision = (
        _asker(memo)(
            repo, source.name, "rev-parse", "--verify", "HEAD^{commit}", hint="check `git log`"
        )
        .decode()
        .strip()
    )
    tree = _tree(repo, source.name, revision, memo)
    chosen = [entry for entry in tree if selects(source, entry[2])]
    refused = [
        Problem(
            doc_identifier(source.name, path),
            "is a symbolic link" if mode == _MODE_SYMLINK else "is a Git submodule",
            hint="commit the file itself, or exclude the path from the source's globs"
            if mode == _MODE_SYMLINK
            else "declare the submodule's checkout as its own source, or exclude the path",
            code="not_a_file",
        )
        for mode, _, path, _ in chosen
        if mode in (_MODE_SYMLINK, _MODE_GITLINK)
    ]
    if refused:
        raise ProblemsError(
            f"source {source.name!r} ({repo}): {len(refused)} path(s) are not regular files",
            refused,
        )
    # Bounded input: a file over the source's size limit is refused from its size in Git,
    # before its bytes are read (one huge file would otherwise be held in memory, copied,
    # extracted and chunked before anything could refuse it).
    oversized = [
        _too_large(source, path, size)
        for _, _, path, size in chosen
        if size is not None and size > source.max_document_bytes
    ]
    if oversized:
        raise ProblemsError(
            f"source {source.name!r} ({repo}): {len(oversized)} file(s) over the size limit "
            f"of {source.max_document_bytes:,} bytes; nothing was read or indexed",
            sorted(oversized, key=lambda p: p.where),
            code="document_too_large",
        )
    chosen.sort(key=lambda entry: entry[2])
    _check_per_file(source, repo, [path for _, _, path, _ in chosen])
    blobs = _blobs(repo, source.name, [oid for _, oid, _, _ in chosen])
    files = tuple(
        SourceFile(source, path, data, hashlib.sha256(data).hexdigest(), revision)
        for (_, _, path, _), data in zip(chosen, blobs, strict=True)
    )
    return SourceSnapshot(source, repo, revision, files, _uncommitted(repo, source, memo))
