"""Identifiers found in free text, each confirmed by its checksum.

A shape alone is not enough: an 11-digit number is a VAT number only when its check digit
holds, so an amount or a protocol number of the same length passes (one in ten random ones
still has a valid check digit: the price of never missing a real one).

- codice fiscale: 16 characters, omocodia included (digits replaced by L M N P Q R S T U V),
  check letter computed with the Agenzia delle Entrate's odd/even tables;
- partita IVA: 11 digits (optionally prefixed "IT"), Luhn-style check digit;
- IBAN: country, check digits, BBAN at the country's length, mod-97 = 1;
- e-mail address, also spelled out ("mario [at] example [dot] com");
- phone number, with its prefix, bracketed area code and extension.

Forms are found by normalisation, not listed: a separator may stand anywhere inside a code,
`@` and `.` may be spelled, and a value may run over adjacent cells (docs/privacy.md). The
placeholder covers the whole written form; tests/privacy/generated.py proves the rules on
forms generated from them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal

CodeKind = Literal["CF", "PIVA", "IBAN", "EMAIL", "TEL"]

_OMOCODIA: Final = "LMNPQRSTUV"  # the letter that stands for digit 0..9
_D: Final = f"[0-9{_OMOCODIA}]"
# What real data puts inside a code ("RSS MRA 85T10 A562S", "123.456.789.03",
# "IT60 - X054 - ...", "123/456/789/03"): a dot, dash or slash with spaces around it, a run
# of spaces, or a cell boundary ("|" of a Markdown row, a tab) when the code is split over
# adjacent cells (taken only when it fills them: `_fills_cells`).
_SEP: Final = r"(?>[ \t]{0,2}[.\-/|\u2010-\u2013][ \t]{0,2}|[ \t]{1,3})?"  # atomic: cheap
CELL_DELIMITERS: Final = "|\t"
_BLOCK: Final = {ord(c): "\0" for c in CELL_DELIMITERS}  # same length, crossed by no pattern


def _spaced(*parts: str) -> str:
    """The parts, each one character, with an optional separator between any two."""
    return _SEP.join(parts)


def _at_every_start(body: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern matched at every place it can start, overlaps included: a false candidate
    ("2019-2023 123") must not hide the real code that starts inside it."""
    return re.compile(rf"(?=({body}))", flags)


