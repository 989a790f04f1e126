"""The wiki fence: paths resolved (links included) before the check; labels as the index's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.conftest import PAGES
from thoth.agent import ToolRefused, WikiShelf
from thoth.config import Settings


@pytest.fixture
def root(tmp_path: Path) -> Path:
    wiki = tmp_path / "ws" / "wiki"
    for rel, text in PAGES.items():
        (wiki / rel).parent.mkdir(parents=True, exist_ok=True)
        (wiki / rel).write_text(text, encoding="utf-8")
    (tmp_path / "ws" / "thoth.toml").write_text('workspace = "ws"\n', encoding="utf-8")
    (tmp_path / "outside.md").write_text("---\nlabels: [public]\n---\nOUTSIDE\n")
    (tmp_path / "outside-dir").mkdir()
    (tmp_path / "outside-dir" / "page.md").write_text("---\nlabels: [public]\n---\nOUTSIDE\n")
    return wiki


def shelf(root: Path, labels: list[str]) -> WikiShelf:
    return WikiShelf(root, Settings(workspace="ws"), labels)


def refused(shelf: WikiShelf, path: str) -> str:
    with pytest.raises(ToolRefused) as info:
        shelf.read(path)
    return info.value.code


@pytest.mark.parametrize(
    "path",
    [
        "../thoth.toml",
        "../../thoth.toml",
        "/etc/passwd",
        "mercati/../../thoth.toml",
        "../outside.md",
    ],
)
def test_a_path_outside_the_wiki_is_refused(root: Path, path: str) -> None:
    assert refused(shelf(root, ["public"]), path) == "path_outside_wiki"


def test_a_link_inside_the_wiki_pointing_out_is_refused_and_not_listed(root: Path) -> None:
    (root / "link.md").symlink_to(root.parent.parent / "outside.md")
    (root / "linked-dir").symlink_to(root.parent.parent / "outside-dir")
    (root / "mercati" / "toml.md").symlink_to(root.parent / "thoth.toml")
    wiki = shelf(root, ["public"])
    assert refused(wiki, "link.md") == "path_outside_wiki"
    assert refused(wiki, "linked-dir/page.md") == "path_outside_wiki"
    assert refused(wiki, "mercati/toml.md") == "path_outside_wiki"
    listed = [p.path for p in wiki.pages()]
    assert listed == ["mercati/francia.md", "mercati/giappone.md", "ostile.md"]
    assert all("OUTSIDE" not in p.text for p in wiki.pages())


def test_a_link_that_stays_inside_the_wiki_is_followed(root: Path) -> None:
    (root / "jp.md").symlink_to(root / "mercati" / "giappone.md")
    assert shelf(root, ["public"]).read("jp.md").title == "Mercato Giappone"


def test_a_wiki_root_reached_through_a_link_still_fences(tmp_path: Path, root: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    wiki = shelf(alias, ["public"])
    assert wiki.read("mercati/giappone.md").path == "mercati/giappone.md"
    assert refused(wiki, "../thoth.toml") == "path_outside_wiki"


@pytest.mark.parametrize("path", ["", "mercati", "nope.md", "mercati/giappone.txt", "a\x00b.md"])
def test_what_is_not_a_page_is_refused(root: Path, path: str) -> None:
    (root / "mercati" / "giappone.txt").write_text("x")
    assert refused(shelf(root, ["public"]), path) in ("page_not_found", "bad_arguments")


def test_pages_outside_the_callers_labels_are_neither_listed_nor_read(root: Path) -> None:
    public = shelf(root, ["public"])
    assert "riservato/margini.md" not in [p.path for p in public.pages()]
    assert refused(public, "riservato/margini.md") == "page_label_not_allowed"
    assert public.search("margine", 5) == []
    both = shelf(root, ["public", "confidential"])
    assert both.read("riservato/margini.md").labels == ("confidential",)
    [(page, hits, snippet)] = both.search("margine", 5)
    assert page.path == "riservato/margini.md" and hits == 1 and "41%" in snippet


def test_a_page_without_labels_is_never_served(root: Path) -> None:
    (root / "bare.md").write_text("# Bare\n\nno front matter\n")
    assert refused(shelf(root, ["public", "confidential"]), "bare.md") == "page_label_not_allowed"
