"""The curated wiki as the agent's tools see it: list, read and search pages, nothing else.

The fence: every path the model gives is joined to the wiki root and resolved — `..`, an
absolute path and every symbolic link along the way followed — BEFORE it is compared with the
resolved root; only a Markdown file inside it is read. A page's text may tell the model to
read `../../thoth.toml` or `/etc/passwd` (a hostile document): the call is refused with a
stable code the model reads, and nothing outside the wiki is opened. Listing walks the tree
without following directory links, and a file link that resolves outside is left out.

Labels fence the pages as the index fences fragments: a page is shown only when all its labels
(front matter `labels`, else those of the `kind = "wiki"` sources) are among the caller's; a
page with no label is never shown.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from thoth.agent.errors import (
    BAD_ARGUMENTS,
    PAGE_NOT_ALLOWED,
    PAGE_NOT_FOUND,
    PATH_OUTSIDE_WIKI,
    PATH_UNREADABLE,
    ToolRefused,
)
from thoth.answer.scope import readable
from thoth.config import Settings
from thoth.markup import FrontMatterError, split_front_matter
from thoth.wiki.pages import MARKDOWN_SUFFIXES

MAX_LISTED: Final = 500
SNIPPET_CHARS: Final = 240


@dataclass(frozen=True)
class Page:
    path: str  # relative to the wiki root, with `/`
    title: str
    labels: tuple[str, ...]
    text: str
    sha256: str
    link: str | None = None  # the passage link of the page as indexed (a served wiki only)

    def source(self) -> dict[str, Any]:
        """How a result cites the page: path, title, the version read and its link."""
        cited = {"kind": "wiki_page", "path": self.path, "title": self.title, "sha256": self.sha256}
        return cited | ({"link": self.link} if self.link else {})


class WikiShelf:
    """The pages under `root` a caller with `allowed` labels may read."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        allowed: list[str],
        link: Callable[[str], str] | None = None,
    ) -> None:
        if not root.is_dir():
            raise ToolRefused(
                f"the curated wiki {root} is not a directory -> set [agent].wiki in thoth.toml",
                code=PAGE_NOT_FOUND,
            )
        self.root = root.resolve(strict=True)
        self._link = link  # a page's passage link, given its path (the served wiki's)
        self.allowed = tuple(sorted(allowed))  # the job's labels: the other tools fence with them
        self._inherited = tuple(
            sorted({label for s in settings.sources if s.kind == "wiki" for label in s.labels})
        )

    # -- the fence -------------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The file `path` names, resolved (links followed) and checked to be inside the root;
        ToolRefused otherwise. Nothing is opened before the check."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise ToolRefused(
                "path must be a non-empty page path relative to the wiki, e.g. "
                "`mercati/giappone.md`",
                code=BAD_ARGUMENTS,
            )
        try:
            target = (self.root / path).resolve(strict=False)
            is_page = target.suffix.lower() in MARKDOWN_SUFFIXES and target.is_file()
        except (OSError, RuntimeError) as exc:  # a name too long; a link loop (RuntimeError)
            raise ToolRefused(
                f"{path[:200]!r} cannot be opened: {_why(exc)} -> call wiki_list for the pages",
                code=PATH_UNREADABLE,
            ) from exc
        if target == self.root or not target.is_relative_to(self.root):
            raise ToolRefused(
                f"{path!r} is outside the curated wiki: the tools read only pages under it "
                "(paths relative to the wiki root, as wiki_list gives them)",
                code=PATH_OUTSIDE_WIKI,
            )
        if not is_page:
            raise ToolRefused(
                f"{path!r} is not a page of the wiki -> call wiki_list for the pages",
                code=PAGE_NOT_FOUND,
            )
        return target

    # -- the tools -------------------------------------------------------------------------

    def read(self, path: str) -> Page:
        page = self._page(self.resolve(path))
        if not self._may_see(page):
            raise ToolRefused(
                f"{path!r} is not among the pages this job may read (its labels are outside "
                "the caller's)",
                code=PAGE_NOT_ALLOWED,
            )
        return page

    def pages(self, prefix: str = "") -> list[Page]:
        """The pages the caller may read, by path (the first MAX_LISTED); under `prefix`
        when given."""
        found: list[Page] = []
        for directory, dirs, files in os.walk(self.root, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                candidate = Path(directory) / name
                if candidate.suffix.lower() not in MARKDOWN_SUFFIXES:
                    continue
                try:
                    resolved = candidate.resolve()
                    readable = resolved.is_relative_to(self.root) and resolved.is_file()
                except (OSError, RuntimeError):
                    continue  # a link loop, a name the OS refuses: not a page one can read
                if not readable:
                    continue  # a link to somewhere else: not a page of the wiki
                rel = candidate.relative_to(self.root).as_posix()
                if prefix and not rel.startswith(prefix):
                    continue
                page = self._page(resolved, rel)
                if self._may_see(page):
                    found.append(page)
        found.sort(key=lambda page: page.path)
        return found[:MAX_LISTED]

    def search(self, query: str, limit: int) -> list[tuple[Page, int, str]]:
        """Pages holding the query's words, most hits first: (page, hits, snippet)."""
        terms = [t for t in query.casefold().split() if len(t) > 1]
        if not terms:
            raise ToolRefused("query has no word to look for", code=BAD_ARGUMENTS)
        scored: list[tuple[Page, int, str]] = []
        for page in self.pages():
            folded = page.text.casefold()
            hits = sum(folded.count(t) for t in terms)
            if hits:
                first = min(i for t in terms if (i := folded.find(t)) >= 0)
                start = max(0, first - SNIPPET_CHARS // 2)
                snippet = " ".join(page.text[start : start + SNIPPET_CHARS].split())
                scored.append((page, hits, snippet))
        scored.sort(key=lambda item: (-item[1], item[0].path))
        return scored[:limit]

    # -- pages -----------------------------------------------------------------------------

    def _page(self, resolved: Path, rel: str | None = None) -> Page:
        raw = resolved.read_bytes()
        text = raw.decode("utf-8", errors="replace")
        path = rel if rel is not None else resolved.relative_to(self.root).as_posix()
        try:
            fields = split_front_matter(text, path).fields or {}
        except FrontMatterError:
            fields = {}
        declared = fields.get("labels")
        if isinstance(declared, str):
            declared = [declared]
        labels = (
            tuple(str(v) for v in declared)
            if isinstance(declared, list) and declared
            else self._inherited
        )
        title = fields.get("title")
        return Page(
            path=path,
            title=str(title) if isinstance(title, str) and title.strip() else _title(text, path),
            labels=labels,
            text=text,
            sha256=hashlib.sha256(raw).hexdigest(),
            link=self._link(path) if self._link else None,
        )

    def _may_see(self, page: Page) -> bool:
        return readable(page.labels, self.allowed)


def _why(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError):
        return "a symbolic link loop"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return type(exc).__name__


def _title(text: str, path: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return Path(path).stem
