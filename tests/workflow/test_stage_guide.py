"""Issue 47, point 2: the MCP prompt that teaches an agent the stages and the built-in driver's
instructions are projected from one source (thoth.workflow.guide), so they cannot drift."""

from __future__ import annotations

import pytest

from thoth.service.mcp_server import stages_prompt
from thoth.session.stages import DISPLAY_CODES, STAGES
from thoth.workflow import driver, guide


@pytest.mark.parametrize("stage", driver.DRIVABLE_STAGES)
def test_the_driver_and_the_mcp_prompt_say_the_same_of_a_stage(stage: str) -> None:
    taught, told = stages_prompt(), driver.system_prompt(stage)
    for part in (guide.purpose(stage), guide.decisions_text(stage), guide.rules(stage)):
        assert part and part in taught and part in told


def test_an_edit_of_the_guide_reaches_both(monkeypatch: pytest.MonkeyPatch) -> None:
    changed = {s: f"PURPOSE-OF-{s}" for s in STAGES}
    types = {t: f"MEANING-OF-{t}" for t in guide.TYPE_GUIDE}
    monkeypatch.setattr(guide, "STAGE_PURPOSE_TEXT", changed)
    monkeypatch.setattr(guide, "TYPE_GUIDE", types)
    monkeypatch.setattr(guide, "STAGE_TYPE_GUIDE", {})
    taught = stages_prompt()
    for stage in driver.DRIVABLE_STAGES:
        told = driver.system_prompt(stage)
        assert f"PURPOSE-OF-{stage}" in told and f"PURPOSE-OF-{stage}" in taught
        for t in guide.DRIVEN_TYPES[stage]:
            assert f"- {t}: MEANING-OF-{t}" in told and f"- {t}: MEANING-OF-{t}" in taught


def test_the_prompt_teaches_every_stage_in_order_with_its_consultation_and_receipts() -> None:
    taught = stages_prompt()
    heads = [taught.index(f"## {DISPLAY_CODES[s]} {s}\n") for s in STAGES]
    assert heads == sorted(heads)
    for stage in STAGES:
        section = guide.stage_section(stage)
        assert section in taught and f"Receipts: {guide.RECEIPTS[stage]}." in section
        consults = guide.consults(stage)
        assert (f"Evidence purpose {consults}" in section) == (consults is not None)
