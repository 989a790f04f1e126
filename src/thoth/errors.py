"""Errors that say what failed, where, and what to do about it.

Every error of the package derives from `ThothError`, so a caller catches one thing. Each one
carries a stable `code` (a class default, or given per instance) and a list of `Problem`s: the
ones given, or a single Problem built from the message. The CLI renders any of them in one place
(`thoth.cli.errors`) and exits with the class's `exit_code`."""

from __future__ import annotations

import errno
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One problem found while checking input: where it is, what is wrong, what to do."""

    where: str  # a file path relative to the workspace, or a unit id; "" when not about a place
    message: str
    field: str | None = None
    hint: str | None = None
    code: str = "invalid"

    def render(self) -> str:
        loc = self.where + (f" [{self.field}]" if self.field else "")
        text = f"{loc}: {self.message}" if loc else self.message
        if self.hint:
            text += f" -> {self.hint}"
        return text

    def as_dict(self) -> dict[str, str | None]:
        return {
            "where": self.where,
            "field": self.field,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


class ThothError(Exception):
    """Base class: an error a user can act on. The message names the failing thing.

    `code` is stable (scripts may rely on it); `problems` is never empty: the problems given,
    or one Problem made of the message (with `where`, when the raiser knows the place)."""

    exit_code = 1
    code = "error"

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        where: str = "",
        problems: Iterable[Problem] = (),
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.where = where
        self._problems = list(problems)

    @property
    def problems(self) -> list[Problem]:
        given: list[Problem] = getattr(self, "_problems", [])
        if given:
            return list(given)
        return [Problem(getattr(self, "where", ""), self.message_text(), code=self.code)]

    @property
    def problems_given(self) -> bool:
        """True when the raiser listed problems (a refused batch), False when `problems` is
        the one made of the message."""
        return bool(getattr(self, "_problems", []))

    def message_text(self) -> str:
        """The message alone, without the problem list some subclasses add to `str()`."""
        return str(self)


class ProblemsError(ThothError):
    """A batch was refused; every problem found is listed, nothing was written."""

    code = "refused"

    def __init__(
        self, summary: str, problems: Iterable[Problem] = (), *, code: str | None = None
    ) -> None:
        super().__init__(summary, code=code, problems=problems)
        self.summary = summary

    def message_text(self) -> str:
        return self.summary

    def __str__(self) -> str:
        lines = [self.summary]
        lines += [f"  - {p.render()}" for p in self._problems]
        return "\n".join(lines)


class RequestError(ThothError):
    """A request was malformed (an empty question, an unknown field or label): usage, exit 2."""

    exit_code = 2
    code = "bad_request"


class PreconditionError(ThothError):
    """The command refused to start: the workspace is not in a state it may act on."""

    exit_code = 4
    code = "precondition"


class ConfigError(ThothError):
    """thoth.toml is missing or malformed."""

    exit_code = 4
    code = "config"


class FileAccessError(ThothError):
    """A file or directory Thoth needs could not be used as it must be (permission denied, a
    file where a directory belongs, no space left): the problem names the path."""

    code = "file_access"

    def __init__(self, where: str, cause: str, hint: str) -> None:
        self.summary = f"cannot use {where}: {cause}" if where else cause
        super().__init__(
            f"{self.summary} -> {hint}",
            where=where,
            problems=[Problem(where, cause, hint=hint, code=self.code)],
        )

    def message_text(self) -> str:
        return self.summary


# errno -> what to do about it; anything else gets the generic advice.
_OS_HINTS: dict[int, str] = {
    errno.EACCES: "give the user running tht access to it (read, and write under .thoth/), or "
    "run tht as its owner",
    errno.EPERM: "give the user running tht access to it, or run tht as its owner",
    errno.ENOTDIR: "a file stands where a directory belongs: move it away (Thoth recreates "
    "what is under .thoth/)",
    errno.EEXIST: "a file stands where a directory belongs: move it away (Thoth recreates "
    "what is under .thoth/)",
    errno.EISDIR: "a directory stands where a file belongs: move it away",
    errno.ENOSPC: "free disk space, then run the command again",
    errno.EROFS: "the file system is read-only: point the workspace (or [index].path, "
    "[state].url) at a writable place",
}


def file_access_error(exc: OSError) -> FileAccessError:
    """The ThothError of an operating-system failure that reached a command: the path, the
    system's reason and what to do."""
    path = exc.filename
    where = str(path) if path is not None else ""
    cause = exc.strerror or type(exc).__name__
    if exc.filename2 is not None:
        cause += f" (and {exc.filename2})"
    if not where:
        cause = f"{cause}: {exc}"
    hint = _OS_HINTS.get(exc.errno or 0, "check the path, its type and its permissions")
    return FileAccessError(where, cause, hint)
