"""The thoth.toml reference, generated from the settings model (thoth.config): every key with
its type, default and meaning (the field's `description`; a section's is its model's
docstring). docs/settings.md is this module's output; a test fails when the two differ.

    python -m thoth.settings_reference > docs/settings.md
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from thoth.config import CONFIG_FILE, Settings

_HEADER = f"""# `{CONFIG_FILE}` settings reference

Generated from the settings model (`thoth/config.py`) by
`python -m thoth.settings_reference > docs/settings.md`; a test fails when this page and the
model differ. Keys not listed here are refused (every section forbids unknown keys). A `[[name]]`
section is a list of tables; a section marked *optional* is absent unless you declare it.
"""


def _model(annotation: Any) -> tuple[type[BaseModel] | None, bool, bool]:
    """(the settings model inside `annotation`, whether it is a list of them, optional)."""
    optional = False
    args = get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType) and type(None) in args:
        optional = True
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        if inspect.isclass(item) and issubclass(item, BaseModel):
            return item, True, optional
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation, False, optional
    return None, False, optional


def _type(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (Union, types.UnionType):
        return " \\| ".join(_type(a) for a in args)
    if annotation is type(None):
        return "none"
    if origin in (list, tuple, dict):
        name = {list: "list", tuple: "list", dict: "table"}[origin]
        inner = ", ".join(_type(a) for a in args if a is not Ellipsis)
        return f"{name}[{inner}]" if inner else name
    if origin is not None and hasattr(annotation, "__value__"):
        return _type(annotation.__value__)
    return getattr(annotation, "__name__", str(annotation))


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value: Any = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return "see section"
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _constraints(info: FieldInfo) -> str:
    bounds = []
    for meta in info.metadata:
        for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            value = getattr(meta, attr, None)
            if value is not None:
                bounds.append(f"{sign} {value}")
        if getattr(meta, "min_length", None):
            bounds.append(f"length ≥ {meta.min_length}")
    return f" ({', '.join(bounds)})" if bounds else ""


def _section(
    lines: list[str], path: str, model: type[BaseModel], many: bool, optional: bool
) -> None:
    title = f"[[{path}]]" if many else f"[{path}]"
    lines += ["", f"## `{title}`" + (" *optional*" if optional else ""), ""]
    doc = inspect.getdoc(model)
    if doc and model.__doc__:  # the model's own docstring, not an inherited one
        lines += [" ".join(doc.split()), ""]
    _table(lines, path, model)


def _table(lines: list[str], path: str, model: type[BaseModel]) -> None:
    rows, nested = [], []
    for name, info in model.model_fields.items():
        sub, many, optional = _model(info.annotation)
        if sub is not None:
            nested.append((f"{path}.{name}" if path else name, sub, many, optional))
            continue
        meaning = _cell(info.description or "")
        key = info.alias or name  # the key thoth.toml spells (`schema`, not `schema_name`)
        rows.append(
            f"| `{key}` | {_type(info.annotation)}{_constraints(info)} | {_default(info)} "
            f"| {meaning} |"
        )
    if rows:
        lines += ["| key | type | default | meaning |", "|---|---|---|---|", *rows]
    for sub_path, sub, many, optional in nested:
        _section(lines, sub_path, sub, many, optional)


def render() -> str:
    """docs/settings.md, from the model as it is now."""
    lines = [_HEADER.rstrip(), "", "## Top level", ""]
    _table(lines, "", Settings)
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
