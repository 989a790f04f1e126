"""The near-miss corpus: identities in the forms real data holds them (spaces, dots and dashes
inside a code, lower case, another word order, diacritics written as apostrophes, a value split
across two cells of a row), in Italian and English. Shared by the test (none may leak) and
benchmarks/privacy_scan.py."""

from __future__ import annotations

import re
from dataclasses import dataclass

from thoth.privacy import Entity, Registry

REGISTRY = Registry(
    [
        Entity("PERSONA", "77", "Mario Rossi"),
        Entity("PERSONA", "78", "Nicolò Bianchi"),
        Entity("PERSONA", "79", "Anna Rossi-Verdi"),
        Entity("PERSONA", "80", "Giulia D'Amico"),
        Entity("PERSON", "81", "John Smith"),
        Entity("PAZIENTE", "82", "Lucia Esposito", surname="Esposito"),
        Entity("AZIENDA", "12345", "Alfa Costruzioni Srl"),
    ]
)
CF = "RSSMRA85T10A562S"
CF2 = "BNCNCL90M15F205T"
PIVA = "12345678903"
PIVA0 = "00743110157"
IBAN = "IT60X0542811101000000123456"
IBAN_GB = "GB82WEST12345698765432"


@dataclass(frozen=True)
class Case:
    cells: tuple[object, ...]  # one cell: a text; several: adjacent cells of one row
    secrets: tuple[str, ...]  # what must not be readable in the output (separators aside)
    note: str


def case(cells: object, *secrets: str, note: str = "") -> Case:
    values = cells if isinstance(cells, tuple) else (cells,)
    return Case(values, secrets or tuple(str(c) for c in values), note)


