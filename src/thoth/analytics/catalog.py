"""The query catalog: one reviewed YAML file per query under `[analytics] catalog`
(`analytics/queries/<id>.yaml`), versioned in Git like Evidence and the wiki.

A file is read into a `CatalogQuery` (pydantic, strict: an unknown key is a problem); every
problem names the file and the field. Served queries come from the activated revision only
(`load_catalog_at`); `tht analytics check` also reads the working tree (`load_catalog_files`)
so a curator checks before committing."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from thoth.analytics.measure import Measure
from thoth.config import ColumnKind
from thoth.errors import Problem, ThothError
from thoth.gitrepo import ObjectNotBlob, batch_blobs
from thoth.markup import load_yaml

QUERY_ID = r"^[a-z0-9][a-z0-9-]*$"
PARAMETER_NAME = r"^[a-z_][a-z0-9_]*$"
ParameterType = Literal["integer", "decimal", "date", "year", "month", "quarter", "enum", "text"]
# The numbers a month (1-12) and a quarter (1-4) bind.
_PERIODS: dict[str, int] = {"month": 12, "quarter": 4}
Shape = Literal["value", "row", "table"]
_VALUES_FROM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_]\w*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Parameter(_Strict):
    type: ParameterType
    description: str = Field(min_length=1)
    required: bool | None = None  # None: required exactly when there is no default
    default: Any = None
    min: Any = None
    max: Any = None
    values: list[str] | None = None  # enum: the allowed values
    values_from: str | None = None  # enum: `schema.view.column` holding them
    synonyms: dict[str, list[str]] = {}  # enum value -> words that mean it

    @model_validator(mode="after")
    def _consistent(self) -> Parameter:
        if self.type == "enum":
            if (self.values is None) == (self.values_from is None):
                raise ValueError("an enum takes exactly one of `values` or `values_from`")
            if self.values is not None and not self.values:
                raise ValueError("`values` is empty")
            if self.values_from is not None and not _VALUES_FROM.match(self.values_from):
                raise ValueError(f"values_from {self.values_from!r}: write `schema.view.column`")
            if self.values is not None:
                unknown = sorted(set(self.synonyms) - set(self.values))
                if unknown:
                    raise ValueError(f"synonyms of values not in `values`: {', '.join(unknown)}")
        else:
            for name in ("values", "values_from"):
                if getattr(self, name) is not None:
                    raise ValueError(f"`{name}` belongs to enum parameters only")
            if self.synonyms:
                raise ValueError("`synonyms` belong to enum parameters only")
        if self.type in ("enum", "text") and (self.min is not None or self.max is not None):
            raise ValueError(f"`min`/`max` do not apply to a {self.type} parameter")
        for bound in ("min", "max"):
            raw = getattr(self, bound)
            if raw is not None:
                coerce(self, raw, f"`{bound}`")
        if self.default is not None:
            coerce(self, self.default, "`default`")
            if self.values is not None and str(self.default) not in self.values:
                raise ValueError(f"default {self.default!r} is not one of `values`")
            check_range(self, coerce(self, self.default, "`default`"), "`default`")
        if self.required and self.default is not None:
            raise ValueError("a required parameter has no default (drop one of the two)")
        return self

    @property
    def is_required(self) -> bool:
        return self.required if self.required is not None else self.default is None


def coerce(param: Parameter, value: object, what: str = "the value") -> object:
    """`value` as the parameter's type binds it (int, Decimal, date, str); ValueError naming
    `what` and the type when it is not one."""
    try:
        if param.type in ("integer", "year", "month", "quarter"):
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError
            text = str(value).strip()
            if param.type == "quarter":
                text = text.upper().removeprefix("Q")
            number = int(text)
            if param.type == "year" and not 1000 <= number <= 9999:
                raise ValueError
            if param.type in _PERIODS and not 1 <= number <= _PERIODS[param.type]:
                raise ValueError
            return number
        if param.type == "decimal":
            if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
                raise ValueError
            return Decimal(str(value).strip().replace(",", "."))
        if param.type == "date":
            if isinstance(value, date):
                return value
            if not isinstance(value, str):
                raise ValueError
            return date.fromisoformat(value.strip())
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise ValueError
        return str(value)
    except (ValueError, InvalidOperation):
        hint = {
            "date": "YYYY-MM-DD",
            "year": "a four-digit year",
            "month": "a month number, 1 to 12",
            "quarter": "a quarter, 1 to 4",
        }.get(param.type, param.type)
        raise ValueError(f"{what} {value!r} is not a {param.type} ({hint})") from None


def check_range(param: Parameter, value: Any, what: str = "the value") -> None:
    """ValueError when `value` (already coerced) is outside [min, max]."""
    low = None if param.min is None else coerce(param, param.min)
    high = None if param.max is None else coerce(param, param.max)
    if low is not None and value < low:
        raise ValueError(f"{what} {_shown(value)} is below the min {param.min}")
    if high is not None and value > high:
        raise ValueError(f"{what} {_shown(value)} is above the max {param.max}")


def _shown(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


class ResultColumn(_Strict):
    label: str = Field(min_length=1)
    unit: str | None = None
    kind: ColumnKind


class ResultSpec(_Strict):
    shape: Shape
    columns: dict[str, ResultColumn] = Field(min_length=1)


class CatalogQuery(_Strict):
    id: str = Field(pattern=QUERY_ID)
    description: str = Field(min_length=1)
    examples: list[str] = Field(min_length=1)
    parameters: dict[str, Parameter] = {}
    sql: str = Field(min_length=1)
    result: ResultSpec
    # What the query measures (thoth.analytics.measure): one measure or a list. A question
    # naming another measure is never answered with this query's number. `tht analytics
    # check` requires it; a query without it is routed by similarity alone.
    measure: Measure | list[Measure] | None = None
    # Labels this query's figures carry beside the store's ([analytics] labels): a caller
    # without all of them never sees its number.
    labels: list[str] = []

    @property
    def measures(self) -> frozenset[str]:
        if self.measure is None:
            return frozenset()
        return frozenset([self.measure] if isinstance(self.measure, str) else self.measure)

    @model_validator(mode="after")
    def _names(self) -> CatalogQuery:
        bad = [n for n in self.parameters if not re.match(PARAMETER_NAME, n)]
        if bad:
            raise ValueError(f"parameter names must be [a-z_][a-z0-9_]*: {', '.join(bad)}")
        if self.result.shape == "value" and len(self.result.columns) != 1:
            raise ValueError("result.shape `value` declares exactly one column")
        return self

    def routing_texts(self) -> list[str]:
        """What the router compares a question with: the description and the examples."""
        return [self.description, *self.examples]


@dataclass(frozen=True)
class CatalogEntry:
    path: str  # relative to the workspace root (`analytics/queries/<id>.yaml`)
    query: CatalogQuery


@dataclass
class Catalog:
    """The queries of one revision (or of the working tree: revision None)."""

    directory: str
    revision: str | None
    entries: list[CatalogEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0

    @property
    def queries(self) -> dict[str, CatalogQuery]:
        return {e.query.id: e.query for e in self.entries}

    def path_of(self, query_id: str) -> str:
        for e in self.entries:
            if e.query.id == query_id:
                return e.path
        raise KeyError(query_id)


def parse_entry(path: str, text: str) -> CatalogEntry | list[Problem]:
    """One catalog file; problems name the file and the field."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        return [Problem(path, f"not valid YAML: {' '.join(str(exc).split())}", code="yaml")]
    if not isinstance(data, dict):
        return [Problem(path, "expected a mapping (id, description, examples, ...)")]
    try:
        query = CatalogQuery.model_validate(data)
    except ValidationError as exc:
        return [
            Problem(
                path,
                err["msg"].removeprefix("Value error, "),
                field=".".join(str(p) for p in err["loc"]) or None,
                code="invalid",
            )
            for err in exc.errors()
        ]
    stem = PurePosixPath(path).stem
    if query.id != stem:
        return [
            Problem(
                path,
                f"id {query.id!r} differs from the file name",
                field="id",
                hint=f"rename the file to {query.id}.yaml or set id: {stem}",
            )
        ]
    return CatalogEntry(path, query)


