"""Level 2: curated wiki pages (Markdown in Git with front matter and declared caveats)."""

from __future__ import annotations

from thoth.wiki.pages import PageRef, WikiPage, page_fragments, parse_page

__all__ = ["PageRef", "WikiPage", "page_fragments", "parse_page"]