_CF_PARTS: Final = (
    *["[A-Za-z]"] * 6, *[_D] * 2, "[ABCDEHLMPRSTabcdehlmprst]", *[_D] * 2, "[A-Za-z]",
    *[_D] * 3, "[A-Za-z]",
)  # fmt: skip
_CF: Final = _at_every_start(
    rf"(?<![A-Za-z0-9]){_spaced(*_CF_PARTS)}(?![A-Za-z0-9])", re.IGNORECASE
)
_CF_WHOLE: Final = re.compile("".join(_CF_PARTS), re.IGNORECASE)
# Not right after or before a digit and a dot, dash or slash: "12/03/24 ..." is read from its
# start, "... 2021-02-15" to its end.
_PIVA: Final = _at_every_start(
    rf"(?<![A-Za-z0-9.,])(?<!\d[./\-])(IT{_SEP})?(\d(?:{_SEP}\d){{10}})(?![0-9])(?![.,/\-]\d)",
    re.IGNORECASE,
)
_IBAN_HEAD: Final = ("[A-Za-z]", "[A-Za-z]", r"\d", r"\d")  # country, check digits
_IBAN: Final = _at_every_start(
    rf"(?<![A-Za-z0-9]){_spaced(*_IBAN_HEAD)}"
    rf"(?:{_SEP}[A-Za-z0-9]){{11,32}}",
    re.IGNORECASE,
)
# E-mail addresses as people write them to dodge harvesters: `@` as "[at]", "(at)", " at ",
# "chiocciola", with spaces around it or at a cell boundary; `.` as "[dot]", " dot ", "punto",
# " . " or at a cell boundary. A bare word form (" at ", " dot ") counts only before a
# top-level domain people use (`_TLDS`): "look at page dot matrix" is prose.
_OPEN: Final = r"[\[({<]"
_CLOSE: Final = r"[\])}>]"
_CELL_GAP: Final = r"[ \t]*(?:[|\t][ \t]*)?"
_AT_WORD: Final = r"(?:at|chiocciola)"
_DOT_WORD: Final = r"(?:dot|punto)"
_AT: Final = (
    rf"(?:{_CELL_GAP}@{_CELL_GAP}|[ \t]*{_OPEN}[ \t]*{_AT_WORD}[ \t]*{_CLOSE}[ \t]*"
    rf"|[ \t]+{_AT_WORD}[ \t]+)"
)
_DOT_SPELLED: Final = (
    rf"(?:[ \t]+\.[ \t]+|[ \t]*[|\t][ \t]*\.(?:[ \t]*[|\t])?[ \t]*|[ \t]*\.[ \t]*[|\t][ \t]*"
    rf"|[ \t]*{_OPEN}[ \t]*{_DOT_WORD}[ \t]*{_CLOSE}[ \t]*|[ \t]+{_DOT_WORD}[ \t]+)"
)
_DOT: Final = rf"(?:\.|{_DOT_SPELLED})"
_EMAIL: Final = re.compile(
    rf"(?<![\w.+%-])(?P<local>[\w+%-]++(?:{_DOT}[\w+%-]++)*){_AT}"
    rf"(?P<domain>[A-Za-z0-9-]++(?:{_DOT}[A-Za-z0-9-]++)*{_DOT}(?P<tld>[A-Za-z]{{2,}}))(?![\w-])",
    re.IGNORECASE,
)
_SPELLED_DOT: Final = re.compile(_DOT_SPELLED, re.IGNORECASE)
_BARE_WORD: Final = re.compile(rf"\s(?:{_AT_WORD}|{_DOT_WORD})\s", re.IGNORECASE)
_TLDS: Final = frozenset({
    "com", "org", "net", "edu", "gov", "int", "mil", "info", "biz", "name", "pro", "eu", "io",
    "co", "app", "dev", "me", "tv", "it", "uk", "de", "fr", "es", "pt", "ch", "at", "be", "nl",
    "lu", "ie", "dk", "se", "no", "fi", "pl", "cz", "sk", "hu", "ro", "bg", "gr", "hr", "si",
    "sm", "va", "mt", "cy", "us", "ca", "au", "nz", "jp", "cn", "in", "br", "mx", "ar", "ru",
    "ua", "tr", "il", "za",
})  # fmt: skip
# Phone numbers: international (+39, 0039, (+39), +44 (0)20 ...), Italian mobile (3xx) and
# landline (0x), an area code in brackets ("(06) 1234 5678"), North American; an extension
# ("int. 12", "ext 204", "x204") belongs to the number. A separator: a run of one or two
# spaces, or a dot, dash or slash with a space around it at most; never a cell boundary. The
# numbering plans: no country code starts with 0 (ITU E.164), no Italian area code with 00.
_PS: Final = r"(?:[ ]{1,2}|[ ]?[.\-/][ ]?)?"
_PREFIX: Final = r"(?:\((?:\+|00)[1-9]\d{0,2}\)|(?:\+|00)[1-9]\d{0,2})"
_AREA: Final = r"(?:\(0\)[ ]?\d{1,4}|\(\d{1,5}\))"
_EXTENSION: Final = r"(?:[ ]?,?[ ]*(?:int|interno|ext|extension|est|x)\.?[ ]?\d{1,5})?"
_TEL: Final = re.compile(
    r"(?<![\w+.,:/-])(?<!\d[ ])(?:"
    rf"{_PREFIX}{_PS}(?:{_AREA}{_PS})?\d(?:{_PS}\d){{4,12}}"
    rf"|{_AREA}{_PS}\d(?:{_PS}\d){{4,9}}"
    r"|\d{3}[.\-]\d{3}[.\-]\d{4}"
    rf"|3\d{{2}}(?:{_PS}\d){{6,7}}"
    rf"|0[1-9]\d{{0,2}}(?:{_PS}\d){{5,8}}"
    rf"){_EXTENSION}(?![\w+/-])(?![.,:]\d)",
    re.IGNORECASE,
)
_EXTENSION_TAIL: Final = re.compile(rf"{_EXTENSION}$", re.IGNORECASE)
# No figure's first group starts with 0: "089 254 163" is a Salerno landline.
_THOUSANDS: Final = re.compile(
    r"[1-9]\d{0,2}(?:\.\d{3})+|[1-9]\d{0,2}(?:,\d{3})+|[1-9]\d{0,2}(?: \d{3})+"
)
# A date at either end of a candidate's groups ("123 15/03/2024"), a month and year or a year
# range at its end ("(104) 04/1963": a figure beside a date), or
# a year followed by a dash or a slash at its start ("2019-2023 123", "2024/0012345": a year
# range, a protocol or invoice number).
_DAY: Final = r"(?:0?[1-9]|[12]\d|3[01])"
_MONTH: Final = r"(?:0?[1-9]|1[0-2])"
_YEAR: Final = r"(?:1[89]|20)\d{2}"
_YEAR_RANGE: Final = rf"{_YEAR}[ ]?[\-\u2013/][ ]?(?:{_YEAR}|\d{{2}})"
# A date as people write one: the same separator twice, day 1-31, month 1-12, a year of 2 or
# 4 digits; day-month-year, year-month-day or month/day/year. "0471/12-3456" (a Bolzano
# landline) is none of them.
_DATE: Final = re.compile(
    rf"{_DAY}([./\-]){_MONTH}\1(?:\d{{2}}|\d{{4}})|\d{{4}}([./\-]){_MONTH}\2{_DAY}"
    rf"|{_MONTH}([./\-]){_DAY}\3(?:\d{{2}}|\d{{4}})"
)
_DATE_INSIDE: Final = re.compile(
    rf"^(?:{_DAY}([./\-]){_MONTH}\1(?:\d{{2}}|{_YEAR})(?!\1\d)"
    rf"|{_YEAR}([./\-]){_MONTH}\2{_DAY}(?!\2\d))(?!\d)"
    rf"|(?<!\d)(?:{_DAY}([./\-]){_MONTH}\3(?:\d{{2}}|{_YEAR})|{_YEAR}([./\-]){_MONTH}\4{_DAY}"
    rf"|{_MONTH}[./\-]{_YEAR}|{_YEAR_RANGE})$"
)
_DATED_REFERENCE: Final = re.compile(r"(?:19|20)\d{2}[ \t]*[/\-\u2013][ \t]*\d")
# A decimal number among groups apart by spaces: figures side by side ("70.7 224.5 128.6",
# "000-79730 57.8"), where a code written with one dot has no space ("123456789.03").
_DECIMAL_AMONG: Final = re.compile(r"(?:^|[ \t])\d+[.,]\d{1,2}(?:[ \t]|$)")
_FIGURE: Final = re.compile(r"[+\-−(]?(?:\d{1,3}(?:([., ])\d{3})(?:\1\d{3})*|\d+[.,]\d+)\)?%?")
_PROSE_WORD: Final = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{5,}(?![A-Za-z0-9])")
_NOT_DIGIT: Final = re.compile(r"\D")
_NOT_ALNUM: Final = re.compile(r"[^A-Za-z0-9]")
_SPACING: Final = re.compile(r"[\s|]+")

