"""Kept for the modules that still import it (thoth.evidence.prepare, thoth.evidence.resolve):
the code lives in thoth.storage.files."""

from thoth.storage.files import apply_changes

__all__ = ["apply_changes"]
