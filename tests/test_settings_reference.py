"""docs/settings.md is generated from the settings model: it must not drift from it."""

from __future__ import annotations

from pathlib import Path

from thoth.config import Settings
from thoth.settings_reference import render

DOC = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


def test_docs_settings_md_is_the_model_as_it_is() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/settings.md differs from thoth/config.py -> regenerate it: "
        "python -m thoth.settings_reference > docs/settings.md"
    )


def test_every_key_of_every_section_is_in_the_reference() -> None:
    text = render()
    for name in Settings.model_fields:
        assert f"`{name}`" in text or f"[{name}]" in text or f"[[{name}]]" in text, name
    for key in ("min_similarity", "channel_threshold", "top_k", "prefetch_limit", "retain"):
        assert f"| `{key}` |" in text, key
    assert "## `[answers.routing]`" in text and "## `[[sources]]`" in text
