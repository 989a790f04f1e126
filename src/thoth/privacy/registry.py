"""The registry of known names (anagrafica): who the placeholders stand for.

One entry per entity of the management system: its kind (PERSONA, AZIENDA ... any word), its
identifier there, and its name.

Read from a CSV or YAML file in the workspace (`[privacy] registry`), or from the rows of a
read-only query (`[privacy] registry_sql`, run by the composition root on `[database]`): both
give the same `Registry`.

CSV: a header with `kind,id,name` and optionally `surname` (other columns are ignored).
YAML: a list of mappings with the same keys.
"""

from __future__ import annotations

import csv
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from thoth.errors import ConfigError

_KIND = re.compile(r"[A-Z][A-Z0-9_]{0,31}")
REQUIRED = ("kind", "id", "name")
# The types of the numbered placeholders: a registry kind must not take them.
RESERVED_KINDS = frozenset({"CF", "PIVA", "IBAN", "EMAIL", "TEL", "IDENTITA"})


# The kinds whose entities are people: their names are also found in another word order
# ("Rossi Mario") and by surname alone (the last word of the name, or the registry's
# `surname` column).
PERSON_KINDS = frozenset(
    {"PERSONA", "PERSON", "PAZIENTE", "PATIENT", "DIPENDENTE", "EMPLOYEE", "MEDICO", "DOCTOR",
     "REFERENTE", "CONTATTO", "CONTACT", "UTENTE", "USER", "CLIENTE_PRIVATO"}
)  # fmt: skip
APOSTROPHES = "'’‘`´"
_JOINERS = "-‐‑–"  # hyphens and the en dash that join double names ("Rossi-Bianchi")
_WORD = re.compile(r"\w+")
# Between two words of one name: spacing, a comma, or a cell boundary ("Mario" | "Rossi": the
# caller takes a name over cells only when it fills them).
_GAP = re.compile(r"\s+|\s*,\s*|[ ]*[|\t][ ]*")


@dataclass(frozen=True)
class Entity:
    kind: str  # upper case: the placeholder's type, e.g. AZIENDA
    id: str  # the management system's identifier: the placeholder carries it
    name: str
    surname: str | None = None  # a person's surname, when it is not the name's last word

    @property
    def placeholder(self) -> str:
        return f"[{self.kind}:{self.id}]"

    @property
    def is_person(self) -> bool:
        return self.kind in PERSON_KINDS or self.surname is not None


def normalise_name(name: str) -> str:
    """How two spellings of one name compare: case, accents' composition and spacing aside."""
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


