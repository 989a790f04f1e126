"""Curated wiki pages: front matter, caveats, and fragments that carry the caveats."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.knowledge.test_ingest import make_repo, settings, source
from thoth.config import SourceSettings
from thoth.documents.records import reading_text
from thoth.documents.sources import SourceFile, read_source
from thoth.errors import ProblemsError
from thoth.wiki import PageRef, WikiPage, page_fragments, parse_page

WIKI = source("wiki", kind="wiki", include=["wiki/**/*.md"], labels=["internal"])
CONFIG = settings(source(), WIKI)
PIN = "ab" * 32


def page_file(
    text: str, path: str = "wiki/mercati/giappone.md", wiki: SourceSettings = WIKI
) -> SourceFile:
    """A page as read from Git; the sources tests cover reading it from a repository."""
    data = text.encode()
    return SourceFile(wiki, path, data, hashlib.sha256(data).hexdigest(), "0" * 40)


def page(text: str, **fields: Any) -> WikiPage:
    return parse_page(page_file(text, **fields), CONFIG)


def refused(text: str) -> ProblemsError:
    with pytest.raises(ProblemsError) as info:
        page(text)
    return info.value


# --------------------------------------------------------------------------------------------
# Front matter


def test_front_matter_fields_and_what_is_inherited_from_the_source() -> None:
    text = f"""---
title: Mercato   giapponese
documents:
  - docs:docs/fonte.md
  - {{doc: "docs:docs/quote.md", sha256: "{PIN.upper()}"}}
contradicted_by: [docs:docs/smentita.md]
caveats:
  - I dati 2024 sono provvisori.
year: 2024
---
# Mercato giapponese

La quota è il 12%.
"""
    parsed = page(text)
    assert parsed.doc_id == "wiki:wiki/mercati/giappone.md"
    assert (parsed.source, parsed.path, parsed.title) == (
        "wiki",
        "wiki/mercati/giappone.md",
        "Mercato giapponese",
    )
    assert (parsed.channel, parsed.labels) == ("mercati", ("internal",)), "inherited"
    assert parsed.refers_to == (
        PageRef("docs:docs/fonte.md", None),
        PageRef("docs:docs/quote.md", PIN),
    )
    assert parsed.contradicted_by == ("docs:docs/smentita.md",)
    assert parsed.caveats == ("I dati 2024 sono provvisori.",)
    assert parsed.year == 2024
    assert parsed.body.startswith("# Mercato giapponese\n")
    assert parsed.sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_declared_channel_and_labels_replace_the_source_ones() -> None:
    parsed = page("---\ntitle: Bandi\nchannel: bandi\nlabels: [public]\n---\nTesto.\n")
    assert (parsed.channel, parsed.labels) == ("bandi", ("public",))


@pytest.mark.parametrize(
    "front,field,expected",
    [
        ("channel: bandi", "title", "missing title"),
        ("title: T\nlabels: [internal, segreto]", "labels", "label 'segreto' is not in"),
        ("title: T\nautore: Anna", "autore", "unknown front-matter field 'autore'"),
        ("title: T\nchannel: sport", "channel", "channel 'sport' is not a declared channel"),
        ("title: T\ndocuments: [quote.md]", "documents", "'quote.md' is not a document id"),
        ("title: T\ndocuments: [{doc: 'docs:q.md', sha256: abc}]", "documents", "64 hex"),
        ("title: T\nyear: '2024'", "year", "year must be a year"),
        ("title: T\ncaveats: [1, 2]", "caveats", "list of non-empty texts"),
    ],
)
def test_front_matter_errors_name_the_page_and_the_field(
    front: str, field: str, expected: str
) -> None:
    error = refused(f"---\n{front}\n---\nTesto.\n")
    [problem] = error.problems
    assert (problem.where, problem.field) == ("wiki:wiki/mercati/giappone.md", field)
    assert expected in problem.render()


def test_error_hints_list_what_is_accepted() -> None:
    label = refused("---\ntitle: T\nlabels: [segreto]\n---\nTesto.\n").problems[0]
    assert label.hint is not None and "public, internal, confidential" in label.hint
    key = refused("---\ntitle: T\nautore: Anna\n---\nTesto.\n").problems[0]
    assert key.hint is not None and "title, channel, labels, documents" in key.hint
    channel = refused("---\ntitle: T\nchannel: sport\n---\nTesto.\n").problems[0]
    assert channel.hint is not None and "mercati, bandi" in channel.hint


def test_every_front_matter_problem_is_reported_at_once() -> None:
    error = refused("---\nautore: Anna\nchannel: sport\nlabels: [segreto]\n---\nTesto.\n")
    assert sorted(p.field or "" for p in error.problems) == ["autore", "channel", "labels", "title"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("# Senza front matter\n", "no front matter"),
        ("---\ntitle: [unclosed\n---\nTesto.\n", "not valid YAML"),
        ("---\n- una\n- lista\n---\nTesto.\n", "not a set of fields"),
    ],
)
def test_a_page_without_readable_front_matter_is_refused(text: str, expected: str) -> None:
    error = refused(text)
    assert error.problems[0].where == "wiki:wiki/mercati/giappone.md"
    assert expected in str(error)


# --------------------------------------------------------------------------------------------
# Caveats


CAVEAT_PAGE = """---
title: Giappone
caveats:
  - Fonte interna, non verificata.
  - I dati 2024 sono provvisori.
