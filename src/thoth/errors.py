"""Errors that say what failed, where, and what to do about it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One problem found while checking input: where it is, what is wrong, what to do."""

    where: str  # a file path relative to the workspace, or a unit id
    message: str
    field: str | None = None
    hint: str | None = None
    code: str = "invalid"

    def render(self) -> str:
        loc = self.where + (f" [{self.field}]" if self.field else "")
        text = f"{loc}: {self.message}"
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
    """Base class: an error a user can act on. The message names the failing thing."""

    exit_code = 1


@dataclass
class ProblemsError(ThothError):
    """A batch was refused; every problem found is listed, nothing was written."""

    summary: str
    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.summary)

    def __str__(self) -> str:
        lines = [self.summary]
        lines += [f"  - {p.render()}" for p in self.problems]
        return "\n".join(lines)


class PreconditionError(ThothError):
    """The command refused to start: the workspace is not in a state it may act on."""

    exit_code = 4


class ConfigError(ThothError):
    """thoth.toml is missing or malformed."""

    exit_code = 4
