"""Documents (level 1) and wiki pages (level 2) in the index: which files of the declared
sources are knowledge (`ingest.admit`), how each becomes fragments (`ingest.prepare_*`), the
Git-driven `tht docs sync` that builds generations of them through the one builder
(`sync.DocsSync`), and `tht verify`'s data checks (`verify`).

It sits above `thoth.documents` (extraction, chunking, the fragment record) and `thoth.wiki`
(pages, front matter, caveats), which it combines; nothing below imports it."""