---
# Giappone

## Quote

La quota è il 12%.

### AVVERTENZE

- I dati 2024 sono
  provvisori.
- Le quote escludono gli spumanti:
  - dati separati.

Un paragrafo della sezione, ignorato perché la sezione ha una lista.

#### Dettaglio

- Il Giappone include Okinawa.

## Altro

- Non è un'avvertenza.
"""


def test_caveats_from_front_matter_and_from_the_caveat_section() -> None:
    parsed = page(CAVEAT_PAGE)
    assert parsed.caveats == (
        "Fonte interna, non verificata.",
        "I dati 2024 sono provvisori.",  # once: the section repeats it
        "Le quote escludono gli spumanti: - dati separati.",
        "Il Giappone include Okinawa.",  # a deeper heading stays inside the section
    )


def test_caveat_section_paragraphs_when_it_has_no_list() -> None:
    parsed = page(
        "---\ntitle: T\n---\n# T\n\nTesto.\n\n## Caveats:\n\nPrimo dubbio.\n\nSecondo\ndubbio.\n"
    )
    assert parsed.caveats == ("Primo dubbio.", "Secondo dubbio.")


def test_caveat_headings_are_declared_by_the_source() -> None:
    wiki = source(
        "wiki", kind="wiki", include=["wiki/**"], caveat_headings=["Limiti"], heading_dialect="bold"
    )
    text = "---\ntitle: T\n---\nTesto.\n\n**Limiti**\n\n- Solo il 2024.\n\n## Avvertenze\n\n- No.\n"
    parsed = parse_page(page_file(text, wiki=wiki), settings(wiki))
    assert parsed.caveats == ("Solo il 2024.",)


def long_section(title: str, n: int) -> str:
    sentences = " ".join(
        f"Nel {2000 + i} il mercato {title.lower()} ha registrato la variazione numero {i} "
        "rispetto all'anno precedente."
        for i in range(n)
    )
    return f"## {title}\n\n{sentences}\n"


def test_every_fragment_carries_the_caveats_it_does_not_hold() -> None:
    body = "\n".join(long_section(t, 12) for t in ("Giappone", "Corea", "Cina"))
    text = (
        '---\ntitle: Asia\ncaveats: ["Fonte interna, non verificata."]\n---\n# Asia\n\n'
        + body
        + "\n## Avvertenze\n\n- I dati 2024 sono provvisori.\n- Le quote escludono gli spumanti.\n"
    )
    parsed = page(text)
    fragments = page_fragments(parsed, CONFIG)
    assert len(fragments) >= 3
    holding = [f for f in fragments if "## Avvertenze" in f.text]
    assert len(holding) == 1
    assert holding[0].caveats == ("Fonte interna, non verificata.",), "not twice"
    for fragment in fragments:
        if fragment is holding[0]:
            continue
        assert fragment.caveats == parsed.caveats
        assert not any(c in fragment.text for c in parsed.caveats), "never in the embedded text"
        assert reading_text(fragment).endswith("[Caveat] Le quote escludono gli spumanti.")


def test_page_fragments_carry_the_page_metadata() -> None:
    parsed = page(
        "---\ntitle: Giappone\nchannel: bandi\nlabels: [public]\nyear: 2023\n"
        "documents: [docs:docs/a.md, {doc: docs:docs/b.md, sha256: " + PIN + "}]\n---\nTesto.\n"
    )
    [fragment] = page_fragments(parsed, CONFIG)
    assert fragment.record_kind == "wiki"
    assert (fragment.doc_id, fragment.source, fragment.path, fragment.title) == (
        "wiki:wiki/mercati/giappone.md",
        "wiki",
        "wiki/mercati/giappone.md",
        "Giappone",
    )
    assert (fragment.channel, fragment.labels, fragment.year, fragment.page) == (
        "bandi",
        ("public",),
        2023,
        None,
    )
    assert fragment.refers_to == ("docs:docs/a.md", "docs:docs/b.md")
    assert (fragment.content_sha256, fragment.revision) == (parsed.sha256, parsed.revision)


def test_a_page_without_content_is_refused() -> None:
    parsed = page("---\ntitle: Vuota\n---\n\n")
    with pytest.raises(ProblemsError) as info:
        page_fragments(parsed, CONFIG)
    assert info.value.problems[0].where == "wiki:wiki/mercati/giappone.md"


def test_a_page_read_from_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"wiki/a.md": "---\ntitle: A\n---\nTesto.\n"})
    [file] = read_source(repo, WIKI).files
    parsed = parse_page(file, CONFIG)
    assert (parsed.title, parsed.revision) == ("A", file.revision)
