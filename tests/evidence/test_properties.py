"""Property tests over generated sources: prepare twice is a no-op; IDs do not depend on the
order in which sources are created or listed."""

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import WorkspaceFactory, commit_all, status
from thoth.evidence.corpus import load_corpus
from thoth.evidence.prepare import prepare
from thoth.evidence.restructure import RuleBasedRestructurer

WORDS = ["ricovero", "degenza", "reparto", "esito", "triage", "dimissione", "episodio"]
title = st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join)
sentence = st.lists(st.sampled_from(WORDS), min_size=3, max_size=8).map(
    lambda ws: " ".join(ws).capitalize() + "."
)


@st.composite
def section(draw: st.DrawFn) -> str:
    name = draw(title).capitalize()
    shape = draw(st.sampled_from(["prose", "glossary", "enum", "formula", "link"]))
    if shape == "glossary":
        return f"## {name}\n\n**{draw(title)}**: {draw(sentence)}\n"
    if shape == "enum":
        return (
            f"## {name}\n\nColonna: `adt.admission.status`\n\n| Codice | Significato |\n"
            f"|---|---|\n| A | {draw(sentence)} |\n| B | {draw(sentence)} |\n"
        )
    if shape == "formula":
        return (
            f"## {name}\n\nUsa `adt.admission.admission_date`.\n\n```sql\n"
            "(a.discharge_date - a.admission_date)\n```\n"
        )
    if shape == "link":
        return f"## {name}\n\n- [{name}](https://example.org/{len(name)}) — {draw(sentence)}\n"
    return f"## {name}\n\n{draw(sentence)} {draw(sentence)}\n"


source = st.lists(section(), min_size=1, max_size=4).map(lambda s: "# Note\n\n" + "\n".join(s))
corpus = st.dictionaries(
    st.sampled_from(["a.md", "b.md", "sub/c.md", "d.txt", "e.md"]),
    source,
    min_size=1,
    max_size=4,
)
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _ids_by_source(sources: dict[str, str], order: list[str]) -> dict[str, list[str]]:
    base = Path(tempfile.mkdtemp(prefix="thoth-prop-"))
    try:
        make = WorkspaceFactory(base)
        ws = make({rel: sources[rel] for rel in order})
        prepare(ws, RuleBasedRestructurer())
        files, problems = load_corpus(ws.evidence)
        assert not problems
        out: dict[str, list[str]] = {}
        for f in files:
            out.setdefault(f.unit.provenance.source_file, []).append(f.unit.id)
        return {k: sorted(v) for k, v in out.items()}
    finally:
        shutil.rmtree(base)


@SETTINGS
@given(corpus)
def test_prepare_twice_is_a_noop(sources: dict[str, str]) -> None:
    base = Path(tempfile.mkdtemp(prefix="thoth-prop-"))
    try:
        ws = WorkspaceFactory(base)(sources)
        first = prepare(ws, RuleBasedRestructurer())
        assert first.written
        commit_all(ws.root)
        second = prepare(ws, RuleBasedRestructurer())
        assert second.noop
        assert status(ws.root) == ""
    finally:
        shutil.rmtree(base)


@SETTINGS
@given(corpus, st.randoms(use_true_random=False))
def test_ids_are_stable_under_reordering_of_sources(sources: dict[str, str], rnd: object) -> None:
    order = sorted(sources)
    shuffled = list(order)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert _ids_by_source(sources, order) == _ids_by_source(sources, list(reversed(shuffled)))