_DIGITS_ODD: Final = (1, 0, 5, 7, 9, 13, 15, 17, 19, 21)  # 0-9, and A-J alike
# Odd positions (1st, 3rd ... counting from 1) of the codice fiscale, digit or letter.
_CF_ODD: Final = dict(
    zip(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        [*_DIGITS_ODD, *_DIGITS_ODD, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23],
        strict=True,
    )
)
# IBAN lengths by country (the SWIFT IBAN registry): a candidate of another country, or of
# another length, is no IBAN, so the checksum is tried at one length only.
_IBAN_LENGTH: Final = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
    "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip
# In lower case only the countries an Italian company meets most: "de 12 ..." is prose.
_IBAN_LOWER: Final = frozenset({
    "IT", "SM", "VA", "FR", "MC", "DE", "AT", "CH", "ES", "PT", "BE", "NL", "LU", "IE", "GB",
    "SI", "HR", "PL", "RO", "GR", "MT", "CZ", "SK", "HU", "DK", "SE", "FI",
})  # fmt: skip


@dataclass(frozen=True)
class Found:
    kind: CodeKind
    start: int
    end: int
    value: str  # as normalised for comparison: uppercase, no spaces


def codice_fiscale_ok(code: str) -> bool:
    """A 16-character personal codice fiscale (omocodia included) whose check letter holds."""
    code = code.upper()
    if not _CF_WHOLE.fullmatch(code):
        return False
    total = 0
    for i, ch in enumerate(code[:15]):
        if i % 2 == 0:
            total += _CF_ODD[ch]
        else:
            total += int(ch) if ch.isdigit() else ord(ch) - ord("A")
    return chr(ord("A") + total % 26) == code[15]


