from hypothesis import given
from hypothesis import strategies as st

from thoth.evidence.normalize import excerpt_in_source, normalize_text

_TEXT = st.text(
    alphabet=st.sampled_from(list("ab è*+-#|`\t\r\n\u00a0\u200b\ufeffe\u0301")), max_size=80
)


@given(_TEXT)
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


def test_normalisation_is_mechanical_only() -> None:
    raw = "\ufeffTitolo\r\n\r\n\r\n*  voce   uno\t\r\n+ voce due  \n    codice  indentato"
    assert normalize_text(raw) == "Titolo\n\n- voce uno\n- voce due\n    codice indentato"


def test_unicode_is_composed() -> None:
    assert normalize_text("perche\u0301") == "perché"


def test_excerpts_are_checked_with_the_same_normalisation() -> None:
    source = normalize_text("La fascia  pediatrica\r\ncomprende i minori.")
    assert excerpt_in_source("fascia pediatrica\ncomprende", source)
    assert excerpt_in_source("  La fascia\u00a0pediatrica ", source)
    assert not excerpt_in_source("fascia geriatrica", source)
    assert not excerpt_in_source("   ", source)
