"""Free text and rows: what is replaced, what passes, and the way back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from thoth.config import ColumnKind
from thoth.errors import ConfigError
from thoth.privacy import (
    MASKED,
    Entity,
    NoPseudonymizer,
    PlaceholderPseudonymizer,
    Registry,
    classify,
    load_registry,
)

CF = "RSSMRA85T10A562S"
IBAN = "IT60 X054 2811 1010 0000 0123 456"
REGISTRY = Registry(
    [
        Entity("AZIENDA", "12345", "Rossi Costruzioni Srl"),
        Entity("AZIENDA", "9", "Rossi"),  # a prefix of the longer name
        Entity("AZIENDA", "7", "M"),  # seed 004: the one-letter supplier
        Entity("PERSONA", "77", "Mario Bianchi"),
    ]
)
TEXT = (
    f"Fornitore ROSSI COSTRUZIONI SRL, referente Mario\nBianchi (CF {CF}), IBAN {IBAN}, "
    "pagati 12.500,00 euro il 15/03/2024.\nM) seconda voce dell'elenco; Rossi a parte."
)


def pseudonymizer(min_name_length: int = 4) -> PlaceholderPseudonymizer:
    return PlaceholderPseudonymizer(REGISTRY, min_name_length=min_name_length)


def test_identities_become_typed_placeholders_amounts_and_dates_stay() -> None:
    protected = pseudonymizer().protect(TEXT)
    assert protected == (
        "Fornitore [AZIENDA:12345], referente [PERSONA:77] (CF [CF:1]), IBAN [IBAN:1], "
        "pagati 12.500,00 euro il 15/03/2024.\nM) seconda voce dell'elenco; [AZIENDA:9] a parte."
    )


def test_round_trip_gives_back_the_exact_text() -> None:
    p = pseudonymizer()
    assert p.restore(p.protect(TEXT)) == TEXT


def test_a_models_reply_is_restored_with_the_spelling_seen() -> None:
    p = pseudonymizer()
    p.protect(TEXT)
    reply = "[AZIENDA:12345] ha ricevuto 12.500,00 euro su [IBAN:1]; [PERSONA:99] è ignoto."
    assert p.restore(reply) == (
        f"ROSSI COSTRUZIONI SRL ha ricevuto 12.500,00 euro su {IBAN}; [PERSONA:99] è ignoto."
    )


def test_the_same_value_keeps_its_number_and_another_gets_the_next() -> None:
    p = pseudonymizer()
    first = p.protect(f"{CF} e a.b@x.it")
    second = p.protect(f"a.b@x.it, c.d@x.it, {CF.lower()}")
    assert (first, second) == ("[CF:1] e [EMAIL:1]", "[EMAIL:1], [EMAIL:2], [CF:1]")


def test_short_names_are_not_searched_in_free_text() -> None:
    # min_name_length 1: the one-letter supplier eats the list marker.
    assert "[AZIENDA:7]) seconda voce" in pseudonymizer(min_name_length=1).protect(TEXT)
    assert "M) seconda voce" in pseudonymizer(min_name_length=2).protect(TEXT)


def test_rows_pass_declared_harmless_kinds_and_mask_the_rest() -> None:
    columns = ["ragione_sociale", "codice_fiscale", "importo_totale", "data_pagamento",
               "numero_fatture", "stato", "progetto_id", "note_interne", "xyz"]  # fmt: skip
    rows = [["M", CF, 12500.0, "2024-03-15", 3, "pagato", 42, "chiamare Mario Bianchi", "k"]]
    [protected] = pseudonymizer().protect_rows(columns, rows)
    assert protected == [
        "[AZIENDA:7]",  # below min_name_length, yet an entity where the column says so
        "[CF:1]",
        12500.0,
        "2024-03-15",
        3,
        "pagato",
        42,
        MASKED,  # nobody declared notes harmless
        MASKED,
    ]


def test_a_new_catalog_query_whose_columns_are_unknown_leaks_nothing() -> None:
    """Seed 004: the sensitive is never listed, the harmless is declared. A query written
    tomorrow with columns nobody classified must leave nothing in clear."""
    columns = ["c1", "soggetto", "rif", "descr", "x"]
    rows: list[list[Any]] = [
        ["Rossi Costruzioni Srl", "Mario Bianchi", CF, f"IBAN {IBAN}", "a.b@x.it"],
        ["M", None, "IT00743110157", "Alfa S.p.A. via Roma 1", 7],
    ]
    p = pseudonymizer()
    protected = p.protect_rows(columns, rows)
    assert set(p.column_kinds(columns).values()) == {"unknown"}
    assert protected == [[MASKED] * 5, [MASKED, None, MASKED, MASKED, MASKED]]
    sent = json.dumps(protected)
    for secret in ("Rossi", "Bianchi", CF, "IT60", "a.b@x.it", "00743110157", "Alfa", "Roma"):
        assert secret not in sent


def test_reviewed_kinds_unmask_unknown_columns_and_never_an_identity() -> None:
    """A catalog query declares its result columns' kinds: a count named `ricoveri` passes,
    a column named as an identity stays replaced whatever the catalog says."""
    p = pseudonymizer()
    [row] = p.protect_rows(
        ["ricoveri", "codice_fiscale", "x"],
        [[71, CF, "Rossi Costruzioni Srl"]],
        {"ricoveri": "quantity", "codice_fiscale": "quantity", "x": "not-a-kind"},
    )
    assert row[0] == 71 and row[1] != CF and row[2] == MASKED
    assert p.protect_rows(["ricoveri"], [[71]]) == [[MASKED]]  # unreviewed: masked


def test_declared_columns_come_before_the_built_in_names() -> None:
    declared: dict[str, ColumnKind] = {"rif": "code", "descr": "free_text", "importo_*": "unknown"}
    p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4, columns=declared)
    [row] = p.protect_rows(
        ["rif", "descr", "importo_cliente_x", "IMPORTO"],
        [["R-12", f"pagare Rossi Costruzioni Srl su {IBAN}", 10, 11]],
    )
    assert row == ["R-12", "pagare [AZIENDA:12345] su [IBAN:1]", MASKED, 11]


@pytest.mark.parametrize(
    ("column", "kind"),
    [
        ("ragioneSociale", "identity"),
        ("numero_telefono", "identity"),  # identity wins over "numero"
        ("partita_iva", "identity"),
        ("importo_iva", "amount"),
        ("dataFattura", "date"),
        ("quantità", "quantity"),
        ("cod_cup", "code"),
        ("tipologia", "category"),
        ("descrizione", "unknown"),
        ("valore_x", "amount"),
    ],
)
def test_column_names_are_classified_by_their_words(column: str, kind: str) -> None:
    assert classify(column, {}) == kind


def test_the_no_op_changes_nothing() -> None:
    p = NoPseudonymizer()
    rows = [("Rossi", CF, 1.5)]
    assert p.protect(TEXT) == TEXT and p.restore("[AZIENDA:12345]") == "[AZIENDA:12345]"
    assert p.protect_rows(["a", "b", "c"], rows) == [["Rossi", CF, 1.5]]


def test_registry_files_csv_and_yaml(tmp_path: Path) -> None:
    csv = tmp_path / "anagrafica.csv"
    csv.write_text("kind,id,name,note\nazienda,12345,Rossi Costruzioni Srl,x\n", "utf-8")
    yml = tmp_path / "anagrafica.yaml"
    yml.write_text("- {kind: PERSONA, id: 77, name: Mario Bianchi}\n", "utf-8")
    assert load_registry(csv).entities == (Entity("AZIENDA", "12345", "Rossi Costruzioni Srl"),)
    assert load_registry(yml).entities == (Entity("PERSONA", "77", "Mario Bianchi"),)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("kind,name\nAZIENDA,Rossi\n", "has no column id"),
        ("kind,id,name\nCF,1,Rossi\n", "kind CF is reserved"),
        ("kind,id,name\nAZIENDA,1 2,Rossi\n", "without spaces, brackets or colons"),
        ("kind,id,name\nAZIENDA,1,\n", "row 1: name is empty"),
    ],
)
def test_a_bad_registry_names_the_file_and_the_row(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "anagrafica.csv"
    path.write_text(content, "utf-8")
    with pytest.raises(ConfigError, match=said) as caught:
        load_registry(path)
    assert str(path) in str(caught.value)


def test_a_reviewed_identity_is_never_lowered_by_its_name() -> None:
    """Issue 22, point 1: `codice_paziente` reads as a code, but the reviewer said identity:
    the reviewed kind decides, the name only proposes."""
    p = pseudonymizer()
    reviewed = {"codice_paziente": "identity", "importo": "identity", "n": "unknown"}
    [row] = p.protect_rows(["codice_paziente", "importo", "n"], [["P000123", "Q7", 5]], reviewed)
    assert row == ["[IDENTITA:1]", "[IDENTITA:2]", MASKED]
    assert p.column_kinds(["codice_paziente"], reviewed) == {"codice_paziente": "identity"}
    assert p.restore("[IDENTITA:1]") == "P000123"


def test_masked_columns_name_each_masked_column_its_values_and_the_rule() -> None:
    """What a reader's over_masked report names: exactly the columns protect_rows masks,
    how many values each lost, and the rule a reviewer changes to let it pass."""
    declared: dict[str, ColumnKind] = {"importo_*": "unknown"}
    p = PlaceholderPseudonymizer(REGISTRY, min_name_length=4, columns=declared)
    columns = ["note_interne", "importo_cliente_x", "ricoveri", "stato"]
    rows: list[list[Any]] = [["a", 10, 3, "ok"], [None, 11, 4, "ko"]]
    protected = p.protect_rows(columns, rows, {"ricoveri": "quantity"})
    masked = p.masked_columns(columns, rows, {"ricoveri": "quantity"})
    assert [m["column"] for m in masked] == [
        c for i, c in enumerate(columns) if any(r[i] == MASKED for r in protected)
    ]
    notes, amount = masked
    assert notes["values"] == 1  # the None was not masked: nothing to cover
    assert "nothing declared it harmless" in notes["rule"] and "[privacy] columns" in notes["rule"]
    assert (amount["values"], amount["rule"]) == (2, "[privacy] columns: 'importo_*' = 'unknown'")
    assert p.masked_columns(["ricoveri"], [[1]], {"ricoveri": "quantity"}) == []
