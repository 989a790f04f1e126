"""Unit files: YAML front matter + a readable Markdown body. Parsing and rendering."""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import ValidationError

from thoth import markup
from thoth.errors import Problem
from thoth.evidence.model import ENVELOPE_ORDER, KINDS, UNIT_ADAPTER, Unit

# libyaml's C dumper is ~10x faster than the pure-Python one and gives the same results;
# PyYAML wheels ship it, a source build without libyaml falls back.
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """Safe dumper that writes multi-line strings (SQL, rules) as readable `|` blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,  # never fold: a folded line makes Git diffs noisy
    )


def unit_to_mapping(unit: Unit) -> dict[str, Any]:
    """The front matter, in the documented key order, without empty optional fields."""
    raw = unit.model_dump(mode="json", exclude={"body"})
    out: dict[str, Any] = {key: raw[key] for key in ENVELOPE_ORDER}
    out["review_items"] = [
        {k: v for k, v in item.items() if v is not None} for item in out["review_items"]
    ]
    out[unit.kind] = raw[unit.kind]
    return out


def render_unit(unit: Unit) -> str:
    body = unit.body.strip()
    return "---\n" + dump_yaml(unit_to_mapping(unit)) + "---\n" + (f"\n{body}\n" if body else "")


def _front_matter(text: str, where: str) -> tuple[dict[str, Any], str] | Problem:
    """The unit's front matter and body (read by thoth.markup), or the one problem found."""
    try:
        split = markup.split_front_matter(text, where)
    except markup.FrontMatterError as exc:
        return exc.problems[0]
    if split.fields is None:
        if text.startswith("---"):
            return Problem(
                where,
                "front matter is not closed by a `---` line",
                hint="add the closing `---` line below the last field",
            )
        return Problem(
            where,
            "no YAML front matter: the file must start with a `---` line",
            hint="restore the unit from Git or re-run `tht evidence prepare`",
        )
    return split.fields, split.body.strip()


def problems_from_validation(where: str, exc: ValidationError) -> list[Problem]:
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if err["type"] == "union_tag_invalid":
            tag = (err.get("ctx") or {}).get("tag")
            out.append(
                Problem(
                    where,
                    f"unknown kind {tag!r}; expected one of: {', '.join(KINDS)}",
                    field="kind",
                )
            )
            continue
        if err["type"] == "union_tag_not_found":
            out.append(Problem(where, "missing field", field="kind"))
            continue
        if loc and loc[0] in KINDS:  # the union's tag, not a real field
            loc = loc[1:]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        out.append(Problem(where, message, field=".".join(loc) or None))
    return out


def parse_unit(text: str, where: str) -> Unit | list[Problem]:
    split = _front_matter(text, where)
    if isinstance(split, Problem):
        return [split]
    data, body = split
    if "body" in data:
        return [
            Problem(
                where,
                "`body` is not a front-matter field",
                field="body",
                hint="write the readable text below the closing `---`",
            )
        ]
    kind = data.get("kind")
    if kind is not None and not isinstance(kind, str):
        return [Problem(where, "kind must be a string", field="kind")]
    try:
        return UNIT_ADAPTER.validate_python({**data, "body": body})
    except ValidationError as exc:
        return problems_from_validation(where, exc)
