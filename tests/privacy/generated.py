"""The near-miss corpus generated from the normalisation rules (issue 46, point 2), not listed
by hand: every form a rule of docs/privacy.md says is found, produced by applying that rule to
a few real-format identifiers and to the registry's own names, and the ordinary values the
rules must leave alone, produced the same way. Shared by tests/privacy/test_generated.py (no
form may leak, no ordinary value may change) and benchmarks/privacy_scan.py.

Positives, per kind:
- codes (codice fiscale, partita IVA, IBAN): each separator at each position, groups of 2, 3
  and 4 with each separator, upper and lower case, the `IT` prefix apart; split over 2 and 3
  adjacent cells at every position;
- e-mail addresses: every written form of `@` crossed with every written form of `.`; split
  over 2 and 3 cells at every `@` and `.`;
- phone numbers: international prefix forms x area code plain or in brackets x separators
  between the parts and at every position of the subscriber number x extensions (a seeded
  sample of the product, every value of every rule present); and for every Italian number
  (area codes of 2, 3 and 4 digits, mobile codes, subscribers of 6 to 8 digits) the whole
  product of the separator after the area code x the separator at every position of the
  subscriber number or between its groups, national and after +39 with every separator;
- names, derived from the registry: every word order, a comma after the surname, case,
  diacritics kept, dropped or written as an apostrophe, apostrophes and hyphens kept,
  typographic, dropped or turned into a space, the surname alone; split over 2 and 3 cells.

Negatives: amounts (Italian, English and spaced thousands, decimals, signs, brackets,
currencies, percentages), dates and times, years and year ranges, protocol and invoice
numbers, clinical and public-procurement codes, and rows of a financial table made of them,
with the figures side by side; a figure in brackets or with a sign beside a date.
"""

from __future__ import annotations

import itertools
import random
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from tests.privacy.near_miss import REGISTRY
from thoth.privacy import Entity, PlaceholderPseudonymizer, Registry
from thoth.privacy.registry import APOSTROPHES

SEPARATORS = (" ", "  ", ".", "-", "/", " - ", " / ", " . ")
AT_FORMS = ("@", " @ ", "[at]", " [at] ", "(at)", " (at) ", "{at}", "<at>", " at ", " AT ",
            " chiocciola ", "[chiocciola]", " (chiocciola) ")  # fmt: skip
DOT_FORMS = (".", " . ", "[dot]", " [dot] ", "(dot)", " dot ", " DOT ", " punto ", "[punto]",
             " (punto) ")  # fmt: skip
EXTENSIONS = ("", " int. 12", " interno 12", " ext. 204", " ext 204", " x204", " est. 12")
CELL_FORMS = ("row", "markdown", "tabs")  # how adjacent cells reach the pseudonymiser


@dataclass(frozen=True)
class Seeds:
    """What the rules are applied to. TUNING is the set the rules were fixed on; VALIDATION,
    other identifiers, other names and other random draws, was run only once they held."""

    cf: tuple[str, ...]
    piva: tuple[str, ...]
    iban: tuple[str, ...]
    email: tuple[str, ...]
    # (country prefix, area or operator code, subscriber number)
    phones: tuple[tuple[str, str, str], ...]
    registry: Registry
    seed: int


TUNING = Seeds(
    cf=("RSSMRA85T10A562S", "BNCNCL90M15F205T", "RSSMRA85T10A56NH"),
    piva=("12345678903", "00743110157"),
    iban=("IT60X0542811101000000123456", "GB82WEST12345698765432"),
    email=("mario.rossi@example.it", "j.smith+bills@example.co.uk", "uff-acquisti@alfa-spa.com"),
    # The Italian numbering plan's shapes: mobile (3xx) with 7 and 6 digits, area codes of 2,
    # 3 and 4 digits with subscriber numbers of 6 to 8 digits.
    phones=(
        ("39", "333", "1234567"),
        ("39", "06", "12345678"),
        ("39", "02", "1234567"),
        ("44", "20", "79460958"),
        ("1", "212", "5550123"),
        ("39", "328", "415926"),
        ("39", "081", "7642315"),
        ("39", "089", "254163"),
        ("39", "0541", "734219"),
        ("39", "0583", "4719265"),
    ),
    registry=REGISTRY,
    seed=46,
)
VALIDATION = Seeds(
    cf=("DLLLCU80A01H501U", "DSNMGR75C41F839M", "VRDGPP13R10B293P"),
    piva=("01598680369", "04888410075"),
    iban=("DE89370400440532013000", "FR1420041010050500013M02606", "NL91ABNA0417164300"),
    email=("luca.dellacqua@comune.roma.it", "m_g.desantis@pec-studio.eu", "info@edil2000.com"),
    phones=(
        ("39", "347", "9876543"),
        ("39", "055", "2345678"),
        ("39", "0471", "123456"),
        ("33", "1", "23456789"),
        ("1", "415", "5550199"),
    ),
    registry=Registry(
        [
            Entity("PERSONA", "91", "Luca Dell'Acqua"),
            Entity("PERSONA", "92", "Maria Grazia De Santis", surname="De Santis"),
            Entity("PAZIENTE", "93", "Giuseppe Nicolò Verdi"),
            Entity("AZIENDA", "5001", "Edilizia Città Nuova Spa"),
        ]
    ),
    seed=47,
)


