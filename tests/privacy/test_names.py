"""`tht privacy names`: the registry's names counted in sample text, length by length."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from thoth.cli.main import app
from thoth.privacy import Entity, Registry
from thoth.privacy.names import length_profile

REGISTRY = Registry(
    [
        Entity("AZIENDA", "7", "M"),
        Entity("AZIENDA", "8", "Sole"),
        Entity("AZIENDA", "9", "Roma"),
        Entity("AZIENDA", "12345", "Rossi Costruzioni Srl"),
    ]
)
SAMPLE = (
    "Art. 3\nM) il bando scade il 30 giugno;\nM) la domanda si presenta a Roma.\n"
    "Impianti a energia del sole e del vento. Nessun fornitore citato."
)


def test_short_names_match_the_list_markers_long_ones_nothing() -> None:
    rows = {r.length: r for r in length_profile(REGISTRY, [SAMPLE])}
    assert (rows[1].matched, rows[1].matches) == (1, 2)  # the list markers
    assert (rows[4].names, rows[4].matched, rows[4].matches) == (2, 2, 2)
    assert rows[4].examples == (("roma", 1), ("sole", 1))
    assert (rows[21].names, rows[21].matches) == (1, 0)


def test_cli_reports_the_profile_and_the_configured_threshold(tmp_path: Path) -> None:
    (tmp_path / "thoth.toml").write_text(
        'workspace = "ws"\n[privacy]\nregistry = "r.csv"\nmin_name_length = 5\n', "utf-8"
    )
    (tmp_path / "r.csv").write_text("kind,id,name\nAZIENDA,7,M\nAZIENDA,9,Roma\n", "utf-8")
    sample = tmp_path / "sample.txt"
    sample.write_text(SAMPLE, "utf-8")
    result = CliRunner().invoke(
        app, ["privacy", "names", "--sample", str(sample), "-w", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["configured_min_name_length"] == 5 and data["names"] == 2
    assert [(r["length"], r["matches"]) for r in data["lengths"]] == [(1, 2), (4, 1)]
