"""The detectors: a shape is confirmed by its checksum, so amounts, dates and protocol numbers
of the same length pass, and a real identifier is found whatever its spacing or case."""

from __future__ import annotations

import pytest

from thoth.privacy import codice_fiscale_ok, find_codes, iban_ok, partita_iva_ok

# Real-format samples: the textbook codice fiscale of "Mario Rossi" and of "Matteo Moretti",
# two omocodia variants (digits 2 and 6... replaced by letters, check letter recomputed),
# the IBAN examples of the Italian and British banking associations, a valid partita IVA.
CF = "RSSMRA85T10A562S"
CF_OMOCODIA = ("RSSMRA85T10A56NH", "RSSMRA85T10A5QNR")
IBAN_IT = "IT60X0542811101000000123456"
IBAN_IT_SPACED = "IT60 X054 2811 1010 0000 0123 456"
PIVA = "00743110157"


@pytest.mark.parametrize("code", [CF, "MRTMTT25D09F205Z", *CF_OMOCODIA, CF.lower()])
def test_valid_codici_fiscali(code: str) -> None:
    assert codice_fiscale_ok(code)


@pytest.mark.parametrize(
    "code",
    [
        "RSSMRA85T10A562T",  # wrong check letter
        "RSSMRA85T10A56NS",  # omocodia with the check letter of the plain code
        "RSSMRA85Z10A562S",  # Z is no month
        "RSSMRA85T10A562",  # 15 characters
    ],
)
def test_invalid_codici_fiscali(code: str) -> None:
    assert not codice_fiscale_ok(code)


def test_partita_iva_check_digit() -> None:
    assert partita_iva_ok(PIVA)
    assert not partita_iva_ok("00743110158")
    assert not partita_iva_ok("00000000000")
    assert not partita_iva_ok("0074311015")


def test_iban_mod_97() -> None:
    assert iban_ok(IBAN_IT) and iban_ok(IBAN_IT_SPACED) and iban_ok("GB82WEST12345698765432")
    assert not iban_ok("IT60X0542811101000000123457")  # one digit off
    assert not iban_ok("IT60X054281110100000012345")  # an Italian IBAN is 27 characters


def kinds(text: str) -> list[tuple[str, str]]:
    return sorted((f.kind, text[f.start : f.end]) for f in find_codes(text))


def test_found_in_italian_prose_with_exact_spans() -> None:
    text = (
        f"Il sig. Rossi (C.F. {CF.lower()}) ha ricevuto il bonifico su {IBAN_IT_SPACED} "
        f"BANCA POPOLARE; fattura di Alfa S.p.A., P.IVA IT{PIVA}, scrivere a "
        "ufficio.acquisti@alfa-spa.it entro il 15/03/2024."
    )
    assert kinds(text) == [
        ("CF", CF.lower()),
        ("EMAIL", "ufficio.acquisti@alfa-spa.it"),
        ("IBAN", IBAN_IT_SPACED),  # the checksum stops it before BANCA
        ("PIVA", f"IT{PIVA}"),
    ]


def test_amounts_dates_and_numbers_are_not_identifiers() -> None:
    text = (
        "Importo 1.234.567,89 euro il 2024-03-15 (15/03/2024); protocollo 12345678901; "
        "12 pezzi, 3,5% di crescita; CUP J51B21000300006."
    )
    assert kinds(text) == []