@dataclass(frozen=True)
class Form:
    kind: str  # CF, PIVA, IBAN, EMAIL, TEL, NAME
    rule: str  # the rule that produced it
    cells: tuple[str, ...]  # one: written in a sentence; several: adjacent cells


def _one(kind: str, rule: str, text: str) -> Form:
    return Form(kind, rule, (text,))


def _splits(value: str, cuts: list[int]) -> Iterator[tuple[tuple[str, ...], str]]:
    """`value` over 2 cells at each cut and over 3 cells at each pair of cuts."""
    for cut in cuts:
        yield (value[:cut], value[cut:]), f"2 cells at {cut}"
    for a, b in itertools.combinations(cuts, 2):
        yield (value[:a], value[a:b], value[b:]), f"3 cells at {a},{b}"


def _code_forms(kind: str, code: str, prefix: str = "") -> Iterator[Form]:
    for sep in SEPARATORS:
        for at in range(1, len(code)):
            yield _one(kind, f"{sep!r} at {at}", prefix + code[:at] + sep + code[at:])
        for size in (2, 3, 4):
            groups = [code[i : i + size] for i in range(0, len(code), size)]
            yield _one(kind, f"groups of {size} by {sep!r}", prefix + sep.join(groups))
            yield _one(kind, f"lower, groups of {size}", (prefix + sep.join(groups)).lower())
    yield _one(kind, "lower", (prefix + code).lower())
    for cells, rule in _splits(prefix + code, list(range(1, len(prefix + code)))):
        yield Form(kind, rule, cells)


def codes(seeds: Seeds) -> Iterator[Form]:
    for cf in seeds.cf:
        yield from _code_forms("CF", cf)
    for piva in seeds.piva:
        yield from _code_forms("PIVA", piva)
        for sep in ("", *SEPARATORS):
            yield _one("PIVA", f"IT{sep!r}", f"IT{sep}{piva}")
    for iban in seeds.iban:
        yield from _code_forms("IBAN", iban)


def _email(address: str, at: str, dot: str) -> str:
    local, domain = address.split("@")
    return local.replace(".", dot) + at + domain.replace(".", dot)


def emails(seeds: Seeds) -> Iterator[Form]:
    for address in seeds.email:
        for at, dot in itertools.product(AT_FORMS, DOT_FORMS):
            yield _one("EMAIL", f"at {at!r} dot {dot!r}", _email(address, at, dot))
        cuts = sorted({i for i, ch in enumerate(address) if ch in "@."} | {
            i + 1 for i, ch in enumerate(address) if ch in "@."
        })  # fmt: skip
        for cells, rule in _splits(address, [c for c in cuts if 0 < c < len(address)]):
            yield Form("EMAIL", rule, cells)


# An amount with thousands separators, which docs/privacy.md declares no phone number.
_AMOUNT = re.compile(r"[1-9]\d{0,2}([ .,])\d{3}(?:\1\d{3})*")


