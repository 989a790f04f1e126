"""Reading a reviewed YAML list of the workspace (the entity list, the glossary): the file
`thoth.toml` names, parsed whole and validated entry by entry, every problem reported at once
with the entry and the field it concerns."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from thoth.errors import Problem, ProblemsError

M = TypeVar("M", bound=BaseModel)


def read_list(
    root: Path, relative: str, model: type[M], *, setting: str, what: str, example: str
) -> tuple[list[M], bytes, list[Problem]]:
    """The entries of `relative` (under `root`) as `model`s, the file's bytes (for a digest)
    and the problems of entries that do not validate. A missing file, YAML that does not
    parse and a document that is not a list raise: nothing of such a file is usable.
    `setting` is the thoth.toml key naming the file, `what` the list's name in messages,
    `example` one entry as YAML; codes are `<setting>_missing` and `<setting>_invalid`."""
    path = root / relative
    if not path.is_file():
        raise ProblemsError(
            f"{relative}: the {what} named in thoth.toml does not exist",
            [
                Problem(
                    relative,
                    "no such file",
                    field=setting,
                    hint=f"create it (docs/documents.md) or remove `{setting}` from thoth.toml",
                    code=f"{setting}_missing",
                )
            ],
        )
    data = path.read_bytes()
    try:
        raw = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ProblemsError(
            f"{relative}: not readable YAML",
            [Problem(relative, f"cannot be parsed: {exc}", code=f"{setting}_invalid")],
        ) from exc
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ProblemsError(
            f"{relative}: not a list",
            [
                Problem(
                    relative,
                    f"expected a list of entries, got {type(raw).__name__}",
                    hint=f"- {example}",
                    code=f"{setting}_invalid",
                )
            ],
        )
    problems: list[Problem] = []
    entries: list[M] = []
    for i, item in enumerate(raw):
        try:
            entries.append(model.model_validate(item))
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"]) or "entry"
                problems.append(
                    Problem(
                        relative, f"[{i}].{loc}: {err['msg']}", field=loc, code=f"{setting}_invalid"
                    )
                )
    return entries, data, problems
