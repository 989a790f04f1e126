"""Identifiers found in free text, each confirmed by its checksum.

A shape alone is not enough: an 11-digit number is a VAT number only when its check digit
holds, so an amount or a protocol number of the same length passes (one in ten random ones
still has a valid check digit: the price of never missing a real one).

- codice fiscale: 16 characters, omocodia included (digits replaced by L M N P Q R S T U V),
  check letter computed with the Agenzia delle Entrate's odd/even tables;
- partita IVA: 11 digits (optionally prefixed "IT"), Luhn-style check digit;
- IBAN: country, check digits, BBAN, with or without spaces in groups of four, mod-97 = 1;
- e-mail address.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal

CodeKind = Literal["CF", "PIVA", "IBAN", "EMAIL", "TEL"]

_OMOCODIA: Final = "LMNPQRSTUV"  # the letter that stands for digit 0..9
_D: Final = f"[0-9{_OMOCODIA}]"
# One separator that real data puts inside a code ("RSS MRA 85T10 A562S", "123.456.789.01",
# "IT60-X054-..."), or the space that joins two adjacent cells of a row.
_SEP: Final = r"[ .\-]?"


def _spaced(*parts: str) -> str:
    """The parts, each one character, with an optional separator between any two."""
    return _SEP.join(parts)


_CF_PARTS: Final = (
    *["[A-Za-z]"] * 6, *[_D] * 2, "[ABCDEHLMPRSTabcdehlmprst]", *[_D] * 2, "[A-Za-z]",
    *[_D] * 3, "[A-Za-z]",
)  # fmt: skip
_CF: Final = re.compile(
    rf"(?<![A-Za-z0-9]){_spaced(*_CF_PARTS)}(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_CF_WHOLE: Final = re.compile("".join(_CF_PARTS), re.IGNORECASE)
_PIVA: Final = re.compile(
    rf"(?<![A-Za-z0-9.,])(?:IT{_SEP})?(\d(?:{_SEP}\d){{10}})(?![0-9])(?![.,]\d)", re.IGNORECASE
)
# Upper case, or a country whose length is known (checked in _iban_prefix): the candidate may
# run on into the next word, which only the checksum and the length can tell.
_IBAN: Final = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ \-]?[A-Za-z0-9]){11,32}", re.IGNORECASE
)
_EMAIL: Final = re.compile(
    r"(?<![\w.+-])[\w.+%-]+(?:@|\s?[\[(]at[\])]\s?)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
    r"\.[A-Za-z]{2,}",
    re.IGNORECASE,
)
# Phone numbers: international (+39 / 0039 / +44 ...), Italian mobile (3xx) and landline
# (0x), North American. A number written with thousands dots ("350.000.000") is an amount.
_TEL: Final = re.compile(
    r"(?<![\w+.,/-])(?:"
    r"(?:\+|00)\d{1,3}[ .\-]?(?:\(0?\d{1,4}\)[ .\-]?)?\d{1,4}(?:[ .\-]?\d{2,4}){1,4}"
    r"|\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}"
    r"|\d{3}[.\-]\d{3}[.\-]\d{4}"
    r"|3\d{2}(?:[ ./\-]?\d){6,7}"
    r"|0\d{1,3}(?:[ ./\-]?\d){5,8}"
    r")(?![\w+/-])(?![.,]\d)"
)
_THOUSANDS: Final = re.compile(r"\d{1,3}(?:\.\d{3})+|\d{1,3}(?:,\d{3})+")
_DATE_LIKE: Final = re.compile(r"\d{1,4}[./\-]\d{1,2}[./\-]\d{1,4}")
_NOT_DIGIT: Final = re.compile(r"\D")
_NOT_ALNUM: Final = re.compile(r"[^A-Za-z0-9]")

_DIGITS_ODD: Final = (1, 0, 5, 7, 9, 13, 15, 17, 19, 21)  # 0-9, and A-J alike
# Odd positions (1st, 3rd ... counting from 1) of the codice fiscale, digit or letter.
_CF_ODD: Final = dict(
    zip(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        [*_DIGITS_ODD, *_DIGITS_ODD, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23],
        strict=True,
    )
)
# IBAN lengths of the countries an Italian company meets most; others: any valid length.
_IBAN_LENGTH: Final = {
    "IT": 27, "SM": 27, "VA": 22, "FR": 27, "MC": 27, "DE": 22, "AT": 20, "CH": 21, "ES": 24,
    "PT": 25, "BE": 16, "NL": 18, "LU": 20, "IE": 22, "GB": 22, "SI": 19, "HR": 21, "PL": 28,
    "RO": 24, "GR": 27, "MT": 31, "CZ": 24, "SK": 24, "HU": 28, "DK": 18, "SE": 24, "FI": 18,
}  # fmt: skip


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
    expected = _IBAN_LENGTH.get(code[:2])
    if expected is not None and len(code) != expected:
        return False
    digits = "".join(str(int(ch, 36)) for ch in code[4:] + code[:4])
    return int(digits) % 97 == 1


def find_codes(text: str) -> Iterator[Found]:
    """Every checksum-valid identifier in `text` (spans may overlap: the caller resolves),
    also when real data writes it with spaces, dots or dashes inside, or in lower case; a
    phone number inside another identifier is that identifier's."""
    found = list(_checked_codes(text))
    yield from found
    for m in _TEL.finditer(text):
        if _is_phone(m.group()) and not any(f.start < m.end() and m.start() < f.end for f in found):
            yield Found("TEL", m.start(), m.end(), _NOT_DIGIT.sub("", m.group()))