def phones(seeds: Seeds, sample: int = 160) -> Iterator[Form]:
    """A seeded sample of prefix x area form x separators x subscriber x extension per base
    number; the forms docs/privacy.md declares not phones are left out (a 0-led number of
    fewer than 10 digits with no separator is a code; an amount with thousands separators is
    an amount; a North American number without its prefix is taken in brackets or with dashes
    or dots only)."""
    rng = random.Random(seeds.seed)
    for country, area, number in seeds.phones:
        # At home a number is written with its trunk 0 (020 ..., 01 23 ...): Italy keeps the 0
        # in the area code itself, North America has none.
        national = area if country in ("39", "1") else "0" + area
        prefixes = ["", f"+{country}", f"00{country}", f"(+{country})"]
        subscribers = [number] + [
            number[:i] + s + number[i:] for i in range(1, len(number)) for s in (" ", ".", "-")
        ]
        product = list(
            itertools.product(prefixes, (" ", "", "-"), ("plain", "brackets", "trunk"),
                              (" ", "-", "/", ".", ""), subscribers, EXTENSIONS)
        )  # fmt: skip
        for prefix, psep, area_form, asep, subscriber, ext in rng.sample(product, sample):
            code = area if prefix else national
            if area_form == "trunk" and not (prefix and country not in ("39", "1")):
                area_form = "plain"  # +44 (0)20 ...: the trunk 0 in brackets after a prefix
            written_area = {"plain": code, "brackets": f"({code})", "trunk": f"(0){area}"}[
                area_form
            ]
            if (
                country == "1"
                and not prefix
                and area_form == "plain"
                and (asep not in ("-", ".") or not re.search(r"\d{3}[.\-]\d{4}$", subscriber))
            ):
                continue
            body = written_area + asep + subscriber
            if not prefix and body.isdigit() and body.startswith("0") and len(body) < 10:
                continue
            if not prefix and _AMOUNT.fullmatch(body):
                continue
            written = (f"{prefix}{psep}" if prefix else "") + body + ext
            yield _one("TEL", f"{prefix or 'national'} {area_form} {asep!r} {ext!r}", written)


def italian_phones(seeds: Seeds) -> Iterator[Form]:
    """Every Italian number with every separator after the area or operator code (none
    included) crossed with every separator at every position of the subscriber number, and
    with the subscriber number in groups of 2, 3 and 4; each in its national form and after
    `+39` with every separator (none included): what the rule says, not a sample of it. A
    0-led national number of fewer than 10 digits with no separator is a code, and one written
    as an amount with thousands separators ("328 415 926", "+39.328.415.926") an amount
    (docs/privacy.md): both are left out."""
    for country, area, number in seeds.phones:
        if country != "39":
            continue
        subscribers = {number: "plain"}
        for sep in SEPARATORS:
            for at in range(1, len(number)):
                subscribers.setdefault(number[:at] + sep + number[at:], f"{sep!r} at {at}")
            for size in (2, 3, 4):
                groups = sep.join(number[i : i + size] for i in range(0, len(number), size))
                subscribers.setdefault(groups, f"groups of {size} by {sep!r}")
        for asep in ("", *SEPARATORS):
            for subscriber, rule in subscribers.items():
                national = area + asep + subscriber
                code = national.isdigit() and national.startswith("0") and len(national) < 10
                if not code and not _AMOUNT.fullmatch(national):
                    yield _one("TEL", f"national {area} {asep!r}, subscriber {rule}", national)
                for psep in ("", *SEPARATORS):
                    if not _AMOUNT.fullmatch(f"39{psep}{national}"):
                        written = f"+39{psep}{national}"
                        yield _one("TEL", f"+39 {psep!r} {area} {asep!r}, {rule}", written)


