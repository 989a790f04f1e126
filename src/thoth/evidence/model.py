"""Evidence Units: a common envelope plus one typed part per kind (a discriminated union)."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    field_validator,
)

from thoth.evidence.ids import ID_PATTERN
from thoth.sqlcheck import check_expression, check_read_only_query

SCHEMA_VERSION = 1
MAX_EXCERPTS = 5
MAX_EXCERPT_CHARS = 1000

# Classification order of seed §4.2: from the most structured kind to the most general.
KINDS: tuple[str, ...] = (
    "formula",
    "enum",
    "mapping",
    "normalization",
    "glossary",
    "domain",
    "example",
    "reference",
)
Kind = Literal[
    "formula", "enum", "mapping", "normalization", "glossary", "domain", "example", "reference"
]
Purpose = Literal["disambiguation", "rewriting", "schema_linking", "sql_generation"]
PURPOSES: tuple[str, ...] = ("disambiguation", "rewriting", "schema_linking", "sql_generation")

_IDENT = r"(?:[A-Za-z_][A-Za-z0-9_$]*|\"[^\"]+\")"
TABLE_RE = re.compile(rf"^{_IDENT}(?:\.{_IDENT})?$")
COLUMN_RE = re.compile(rf"^{_IDENT}(?:\.{_IDENT}){{1,2}}$")

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def _table(value: str) -> str:
    if not TABLE_RE.match(value):
        raise ValueError(f"{value!r} is not a table name: write `schema.table`")
    return value


def _column(value: str) -> str:
    if not COLUMN_RE.match(value):
        raise ValueError(f"{value!r} is not a column name: write `schema.table.column`")
    return value


TableName = Annotated[str, AfterValidator(_table)]
ColumnName = Annotated[str, AfterValidator(_column)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _unique(values: list[str], what: str) -> list[str]:
    seen: set[str] = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{what} {v!r} listed twice")
        seen.add(v)
    return values


class AppliesTo(_Strict):
    concepts: list[Text] = []
    tables: list[TableName] = []
    columns: list[ColumnName] = []


class Provenance(_Strict):
    source_file: Text
    source_sha256: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
    supporting_excerpts: Annotated[
        list[Annotated[str, StringConstraints(min_length=1, max_length=MAX_EXCERPT_CHARS)]],
        Field(min_length=1, max_length=MAX_EXCERPTS),
    ]

    @field_validator("source_file")
    @classmethod
    def _inside_source(cls, value: str) -> str:
        parts = value.split("/")
        if parts[0] != "source" or ".." in parts or value.startswith("/"):
            raise ValueError(f"{value!r} must be a path under source/ without '..'")
        return value


class ReviewItem(_Strict):
    code: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]
    message: Text
    field: str | None = None


class FormulaData(_Strict):
    concept: Text
    columns: Annotated[list[ColumnName], Field(min_length=1)]
    sql: Text

    @field_validator("sql")
    @classmethod
    def _one_expression(cls, value: str) -> str:
        verdict = check_expression(value)
        if not verdict.ok:
            raise ValueError(verdict.summary())
        return value


class EnumData(_Strict):
    column: ColumnName
    values: Annotated[dict[Text, Text], Field(min_length=1)]


class MappingData(_Strict):
    concept: Text
    tables: Annotated[list[TableName], Field(min_length=1)]
    columns: list[ColumnName] = []


class NormalizationData(_Strict):
    rules: Annotated[list[Text], Field(min_length=1)]
    columns: list[ColumnName] = []


class GlossaryData(_Strict):
    term: Text
    definition: Text
    synonyms: list[Text] = []


class DomainData(_Strict):
    rule: Text


class ExampleData(_Strict):
    question: Text
    interpretation: Text
    sql: str | None = None

    @field_validator("sql")
    @classmethod
    def _read_only_query(cls, value: str | None) -> str | None:
        if value is not None:
            verdict = check_read_only_query(value)
            if not verdict.ok:
                raise ValueError(verdict.summary())
        return value


class ReferenceData(_Strict):
    url: Text
    label: Text
    description: Text

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or " " in value:
            raise ValueError(f"{value!r} is not an absolute http(s) URL")
        return value


class UnitBase(_Strict):
    schema_version: Literal[1]
    id: Annotated[str, StringConstraints(pattern=ID_PATTERN)]
    title: Text
    purposes: Annotated[list[Purpose], Field(min_length=1)]
    applies_to: AppliesTo = AppliesTo()
    language: Annotated[str, StringConstraints(pattern=r"^[a-z]{2}(-[A-Z]{2})?$")]
    provenance: Provenance
    caveats: list[Text] = []
    review_items: list[ReviewItem] = []
    # The readable Markdown body below the front matter; not part of the YAML.
    body: str = ""

    @field_validator("purposes")
    @classmethod
    def _unique_purposes(cls, value: list[str]) -> list[str]:
        return _unique(value, "purpose")


class FormulaUnit(UnitBase):
    kind: Literal["formula"]
    formula: FormulaData


class EnumUnit(UnitBase):
    kind: Literal["enum"]
    enum: EnumData


class MappingUnit(UnitBase):
    kind: Literal["mapping"]
    mapping: MappingData


class NormalizationUnit(UnitBase):
    kind: Literal["normalization"]
    normalization: NormalizationData


class GlossaryUnit(UnitBase):
    kind: Literal["glossary"]
    glossary: GlossaryData


class DomainUnit(UnitBase):
    kind: Literal["domain"]
    domain: DomainData


class ExampleUnit(UnitBase):
    kind: Literal["example"]
    example: ExampleData


class ReferenceUnit(UnitBase):
    kind: Literal["reference"]
    reference: ReferenceData


Unit = Annotated[
    FormulaUnit
    | EnumUnit
    | MappingUnit
    | NormalizationUnit
    | GlossaryUnit
    | DomainUnit
    | ExampleUnit
    | ReferenceUnit,
    Field(discriminator="kind"),
]
UNIT_ADAPTER: TypeAdapter[Unit] = TypeAdapter(Unit)

# Envelope keys in the order they are written, then the kind's own block.
ENVELOPE_ORDER: tuple[str, ...] = (
    "schema_version",
    "id",
    "title",
    "kind",
    "purposes",
    "applies_to",
    "language",
    "provenance",
    "caveats",
    "review_items",
)

DEFAULT_PURPOSES: dict[str, list[str]] = {
    "formula": ["schema_linking", "sql_generation"],
    "enum": ["schema_linking", "sql_generation"],
    "mapping": ["schema_linking"],
    "normalization": ["rewriting", "sql_generation"],
    "glossary": ["disambiguation", "rewriting"],
    "domain": ["disambiguation", "rewriting", "sql_generation"],
    "example": ["rewriting", "sql_generation"],
    "reference": ["disambiguation"],
}


def kind_data(unit: UnitBase) -> BaseModel:
    kind: str = getattr(unit, "kind")  # noqa: B009 - every concrete unit has it
    data: BaseModel = getattr(unit, kind)
    return data


def schema_names(unit: UnitBase) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every table and every column a unit names, in its order: `applies_to` and its kind's
    own fields (a formula's columns, an enum's column, a mapping's tables and columns, a
    normalization's columns). A column names its table too."""
    tables: list[str] = list(unit.applies_to.tables)
    columns: list[str] = list(unit.applies_to.columns)
    data = kind_data(unit)
    for name in ("tables", "columns", "column"):
        value = getattr(data, name, None)
        values = [value] if isinstance(value, str) else list(value or [])
        (tables if name == "tables" else columns).extend(values)
    tables += [c.rsplit(".", 1)[0] for c in columns if c.count(".") >= 2]
    return tuple(dict.fromkeys(tables)), tuple(dict.fromkeys(columns))