class _FoldTable(dict[int, str]):
    """What each character becomes in `fold`, computed once per character seen."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if ch in APOSTROPHES or ch in _JOINERS:
            folded = " "
        else:
            folded = "".join(
                c.casefold()
                for c in unicodedata.normalize("NFD", ch)
                if not unicodedata.combining(c)
            )
        self[code] = folded
        return folded


_FOLD = _FoldTable()


def fold(text: str) -> tuple[str, list[int]]:
    """The text as names are compared in it, and for each of its characters the index of the
    character of `text` it came from: case folded, diacritics dropped ("Nicolò" ->
    "nicolo"), apostrophes and hyphens turned into spaces ("Nicolo'", "D'Angelo",
    "Rossi-Bianchi")."""
    folded = text.translate(_FOLD)
    if len(folded) == len(text):  # every character one character: the common case
        return folded, list(range(len(text)))
    out: list[str] = []
    at: list[int] = []
    for i, ch in enumerate(text):
        piece = _FOLD[ord(ch)]
        out.append(piece)
        at += [i] * len(piece)
    return "".join(out), at


def folded_name(name: str) -> str:
    return " ".join(fold(name)[0].split())


def spellings(name: str) -> list[str]:
    """The folded spellings of a name: as `folded_name` gives it (apostrophes and hyphens as
    spaces), and with its apostrophes and hyphens dropped ("DAmico", "Dellacqua",
    "RossiVerdi"), which people write as often."""
    whole = folded_name(name)
    joined = folded_name("".join(c for c in name if c not in APOSTROPHES + _JOINERS))
    return [whole] if joined == whole else [whole, joined]


class Registry:
    """Entities by placeholder and by name."""

    def __init__(self, entities: Iterable[Entity]) -> None:
        self.entities: tuple[Entity, ...] = tuple(entities)
        self.by_placeholder = {e.placeholder: e for e in self.entities}
        # Every folded spelling a name is found under -> its entity (None: the spelling is a
        # surname several people share, or a reordering that names two of them).
        self.variants: dict[str, Entity | None] = {}
        self._whole: set[str] = set()
        for e in self.entities:
            for whole in spellings(e.name):
                if whole in self._whole:
                    continue  # the first entity of a name keeps it
                self._whole.add(whole)
                self.variants[whole] = e
        for e in self.entities:
            for variant in _person_variants(e):
                if variant in self._whole:
                    continue
                known = self.variants.get(variant, e)
                self.variants[variant] = e if known == e else None
        self._first_words = frozenset(v.split()[0] for v in self.variants)
        self._longest = max((len(v.split()) for v in self.variants), default=0)

    def __len__(self) -> int:
        return len(self.entities)

    def name_pattern(self, min_length: int) -> re.Pattern[str] | None:
        """One case-insensitive pattern of every name at least `min_length` characters long,
        longest first (so "Rossi Costruzioni Srl" wins over "Rossi"), whole words only, any
        run of spaces or line breaks between words; None when no name is that long."""
        names = sorted(
            {normalise_name(e.name) for e in self.entities if len(e.name.strip()) >= min_length},
            key=lambda n: (-len(n), n),
        )
        if not names:
            return None
        alternatives = "|".join(r"\s+".join(re.escape(w) for w in n.split()) for n in names)
        return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)

    def lookup(self, spelling: str) -> Entity | None:
        """The entity `spelling` names in any of its forms; None when it names none, or a
        form several share."""
        return self.variants.get(folded_name(spelling.replace(",", " ")))

    def find(self, folded: str, min_length: int) -> Iterator[tuple[int, int, str]]:
        """Every registry spelling at least `min_length` characters long in `folded` (text as
        `fold` gives it), as (start, end, the spelling's key): whole words, the longest at
        each place, the words of a name apart by spacing or a comma ("Rossi, Mario"). A
        dictionary look-up per word, not one pattern of every name: cheap to build and to
        run with thousands of names."""
        words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(folded)]
        i = 0
        while i < len(words):
            found = None
            if words[i][2] in self._first_words:
                for n in range(min(self._longest, len(words) - i), 0, -1):
                    span = words[i : i + n]
                    if any(
                        not _GAP.fullmatch(folded[a[1] : b[0]]) for a, b in itertools.pairwise(span)
                    ):
                        continue
                    key = " ".join(w[2] for w in span)
                    if key in self.variants and len(key) >= min_length:
                        found = (span[0][0], span[-1][1], key, n)
                        break
            if found is None:
                i += 1
                continue
            start, end, key, n = found
            yield start, end, key
            i += n


def _person_variants(entity: Entity) -> list[str]:
    """A person's name in the other orders of its words and by surname alone, in each of its
    spellings."""
    if not entity.is_person:
        return []
    found: list[str] = []
    for spelling in spellings(entity.name):
        words = spelling.split()
        if 2 <= len(words) <= 4:
            found += [" ".join(p) for p in itertools.permutations(words) if list(p) != words]
    surname = entity.surname
    if surname is None and len(entity.name.split()) >= 2:
        surname = entity.name.split()[-1]
    if surname:
        found += spellings(surname)
    return found


def entities_from_rows(
    columns: Sequence[str], rows: Iterable[Sequence[object]], where: str
) -> list[Entity]:
    """Entities from rows with the columns kind, id and name (others ignored)."""
    lower = [c.lower() for c in columns]
    missing = [c for c in REQUIRED if c not in lower]
    if missing:
        raise ConfigError(
            f"{where}: the registry has no column {', '.join(missing)} (it has "
            f"{', '.join(columns) or 'none'}) -> give it the columns kind, id and name"
        )
    at = {c: lower.index(c) for c in (*REQUIRED, "surname") if c in lower}
    found = []
    for n, row in enumerate(rows, start=1):
        values = {c: row[i] if i < len(row) else None for c, i in at.items()}
        found.append(_entity(values, f"{where}, row {n}"))
    return found


def load_registry(path: Path) -> Registry:
    """The registry file `[privacy] registry` names (CSV or YAML)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise ConfigError(
            f"{path}: the registry file ([privacy] registry) does not exist -> create it or "
            "fix the path (relative to the workspace root)"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the registry file ({exc})") from exc
    if path.suffix.lower() in (".yaml", ".yml"):
        return Registry(_from_yaml(text, str(path)))
    if path.suffix.lower() == ".csv":
        reader = csv.reader(text.splitlines())
        header = next(reader, [])
        return Registry(entities_from_rows([h.strip() for h in header], reader, str(path)))
    raise ConfigError(
        f"{path}: [privacy] registry must be a .csv or .yaml file, not {path.suffix or 'none'}"
    )


def _from_yaml(text: str, where: str) -> list[Entity]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML ({exc})") from exc
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ConfigError(f"{where}: the registry must be a YAML list of {{kind, id, name}}")
    return [_entity(d, f"{where}, entry {n}") for n, d in enumerate(data, start=1)]


def _entity(values: dict[str, object], where: str) -> Entity:
    kind = str(values.get("kind") or "").strip().upper()
    ident = str(values.get("id") if values.get("id") is not None else "").strip()
    name = str(values.get("name") or "").strip()
    if not _KIND.fullmatch(kind):
        raise ConfigError(
            f"{where}: kind {values.get('kind')!r} must be one word of letters, digits and _ "
            "(it becomes the placeholder's type, e.g. AZIENDA)"
        )
    if kind in RESERVED_KINDS:
        raise ConfigError(
            f"{where}: kind {kind} is reserved for unregistered codes "
            f"({', '.join(sorted(RESERVED_KINDS))}) -> name the entity's kind, e.g. PERSONA"
        )
    if not ident or not re.fullmatch(r"[^\[\]:\s]+", ident):
        raise ConfigError(
            f"{where}: id {values.get('id')!r} must be non-empty, without spaces, brackets or "
            "colons (the placeholder carries it)"
        )
    if not name:
        raise ConfigError(f"{where}: name is empty")
    surname = str(values.get("surname") or "").strip() or None
    return Entity(kind, ident, name, surname)
