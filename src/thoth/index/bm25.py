"""BM25 sparse vectors from Qdrant's own BM25 (the same token ids and formula as the server's
`qdrant/bm25`), computed client side so that every adapter indexes identical vectors."""

from __future__ import annotations

import re

import qdrant_edge as qe

from thoth.config import BM25_LANGUAGES
from thoth.index.base import SparseVec

# Workspace language code -> Qdrant's language name (stemmer and stopwords); settings check
# source languages against the same table.
LANGUAGES = BM25_LANGUAGES
_WORD = re.compile(r"\w+", re.UNICODE)


def average_length(texts: list[str]) -> float:
    """Average document length in words: BM25's `avg_len`, set from the corpus."""
    if not texts:
        return 1.0
    return max(1.0, sum(len(_WORD.findall(t)) for t in texts) / len(texts))


def language_name(language: str) -> str:
    """Qdrant's name of a language ("italian") from a workspace code ("it", "pt-BR") or the
    name itself: what payloads and generation configs record."""
    code = language.split("-")[0]
    if code in LANGUAGES:
        return LANGUAGES[code]
    if language in LANGUAGES.values():
        return language
    raise ValueError(
        f"no BM25 stemmer for language {language!r}; supported: {', '.join(sorted(LANGUAGES))}"
    )


class Bm25Encoder:
    def __init__(self, language: str, avg_len: float) -> None:
        """`language`: a workspace code ("it", "pt-BR") or Qdrant's name ("italian")."""
        self.language = language_name(language)
        self.avg_len = avg_len
        self._model = qe.Bm25(qe.Bm25Config(language=self.language, avg_len=avg_len))

    def config(self) -> dict[str, object]:
        return {"language": self.language, "avg_len": round(self.avg_len, 3), "k": 1.2, "b": 0.75}

    def document(self, text: str) -> SparseVec:
        v = self._model.embed_document(text)
        return SparseVec(list(v.indices), [float(x) for x in v.values])

    def query(self, text: str) -> SparseVec:
        v = self._model.embed_query(text)
        return SparseVec(list(v.indices), [float(x) for x in v.values])