def partita_iva_ok(code: str) -> bool:
    """11 digits whose last is the check digit (all zeros is not a number anyone holds)."""
    if not re.fullmatch(r"\d{11}", code) or code == "0" * 11:
        return False
    total = 0
    for i, ch in enumerate(code[:10]):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return (10 - total % 10) % 10 == int(code[10])


def iban_ok(code: str) -> bool:
    """Country, check digits and BBAN with mod-97 = 1 (ISO 13616); spaces ignored."""
    code = code.replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", code):
        return False
    if len(code) != _IBAN_LENGTH.get(code[:2], 0):
        return False
    digits = "".join(str(int(ch, 36)) for ch in code[4:] + code[:4])
    return int(digits) % 97 == 1


def find_codes(text: str, *, figures_across_cells: bool = False) -> Iterator[Found]:
    """Every identifier in `text` (spans may overlap: the caller resolves), also when real data
    writes it with separators inside, in lower case, spelled out (an e-mail's "[at]") or over
    adjacent cells ("|" of a Markdown row, a tab). A value over several cells must fill them
    (`_fills_cells`); a phone number is taken within one cell, and so is a code of digits only
    unless `figures_across_cells` (rows, whose types tell a figure from a code written as
    text): in a text table, figures side by side cannot be told from a number cut in pieces.
    A phone number inside another identifier is that identifier's (one that runs past it is
    yielded: the caller joins the two)."""
    blocked = text.translate(_BLOCK)
    found = list(_checked_codes(blocked))
    if blocked != text:
        found += [
            f
            for f in _checked_codes(text)
            if _crosses_cells(text, f)
            and _fills_cells(text, f.start, f.end)
            and _may_cross(text[f.start : f.end], f, figures_across_cells)
        ]
    yield from found
    for start, end in _lines_with(blocked, _HAS_DIGIT):
        for m in _TEL.finditer(blocked, start, end):
            if _is_phone(m.group()) and not any(
                f.start <= m.start() and m.end() <= f.end for f in found
            ):
                yield Found("TEL", m.start(), m.end(), _NOT_DIGIT.sub("", m.group()))


