"""Evidence search: the fail-closed contract `search(query, purpose, context)`, its outcome and
receipts, over the one reader of thoth.index."""