def build_catalog(directory: str, revision: str | None, files: Mapping[str, str]) -> Catalog:
    catalog = Catalog(directory, revision, files=len(files))
    for path in sorted(files):
        parsed = parse_entry(path, files[path])
        if isinstance(parsed, list):
            catalog.problems += parsed
        else:
            catalog.entries.append(parsed)
    return catalog


def _is_entry(path: str, directory: str) -> bool:
    rel = PurePosixPath(path).relative_to(directory)
    return len(rel.parts) == 1 and rel.suffix in (".yaml", ".yml")


def load_catalog_files(root: Path, directory: str) -> Catalog:
    """The catalog as it is in the working tree (`tht analytics check` before a commit)."""
    base = root / directory
    files = {
        f"{directory}/{p.name}": p.read_text("utf-8")
        for p in sorted(base.glob("*"))
        if p.is_file() and _is_entry(f"{directory}/{p.name}", directory)
    }
    return build_catalog(directory, None, files)


class CatalogUnreadable(ThothError):
    """Git could not list or show the catalog at a revision."""

    code = "catalog_unreadable"


def load_catalog_at(root: Path, directory: str, revision: str) -> Catalog:
    """The catalog of a committed revision, read from Git (never from the working tree)."""
    listed = _git(root, "ls-tree", "--name-only", f"{revision}:{directory}", missing_ok=True)
    paths = [f"{directory}/{name}" for name in (listed or "").splitlines()]
    entries = [path for path in paths if _is_entry(path, directory)]
    return build_catalog(directory, revision, _files_at(root, revision, entries))


def _files_at(root: Path, revision: str, paths: list[str]) -> dict[str, str]:
    """The text of `paths` at `revision`, from one `git cat-file --batch` process (a `git
    show` per file cost `tht verify` a process per catalog entry)."""
    if not paths:
        return {}
    done = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch"],
        input="".join(f"{revision}:{path}\n" for path in paths).encode("utf-8"),
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()
        raise CatalogUnreadable(f"`git cat-file --batch` at {revision} failed: {stderr}")
    try:
        blobs = batch_blobs(done.stdout, len(paths))
    except ObjectNotBlob as exc:
        raise CatalogUnreadable(
            f"{paths[exc.position]} at {revision} cannot be read from Git ({exc.header}) -> "
            "run `git fsck` there"
        ) from exc
    files: dict[str, str] = {}
    for path, data in zip(paths, blobs, strict=True):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CatalogUnreadable(
                f"{path} at {revision} is not UTF-8 (byte {exc.start}) -> save it as UTF-8 "
                "and commit it"
            ) from exc
        # As `git show` read in text mode gave it: universal newlines.
        files[path] = text.replace("\r\n", "\n").replace("\r", "\n")
    return files


def _git(root: Path, *args: str, missing_ok: bool = False) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        if missing_ok and ("does not exist" in done.stderr or "not a tree" in done.stderr):
            return None
        raise CatalogUnreadable(f"`git {' '.join(args)}` failed: {done.stderr.strip()}")
    return done.stdout