def fills_cells(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]`, when it crosses a cell boundary, fills the cells it touches."""
    return not any(c in text[start:end] for c in CELL_DELIMITERS) or _fills_cells(text, start, end)


def _crosses_cells(text: str, found: Found) -> bool:
    return any(c in text[found.start : found.end] for c in CELL_DELIMITERS)


def _fills_cells(text: str, start: int, end: int) -> bool:
    """Nothing but spacing between the span and the cell boundary (or line end) on each side:
    "RSSMRA85" | "T10A562S" is one code, "Sig. Mario" | "Rossi e figli" is not one name."""
    before = start
    while before > 0 and text[before - 1] == " ":
        before -= 1
    after = end
    while after < len(text) and text[after] == " ":
        after += 1
    edges = ("|", "\t", "\n", "\0")
    return (before == 0 or text[before - 1] in edges) and (
        after == len(text) or text[after] in edges
    )


def _may_cross(value: str, found: Found, figures_across_cells: bool) -> bool:
    """A code over cells has nothing but spacing besides the boundaries ("036" | "2010-01-01"
    is a code beside a date), no piece that is a figure on its own (an amount with thousands
    separators or decimals), and a letter unless figures may be joined."""
    if found.kind == "EMAIL":
        return True
    pieces = [p.strip() for p in value.translate(_BLOCK).split("\0")]
    if any(re.search(r"[./\-:\u2010-\u2013]", p) or _FIGURE.fullmatch(p) for p in pieces):
        return False  # a piece that is a figure on its own ("99 788") is no part of a code
    return figures_across_cells or bool(re.search(r"[A-Za-z]", value))


def _lines_with(text: str, needle: re.Pattern[str]) -> list[tuple[int, int]]:
    """The runs of lines of `text` holding `needle`, as (start, end): no identifier spans a
    line break, so the patterns run on these only (most lines of prose hold no digit)."""
    runs: list[tuple[int, int]] = []
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        if needle.search(line):
            if runs and runs[-1][1] == start - 1:
                runs[-1] = (runs[-1][0], end)
            else:
                runs.append((start, end))
        start = end + 1
    return runs


_HAS_DIGIT: Final = re.compile(r"\d")
_HAS_AT: Final = re.compile(rf"@|\b{_AT_WORD}\b", re.IGNORECASE)


def _checked_codes(text: str) -> Iterator[Found]:
    for start, end in _lines_with(text, _HAS_DIGIT):
        yield from _codes_between(text, start, end)
    for start, end in _lines_with(text, _HAS_AT):
        for m in _EMAIL.finditer(text, start, end):
            written = m.group()
            if _BARE_WORD.search(written) and m.group("tld").lower() not in _TLDS:
                continue
            local = _SPACING.sub("", _SPELLED_DOT.sub(".", m.group("local")))
            domain = _SPACING.sub("", _SPELLED_DOT.sub(".", m.group("domain")))
            yield Found("EMAIL", m.start(), m.end(), f"{local}@{domain}".lower())


def _codes_between(text: str, start: int, end: int) -> Iterator[Found]:
    for m in _CF.finditer(text, start, end):
        compact = _NOT_ALNUM.sub("", m.group(1)).upper()
        if codice_fiscale_ok(compact):
            yield Found("CF", m.start(1), m.end(1), compact)
    for m in _PIVA.finditer(text, start, end):
        digits = _NOT_DIGIT.sub("", m.group(3))
        if partita_iva_ok(digits) and (m.group(2) or not _figures(m.group(3))):
            yield Found("PIVA", m.start(1), m.end(1), digits)
    for m in _IBAN.finditer(text, start, end):
        found = _iban_prefix(m.group(1), m.start(1))
        if found is not None:
            yield found


def _figures(groups: str) -> bool:
    """Digits that read as figures rather than as one code: an amount with thousands
    separators, a date at their start or end, a year and a dash or slash at their start, or a
    decimal number among groups apart by spaces."""
    return bool(
        _THOUSANDS.fullmatch(groups)
        or _DATE_INSIDE.search(groups)
        or _DATED_REFERENCE.match(groups)
        or (" " in groups and _DECIMAL_AMONG.search(groups))
    )


def _is_phone(candidate: str) -> bool:
    """Not an amount written with thousands separators (a sign or brackets aside), nor
    figures beside a date ("+6.331.283 18/09/95"), nor a date."""
    number = _EXTENSION_TAIL.sub("", candidate) if candidate[-1:].isdigit() else candidate
    digits = len(_NOT_DIGIT.sub("", number))
    if not 6 <= digits <= 15:
        return False
    bare = number.strip("+()")
    if _THOUSANDS.fullmatch(bare) or _THOUSANDS.fullmatch(number.lstrip("+(").rstrip(")")):
        return False
    if _DATE_INSIDE.search(bare):
        return False
    if number.startswith(("+", "(")):
        return digits >= 8
    if number.startswith("00"):  # 0039 ...: the prefix and a whole number after it
        return digits >= 11
    if number.startswith("0") and digits < (9 if _NOT_DIGIT.search(number) else 10):
        return False  # a short number led by 0 is a code (AIC, NCES) more often than a phone
    return not (_THOUSANDS.fullmatch(number) or _DATE.fullmatch(number))


def _iban_prefix(candidate: str, offset: int) -> Found | None:
    """The IBAN at the start of `candidate`, at its country's length: the pattern may have
    run on into the next word ("... 456 BANCA"), which only the length can tell. Lower case
    only for the countries of `_IBAN_LOWER`; no word of prose (five letters or more) inside."""
    ends = [i + 1 for i, ch in enumerate(candidate) if ch.isalnum()]  # end per character
    letters = candidate[ends[0] - 1] + candidate[ends[1] - 1]
    country = letters.upper()
    expected = _IBAN_LENGTH.get(country)
    if expected is None or expected > len(ends):
        return None
    if not letters.isupper() and country not in _IBAN_LOWER:
        return None
    written = candidate[: ends[expected - 1]]
    value = _NOT_ALNUM.sub("", written).upper()
    if not iban_ok(value) or _PROSE_WORD.search(written.translate(_BLOCK)):
        return None
    return Found("IBAN", offset, offset + ends[expected - 1], value)