def _checked_codes(text: str) -> Iterator[Found]:
    for m in _CF.finditer(text):
        compact = _NOT_ALNUM.sub("", m.group()).upper()
        if codice_fiscale_ok(compact):
            yield Found("CF", m.start(), m.end(), compact)
    for m in _PIVA.finditer(text):
        digits = _NOT_DIGIT.sub("", m.group(1))
        if partita_iva_ok(digits) and not _THOUSANDS.fullmatch(m.group(1)):
            yield Found("PIVA", m.start(), m.end(), digits)
    for m in _IBAN.finditer(text):
        found = _iban_prefix(m.group(), m.start())
        if found is not None:
            yield found
    for m in _EMAIL.finditer(text):
        yield Found("EMAIL", m.start(), m.end(), m.group().lower())


def _is_phone(candidate: str) -> bool:
    """Not an amount written with thousands separators, nor a date."""
    digits = len(_NOT_DIGIT.sub("", candidate))
    if not 6 <= digits <= 15:
        return False
    if candidate.startswith(("+", "(")):
        return digits >= 8
    if candidate.startswith("00"):  # 0039 ...: the prefix and a whole number after it
        return digits >= 11
    if candidate.startswith("0") and digits < (9 if _NOT_DIGIT.search(candidate) else 10):
        return False  # a short number led by 0 is a code (AIC, NCES) more often than a phone
    return not (_THOUSANDS.fullmatch(candidate) or _DATE_LIKE.fullmatch(candidate))


def _iban_prefix(candidate: str, offset: int) -> Found | None:
    """The longest valid IBAN at the start of `candidate`: the pattern may have run on into
    the next word ("... 456 BANCA"), which only the checksum can tell. A candidate in lower
    case is taken only for a country whose IBAN length is known."""
    ends = [i + 1 for i, ch in enumerate(candidate) if ch not in " -"]  # end per character
    country = candidate[:2].upper()
    expected = _IBAN_LENGTH.get(country)
    if expected is None and not candidate[:2].isupper():
        return None
    lengths = [expected] if expected is not None else range(min(34, len(ends)), 14, -1)
    for n in lengths:
        if n <= len(ends):
            value = _NOT_ALNUM.sub("", candidate[: ends[n - 1]]).upper()
            if iban_ok(value):
                return Found("IBAN", offset, offset + ends[n - 1], value)
    return None