CORPUS: tuple[Case, ...] = (
    # -- codice fiscale
    case("RSS MRA 85T10 A562S", CF, note="cf grouped by spaces"),
    case("RSS-MRA-85T10-A562S", CF, note="cf with dashes"),
    case("RSS.MRA.85T10.A562S", CF, note="cf with dots"),
    case("rssmra85t10a562s", CF, note="cf lower case"),
    case("Rssmra85T10a562s", CF, note="cf mixed case"),
    case("RSSMRA 85 T 10 A 562 S", CF, note="cf in its fields"),
    case("C.F.: RSSMRA85T10A562S.", CF, note="cf after a label"),
    case("cf=bncncl90m15f205t;", CF2, note="cf in a key=value"),
    case("RSSMRA85T10A56NH", "RSSMRA85T10A56NH", note="cf omocodia"),
    case(("RSSMRA85", "T10A562S"), "RSSMRA85", "T10A562S", note="cf split in two cells"),
    case(("RSSMRA85T10", "A562S"), "RSSMRA85T10", "A562S", note="cf split 11+5"),
    case(("BNC NCL", "90M15 F205T"), "BNCNCL", "90M15F205T", note="cf split and spaced"),
    # -- partita IVA
    case("123 456 789 03", PIVA, note="piva in groups"),
    case("12345-678-903", PIVA, note="piva with dashes"),
    case("IT 12345678903", PIVA, note="piva with spaced prefix"),
    case("it12345678903", PIVA, note="piva lower-case prefix"),
    case("IT-007.431.101.57", PIVA0, note="piva prefix, dashes and dots"),
    case("P.IVA 00743110157", PIVA0, note="piva after a label"),
    case(("12345", "678903"), "12345", "678903", note="piva split in two cells"),
    case(("IT", "00743110157"), PIVA0, note="piva after its prefix cell"),
    case(12345678903, PIVA, note="piva stored as a number"),
    case("VAT no. 02114530211", "02114530211", note="piva in English"),
    # -- IBAN
    case("it60x0542811101000000123456", IBAN, note="iban lower case"),
    case("it60 x054 2811 1010 0000 0123 456", IBAN, note="iban lower case grouped"),
    case("IT60-X054-2811-1010-0000-0123-456", IBAN, note="iban grouped with dashes"),
    case("GB82 WEST 1234 5698 7654 32", IBAN_GB, note="uk iban grouped"),
    case("gb82west12345698765432", IBAN_GB, note="uk iban lower case"),
    case(
        ("IT60 X054 2811", "1010 0000 0123 456"), "X0542811", "101000000123456", note="iban split"
    ),
    case("Bonifico su IBAN: IT60X0542811101000000123456 entro venerdì", IBAN, note="iban prose"),
    # -- e-mail
    case("mario.rossi@example.it", note="email"),
    case("MARIO.ROSSI@EXAMPLE.IT", note="email upper case"),
    case("mario.rossi [at] example.it", "mario.rossi", note="email [at]"),
    case("mario.rossi(at)example.it", "mario.rossi", note="email (at)"),
    case("john.smith+bills@example.co.uk", note="email with a tag"),
    case("Write to j.smith@example.com for details", "j.smith", note="email in prose"),
    # -- phone numbers
    case("+39 333 123 4567", "3331234567", note="it mobile international"),
    case("0039 333 1234567", "3331234567", note="it mobile 0039"),
    case("333-123-4567", "3331234567", note="it mobile dashes"),
    case("3331234567", note="it mobile bare"),
    case(3331234567, "3331234567", note="it mobile stored as a number"),
    case("06 1234 5678", "0612345678", note="rome landline"),
    case("06-12345678", "0612345678", note="rome landline dash"),
    case("02/1234567", "021234567", note="milan landline slash"),
    case("tel. 011.123.4567", "0111234567", note="turin landline dots"),
    case("+44 20 7946 0958", "2079460958", note="uk international"),
    case("020 7946 0958", "02079460958", note="uk landline"),
    case("(212) 555-0123", "2125550123", note="us parenthesised"),
    case("212-555-0123", "2125550123", note="us dashes"),
    case("+1 212 555 0123", "2125550123", note="us international"),
    # -- personal names
    case("Mario Rossi", "mario", "rossi", note="name"),
    case("Rossi Mario", "mario", "rossi", note="name surname first"),
    case("ROSSI MARIO", "mario", "rossi", note="name upper case reversed"),
    case("Rossi, Mario", "mario", "rossi", note="name with a comma"),
    case("il sig. Rossi ha firmato", "rossi", note="surname alone"),
    case("Nicolò Bianchi", "nicol", "bianchi", note="name with a diacritic"),
    case("Nicolo' Bianchi", "nicol", "bianchi", note="diacritic as apostrophe"),
    case("Nicolo Bianchi", "nicol", "bianchi", note="diacritic dropped"),
    case("NICOLO' BIANCHI", "nicol", "bianchi", note="upper case apostrophe"),
    case("Bianchi Nicolò", "nicol", "bianchi", note="reversed with diacritic"),
    case("Anna Rossi-Verdi", "anna", "verdi", note="hyphenated surname"),
    case("Anna Rossi Verdi", "anna", "verdi", note="hyphen dropped"),
    case("Rossi-Verdi Anna", "anna", "verdi", note="hyphenated reversed"),
    case("Giulia D'Amico", "giulia", "amico", note="apostrophe in the surname"),
    case("Giulia D’Amico", "giulia", "amico", note="typographic apostrophe"),
    case("D'Amico Giulia", "giulia", "amico", note="apostrophe reversed"),
    case("Smith, John", "john", "smith", note="english reversed"),
    case("JOHN SMITH", "john", "smith", note="english upper case"),
    case("Mr Smith called", "smith", note="english surname alone"),
    case("la paziente Esposito", "esposito", note="declared surname"),
    case(("Mario", "Rossi"), "mario", "rossi", note="name split in two cells"),
    case(("Rossi", "Mario"), "mario", "rossi", note="reversed across cells"),
    case(("Nicolò", "Bianchi"), "nicol", "bianchi", note="diacritic across cells"),
    case("alfa costruzioni srl", "alfa costruzioni", note="company lower case"),
    case("Alfa  Costruzioni\nSrl", "alfa costruzioni", note="company across a line break"),
)

_SEPARATORS = re.compile(r"[\s.\-/,'’]+")


def readable(text: str, secret: str) -> bool:
    """Whether `secret` can be read in `text`, case, separators and diacritics aside."""
    from thoth.privacy.registry import fold

    def plain(value: str) -> str:
        return _SEPARATORS.sub("", fold(value)[0])

    return plain(secret) in plain(text)
