"""Pseudonymisation (seed 004): identities leave for a model only as typed placeholders.

Three methods (`protect`, `restore`, `protect_rows`) and one switch (`[privacy] pseudonymise`),
read by the composition root only. This is pseudonymisation, not anonymisation: a placeholder
carries the management system's identifier. docs/privacy.md says what is replaced, how to
choose `min_name_length`, and the two declared limits.
"""

from thoth.privacy.base import (
    MASKED,
    NoPseudonymizer,
    Pseudonymizer,
    protect_tree,
    restore_tree,
)
from thoth.privacy.columns import classify
from thoth.privacy.detect import codice_fiscale_ok, find_codes, iban_ok, partita_iva_ok
from thoth.privacy.pseudonymizer import PlaceholderPseudonymizer
from thoth.privacy.registry import Entity, Registry, entities_from_rows, load_registry

__all__ = [
    "MASKED",
    "Entity",
    "NoPseudonymizer",
    "PlaceholderPseudonymizer",
    "Pseudonymizer",
    "Registry",
    "classify",
    "codice_fiscale_ok",
    "entities_from_rows",
    "find_codes",
    "iban_ok",
    "load_registry",
    "partita_iva_ok",
    "protect_tree",
    "restore_tree",
]
