"""Where the server keeps its files is not the caller's business: what a failure says to an
HTTP or MCP caller names paths relative to the workspace (`<workspace>/.thoth/state.sqlite`)
and hides any other server path (`<server path>`); the full message goes to the server log
under the request id.

Only failures are rewritten (a problem, a failed answer or search, an unavailable Evidence
search, a component that is not ready, a failed job): a found answer quotes its documents
exactly, paths and all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from thoth.errors import Problem, ThothError

WORKSPACE: Final = "<workspace>"
SERVER_PATH: Final = "<server path>"
# The statuses of an outcome that could not be produced (answers, searches, Evidence, jobs).
FAILED_STATUSES: Final = frozenset({"failed", "unavailable"})

# An absolute POSIX path: slashes not following a word character or a dot (so `3/4`, a doc id's
# `source:dir/file` and the path of a URL after its host are not taken), then its components.
_ABSOLUTE = re.compile(r"(?<![\w.\-~])/+([\w.+@~\-]+)(?:/[\w.+@~\-]+)*/?")


class PathRedactor:
    """Rewrites the server paths in what a failure tells a caller of the workspace at `root`."""

    def __init__(self, root: Path) -> None:
        forms = {str(root.absolute()), str(root.resolve())}
        # The longest first: a resolved root may extend the given one (a symlinked parent).
        self._roots = sorted((f.rstrip("/") for f in forms if f.rstrip("/")), key=len, reverse=True)
        try:
            # A path is the server's when its first component is a top-level directory here:
            # `/tmp/x` is, a route (`/v1/jobs`) is not.
            self._top = frozenset(os.listdir("/"))
        except OSError:
            self._top = frozenset()

    def text(self, value: str) -> str:
        for root in self._roots:
            value = re.sub(re.escape(root) + r"(?![\w.+@~\-])", WORKSPACE, value)
        return _ABSOLUTE.sub(self._other, value)

    def _other(self, match: re.Match[str]) -> str:
        return SERVER_PATH if match.group(1) in self._top else match.group(0)

    def data(self, value: Any) -> Any:
        """Every string in `value` (dicts, lists, tuples) rewritten; keys are kept."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def failures(self, result: Any) -> tuple[Any, list[str]]:
        """`result` with every failure in it rewritten (an outcome whose status is failed or
        unavailable, or that carries an error code; a readiness report that is not ready),
        and the original strings that were changed, for the server log."""
        changed: list[str] = []
        return self._failures(result, changed), changed

    def _failures(self, value: Any, changed: list[str]) -> Any:
        if isinstance(value, Mapping):
            if _is_failure(value):
                public = self.data(value)
                changed.extend(_changed(value, public))
                return public
            return {k: self._failures(v, changed) for k, v in value.items()}
        if isinstance(value, list):
            return [self._failures(v, changed) for v in value]
        return value

    def problem(self, exc: ThothError) -> tuple[str, list[dict[str, str | None]]]:
        """An error's message and problems as a caller sees them."""
        return self.text(exc.message_text()), [_problem_dict(self, p) for p in exc.problems]


def _is_failure(value: Mapping[str, Any]) -> bool:
    return (
        value.get("status") in FAILED_STATUSES
        or bool(value.get("error_code"))
        or value.get("ready") is False
    )


def _problem_dict(redactor: PathRedactor, problem: Problem) -> dict[str, str | None]:
    return {k: None if v is None else redactor.text(v) for k, v in problem.as_dict().items()}


def _changed(before: Any, after: Any) -> list[str]:
    """The strings of `before` that differ in `after` (the same shape)."""
    if isinstance(before, str):
        return [before] if before != after else []
    if isinstance(before, Mapping):
        return [s for k, v in before.items() for s in _changed(v, after[k])]
    if isinstance(before, list | tuple):
        return [s for v, w in zip(before, after, strict=True) for s in _changed(v, w)]
    return []