def _strip_diacritics(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def _as_apostrophe(text: str) -> str:
    """Nicolò -> Nicolo': the keyboard's way to write a final accented vowel."""
    return re.sub(r"([àèéìòù])\b", lambda m: _strip_diacritics(m.group(1)) + "'", text, flags=re.I)


def _spellings(word: str) -> set[str]:
    out = {word}
    for ap in APOSTROPHES[:2]:  # ' and ’
        for joiner in ("", " "):
            out |= {w.replace("'", ap) for w in out} | {
                re.sub(f"[{APOSTROPHES}]", joiner, w) for w in out
            }
    out |= {w.replace("-", " ") for w in out} | {w.replace("-", "") for w in out}
    out |= {_strip_diacritics(w) for w in out} | {_as_apostrophe(w) for w in out}
    return out


def names(seeds: Seeds) -> Iterator[Form]:
    for entity in seeds.registry.entities:
        words = entity.name.split()
        orders = [list(p) for p in itertools.permutations(words)] if entity.is_person else [words]
        for order in orders:
            for spelled in itertools.product(*(sorted(_spellings(w)) for w in order)):
                for case in (str, str.upper, str.lower):
                    yield _one("NAME", f"{entity.id} order/spelling", case(" ".join(spelled)))
            if entity.is_person and order != words:
                yield _one("NAME", f"{entity.id} comma", f"{order[0]}, {' '.join(order[1:])}")
            for n in (2, 3):
                if len(order) >= n:
                    for cut in itertools.combinations(range(1, len(order)), n - 1):
                        bounds = [0, *cut, len(order)]
                        cells = tuple(" ".join(order[a:b]) for a, b in itertools.pairwise(bounds))
                        yield Form("NAME", f"{entity.id} {n} cells", cells)
        if entity.is_person:
            surname = entity.surname or words[-1]
            for alone in sorted(_spellings(surname)):
                yield _one("NAME", f"{entity.id} surname alone", alone)


def positives(seeds: Seeds = TUNING) -> list[Form]:
    return [
        *codes(seeds), *emails(seeds), *phones(seeds), *italian_phones(seeds), *names(seeds)
    ]  # fmt: skip


# -- negatives -----------------------------------------------------------------------------


def _thousands(n: int, sep: str) -> str:
    return f"{n:,}".replace(",", sep)


def _amount(rng: random.Random) -> str:
    n = rng.randrange(1, 10 ** rng.randrange(2, 13))
    cents = rng.randrange(100)
    style = rng.randrange(9)
    if style == 0:
        return f"{_thousands(n, '.')},{cents:02d}"
    if style == 1:
        return f"{_thousands(n, ',')}.{cents:02d}"
    if style == 2:
        return _thousands(n, " ")
    if style == 3:
        return f"({_thousands(n, '.')})"  # a negative figure in a financial table
    if style == 4:
        return f"{rng.choice('+-−')}{_thousands(n, rng.choice('.,'))}"
    if style == 5:
        return f"{rng.choice(['€ ', 'EUR ', '$'])}{_thousands(n, '.')}"
    if style == 6:
        return f"{rng.choice('+-')}{rng.randrange(100)},{rng.randrange(10)}%"
    if style == 7:
        return str(rng.randrange(1, 10**6))  # a count, written plain
    return f"{_thousands(n, ',')}"


def _date(rng: random.Random) -> str:
    d, m, y = rng.randrange(1, 29), rng.randrange(1, 13), rng.randrange(1950, 2031)
    sep = rng.choice("/-.")
    return rng.choice(
        [
            f"{d:02d}{sep}{m:02d}{sep}{y}",
            f"{d}{sep}{m}{sep}{y}",
            f"{y}-{m:02d}-{d:02d}",
            f"{y}-{m:02d}-{d:02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}",
            f"{m:02d}/{y}",
            f"{d:02d}/{m:02d}/{y % 100:02d}",
        ]
    )


def _year(rng: random.Random) -> str:
    y = rng.randrange(1990, 2031)
    return rng.choice(
        [str(y), f"{y}-{y + 3}", f"{y}/{(y + 1) % 100:02d}", f"FY{y}", f"Q{rng.randrange(1, 5)} {y}",
         f"{y - 5}–{y}"]
    )  # fmt: skip


def _reference(rng: random.Random) -> str:
    y = rng.randrange(2000, 2031)
    return rng.choice(
        [
            f"prot. n. {y}/{rng.randrange(10**7):07d}",
            f"FT {y}/{rng.randrange(10**5):05d}",
            f"V-{y}-{rng.randrange(10**4):04d}",
            f"ICD-10 {rng.choice('IJKC')}{rng.randrange(10, 99)}.{rng.randrange(10)}",
            f"ICD-9 {rng.randrange(1, 999):03d}.{rng.randrange(10)}",
            f"ICD-9-CM {rng.randrange(100, 999)}.{rng.randrange(10, 99)}",
            f"DRG {rng.randrange(1, 999)}",
            f"ATECO {rng.randrange(10, 99)}.{rng.randrange(10, 99)}.{rng.randrange(10):02d}",
            f"CUP J{rng.randrange(10, 99)}B{rng.randrange(10**11):011d}",
            f"art. {rng.randrange(1, 200)}, comma {rng.randrange(1, 9)}",
            f"File No. 000-{rng.randrange(10**5):05d} {rng.randrange(1, 100)}.{rng.randrange(10)}",
            f"ore {rng.randrange(24):02d}:{rng.randrange(60):02d}",
        ]
    )


def figures_beside_dates(seeds: Seeds = TUNING) -> list[Form]:
    """A figure in brackets or with a sign (a negative amount, a count, a note's number) right
    before a date, in every form `_date` makes: figures side by side, not a phone number with
    a bracketed area code or an international prefix."""
    rng = random.Random(seeds.seed + 1)
    out = []
    for digits in range(1, 6):
        for _ in range(8):
            n = rng.randrange(10 ** (digits - 1), 10**digits)
            figure = rng.choice([f"({n})", f"+{n}", f"-{n}"])
            out.append(Form("NONE", "a figure beside a date", (f"{figure} {_date(rng)}",)))
    return out


def negatives(seeds: Seeds = TUNING, count: int = 600) -> list[Form]:
    """Ordinary values alone, two side by side in a sentence, and rows of 2-5 of them as a
    financial table's cells (a label first, or figures only)."""
    rng = random.Random(seeds.seed)
    makers = (_amount, _date, _year, _reference)
    out = []
    for i in range(count):
        shape = i % 3
        if shape == 0:
            out.append(Form("NONE", "one value", (rng.choice(makers)(rng),)))
        elif shape == 1:
            a, b = rng.choice(makers)(rng), rng.choice(makers)(rng)
            out.append(Form("NONE", "two values in a sentence", (f"{a} {b}",)))
        else:
            cells = [_amount(rng) if rng.random() < 0.6 else rng.choice(makers)(rng)]
            cells += [_amount(rng) for _ in range(rng.randrange(1, 5))]
            if rng.random() < 0.5:
                cells.insert(0, rng.choice(["Ricavi", "Totale attivo", "Net income", "Q3"]))
            out.append(Form("NONE", "figures of a table row", tuple(cells)))
    return out + figures_beside_dates(seeds)


# -- what reaches the model ----------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*:[^\[\]:\s]+\]")
_ALNUM = re.compile(r"[^0-9a-z]")


def plain(text: str) -> str:
    """Letters and digits only, case and diacritics aside: what can be read of a text."""
    return _ALNUM.sub("", _strip_diacritics(text).lower())


def sent_as(form: Form) -> tuple[str, ...]:
    """How a form reaches the pseudonymiser in the test: one cell as a sentence and as a row's
    cell; several as a row's cells, and (unless they are digits only: figures side by side in
    a text table are not joined, docs/privacy.md) as a Markdown row and a tab-separated line."""
    if len(form.cells) == 1:
        return ("text", "row")
    if "".join(form.cells).isdigit():
        return ("row",)
    return CELL_FORMS


def as_text(form: Form, how: str) -> tuple[str, str]:
    """The text sent to a model holding the form, and the same text without it: a sentence
    for one cell, a Markdown table row or a tab-separated line for several."""
    if len(form.cells) == 1:
        return f"Dati: {form.cells[0]} (fine).", "Dati: (fine)."
    if how == "tabs":
        return "\t".join(form.cells) + "\n", ""
    return "| " + " | ".join(form.cells) + " |", ""


def residue(sent: str) -> str:
    """What of `sent` can be read once its placeholders are taken out."""
    return plain(_PLACEHOLDER.sub(" ", sent))


COLUMNS = ("importo", "data", "categoria", "codice", "n", "totale")  # harmless-sounding names


def pseudonymizer(seeds: Seeds = TUNING) -> PlaceholderPseudonymizer:
    return PlaceholderPseudonymizer(seeds.registry, min_name_length=4)


def leaks(form: Form, seeds: Seeds = TUNING) -> list[str]:
    """How a positive form left something of itself readable, or did not come back exactly,
    each way it is sent (`sent_as`); empty when it did neither."""
    found = []
    for how in sent_as(form):
        p = pseudonymizer(seeds)
        if how == "row":
            [row] = p.protect_rows(COLUMNS[: len(form.cells)], [list(form.cells)])
            sent = " ".join(str(v) for v in row)
            if residue(sent):
                found.append(f"row {row!r}")
            elif plain("".join(form.cells)) not in plain(p.restore(sent)):
                found.append(f"row not restored: {p.restore(sent)!r}")
            continue
        text, without = as_text(form, how)
        sent = p.protect(text)
        if residue(sent) != plain(without):
            found.append(f"{how} {sent!r}")
        elif p.restore(sent) != text:
            found.append(f"{how} restored as {p.restore(sent)!r}")
    return found


def changes(form: Form, seeds: Seeds = TUNING) -> list[tuple[object, object]]:
    """How a negative form was changed, each way it is sent: (what was sent, what left)."""
    found: list[tuple[object, object]] = []
    for how in CELL_FORMS if len(form.cells) > 1 else ("text", "row"):
        p = pseudonymizer(seeds)
        if how == "row":
            [row] = p.protect_rows(COLUMNS[: len(form.cells)], [list(form.cells)])
            if row != list(form.cells):
                found.append((form.cells, row))
            continue
        text, _ = as_text(form, how)
        if p.protect(text) != text:
            found.append((text, p.protect(text)))
    return found
